"""The Flask adapter: turns a WSGI request into a MockRequest, runs the pipeline, and turns the MockResponse
back. It adds what only HTTP needs (CORS, the access log); everything else lives in `mockserver.core`."""
from __future__ import annotations

import logging
import time
from pathlib import Path
from urllib.parse import quote

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from ..core.errors import MockError
from ..core.http import MockRequest, MockResponse
from ..core.pipeline import Options, Pipeline
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


def create_app(spec: str | Path, fixtures: str | Path | None = None, **options: object) -> Flask:
    """A Flask app serving the description; raises LoadError (with every problem) if anything is wrong."""
    pipeline = Pipeline.load(Path(spec), Path(fixtures) if fixtures else None, Options(**options))  # type: ignore[arg-type]
    app = Flask("mockserver")
    app.extensions[PIPELINE_KEY] = pipeline

    def serve(path: str = "") -> Response:
        started = time.perf_counter()
        if is_preflight(request.method, request.headers):
            out = Response(status=204, headers=preflight_headers(request.headers))
            _log(out.status_code, started, "cors", None)
            return out
        mock_request = MockRequest(request.method, _raw_path(), request.query_string.decode("latin-1"),
                                   {k.lower(): v for k, v in request.headers.items()}, request.get_data(cache=False))
        result = pipeline.handle(mock_request)
        out = _to_flask(result)
        out.headers.update(cors_headers(request.headers))
        _log(result.status, started, result.source, result.operation_id)
        return out

    app.add_url_rule("/", "serve", serve, methods=METHODS, provide_automatic_options=False)
    app.add_url_rule("/<path:path>", "serve_path", serve, methods=METHODS, provide_automatic_options=False)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        """Werkzeug's own refusals (a body too large, a broken request) in the API's envelope, never HTML."""
        return _envelope(pipeline, MockError(exc.code or 500, exc.description or exc.name))

    @app.errorhandler(Exception)
    def crash(exc: Exception) -> Response:
        """A bug in the mock: logged with its traceback here, answered without one."""
        access_log.exception("internal error on %s %s", request.method, request.path)
        return _envelope(pipeline, MockError(500, "the mock failed to answer; see its log", code="mock-internal-error"))

    return app


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
