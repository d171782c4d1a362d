"""The HTTP adapter. Requests to the described API go straight from WSGI to the pipeline (`MockWSGI`): a mock
behind a load test must not pay for a web framework's routing twice. Flask serves what is the mock's own, the
control API under /__mock/, and is the app object users get: `create_app` returns a Flask app whose `wsgi_app`
is wrapped, as Flask's docs recommend for middleware. This layer adds only what HTTP needs: CORS, the access log,
the journal, latency and broken connections; everything else lives in the pure packages (`pipeline`, `spec`,
`fixtures`, `state`, `base`)."""
from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from ..base.errors import MockError
from ..base.http import MockRequest, MockResponse, sent_body
from ..pipeline.pipeline import Options, Pipeline
from ..state import open_store
from .access import ACCESS
from .control import PREFIX, control_blueprint
from .cors import ControlOrigins, cors_headers, is_preflight, preflight_headers
from .dashboard import dashboard_blueprints
from .reload import Reloader

if TYPE_CHECKING:
    from .proxy import Proxy

access_log = logging.getLogger("mockserver.access")
MOCK_KEY = "mockserver"  # app.extensions[MOCK_KEY] is the MockWSGI: `.pipeline` is the state served now
StartResponse = Callable[..., Any]
_STATUS_LINES = {s.value: f"{s.value} {s.phrase}" for s in HTTPStatus}
TRUNCATE_FLUSH_S = 0.1


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
    """The path as the client sent it (percent-encoding intact), so `%2F` inside an id stays one segment."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        return raw.split("?", 1)[0]
    return encoded_path(environ.get("PATH_INFO", "/").encode("latin-1"))


def encoded_path(decoded: str | bytes) -> str:
    """A path Granian decoded (a `%2F` is a `/` by now) percent-encoded again, so a path that is not UTF-8 still
    reaches the router as such."""
    return quote(decoded, safe="/:@!$&'()*+,;=-._~")


class MockWSGI:
    """Serves the described API from WSGI; passes the control API's paths to Flask."""

    def __init__(self, pipeline: Pipeline, flask_wsgi: Callable[..., Iterable[bytes]] | None,
                 handle: Callable[[Pipeline, MockRequest], MockResponse] | None = None,
                 control_origins: ControlOrigins | None = None) -> None:
        self.pipeline = pipeline  # swapped whole by a reload; a request reads it once
        self.control_origins = control_origins or ControlOrigins()  # the pages the control API answers
        self.handle = handle or Pipeline.handle  # a proxy answers in the pipeline's place (web/proxy.py)
        self.proxied = handle is not None  # its answers wait on the network
        self.flask_wsgi = flask_wsgi
        self.reloader: Reloader | None = None  # --watch: it knows the files as they were loaded
        self._reloader_pid = 0

    def swap(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    def _ensure_reloader(self) -> None:
        """Threads do not survive a fork: each process starts its watcher's thread on its first request (the
        watcher compares with the files as they were when the app was built, so an edit made before is seen)."""
        if self.reloader is not None and self._reloader_pid != os.getpid():
            self._reloader_pid = os.getpid()
            self.reloader.start()

    def is_control(self, path: str) -> bool:
        """A path Flask answers (the control API and its pages), when the control API is served."""
        return self.flask_wsgi is not None and (path == PREFIX or path.startswith(PREFIX + "/"))

    def answers_preflight(self, path: str, headers: dict[str, str]) -> bool:
        """A preflight answered here: always for the API's paths, for the control API's only from a page it lets
        in (another page's goes on to the control API, which refuses it: 403, no CORS headers)."""
        return not self.is_control(path) or self.control_origins.allows(headers)

    def body_limit(self) -> int:
        """Bytes of a body worth reading: one more than allowed tells the pipeline it is too large."""
        return self.pipeline.options.max_body + 1

    def answer(self, method: str, path: str, query: str, headers: dict[str, str],
               body: bytes) -> tuple[Pipeline, MockRequest, MockResponse]:
        """The pipeline's answer (or the proxy's); a bug in the mock is logged with its traceback and answered
        without one. The server adapters (WSGI here, RSGI in web/rsgi.py) wait out `delay_ms`, then `finish`."""
        self._ensure_reloader()
        pipeline = self.pipeline
        mock_request = MockRequest(method, path, query, headers, body)
        try:
            result = self.handle(pipeline, mock_request)
        except Exception:
            access_log.exception("internal error on %s %s", method, mock_request.path)
            result = pipeline.error_response(MockError(500, "the mock failed to answer; see its log",
                                                       code="mock-internal-error"),
                                             pipeline.request_id(mock_request), None)
        return pipeline, mock_request, result

    def finish(self, pipeline: Pipeline, mock_request: MockRequest, result: MockResponse,
               started: float) -> list[tuple[str, str]]:
        """The answer's headers, once it is in the journal and the access log."""
        out_headers = dict(result.headers)
        if result.media_type:
            out_headers["Content-Type"] = result.media_type
        out_headers["Content-Length"] = str(len(result.body))
        out_headers.update(cors_headers(mock_request.headers))
        query = pipeline.journal.record(mock_request, result, out_headers, (time.perf_counter() - started) * 1000)
        log_access(mock_request.method, mock_request.path, query, result.status, started, result.source,
                   result.operation_id)
        return list(out_headers.items())

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        started = time.perf_counter()
        headers = request_headers(environ)
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "")
        if is_preflight(method, headers) and self.answers_preflight(path, headers):
            start_response("204 No Content", list(preflight_headers(headers).items()))
            log_access(method, path, self.pipeline.secrets.query_string(environ.get("QUERY_STRING", "")), 204,
                       started, "cors")
            return []
        if self.is_control(path):
            self._ensure_reloader()
            assert self.flask_wsgi is not None
            return self.flask_wsgi(environ, _with_cors(start_response, headers, self.control_origins))
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        body = environ["wsgi.input"].read(min(length, self.body_limit())) if length > 0 else b""
        pipeline, mock_request, result = self.answer(method, raw_path(environ), environ.get("QUERY_STRING", ""),
                                                     headers, body)
        if result.delay_ms:
            time.sleep(result.delay_ms / 1000)
        out_headers = self.finish(pipeline, mock_request, result, started)
        start_response(status_line(result.status), out_headers)
        if result.disconnect:
            return _broken(result.disconnect, result.body, environ)
        return [result.body]


