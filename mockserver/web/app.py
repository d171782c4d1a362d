"""The app `create_app` builds, and how its parts are mounted. The described API is answered by the mock app
(web/mock_app.py: a `MockRequest` in, an answer out), which the transports call directly: web/wsgi.py under WSGI,
web/rsgi.py under Granian's RSGI; a mock behind a load test must not pay for a web framework's routing. Flask
answers what is the mock's own, the control API and its pages, mounted under `PREFIX` (werkzeug's
`DispatcherMiddleware` under WSGI, `mounted` under RSGI), and is the app object users get: `create_app` returns
a Flask app whose WSGI entry point is that mount."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, request
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from ..base import tracing
from ..base.errors import MockError
from ..base.http import MockRequest, MockResponse
from ..pipeline.pipeline import Options, Pipeline
from ..state import open_store
from .control import PREFIX, control_blueprint, install
from .cors import ControlOrigins
from .dashboard import dashboard_blueprints
from .metrics import Metrics
from .mock_app import MockApp
from .otel import OtelTracing
from .reload import Reloader
from .webhooks import outgoing_blueprint
from .wsgi import MockWSGI, StartResponse, WSGIApp, request_headers

if TYPE_CHECKING:
    from .proxy import Proxy

MOCK_KEY = "mockserver"  # app.extensions[MOCK_KEY] is the MockApp: `.pipeline` is the state served now


class MockFlask(Flask):
    """The app `create_app` returns. Flask itself (`wsgi_app`) answers the control API and its pages; its WSGI
    entry point mounts them under PREFIX over the mock app, which answers every other path with no Flask on the
    way."""

    def __init__(self, mock: MockApp, control: bool) -> None:
        super().__init__("mockserver", static_folder=None)  # the pages serve their own (web/static)
        self.mock = mock
        self.extensions[MOCK_KEY] = mock
        self.control: WSGIApp | None = self.wsgi_app if control else None  # as RSGI mounts it
        self._mounted = DispatcherMiddleware(MockWSGI(mock), {PREFIX: self.wsgi_app} if control else {})

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """What a WSGI server or the test client calls: the mount, not Flask alone."""
        return self._mounted(environ, start_response)


def mounted(path: str) -> tuple[str | None, str]:
    """(PREFIX, the path below it) for a path of the control API, as `DispatcherMiddleware` splits it under WSGI,
    for a transport that mounts it itself (RSGI); (None, "") for every other path, the mock's."""
    if path == PREFIX or path.startswith(PREFIX + "/"):
        return PREFIX, path[len(PREFIX):]
    return None, ""


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
    for name in ("accept_tokens", "callback_allow"):
        if name in given:
            given[name] = tuple(given[name])
    return replace(options or Options(), **given)


def create_app(spec: str | Path, fixtures: str | Path | None = None, options: Options | None = None, *,
               control: bool = True, control_token: str | None = None, watch: bool = False,
               proxy: Proxy | None = None, loaded: Pipeline | None = None, control_origins: tuple[str, ...] = (),
               metrics: bool = False, otel: bool = False, **fields: Any) -> MockFlask:
    """A Flask app serving the description with `options` (the public `Options`; any of its fields may also be
    given as a keyword, over `options`); raises LoadError (with every problem) if anything is wrong, and
    StateError when the state store (`state="redis://…"`) cannot be used.
    `control=False` leaves out the control API under /__mock/; `control_token` protects it; `control_origins`
    are the browser origins that may use it besides the mock's own (`*`: any, only with a token; ValueError
    otherwise, or for what is not an origin); `watch=True`
    reloads the description and fixtures when a file changes; `proxy` forwards the API's requests to a real
    deployment instead of answering them (the pipeline still checks them, and answers on fallback). `loaded` is
    what `load_pipeline` made already (before `mockserver serve` forks its workers): its options and store are
    used, and `options` and the keywords are not. `metrics=True` counts every answer for `/__mock/metrics`;
    `otel=True` sends this process's spans to an OpenTelemetry collector (web/otel.py)."""
    spec_path, fixtures_path = Path(spec), Path(fixtures) if fixtures else None
    origins = ControlOrigins(tuple(control_origins), control_token)
    if loaded is None:
        loaded = load_pipeline(spec_path, fixtures_path,
                               with_fields(options, fields if control else {"dashboard": False, **fields}))
    settings, store = loaded.options, loaded.store  # a reload builds a new pipeline on the same state

    def build() -> Pipeline:
        return Pipeline.load(spec_path, fixtures_path, settings, store)

    mock = MockApp(loaded, handle=proxy.handle if proxy else None)
    if metrics:
        mock.metrics = Metrics(loaded.spec.title, lambda: mock.pipeline)
    if otel:
        tracing.use(OtelTracing(loaded.spec.title))
    if loaded.callbacks.triggers or loaded.spec.webhooks:  # replicas on one store claim each other's calls too
        mock.outgoing.ensure_started()
    if watch:
        mock.reloader = Reloader(build, lambda: mock.pipeline, mock.swap, fixtures_path)
    app = MockFlask(mock, control)
    if control:
        app.config["MAX_CONTENT_LENGTH"] = settings.max_body  # the control API's limit: 413 before reading the body
        control_api = control_blueprint(lambda: mock.pipeline, drift=proxy.drift if proxy else None,
                                        metrics=mock.metrics)
        pages, data = dashboard_blueprints(lambda: mock.pipeline)
        control_api.register_blueprint(data)  # the dashboard's data: behind the control token
        control_api.register_blueprint(outgoing_blueprint(lambda: mock.pipeline, mock.outgoing))
        app.before_request(mock.ensure_reloader)
        install(app, lambda: mock.pipeline, control_token, origins, lambda e: _envelope(mock.pipeline, e),
                open_blueprint=pages.name)  # the pages themselves ask for the token
        app.register_blueprint(control_api)
        app.register_blueprint(pages)
    return app


def pipeline_of(app: Flask) -> Pipeline:
    """The state an app made by `create_app` serves now (a reload swaps it whole)."""
    return app.extensions[MOCK_KEY].pipeline


def _envelope(pipeline: Pipeline, error: MockError) -> Response:
    headers = request_headers(request.environ)
    request_id = pipeline.request_id(MockRequest(request.method, request.path, headers=headers))
    result: MockResponse = pipeline.error_response(error, request_id, None)
    # CORS headers, for the pages the control API lets in, are added by control.install's after_request
    return Response(result.body, status=result.status, headers=result.headers, content_type=result.media_type)
