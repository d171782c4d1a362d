"""The control API under `/__mock/`: health, scenarios, the request journal and reset. It is not part of the
described API; its own description is served at `/__mock/openapi.json`. Its inputs are validated like any API
input: a malformed scenario is a 400 that says what and where, never a 500."""
from __future__ import annotations

import hmac
import json
from pathlib import Path
from typing import Any, Callable

import yaml
from flask import Blueprint, Response, request

from ..core.drift import DriftLog
from ..core.errors import MockError
from ..core.pipeline import Pipeline
from ..core.scenarios import ScenarioError

PREFIX = "/__mock"
DESCRIPTION = Path(__file__).with_name("control_openapi.yaml")
_JOURNAL_FILTERS = {"operationId": str, "status": int, "method": str, "path": str, "since": int, "limit": int}


def control_blueprint(current: Callable[[], Pipeline], token: str | None, render: Any,
                      drift: DriftLog | None = None) -> Blueprint:
    """`current()` is the state being served (a reload swaps it); `render(MockError) -> Response` answers errors
    in the API's envelope, like everything else; `drift` (in proxy mode) is served at /__mock/drift."""
    bp = Blueprint("control", __name__, url_prefix=PREFIX)
    description = json.dumps(yaml.safe_load(DESCRIPTION.read_text()))

    def ok(payload: Any, status: int = 200) -> Response:
        return Response(json.dumps(payload), status=status, content_type="application/json")

    @bp.before_request
    def guard() -> Response | None:
        if token is None:
            return None
        given = request.headers.get("X-Mock-Control-Token") or request.headers.get("Authorization", "").removeprefix("Bearer ")
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
        spec = current().spec  # once: a reload may swap the state between two reads
        return ok({"status": "ok", "title": spec.title, "operations": len(spec.operations)})

    @bp.get("/openapi.json")
    def openapi() -> Response:
        return Response(description, content_type="application/json")

    @bp.get("/scenarios")
    def list_scenarios() -> Response:
        return ok({"scenarios": current().scenarios.list()})

    @bp.post("/scenarios")
    def add_scenarios() -> Response:
        given = _json_body()
        specs = given if isinstance(given, list) else [given]
        pipeline = current()
        compiled = []
        for index, spec in enumerate(specs):
            prefix = f"/{index}" if isinstance(given, list) else ""
            try:
                compiled.append(pipeline.scenarios.compile(spec, "runtime", pipeline.check_scenario_body))
            except ScenarioError as exc:
                raise _bad(str(exc), prefix + exc.pointer, exc.rule) from None
        for scenario in compiled:
            try:
                pipeline.scenarios.add(scenario)
            except ScenarioError as exc:
                raise MockError(409, str(exc), code="conflict", details={"pointer": exc.pointer}) from None
        shown = [s.as_dict() for s in compiled]
        return ok({"scenarios": shown} if isinstance(given, list) else shown[0], 201)

    @bp.delete("/scenarios")
    def clear_scenarios() -> Response:
        return ok({"removed": current().scenarios.remove()})

    @bp.delete("/scenarios/<scenario_id>")
    def remove_scenario(scenario_id: str) -> Response:
        if not current().scenarios.remove(scenario_id):
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
        entries = current().journal.entries(operation_id=filters.get("operationId"), status=filters.get("status"),
                                           method=filters.get("method"), path_prefix=filters.get("path"),
                                           since=filters.get("since"), limit=filters.get("limit"))
        return ok({"requests": [e.as_dict() for e in entries]})

    @bp.delete("/requests")
    def clear_journal() -> Response:
        current().journal.clear()
        return ok({"cleared": True})

    @bp.post("/reset")
    def reset() -> Response:
        pipeline = current()
        pipeline.scenarios.reset()
        pipeline.journal.clear()
        if drift is not None:
            drift.clear()
        return ok({"scenarios": pipeline.scenarios.list()})

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
