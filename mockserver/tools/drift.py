"""Drift: where a real deployment and its description disagree. Every exchange the proxy forwards is checked with
the mock's own machinery (router, auth, request validation, the compiled response schemas), and each violation is
counted by operation, status, place and rule with one example, so a team sees at a glance what to fix and where
(the API, the description, or the client that sent the request)."""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..base.errors import MockError
from ..base.http import MockRequest, bare_media_type, is_json
from ..pipeline.request_validation import ValidRequest, match_media_type
from ..pipeline.response_validation import header_problems
from ..spec.index import Operation
from ..spec.schemas import instance_pointer, iter_errors

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline
    from ..spec.secrets import Secrets
    from ..state import Store

_INDEX = re.compile(r"/\d+(?=/|$)")
_ROUTE_RULES = {404: ("/path", "path"), 405: ("/method", "method")}


@dataclass(frozen=True)
class Violation:
    side: str  # "request" (the client broke the description) or "response" (the deployment did)
    pointer: str  # into the exchange: /query/limit, /body/data/3/kind, /headers/Retry-After, /status
    rule: str
    message: str

    @property
    def place(self) -> str:
        """The pointer with array indices as `*`: the same breach in every item of a page is one row."""
        return _INDEX.sub("/*", self.pointer)


@dataclass
class Exchange:
    """One request, the deployment's answer, and what the description says of both."""

    request: MockRequest
    status: int
    headers: dict[str, str]
    body: bytes
    operation: Operation | None = None
    path_params: dict[str, str] = field(default_factory=dict)
    valid: ValidRequest | None = None  # the request as validated; None when it broke the description
    payload: Any = None  # the body read as JSON
    media_type: str | None = None  # the declared media type the body came as
    request_id: str | None = None  # the deployment's request id header, to find the exchange in its logs
    violations: list[Violation] = field(default_factory=list)

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


def check(pipeline: Pipeline, request: MockRequest, status: int, headers: dict[str, str], body: bytes) -> Exchange:
    """The exchange with every violation of the description, request side first."""
    exchange = Exchange(request, status, headers, body)
    exchange.request_id = exchange.header(pipeline.request_id_header)
    try:
        resolved = pipeline.resolve(request, limits=False, collect=True)  # the mock's own front half
    except MockError as error:
        pointer, rule = _ROUTE_RULES.get(error.status, ("/path", "encoding"))
        exchange.violations.append(Violation("request", pointer, rule, error.message))
        return exchange
    op = exchange.operation = resolved.operation
    exchange.path_params, exchange.valid = resolved.path_params, resolved.valid
    for stage, refusal in resolved.errors:
        if stage == "auth":
            exchange.violations.append(Violation("request", "/security", "security", refusal.message))
        else:
            exchange.violations.extend(_request_violations(refusal))
    exchange.payload, exchange.media_type, found = read_response(op, status, exchange.header("content-type"), body,
                                                                 skip_body=request.method == "HEAD")
    exchange.violations.extend(found)
    exchange.violations.extend(_header_violations(op, status, exchange))
    return exchange


def _request_violations(error: MockError) -> list[Violation]:
    if error.status == 415:
        return [Violation("request", "/headers/content-type", "content-type", error.message)]
    found = []
    for v in (error.details or {}).get("violations", []):
        where = "/body" if v["in"] == "body" else f"/{v['in']}" + (f"/{v['parameter']}" if v["parameter"] else "")
        found.append(Violation("request", where + v["pointer"], v["rule"], v["message"]))
    return found


def read_response(op: Operation, status: int, content_type: str | None, body: bytes,
                  skip_body: bool = False) -> tuple[Any, str | None, list[Violation]]:
    """The body read as JSON (when it is), the declared media type it falls under, and what breaks the description
    in status, media type and body."""
    response = op.response(status)
    if response is None:
        return None, None, [Violation("response", "/status", "status", f"{op.id} does not declare status {status}; it "
                                f"declares {', '.join(op.declared_statuses)}")]
    payload = None
    if is_json(content_type) and body:
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return None, None, [Violation("response", "/body", "json", f"the body is not JSON: {exc}")]
    if skip_body or not response.content:
        return payload, None, []
    if not body:
        return None, None, [Violation("response", "/body", "required", f"{op.id} {status} declares a body; none came")]
    media = match_media_type(bare_media_type(content_type), response.content)
    if media is None:
        return payload, None, [Violation("response", "/headers/content-type", "content-type",
                                   f"{content_type or '(none)'} is not declared for {op.id} {status}; it declares "
                                   + ", ".join(response.content))]
    return payload, media.name, body_violations(op, status, media.name, payload) if is_json(media.name) else []


def body_violations(op: Operation, status: int, media_type: str, payload: Any) -> list[Violation]:
    """The payload against the declared schema of that status and media type (every error, not just the first)."""
    response = op.response(status)
    media = response.content.get(media_type) if response else None
    if media is None or media.schema is None:
        return []
    return [Violation("response", "/body" + instance_pointer(error), str(error.validator), error.message)
            for error in iter_errors(media.schema.validator, payload)]


def _header_violations(op: Operation, status: int, exchange: Exchange) -> list[Violation]:
    response = op.response(status)
    if response is None:
        return []
    return [Violation("response", f"/headers/{header.name}", "required", f"the required header {header.name} is "
                      "missing") if error is None else
            Violation("response", f"/headers/{header.name}", str(error.validator), error.message)
            for header, error in header_problems(response, exchange.header)]


class DriftLog:
    """Violations counted by (operation, status, side, place, rule), each kind with its first example. The counts
    live in the state store (`Store.count_drift`), so every worker and replica of a proxy sharing one adds to the
    same report; the store bounds them (`state.DRIFT_KINDS` kinds; further new kinds are counted in `overflow`)."""

    def add(self, exchange: Exchange, store: Store, secrets: Secrets) -> None:
        """Count one exchange; a breach repeated inside it (every item of a page) counts once. Its example shows
        the query with its credentials masked (`secrets`)."""
        op = exchange.operation
        method, path = exchange.request.method, op.path if op else exchange.request.path
        kinds: dict[str, dict[str, Any]] = {}
        for v in exchange.violations:
            row = {"operationId": op.id if op else None, "method": method, "path": path,
                   "status": exchange.status, "in": v.side, "pointer": v.place, "rule": v.rule}
            kind = json.dumps(list(row.values()))
            if kind not in kinds:
                kinds[kind] = {**row, "example": self._example(exchange, v, secrets)}
        store.count_drift(kinds)

    @staticmethod
    def _example(exchange: Exchange, v: Violation, secrets: Secrets) -> dict[str, Any]:
        request = exchange.request
        query = f"?{secrets.query_string(request.query_string)}" if request.query_string else ""
        return {"pointer": v.pointer, "message": v.message, "request": f"{request.method} {request.path}{query}",
                "requestId": exchange.request_id,
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    @staticmethod
    def summary(store: Store) -> dict[str, Any]:
        """What GET /__mock/drift answers: totals, then one row per kind of violation, most frequent first."""
        store.sync()
        counts = store.drift()
        rows = sorted(counts.kinds.values(), key=lambda row: -row[1])
        return {"exchanges": counts.exchanges, "drifting": counts.drifting, "overflow": counts.overflow,
                "violations": [{**{k: v for k, v in row.items() if k != "example"}, "count": n,
                                "example": row["example"]} for row, n in rows]}

    @staticmethod
    def clear(store: Store) -> None:
        """Forget the drift counted so far, by every process."""
        store.sync()
        store.clear_drift()
