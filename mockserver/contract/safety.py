"""What a run may change on its target. A full run calls every operation, writes included, and probes each path
with methods it does not declare (`DELETE`, `PUT` …): against a real deployment it may create, change or delete
data. `--read-only` keeps to safe methods (RFC 9110: GET, HEAD, OPTIONS, TRACE aside): unsafe operations are left
out, and the probes use safe methods only."""
from __future__ import annotations

from typing import Any, cast

from schemathesis import Case
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.schemas import OpenApiSchema

SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
UNSAFE = ["POST", "PUT", "PATCH", "DELETE", "TRACE", "QUERY", "CONNECT"]


def read_only(schema: OpenApiSchema) -> OpenApiSchema:
    """`schema` without its unsafe operations, its probes of other methods limited to safe ones, and a guard that
    drops any other case before it is sent."""
    coverage = schema.config.phases.coverage
    coverage.unexpected_methods = {method for method in coverage.unexpected_methods if method.upper() in SAFE}
    safe = cast(OpenApiSchema, schema.exclude(method=UNSAFE))
    safe.hook("filter_case")(only_safe)
    return safe


def only_safe(context: Any, case: Case) -> bool:
    """Schemathesis `filter_case` hook: no case with an unsafe method leaves."""
    return case.method.upper() in SAFE


def changes(schema: OpenApiSchema) -> str:
    """What a full run against a real deployment may change, for the report."""
    unsafe = sorted(op.label for op in _operations(schema) if op.method.upper() not in SAFE)
    shown = ", ".join(unsafe[:5]) + (f" and {len(unsafe) - 5} more" if len(unsafe) > 5 else "")
    calls = f"calls {len(unsafe)} unsafe operation(s) ({shown}) and " if unsafe else ""
    return (f"this run may change the target: it {calls}probes every path with methods it does not declare "
            "(PUT, DELETE …); --read-only sends GET, HEAD and OPTIONS only")


def _operations(schema: OpenApiSchema) -> list[Any]:
    return [loaded.ok() for loaded in schema.get_all_operations() if isinstance(loaded, Ok)]
