"""The control API under `/__mock/`: health, scenarios, the request journal, written collections and reset. It is not
part of the described API; its own description is served at `/__mock/openapi.json`. Its inputs are validated like
any API input: a malformed scenario is a 400 that says what and where, never a 500. Each call acts on one session
(`?session=`, `X-Mock-Session` or the `mock_session` cookie), or without one on the whole mock."""
from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, request

from ..core.documents import read_document
from ..core.drift import DriftLog
from ..core.errors import MockError
from ..core.pipeline import Pipeline
from ..core.scenarios import ScenarioError
from ..core.state import SESSION_COOKIE, SESSION_HEADER, check_session

PREFIX = "/__mock"
DESCRIPTION = Path(__file__).with_name("control_openapi.yaml")
_JOURNAL_FILTERS = {"operationId": str, "status": int, "method": str, "path": str, "since": int, "limit": int}


def control_blueprint(current: Callable[[], Pipeline], token: str | None, render: Any,
                      drift: DriftLog | None = None) -> Blueprint:
    """`current()` is the state being served (a reload swaps it); `render(MockError) -> Response` answers errors
    in the API's envelope, like everything else; `drift` (in proxy mode) is served at /__mock/drift."""
    bp = Blueprint("control", __name__, url_prefix=PREFIX)

    def ok(payload: Any, status: int = 200) -> Response:
        return Response(json.dumps(payload), status=status, content_type="application/json")

    @bp.before_request
    def guard() -> Response | None:
        if token is None:
            return None
        given = (request.headers.get("X-Mock-Control-Token")
                 or request.headers.get("Authorization", "").removeprefix("Bearer "))
        if not hmac.compare_digest(given.encode(), token.encode()):
            return render(MockError(401, "the control API needs its token: X-Mock-Control-Token or "
                                         "'Authorization: Bearer <control token>'", code="unauthorized",
                                    headers={"WWW-Authenticate": 'Bearer realm="mockserver control"'}))
        return None

    @bp.errorhandler(MockError)
    def mock_error(error: MockError) -> Response:
        return render(error)

    @bp.get("/health")
    def health() -> Response:
        pipeline = current()  # once: a reload may swap the state between two reads
        pipeline.store.probe()
        state = pipeline.store.describe()
        return ok({"status": "ok" if state["available"] else "state-unavailable", "title": pipeline.spec.title,
                   "operations": len(pipeline.spec.operations), "state": state}, 200 if state["available"] else 503)

    @bp.get("/openapi.json")
    def openapi() -> Response:
        return Response(_description(), content_type="application/json")

    @bp.get("/scenarios")
    def list_scenarios() -> Response:
        pipeline = current()
        return ok({"scenarios": pipeline.scenarios.shown(session_param(pipeline))})

    @bp.post("/scenarios")
    def add_scenarios() -> Response:
        given = _json_body()
        pipeline = current()
        session = session_param(pipeline)
        try:
            shown = pipeline.scenarios.add(given if isinstance(given, list) else [given], session)
        except ScenarioError as exc:
            if exc.rule == "unique":
                raise MockError(409, str(exc), code="conflict", details={"pointer": exc.pointer}) from None
            prefix = f"/{exc.index}" if isinstance(given, list) else ""
            raise _bad(str(exc), prefix + exc.pointer, exc.rule) from None
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
                raise _bad(f"query parameter {name!r} must be an integer", f"/{name}", "type", "query") from None
        pipeline = current()
        session = session_param(pipeline)
        pipeline.store.sync()
        entries = pipeline.journal.entries(operation_id=filters.get("operationId"), status=filters.get("status"),
                                           method=filters.get("method"), path_prefix=filters.get("path"),
                                           since=filters.get("since"), limit=filters.get("limit"), session=session)
        return ok({"requests": [e.as_dict() for e in entries]})

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
            if drift is not None:
                drift.clear()
        else:
            pipeline.store.sync()
            pipeline.store.forget(session)
        return ok({"scenarios": pipeline.scenarios.shown(session)})

    if drift is not None:
        @bp.get("/drift")
        def drift_summary() -> Response:
            return ok(drift.summary())

        @bp.delete("/drift")
        def clear_drift() -> Response:
            drift.clear()
            return ok({"cleared": True})

    @bp.route("/<path:anything>", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    def unknown(anything: str) -> Response:
        raise MockError(404, f"no control endpoint {PREFIX}/{anything}; see {PREFIX}/openapi.json", code="not-found")

    return bp


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


def _json_body() -> Any:
    if not request.data:
        raise _bad("a JSON body is required", "", "required")
    try:
        return json.loads(request.data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise _bad(f"malformed JSON{where}", "", "json") from None


def _bad(message: str, pointer: str, rule: str, location: str = "body") -> MockError:
    return MockError(400, message, details={"violations": [
        {"parameter": "body" if location == "body" else pointer.strip("/"), "in": location, "pointer": pointer,
         "rule": rule, "message": message}]})
