"""The app `create_app` builds, and how its parts are mounted. The described API is answered by the mock app
(web/mock_app.py: a `MockRequest` in, an answer out), which the transports call directly: web/wsgi.py under WSGI,
web/rsgi.py under Granian's RSGI; a mock behind a load test must not pay for a web framework's routing. Flask
answers what is the mock's own, the control API and its pages, mounted under `PREFIX` (werkzeug's
`DispatcherMiddleware` under WSGI, `mounted` under RSGI), and is the app object users get: `create_app` returns
a Flask app whose WSGI entry point is that mount."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, request
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from ..base import tracing
from ..base.errors import LoadError, MockError
from ..base.http import MockRequest, MockResponse
from ..pipeline.pipeline import Options, Pipeline
from ..state import StateError, open_store, scoped_state
from .control import API_PARAM, PREFIX, control_blueprint, install
from .cors import ControlOrigins
from .dashboard import dashboard_blueprints
from .metrics import Metrics
from .mock_app import MockApp
from .mounts import Api, Mounts, check_mounts
from .otel import OtelTracing
from .outgoing import Outgoing
from .reload import Reloader
from .webhooks import outgoing_blueprint
from .wsgi import MockWSGI, StartResponse, WSGIApp, request_headers

if TYPE_CHECKING:
    from ..tools.drift import DriftLog
    from .proxy import Proxy

LOADING_THREADS = 4  # descriptions of a mock of several APIs loaded at once
MOCK_KEY = "mockserver"  # app.extensions[MOCK_KEY] is the MockApp: `.pipeline` is the state served now


class MockFlask(Flask):
    """The app `create_app` returns. Flask itself (`wsgi_app`) answers the control API and its pages; its WSGI
    entry point mounts them under PREFIX over the mock app, which answers every other path with no Flask on the
    way."""

    def __init__(self, mock: MockApp, control: bool, mounts: Mounts | None = None) -> None:
        """`mounts`: the apps of several APIs (`mock` is the first of them), picked per request."""
        super().__init__("mockserver", static_folder=None)  # the pages serve their own (web/static)
        self.mock = mock
        self.mounts = mounts
        self.extensions[MOCK_KEY] = mock
        self.control: WSGIApp | None = self.wsgi_app if control else None  # as RSGI mounts it
        self._mounted = DispatcherMiddleware(MockWSGI(mock, mounts), {PREFIX: self.wsgi_app} if control else {})

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
    mock = _mock_app(loaded, spec_path, fixtures_path, watch, proxy)
    _observe({mock.name: mock}, metrics, otel)
    app = MockFlask(mock, control)
    if control:
        _install_control(app, lambda: mock.pipeline, lambda: mock.pipeline, control_token, origins,
                         proxy.drift if proxy else None, lambda: mock.outgoing)
    return app


def _observe(mocks: dict[str, MockApp], metrics: bool, otel: bool) -> None:
    """`metrics`: one count of this process's answers for all its APIs; `otel`: this process's spans sent."""
    if metrics:
        counted = Metrics(partial(_pipelines, mocks))
        for mock in mocks.values():
            mock.metrics = counted
    if otel:
        tracing.use(OtelTracing())


@dataclass
class ApisFailed(Exception):
    """A mock of several APIs cannot start: what is wrong, by API (a LoadError or a StateError each)."""

    failures: dict[str, LoadError | StateError]


def load_apis(apis: list[Api], options: Options | None = None) -> dict[str, Pipeline]:
    """Each API's description and fixtures, loaded and checked side by side (threads: reading files and
    connecting to a store wait), each with its name and mount in its options and on a store of its own
    (`scoped_state`); raises ApisFailed naming every API that cannot be served, with all of its problems."""
    settings = options or Options()

    def load(api: Api) -> Pipeline:
        state = scoped_state(settings.state, api.name)
        return load_pipeline(api.spec, api.fixtures, replace(settings, api=api.name, mount=api.prefix,
                                                              mount_host=api.host, state=state))

    with ThreadPoolExecutor(min(len(apis), LOADING_THREADS), thread_name_prefix="mockserver-load") as pool:
        futures = {api.name: pool.submit(load, api) for api in apis}
    loaded: dict[str, Pipeline] = {}
    failures: dict[str, LoadError | StateError] = {}
    for name, future in futures.items():
        error = future.exception()
        if error is None:
            loaded[name] = future.result()
        elif isinstance(error, (LoadError, StateError)):
            failures[name] = error
        else:
            raise error
    if failures:
        raise ApisFailed(failures)
    return loaded


def create_apps(apis: list[Api], options: Options | None = None, *, control: bool = True,
                control_token: str | None = None, watch: bool = False, loaded: dict[str, Pipeline] | None = None,
                control_origins: tuple[str, ...] = (), metrics: bool = False, otel: bool = False,
                **fields: Any) -> MockFlask:
    """A mock of several APIs (web/mounts.py): each answers at its mount with its own pipeline and store, and
    the control API and its pages act on the one a call names (`?api=`); otherwise as `create_app`. Raises
    ValueError for two APIs with one name or one mount, ApisFailed when some cannot be loaded. `loaded` is what
    `load_apis` made already, by name."""
    check_mounts(apis)
    origins = ControlOrigins(tuple(control_origins), control_token)
    if loaded is None:
        loaded = load_apis(apis, with_fields(options, fields if control else {"dashboard": False, **fields}))
    mounts = Mounts([(api, _mock_app(loaded[api.name], api.spec, api.fixtures, watch)) for api in apis])
    _observe(mounts.mocks, metrics, otel)
    app = MockFlask(mounts.first, control, mounts)
    if control:
        def named() -> MockApp:
            return mounts.named(request.args.get(API_PARAM) or (request.view_args or {}).get(API_PARAM))

        def named_or_first() -> Pipeline:
            """The API a call names, or the first when it names none it can use: its envelope renders the
            refusal, its secrets mask a preflight's query."""
            try:
                return named().pipeline
            except MockError:
                return mounts.first.pipeline

        _install_control(app, lambda: named().pipeline, named_or_first, control_token, origins, None,
                         lambda: named().outgoing, mounts.mocks)
    return app


