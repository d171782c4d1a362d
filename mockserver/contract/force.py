"""Forcing what can be forced: a target that honours `Prefer: code=` (the mock, Prism) answers any declared
response on request, so after the run every declared error response (and each success the run did not reach) is
asked for once per example request and checked like any other answer (status, media type, body, required
headers, request id, error code). Without this, a `503` nobody could provoke was never checked at all.

Whether the target honours it is asked first: a request it answered during the run is sent again with
`Prefer: code=S` for a status it did not answer; only an answer of status S says yes."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast

import requests
from schemathesis.engine.recorder import Request
from schemathesis.specs.openapi.schemas import OpenApiSchema

from .results import OperationResult, RunResult

PREFER = "Prefer"
_FOR_RANGE = {"1": 100, "2": 200, "3": 300, "4": 400, "5": 500}


def concrete(key: str, declared: Iterable[str]) -> int | None:
    """A status to ask for under a declared response key: itself, the range's first undeclared status (`4XX` as
    400 unless 400 has its own response), or for `default` one no other key covers."""
    explicit = {key for key in declared if key.isdigit()}
    ranges = {key[0] for key in declared if key.upper().endswith("XX")}
    if key.isdigit():
        return int(key)
    if key.upper().endswith("XX") and key[0] in _FOR_RANGE:
        start = _FOR_RANGE[key[0]]
        return next((s for s in range(start, start + 100) if str(s) not in explicit), None)
    if key == "default":
        return next((s for s in (500, 400, 418) if str(s) not in explicit and str(s)[0] not in ranges), None)
    return None


def wanted(op: OperationResult) -> list[int]:
    """The statuses to force on an operation: every declared error response, and each success not yet seen."""
    seen = op.observed()
    statuses = []
    for key in op.declared:
        status = concrete(key, op.declared)
        if status is not None and (status >= 400 or not seen[key]):
            statuses.append(status)
    return sorted(set(statuses))


def honours(op: OperationResult, timeout: float | None) -> bool | None:
    """Whether the target answers `Prefer: code=S` with S, tried once on `op`'s sample request; None when the
    operation has no sample or no status to try."""
    if op.sample is None:
        return None
    answered = {status for status in op.statuses}
    status = next((s for s in wanted(op) if s not in answered), None)
    if status is None:
        return None
    try:
        response = _send(op.sample, {PREFER: f"code={status}"}, timeout)
    except requests.RequestException:
        return False
    return response.status_code == status


def _send(sample: Request, extra: dict[str, str], timeout: float | None) -> requests.Response:
    headers = {name: values[0] for name, values in sample.headers.items() if values}
    return requests.request(sample.method, sample.uri, headers={**headers, **extra}, data=sample.body,
                            timeout=timeout or 10, allow_redirects=False)


def probe(result: RunResult, timeout: float | None) -> str | None:
    """The label of an operation on which the target honoured `Prefer: code=`, or None (it ignored it, or
    nothing could be tried)."""
    for op in result.operations.values():
        verdict = honours(op, timeout)
        if verdict is not None:
            return op.label if verdict else None
    return None


def force(schema: OpenApiSchema, result: RunResult, headers: dict[str, str],
          execute: Callable[[OpenApiSchema], None]) -> int:
    """One examples-phase run (`execute`, which folds its answers into `result`) per status to force, over the
    operations that declare it, each call with `Prefer: code=S`. Returns how many statuses were forced."""
    by_status: dict[int, list[str]] = {}
    for op in result.operations.values():
        for status in wanted(op):
            by_status.setdefault(status, []).append(op.label)
    config = schema.config.phases
    examples = config.examples
    phases = [name for name in ("examples", "coverage", "fuzzing", "stateful") if getattr(config, name).enabled]
    fill_missing = examples.fill_missing
    try:
        config.update(phases=["examples"])
        examples.fill_missing = True  # an operation without examples still gets a call
        for status, labels in sorted(by_status.items()):
            schema.config.update(headers={**headers, PREFER: f"code={status}"})
            # an exclude filter: Schemathesis ORs include filters, so one beside --operation's `name` filter
            # would force the status on every operation chosen there, declared or not
            execute(cast(OpenApiSchema, schema.exclude(_unlabelled(set(labels)))))
    finally:
        schema.config.update(headers=headers)
        config.update(phases=phases)
        examples.fill_missing = fill_missing
    return len(by_status)


def forced(response: Any) -> bool:
    """Whether an answer is one the run asked for with `Prefer: code=` (its request carried the header)."""
    request = getattr(response, "request", None)
    return request is not None and PREFER in (getattr(request, "headers", None) or {})


def _unlabelled(chosen: set[str]) -> Callable[[Any], bool]:
    """A schemathesis filter of the operations whose label is not among `chosen`."""

    def unlabelled(context: Any) -> bool:
        return context.operation.label not in chosen

    return unlabelled
