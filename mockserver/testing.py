"""Running the mock inside a test process: `MockServer` serves a description on a free port in a thread and
talks to its control API, so a test can say "the next two calls to listTestSets answer 503" and then read
the journal; `MockClient` does the same for a mock running elsewhere, and `session()` gives either a session of
its own; `CallbackReceiver` takes the callbacks and webhooks a mock sends, on loopback, for a test to read. The
pytest plugin (`mockserver.pytest_plugin`) hands one of each to a test."""
from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from .pipeline.pipeline import Options, Pipeline
from .state import SESSION_HEADER
from .web.app import MOCK_KEY, create_app, pipeline_of

# what the test server (werkzeug, on Python's http.server) refuses before the app sees the request
_POLL_S = 0.05
_REFUSALS = {414: "the request line is longer than 65,536 bytes"}


class MockClient:
    """Talks to a mock's control API, in this process or running elsewhere (`MockClient("http://mock:4010")`).
    With a `session`, every control call acts on that session only, and `headers` are what the client under test
    must send (or set as the `mock_session` cookie) so its calls belong to it. With `api`, every control call acts
    on that API of a mock of several (`?api=`)."""

    def __init__(self, url: str, *, control_token: str | None = None, session: str | None = None,
                 api: str | None = None) -> None:
        self._url = url.rstrip("/")
        self._token = control_token
        self.session_id = session
        self.api = api

    @property
    def url(self) -> str:
        """The base URL of the mocked API, e.g. http://127.0.0.1:53211."""
        return self._url

    @property
    def headers(self) -> dict[str, str]:
        """`X-Mock-Session` for calls of this session; nothing without one."""
        return {SESSION_HEADER: self.session_id} if self.session_id else {}

    def session(self, name: str | None = None) -> MockClient:
        """A client of the same mock whose scenarios, journal and coverage are a session's own: calls carrying its
        `headers` see its scenarios and the global ones only. Without a name, the mock makes a fresh one nobody
        can guess (`POST /__mock/sessions`): whoever knows a session's name can read and change its state."""
        return MockClient(self.url, control_token=self._token,
                          session=name or self.control("POST", "sessions")["session"], api=self.api)

    def control(self, method: str, path: str, payload: Any = None) -> Any:
        """Call /__mock/<path>; an error answer raises ControlError with its status and body."""
        headers = {"Content-Type": "application/json", **self.headers}
        if self._token:
            headers["X-Mock-Control-Token"] = self._token
        data = json.dumps(payload).encode() if payload is not None else None
        if self.api is not None:
            path += ("&" if "?" in path else "?") + urlencode({"api": self.api})
        request = urllib.request.Request(f"{self.url}/__mock/{path.lstrip('/')}", data=data, method=method,
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise ControlError(exc.code, exc.read().decode("utf-8", "replace")) from None

    def scenario(self, **spec: Any) -> dict[str, Any]:
        """Set a scenario, e.g. `scenario(operationId="listTestSets", status=503, times=2)`."""
        return self.control("POST", "scenarios", spec)

    def scenarios(self) -> list[dict[str, Any]]:
        return self.control("GET", "scenarios")["scenarios"]

    def clear_scenarios(self) -> None:
        self.control("DELETE", "scenarios")

    def requests(self, **filters: Any) -> list[dict[str, Any]]:
        """The journal, newest last; filters: operationId, status, method, path, since, limit."""
        query = urlencode({k: str(v) for k, v in filters.items()})
        return self.control("GET", "requests" + (f"?{query}" if query else ""))["requests"]

    def mount(self) -> dict[str, Any]:
        """Where this client's API is mounted on a mock of several (`api`): `host` (None: every host), `prefix`
        and `basePath` (the prefix, then the description's base path); all None on a mock of one API."""
        health = self.control("GET", "health")
        return {key: health.get(key) for key in ("host", "prefix", "basePath")}

    def coverage(self) -> dict[str, Any]:
        """What the calls (of the session) exercised of the description."""
        return self.control("GET", "coverage")

    def reset(self) -> None:
        """Without a session: the whole mock; with one: that session's scenarios, journal and coverage."""
        self.control("POST", "reset")

    def callbacks(self) -> list[dict[str, Any]]:
        """The journal of the callbacks and webhooks the mock sent (or refused to), oldest first."""
        return self.control("GET", "callbacks")["calls"]

    def subscribe(self, webhook: str, url: str) -> None:
        """Send the webhook's events to `url` too (until a reset)."""
        self.control("POST", "webhooks/subscriptions", {"webhook": webhook, "url": url})

    def fire(self, webhook: str, body: Any = None, url: str | None = None) -> list[str]:
        """Send the webhook's event now (to `url`, else its subscribers), with `body` or its own; the calls' ids."""
        given = {"body": body} if body is not None else {}
        return self.control("POST", f"webhooks/{webhook}", {**given, **({"url": url} if url else {})})["queued"]


class MockServer(MockClient):
    """The mock of a description, served from this process on a free port in a thread."""

    def __init__(self, spec: str | Path, fixtures: str | Path | None = None, options: Options | None = None, *,
                 host: str = "127.0.0.1", port: int = 0, control_token: str | None = None, **fields: Any) -> None:
        """`options` and `fields` as `create_app` takes them (the public `Options`, any field also as a keyword)."""
        super().__init__("", control_token=control_token)
        self.app = create_app(spec, fixtures, options, control_token=control_token, **fields)
        self._host, self._port = host, port
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> MockServer:
        self._server = make_server(self._host, self._port, self.app, threaded=True,
                                   request_handler=_handler(self.app.extensions[MOCK_KEY]))
        # polled every 50 ms (not serve_forever's 0.5 s) for the stop: a test's mock stops at once, not half a
        # second later
        self._thread = threading.Thread(target=self._server.serve_forever, args=(_POLL_S,), name="mockserver",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pipeline(self) -> Pipeline:
        """The state the mock serves now (a reload swaps it whole)."""
        return pipeline_of(self.app)

    @property
    def url(self) -> str:
        """The base URL of the mocked API, e.g. http://127.0.0.1:53211."""
        assert self._server is not None, "start() the server first"
        return f"http://{self._host}:{self._server.server_port}"


def _handler(wsgi: Any) -> type[WSGIRequestHandler]:
    """Refusals the HTTP server makes before the app sees the request (a request line over 64 KiB) in the API's
    envelope too, never the server's HTML page."""

    class Handler(WSGIRequestHandler):
        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            response = wsgi.pipeline.refusal(code, _REFUSALS.get(code) or message or HTTPStatus(code).phrase,
                                             self.raw_requestline.decode("latin-1"), explain)
            self.send_response(code, message)
            for name, value in {**response.headers, "Content-Type": response.media_type or "application/json",
                                "Content-Length": str(len(response.body)), "Connection": "close"}.items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD" and code >= 200 and code not in (204, 304):
                self.wfile.write(response.body)

    return Handler


@dataclass(frozen=True)
class Received:
    """One call a `CallbackReceiver` took: its method, path, query, headers (lower-case names) and body."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class CallbackReceiver:
    """An HTTP server on loopback, in a thread, that takes every call and answers `status` (or the next of
    `statuses`, one a call, then `status`): where a test points a mock's callbacks and webhooks, to read what
    arrived."""

    def __init__(self, status: int = 200, statuses: tuple[int, ...] = (), *, host: str = "127.0.0.1") -> None:
        self.status = status
        self._statuses = list(statuses)
        self.received: list[Received] = []
        self._arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def _take(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                parts = urlsplit(self.path)
                call = Received(self.command, parts.path, parts.query,
                                {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length))
                with receiver._arrived:
                    status = receiver._statuses.pop(0) if receiver._statuses else receiver.status
                    receiver.received.append(call)
                    receiver._arrived.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_PUT = do_PATCH = do_GET = do_DELETE = _take

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
                """Quiet: a test reads `received`."""

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(_POLL_S,),
                                        name="callback-receiver", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    @property
    def url(self) -> str:
        """Its base URL on loopback, e.g. http://127.0.0.1:53212."""
        return f"http://127.0.0.1:{self.port}"

    def wait(self, count: int = 1, timeout: float = 5.0) -> list[Received]:
        """The calls taken so far, once there are at least `count` (AssertionError after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.received)} of {count} calls arrived within {timeout:g} s")
                self._arrived.wait(left)
            return list(self.received)

    def start(self) -> CallbackReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> CallbackReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ControlError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"{status}: {body}")
        self.status = status
        self.body = body
