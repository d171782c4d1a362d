"""The mock over WSGI (`mockserver.testing.MockServer`, Flask's test client, any WSGI server): the environ becomes a
`MockRequest` (no framework on the way: its query is parsed once for every stage), the mock app's `Answer`
becomes `start_response` and the body; a latency is a `time.sleep` in the server's thread, and a `break` ends the
body short of its announced length."""
from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable, Iterator
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..base.http import MockRequest
from .mock_app import TRUNCATE_FLUSH_S, Answer, MockApp

if TYPE_CHECKING:
    from .mounts import Mounts

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
_STATUS_LINES = {s.value: f"{s.value} {s.phrase}" for s in HTTPStatus}


def status_line(status: int) -> str:
    return _STATUS_LINES.get(status) or f"{status} Status {status}"


def request_headers(environ: dict[str, Any]) -> dict[str, str]:
    """The request's headers by lower-case name, straight from the WSGI environ."""
    headers = {key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")}
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers[key.replace("_", "-").lower()] = environ[key]
    return headers


def raw_path(environ: dict[str, Any]) -> str:
    """The path as the client sent it (percent-encoding intact), so `%2F` inside an id stays one segment, and the
    control API's `/__mock/%ff` is named as sent."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        return raw.split("?", 1)[0]
    return encoded_path((environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "/")).encode("latin-1"))


def encoded_path(decoded: str | bytes) -> str:
    """A path a server decoded (a `%2F` is a `/` by now) percent-encoded again, so a path that is not UTF-8 still
    reaches the router as such."""
    return quote(decoded, safe="/:@!$&'()*+,;=-._~")


class MockWSGI:
    """The mock app as a WSGI app, or the apps of several APIs (`mounts`, web/mounts.py): translation only."""

    def __init__(self, mock: MockApp, mounts: Mounts | None = None) -> None:
        self.mock = mock
        self.mounts = mounts

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        started = time.perf_counter()
        path = raw_path(environ)
        mounts = self.mounts
        mock = self.mock if mounts is None else mounts.pick(environ.get("HTTP_HOST"), path)
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        body = environ["wsgi.input"].read(min(length, mock.body_limit())) if length > 0 else b""
        request = MockRequest(environ.get("REQUEST_METHOD", "GET"), path, environ.get("QUERY_STRING", ""),
                              request_headers(environ), body)
        answer = mock.respond(request, started)
        if answer.delay_s:
            time.sleep(answer.delay_s)
        start_response(status_line(answer.status), answer.headers)
        if answer.disconnect:
            return _broken(answer, environ)
        return [answer.body]


def _broken(answer: Answer, environ: dict[str, Any]) -> Iterator[bytes]:
    """A scenario's `break`: the whole length is announced, then `truncate` sends half the body and `close` none
    of it, and the connection ends. Under werkzeug (`mockserver.testing`), which writes nothing before the first
    chunk, the socket is shut after what was sent: for `close`, nothing at all. Under a server that gives no
    socket, a body that stops short of its Content-Length makes it close the connection."""
    if answer.body:
        yield answer.body
    sock = environ.get("werkzeug.socket")
    if sock is None:
        if answer.body:
            time.sleep(TRUNCATE_FLUSH_S)  # a server may drop what it has not written yet when a body ends short
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
