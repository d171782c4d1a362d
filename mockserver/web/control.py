"""The control API under `/__mock/`: health, scenarios, the request journal, written collections and reset. It is not
part of the described API; its own description is served at `/__mock/openapi.json`. Its inputs are validated like
any API input: a malformed scenario is a 400 that says what and where, never a 500. Each call acts on one session
(`?session=`, `X-Mock-Session` or the `mock_session` cookie), or without one on the whole mock.

Browsers: only pages of the mock's own origin and those `--control-origin` names may call it (403 for others), and
a call that changes the mock needs `Content-Type: application/json` or an `X-Mock-…` header, which no page of
another origin can send without a CORS preflight (which it fails)."""
from __future__ import annotations

import hmac
import json
import secrets
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from flask import Blueprint, Flask, Response, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound

from ..base.errors import MockError
from ..base.json_values import JsonRefused, parse_json
from ..pipeline.pipeline import Pipeline
from ..pipeline.scenarios import ScenarioError
from ..spec.documents import read_document
from ..state import SESSION_COOKIE, SESSION_HEADER, check_session
from ..tools.drift import DriftLog
from .cors import ControlOrigins, cors_headers, is_preflight
from .metrics import CONTENT_TYPE as METRICS_TYPE
from .metrics import Metrics
from .mock_app import access_log, preflight
from .wsgi import raw_path

PREFIX = "/__mock"
API_PARAM = "api"  # on a mock of several APIs, the one a call is for: /__mock/requests?api=pets
DESCRIPTION = Path(__file__).with_name("control_openapi.yaml")
CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
ALLOW_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")  # an Allow header's methods, in this order
_JOURNAL_FILTERS = {"operationId": str, "status": int, "method": str, "path": str, "since": int, "limit": int}
Render = Callable[[MockError], Response]