def _with_cors(start_response: StartResponse, headers: dict[str, str], origins: ControlOrigins) -> StartResponse:
    """The control API's answers carry CORS headers for the pages it lets in (--control-origin), so a Storybook on
    another origin can set scenarios; another page gets none, so its browser keeps the answer from it."""
    extra = cors_headers(headers) if origins.allows(headers) else {}
    if not extra:
        return start_response

    def start(status: str, response_headers: list[tuple[str, str]], *args: Any) -> Any:
        kept = [(k, v) for k, v in response_headers if k.lower() not in {e.lower() for e in extra}]
        return start_response(status, kept + list(extra.items()), *args)

    return start


def _broken(kind: str, body: bytes, environ: dict[str, Any]) -> Iterator[bytes]:
    """A scenario's `break`: the whole length is announced, then `truncate` sends half the body and `close` none
    of it, and the connection ends. Under Granian (no socket in the environ) a body that stops short of its
    Content-Length makes Granian close the connection; it may have written the status line and headers already,
    as it does while an app's body is still coming. Under werkzeug (`mockserver.testing`), which writes nothing
    before the first chunk, the socket is shut after what was sent: for `close`, nothing at all."""
    if kind == "truncate":
        yield sent_body(kind, body)
    sock = environ.get("werkzeug.socket")
    if sock is None:
        if kind == "truncate":
            # Granian drops what it has not written yet when a body ends short: give it time to send the half
            time.sleep(TRUNCATE_FLUSH_S)
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def load_pipeline(spec: str | Path, fixtures: str | Path | None = None, options: Options | None = None) -> Pipeline:
    """The description and fixtures, loaded and checked, on the store `options.state` names; raises LoadError (with
    every problem), or StateError when the store cannot be used."""
    settings = options or Options()
    store = open_store(settings.state, journal_size=settings.journal_size, session_ttl=settings.session_ttl,
                       timeout=settings.state_timeout)
    return Pipeline.load(Path(spec), Path(fixtures) if fixtures else None, settings, store)


def with_fields(options: Options | None, fields: dict[str, Any]) -> Options:
    """`options` (or the defaults) with some fields given as keywords, the sugar `create_app(..., seed=3)` and
    `MockServer(..., strict_auth=True)` keep; a keyword that names no field is a TypeError."""
    given = dict(fields)
    if "allow_outside" in given:
        given["allow_outside"] = tuple(Path(folder) for folder in given["allow_outside"])
    if "accept_tokens" in given:
        given["accept_tokens"] = tuple(given["accept_tokens"])
    return replace(options or Options(), **given)


