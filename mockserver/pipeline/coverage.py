"""Consumer coverage: what a client's calls exercised of the description, read from the request journal. For each
operation, the declared statuses it answered, the query parameters it was sent and the enum values of its
parameters that were used, with those never exercised; and a total percentage. It answers "did our frontend's
tests ever see a 503 from listTestSets?". Computed from the calls the store counted (every call since the last
reset, not only those the bounded journal still holds)."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from ..base.errors import MockError
from ..spec.index import Operation, Parameter, SpecIndex
from ..state.records import Call
from .request_validation import DELIMITERS, items_schema
from .router import Router

ENUM_LOCATIONS = ("query", "path", "header")  # cookies are masked in the journal: their values cannot be read


@dataclass
class EnumParameter:
    parameter: Parameter
    values: tuple[str, ...]  # as they stand in a URL or header: `true`, `42`, `accuracy`
    is_array: bool


@dataclass
class Targets:
    """What one operation offers to exercise, worked out once per description."""

    operation: Operation
    query: list[str]
    enums: list[EnumParameter]


@dataclass
class OperationCoverage:
    """What the calls to one operation exercised of its targets."""

    targets: Targets
    calls: int = 0
    statuses: Counter[str] = field(default_factory=Counter)  # by declared key: "200", "4XX", "default"
    undeclared: Counter[int] = field(default_factory=Counter)  # statuses the description does not give it
    query: Counter[str] = field(default_factory=Counter)
    enums: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # (in, parameter, value)
    violated: int = 0  # calls let through despite breaking the description (`--request-validation warn`)

    def as_dict(self) -> dict[str, Any]:
        op, targets = self.targets.operation, self.targets
        enums = [(e.parameter, v, self.enums[(e.parameter.location, e.parameter.name, v)])
                 for e in targets.enums for v in e.values]
        items = ([self.statuses[s] for s in op.declared_statuses] + [self.query[q] for q in targets.query]
                 + [calls for _, _, calls in enums])  # the unit of the percentage
        covered = sum(1 for calls in items if calls)
        return {
            "operationId": op.id, "method": op.method, "path": op.path, "calls": self.calls,
            "violatingCalls": self.violated,
            "covered": covered, "total": len(items), "percent": _percent(covered, len(items)),
            "statuses": [{"status": s, "calls": self.statuses[s]} for s in op.declared_statuses],
            "undeclaredStatuses": [{"status": s, "calls": n} for s, n in sorted(self.undeclared.items())],
            "queryParameters": [{"name": q, "calls": self.query[q]} for q in targets.query],
            "enumValues": [{"in": p.location, "parameter": p.name, "value": v, "calls": calls}
                           for p, v, calls in enums],
        }


def _percent(covered: int, total: int) -> float:
    return round(100 * covered / total, 1) if total else 100.0


@dataclass
class Report:
    operations: list[OperationCoverage]
    calls: int
    unmatched: int  # calls that reached no operation: unknown path, wrong method, a limit
    journal_full: bool  # some calls are counted in `calls` only (past COUNTED_KINDS distinct ones)

    def as_dict(self) -> dict[str, Any]:
        operations = [op.as_dict() for op in self.operations]
        covered, total = sum(o["covered"] for o in operations), sum(o["total"] for o in operations)
        return {"calls": self.calls, "unmatched": self.unmatched, "journalFull": self.journal_full,
                "violatingCalls": sum(o["violatingCalls"] for o in operations),
                "covered": covered, "total": total, "percent": _percent(covered, total), "operations": operations}


class CoverageModel:
    """The targets of a description, built once; `measure` folds journal entries over them."""

    def __init__(self, spec: SpecIndex, router: Router) -> None:
        self._router = router
        self._targets = [Targets(op, [p.name for p in op.parameters if p.location == "query"],
                                 [e for p in op.parameters if (e := _enum(p, spec)) is not None])
                         for op in spec.operations.values()]
        # the (lower-case) headers whose values coverage counts: the journal keeps them for the calls that leave it
        self.header_names = frozenset(e.parameter.name.lower() for t in self._targets for e in t.enums
                                      if e.parameter.location == "header")

    def measure(self, calls: Mapping[Call, int], uncounted: int = 0) -> Report:
        """Coverage of the calls since the last reset (`Journal.calls()`), and of `uncounted` more that were
        counted only as a number."""
        seen = {t.operation.id: OperationCoverage(t) for t in self._targets}
        unmatched = 0
        for call, times in calls.items():
            coverage = seen.get(call.operation_id or "")
            if coverage is None:
                unmatched += times
            else:
                self._count(coverage, call, times)
        return Report(list(seen.values()), sum(calls.values()) + uncounted, unmatched, uncounted > 0)

    def _count(self, coverage: OperationCoverage, call: Call, times: int) -> None:
        targets = coverage.targets
        op = targets.operation
        coverage.calls += times
        coverage.violated += times if call.violated else 0
        response = op.response(call.status)  # its `status` is its key: "200", "4XX", "default"
        if response is None:
            coverage.undeclared[call.status] += times
        else:
            coverage.statuses[response.status] += times
        query: dict[str, list[str]] = {}
        for name, value in parse_qsl(call.query, keep_blank_values=True):
            query.setdefault(name.split("[", 1)[0], []).append(value)  # deepObject: `filter[name]` is `filter`
        for name in targets.query:
            if name in query:
                coverage.query[name] += times
        if not targets.enums:
            return
        path_params = self._path_params(op, call.path, query) if any(
            e.parameter.location == "path" for e in targets.enums) else {}
        headers = dict(call.headers)
        for enum in targets.enums:
            p = enum.parameter
            raw = {"query": query.get(p.name),
                   "path": [path_params[p.name]] if p.name in path_params else None,
                   "header": [headers[p.name.lower()]] if p.name.lower() in headers else None}[p.location]
            for value in set(_split(enum, raw or [])) & set(enum.values):
                coverage.enums[(p.location, p.name, value)] += times

    def _path_params(self, op: Operation, path: str, query: dict[str, list[str]]) -> dict[str, str]:
        try:
            return self._router.match(op.method, path, query).path_params
        except MockError:
            return {}


def _split(enum: EnumParameter, raw: list[str]) -> list[str]:
    """The values of an array parameter as the request spelled them (`kind=a&kind=b`, `kind=a,b`, `a|b`)."""
    p = enum.parameter
    if not enum.is_array or (p.location == "query" and p.explode and p.style == "form"):
        return raw
    return [part for value in raw for part in value.split(DELIMITERS.get(p.style, ","))]


def _enum(param: Parameter, spec: SpecIndex) -> EnumParameter | None:
    """The enum of a parameter's schema, or of its array's items; None when its values are not enumerated."""
    if param.location not in ENUM_LOCATIONS or param.schema is None or param.json_content:
        return None
    node, uri = spec.docs.deref(param.schema.node, param.schema.uri)
    kind = node.get("type") if isinstance(node, dict) else None
    is_array = "array" in (kind if isinstance(kind, list) else [kind])  # a nullable array is ["array", "null"]
    if is_array:
        node, uri = spec.docs.deref(*items_schema(node, uri, spec.docs.resolve))
    values = node.get("enum") if isinstance(node, dict) else None
    if not isinstance(values, list):
        return None
    return EnumParameter(param, tuple(v if isinstance(v, str) else json.dumps(v) for v in values if v is not None),
                         is_array)