def control_blueprint(current: Callable[[], Pipeline], drift: DriftLog | None = None,
                      metrics: Metrics | None = None,
                      every: Callable[[], dict[str, Pipeline]] | None = None) -> Blueprint:
    """The control API's endpoints, below the prefix it is mounted at (`PREFIX`); `current()` is the state being
    served (a reload swaps it); `drift` (in proxy mode) is served at /__mock/drift, `metrics` (--metrics) at
    /__mock/metrics. On a mock of several APIs `current()` is the one a call names (`?api=`), and `every()` all of
    them by name: the health without a name is theirs together (a probe names none), and answers name their API.
    `install` guards them and renders their errors."""
    bp = Blueprint("control", __name__)

    def ok(payload: Any, status: int = 200) -> Response:
        return Response(json.dumps(payload), status=status, content_type="application/json")

    def one_health(pipeline: Pipeline) -> dict[str, Any]:
        """Its state, and on a mock of several where it is mounted (what `contract --api` and `diff --api` ask)."""
        pipeline.store.probe()
        state = pipeline.store.describe()
        settings = pipeline.options
        mounted = {} if settings.api is None else {"host": settings.mount_host, "prefix": settings.mount,
                                                   "basePath": pipeline.base_path}
        return named(pipeline, {"status": "ok" if state["available"] else "state-unavailable",
                                "title": pipeline.spec.title, "operations": len(pipeline.spec.operations),
                                **mounted, "state": state})

    @bp.get("/health")
    def health() -> Response:
        if every is not None and API_PARAM not in request.args:
            apis = [one_health(pipeline) for pipeline in every().values()]
            up = all(api["status"] == "ok" for api in apis)
            return ok({"status": "ok" if up else "state-unavailable", "apis": apis}, 200 if up else 503)
        found = one_health(current())  # once: a reload may swap the state between two reads
        return ok(found, 200 if found["status"] == "ok" else 503)

    @bp.get("/metrics")
    def metrics_text() -> Response:
        if metrics is None:
            raise MockError(404, "metrics are off: start the mock with --metrics", code="not-found")
        return Response(metrics.scrape(), content_type=METRICS_TYPE)

    @bp.get("/openapi.json")
    def openapi() -> Response:
        return Response(_description(), content_type="application/json")

    @bp.get("/scenarios")
    def list_scenarios() -> Response:
        pipeline = current()
        return ok({"scenarios": pipeline.scenarios.shown(session_param(pipeline))})

    @bp.post("/scenarios")
    def add_scenarios() -> Response:
        pipeline = current()
        given = _json_body(pipeline.options.max_depth)
        session = session_param(pipeline)
        try:
            shown = pipeline.scenarios.add(given if isinstance(given, list) else [given], session)
        except ScenarioError as exc:
            if exc.rule == "unique":
                raise MockError(409, str(exc), code="conflict", details={"pointer": exc.pointer}) from None
            prefix = f"/{exc.index}" if isinstance(given, list) else ""
            raise bad_input(str(exc), prefix + exc.pointer, exc.rule) from None
        return ok({"scenarios": shown} if isinstance(given, list) else shown[0], 201)

    @bp.delete("/scenarios")
    def clear_scenarios() -> Response:
        pipeline = current()
        return ok({"removed": pipeline.scenarios.remove(session_param(pipeline))})

    @bp.delete("/scenarios/<scenario_id>")
    def remove_scenario(scenario_id: str) -> Response:
        pipeline = current()
        if not pipeline.scenarios.remove(session_param(pipeline), scenario_id):
            raise MockError(404, f"no scenario {scenario_id!r}", code="not-found")
        return ok({"removed": 1})

    @bp.post("/sessions")
    def new_session() -> Response:
        """A fresh session nobody can guess: its name is all it takes to read and change its state."""
        pipeline = current()
        pipeline.store.check()
        session = "s-" + secrets.token_urlsafe(24)
        pipeline.store.touch(session)
        return ok({"session": session, "headers": {SESSION_HEADER: session}}, 201)

    @bp.get("/requests")
    def journal() -> Response:
        filters: dict[str, Any] = {}
        for name, kind in _JOURNAL_FILTERS.items():
            raw = request.args.get(name)
            if raw is None:
                continue
            try:
                filters[name] = kind(raw)
            except ValueError:
                raise bad_input(f"query parameter {name!r} must be an integer", f"/{name}", "type", "query") from None
        pipeline = current()
        session = session_param(pipeline)
        pipeline.store.sync()
        entries = pipeline.journal.entries(operation_id=filters.get("operationId"), status=filters.get("status"),
                                           method=filters.get("method"), path_prefix=filters.get("path"),
                                           since=filters.get("since"), limit=filters.get("limit"), session=session)
        return ok({"requests": [named(pipeline, e.as_dict()) for e in entries]})

    @bp.delete("/requests")
    def clear_journal() -> Response:
        pipeline = current()
        session = session_param(pipeline)
        pipeline.store.sync()
        pipeline.journal.clear(session)
        return ok({"cleared": True})

    @bp.get("/collections")
    def collections() -> Response:
        pipeline = current()
        return ok({"collections": pipeline.answers.collections(session_param(pipeline))})

    @bp.post("/reset")
    def reset() -> Response:
        pipeline = current()
        session = session_param(pipeline)
        if session is None:
            pipeline.store.reset()
        else:
            pipeline.store.sync()
            pipeline.store.forget(session)
        return ok({"scenarios": pipeline.scenarios.shown(session)})

    if drift is not None:
        @bp.get("/drift")
        def drift_summary() -> Response:
            return ok(drift.summary(current().store))

        @bp.delete("/drift")
        def clear_drift() -> Response:
            drift.clear(current().store)
            return ok({"cleared": True})

    return bp