def create_app(spec: str | Path, fixtures: str | Path | None = None, options: Options | None = None, *,
               control: bool = True, control_token: str | None = None, watch: bool = False,
               proxy: Proxy | None = None, loaded: Pipeline | None = None, control_origins: tuple[str, ...] = (),
               **fields: Any) -> Flask:
    """A Flask app serving the description with `options` (the public `Options`; any of its fields may also be
    given as a keyword, over `options`); raises LoadError (with every problem) if anything is wrong, and
    StateError when the state store (`state="redis://…"`) cannot be used.
    `control=False` leaves out the control API under /__mock/; `control_token` protects it; `control_origins`
    are the browser origins that may use it besides the mock's own (`*`: any, only with a token; ValueError
    otherwise, or for what is not an origin); `watch=True`
    reloads the description and fixtures when a file changes; `proxy` forwards the API's requests to a real
    deployment instead of answering them (the pipeline still checks them, and answers on fallback). `loaded` is
    what `load_pipeline` made already (before `mockserver serve` forks its workers): its options and store are
    used, and `options` and the keywords are not."""
    spec_path, fixtures_path = Path(spec), Path(fixtures) if fixtures else None
    origins = ControlOrigins(tuple(control_origins), control_token)
    if loaded is None:
        loaded = load_pipeline(spec_path, fixtures_path,
                               with_fields(options, fields if control else {"dashboard": False, **fields}))
    settings, store = loaded.options, loaded.store  # a reload builds a new pipeline on the same state

    def build() -> Pipeline:
        return Pipeline.load(spec_path, fixtures_path, settings, store)

    app = Flask("mockserver")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body  # the control API's limit: 413 before reading the body
    wsgi = MockWSGI(loaded, None, handle=proxy.handle if proxy else None, control_origins=origins)
    if watch:
        wsgi.reloader = Reloader(build, lambda: wsgi.pipeline, wsgi.swap, fixtures_path)
    app.extensions[MOCK_KEY] = wsgi
    if control:
        control_api = control_blueprint(lambda: wsgi.pipeline, control_token, lambda e: _envelope(wsgi.pipeline, e),
                                        drift=proxy.drift if proxy else None, origins=origins)
        pages, data = dashboard_blueprints(lambda: wsgi.pipeline)
        control_api.register_blueprint(data)  # the dashboard's data: behind the control token
        app.register_blueprint(control_api)
        app.register_blueprint(pages)  # the pages themselves ask for the token

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        """Werkzeug's own refusals (a body too large, a broken request, a method no route takes) in the API's
        envelope, never HTML."""
        allowed = getattr(exc, "valid_methods", None)
        return _envelope(wsgi.pipeline, MockError(exc.code or 500, exc.description or exc.name,
                                                  headers={"Allow": ", ".join(allowed)} if allowed else None))

    @app.errorhandler(Exception)
    def crash(exc: Exception) -> Response:
        """A bug in the mock: logged with its traceback here, answered without one."""
        access_log.exception("internal error on %s %s", request.method, request.path)
        return _envelope(wsgi.pipeline, MockError(500, "the mock failed to answer; see its log",
                                                  code="mock-internal-error"))

    wsgi.flask_wsgi = app.wsgi_app if control else None
    app.wsgi_app = wsgi  # type: ignore[method-assign]
    return app


def pipeline_of(app: Flask) -> Pipeline:
    """The state an app made by `create_app` serves now (a reload swaps it whole)."""
    return app.extensions[MOCK_KEY].pipeline


def _envelope(pipeline: Pipeline, error: MockError) -> Response:
    headers = request_headers(request.environ)
    request_id = pipeline.request_id(MockRequest(request.method, request.path, headers=headers))
    result: MockResponse = pipeline.error_response(error, request_id, None)
    # CORS headers, for the pages the control API lets in, are added around Flask (_with_cors)
    return Response(result.body, status=result.status, headers=result.headers, content_type=result.media_type)


def log_access(method: str, path: str, query: str, status: int, started: float, source: str,
               operation_id: str | None = None) -> None:
    if ACCESS.enabled():
        ACCESS.write(f"{method} {path}{'?' + query if query else ''} {status} "
                     f"{(time.perf_counter() - started) * 1000:.1f}ms {source}"
                     f"{' ' + operation_id if operation_id else ''}")
