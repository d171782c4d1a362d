"""The Flask adapter: turns a WSGI request into a MockRequest, runs the pipeline, and turns the MockResponse
back. It adds what only HTTP needs (CORS, the access log); everything else lives in `mockserver.core`."""
from __future__ import annotations

import logging
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from ..core.errors import MockError
from ..core.http import MockRequest, MockResponse
from ..core.pipeline import Options, Pipeline
from .control import control_blueprint
from .cors import cors_headers, is_preflight, preflight_headers

access_log = logging.getLogger("mockserver.access")
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"]
PIPELINE_KEY = "mockserver.pipeline"


def _raw_path() -> str:
    """The path as the client sent it (percent-encoding intact), so `%2F` inside an id stays one segment."""
    raw = request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI")
    if raw:
        return raw.split("?", 1)[0]
    return quote(request.environ.get("PATH_INFO", "/"), safe="/:@!$&'()*+,;=-._~")


def _to_flask(response: MockResponse) -> Response:
    out = Response(response.body, status=response.status, headers=response.headers)
    if response.media_type:
        out.headers["Content-Type"] = response.media_type
    elif not response.body:
        out.headers.pop("Content-Type", None)
    return out


def create_app(spec: str | Path, fixtures: str | Path | None = None, *, control: bool = True,
               control_token: str | None = None, **options: object) -> Flask:
    """A Flask app serving the description; raises LoadError (with every problem) if anything is wrong.
    `control=False` leaves out the control API under /__mock/; `control_token` protects it."""
    pipeline = Pipeline.load(Path(spec), Path(fixtures) if fixtures else None, Options(**options))  # type: ignore[arg-type]
    app = Flask("mockserver")
    app.extensions[PIPELINE_KEY] = pipeline
    if control:
        app.register_blueprint(control_blueprint(pipeline, control_token, lambda e: _envelope(pipeline, e)))

    def serve(path: str = "") -> Response:
        started = time.perf_counter()
        if is_preflight(request.method, request.headers):
            out = Response(status=204, headers=preflight_headers(request.headers))
            _log(out.status_code, started, "cors", None)
            return out
        mock_request = MockRequest(request.method, _raw_path(), request.query_string.decode("latin-1"),
                                   {k.lower(): v for k, v in request.headers.items()}, request.get_data(cache=False))
        result = pipeline.handle(mock_request)
        if result.delay_ms:
            time.sleep(result.delay_ms / 1000)
        out = _to_flask(result)
        out.headers.update(cors_headers(request.headers))
        elapsed = (time.perf_counter() - started) * 1000
        pipeline.journal.record(method=request.method, path=mock_request.path, query=mock_request.query_string,
                                request_headers=dict(request.headers), request_body=mock_request.body,
                                status=result.status, response_headers=dict(out.headers), response_body=result.body,
                                source=result.source, operation_id=result.operation_id,
                                scenario_id=result.scenario_id, duration_ms=elapsed)
        _log(result.status, started, result.source, result.operation_id)
        if result.disconnect == "close":
            _drop_connection()
        if result.disconnect == "truncate":
            out = _truncated(out)
        return out

    app.add_url_rule("/", "serve", serve, methods=METHODS, provide_automatic_options=False)
    app.add_url_rule("/<path:path>", "serve_path", serve, methods=METHODS, provide_automatic_options=False)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        """Werkzeug's own refusals (a body too large, a broken request) in the API's envelope, never HTML."""
        return _envelope(pipeline, MockError(exc.code or 500, exc.description or exc.name))

    @app.errorhandler(_Disconnect)
    def disconnected(exc: _Disconnect) -> Response:
        return Response(status=500)  # nothing reaches the client: its connection is already shut

    @app.errorhandler(Exception)
    def crash(exc: Exception) -> Response:
        """A bug in the mock: logged with its traceback here, answered without one."""
        access_log.exception("internal error on %s %s", request.method, request.path)
        return _envelope(pipeline, MockError(500, "the mock failed to answer; see its log", code="mock-internal-error"))

    return app


class _Disconnect(Exception):
    """Raised after the socket is shut: the server finds nothing to write to and closes the connection."""


def _shut_socket(environ: dict[str, Any]) -> None:
    sock = environ.get("gunicorn.socket") or environ.get("werkzeug.socket")
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _drop_connection() -> None:
    """A scenario's `break: close`: shut the socket so the client gets no response at all."""
    _shut_socket(request.environ)
    raise _Disconnect()


def _truncated(out: Response) -> Response:
    """A scenario's `break: truncate`: announce the whole length, send half the body, then drop the connection."""
    data = out.get_data()
    out.headers["Content-Length"] = str(len(data))
    environ = request.environ

    def half() -> Any:
        yield data[: len(data) // 2]
        _shut_socket(environ)

    out.response = half()
    return out


def _envelope(pipeline: Pipeline, error: MockError) -> Response:
    request_id = pipeline.request_id(MockRequest(request.method, request.path,
                                                 headers={k.lower(): v for k, v in request.headers.items()}))
    out = _to_flask(pipeline.error_response(error, request_id, None))
    out.headers.update(cors_headers(request.headers))
    return out


def _log(status: int, started: float, source: str, operation_id: str | None) -> None:
    if access_log.isEnabledFor(logging.INFO):
        query = ("?" + request.query_string.decode("latin-1")) if request.query_string else ""
        access_log.info("%s %s%s %d %.1fms %s%s", request.method, request.path, query, status,
                        (time.perf_counter() - started) * 1000, source, f" {operation_id}" if operation_id else "")