def install(app: Flask, current: Callable[[], Pipeline], token: str | None, origins: ControlOrigins, render: Render,
            open_blueprint: str) -> None:
    """Guard the control API on `app` (mounted at PREFIX) and render its errors once, with `render` (the API's
    envelope; `current()` is the state being served). Every path but those of `open_blueprint` (the pages, which
    ask for the token themselves) is guarded, a path no endpoint takes too: another origin's page first (403),
    then the token (401), then a change a page could make unasked (415; not for a path or method no endpoint
    takes, which changes nothing and is its 404 or 405). A preflight from a page it lets in is answered before
    all that; the answers to such a page carry CORS headers, so a Storybook on another origin can set scenarios
    (another page gets none, so its browser keeps the answer from it)."""

    @app.before_request
    def guard() -> Response | None:
        started = time.perf_counter()
        headers = {name.lower(): value for name, value in request.headers.items()}
        if is_preflight(request.method, headers) and origins.allows(headers):
            return Response(status=204, headers=preflight(current(), request.method, sent_path(),
                                                          request.query_string.decode("latin-1"), headers, started))
        if request.blueprint == open_blueprint:
            return None
        refused = origins.refusal(headers)
        if refused is not None:
            return render(MockError(403, refused, code="forbidden"))
        if token is not None:
            given = (request.headers.get("X-Mock-Control-Token")
                     or request.headers.get("Authorization", "").removeprefix("Bearer "))
            if not hmac.compare_digest(given.encode(), token.encode()):
                return render(MockError(401, "the control API needs its token: X-Mock-Control-Token or "
                                             "'Authorization: Bearer <control token>'", code="unauthorized",
                                        headers={"WWW-Authenticate": 'Bearer realm="mockserver control"'}))
        if request.method in CHANGES and request.url_rule is not None and \
                request.mimetype != "application/json" and not any(
                name.startswith("x-mock-") for name in headers):
            return render(MockError(415, f"{request.method} {sent_path()} changes the mock: send it with "
                                         f"'Content-Type: application/json' (or an X-Mock-... header such as "
                                         f"X-Mock-Session), which a web page of another origin cannot send unasked",
                                    code="unsupported-media-type"))
        return None

    @app.after_request
    def cors(response: Response) -> Response:
        headers = {name.lower(): value for name, value in request.headers.items()}
        if origins.allows(headers):
            response.headers.update(cors_headers(headers))
        return response

    @app.errorhandler(MockError)
    def mock_error(error: MockError) -> Response:
        return render(error)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        """Werkzeug's own refusals in the API's envelope, never HTML."""
        return render(refusal(exc))

    @app.errorhandler(Exception)
    def crash(exc: Exception) -> Response:
        """A bug in the mock: logged with its traceback here, answered without one."""
        access_log.exception("internal error on %s %s", request.method, sent_path())
        return render(MockError(500, "the mock failed to answer; see its log", code="mock-internal-error"))


def named(pipeline: Pipeline, shown: dict[str, Any]) -> dict[str, Any]:
    """What a control call shows of an API, tagged with its name on a mock of several (`"api"`)."""
    return shown if pipeline.options.api is None else {"api": pipeline.options.api, **shown}


def refusal(exc: HTTPException) -> MockError:
    """What werkzeug refused, as the control API says it: a path no endpoint takes (404), a path whose endpoints
    take other methods (405, with Allow), a body too large, a request it could not read."""
    path = sent_path()
    if isinstance(exc, NotFound):
        return MockError(404, f"no control endpoint {path}; see {PREFIX}/openapi.json", code="not-found")
    if isinstance(exc, MethodNotAllowed):
        allowed = [method for method in ALLOW_ORDER if method in (exc.valid_methods or ())]
        allow = ", ".join(allowed)
        return MockError(405, f"{request.method} is not allowed on {path}; allowed: {allow}",
                         details={"path": path, "allowed": allowed}, headers={"Allow": allow})
    return MockError(exc.code or 500, exc.description or exc.name)


def sent_path() -> str:
    """The control request's path as the client sent it, prefix and percent-encoding included."""
    return raw_path(request.environ)


@cache
def _description() -> str:
    """Read when first asked for, not in every worker's start (a pure-Python YAML parse: 50 ms)."""
    return json.dumps(read_document(DESCRIPTION).data)


def session_param(pipeline: Pipeline) -> str | None:
    """The session a control request acts on: `?session=`, else the X-Mock-Session header, else the cookie; None
    (the whole mock) without one. The store must be usable, and the session's idle time starts again."""
    given, location = request.args.get("session"), "query"
    if given is None:
        given, location = request.headers.get(SESSION_HEADER), "header"
    if given is None:
        given, location = request.cookies.get(SESSION_COOKIE), "cookie"
    session = check_session(given, location)
    pipeline.store.check()
    if session is not None:
        pipeline.store.touch(session)
    return session


def _json_body(max_depth: int) -> Any:
    """The call's JSON, read by the API's own checked parser: nothing is taken that cannot be served back."""
    if not request.data:
        raise bad_input("a JSON body is required", "", "required")
    try:
        return parse_json(request.data, max_depth)
    except JsonRefused as exc:
        raise bad_input(exc.message, exc.pointer, exc.rule) from None


def bad_input(message: str, pointer: str, rule: str, location: str = "body") -> MockError:
    return MockError(400, message, details={"violations": [
        {"parameter": "body" if location == "body" else pointer.strip("/"), "in": location, "pointer": pointer,
         "rule": rule, "message": message}]})