def _mock_app(loaded: Pipeline, spec: Path, fixtures: Path | None, watch: bool, proxy: Proxy | None = None) -> MockApp:
    """The mock app of one description; `watch`: reloaded when a file changes, on the same options and store."""
    settings, store = loaded.options, loaded.store

    def build() -> Pipeline:
        return Pipeline.load(spec, fixtures, settings, store)

    mock = MockApp(loaded, handle=proxy.handle if proxy else None)
    if loaded.callbacks.triggers or loaded.spec.webhooks:  # replicas on one store claim each other's calls too
        mock.outgoing.ensure_started()
    if watch:
        mock.reloader = Reloader(build, lambda: mock.pipeline, mock.swap, fixtures)
    return mock


def _install_control(app: MockFlask, current: Callable[[], Pipeline], fallback: Callable[[], Pipeline],
                     token: str | None, origins: ControlOrigins, drift: DriftLog | None,
                     outgoing: Callable[[], Outgoing], apis: dict[str, MockApp] | None = None) -> None:
    """The control API and its pages on `app`, acting on `current()` (with `apis`, several: the one a call
    names, whose calls out are `outgoing()`); `fallback()` is the same, or any API where a call names none, for
    what every call needs of one (the envelope of its refusal)."""
    mocks = list(apis.values()) if apis else [app.mock]
    app.config["MAX_CONTENT_LENGTH"] = app.mock.pipeline.options.max_body  # 413 before reading the body
    every = partial(_pipelines, apis) if apis else None
    control_api = control_blueprint(current, drift=drift, metrics=app.mock.metrics, every=every)
    pages, data = dashboard_blueprints(current, tuple(apis or ()))
    control_api.register_blueprint(data)  # the dashboard's data: behind the control token
    control_api.register_blueprint(outgoing_blueprint(current, outgoing))

    def start_reloaders() -> None:
        for mock in mocks:
            mock.ensure_reloader()

    app.before_request(start_reloaders)
    install(app, fallback, token, origins, lambda e: _envelope(fallback(), e),
            open_blueprint=pages.name)  # the pages ask for the token
    app.register_blueprint(control_api)
    app.register_blueprint(pages)


def _pipelines(mocks: dict[str, MockApp]) -> dict[str, Pipeline]:
    """What each API serves now, by name (a reload swaps a pipeline)."""
    return {name: mock.pipeline for name, mock in mocks.items()}


def pipeline_of(app: Flask) -> Pipeline:
    """The state an app made by `create_app` serves now (a reload swaps it whole)."""
    return app.extensions[MOCK_KEY].pipeline


def _envelope(pipeline: Pipeline, error: MockError) -> Response:
    headers = request_headers(request.environ)
    request_id = pipeline.request_id(MockRequest(request.method, request.path, headers=headers))
    result: MockResponse = pipeline.error_response(error, request_id, None)
    # CORS headers, for the pages the control API lets in, are added by control.install's after_request
    return Response(result.body, status=result.status, headers=result.headers, content_type=result.media_type)
