"""`--data FILE`: request values a team knows exist on its deployment, for what the run cannot discover.

```yaml
parameters:                      # by parameter name, for every operation that has it
  testSetId: [acme.a, acme.b]    # one value or a list; the n-th values of several parameters go together
  version: [1.2.0, 2.0.0]
operations:                      # by operationId or label: values that go together, one mapping per request
  listAgentTestSetCases:
    - {agentId: acme.drafting, projectId: 2489e9ad-2ee2-8e00-8ec9-32d5f69181c0}
```"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base.errors import LoadError
from ..base.pointers import pointer_join
from ..spec.documents import read_document
from ..spec.index import Operation, SpecIndex
from .schema import nearest

Combo = dict[tuple[str, str], Any]  # (location, name) -> value
_SCALARS = (str, int, float, bool)


class DataError(ValueError):
    """A `--data` file that cannot be read or names what the description does not have."""


def load(path: Path, spec: SpecIndex) -> dict[str, list[Combo]]:
    """By operationId, the combinations of request values the file gives (the operation's own first)."""
    try:  # read as the description is: a problem named with its line, never the file's text
        document = read_document(path)
    except LoadError as exc:
        raise DataError(f"--data {exc}") from None
    data = document.data or {}
    if not isinstance(data, dict) or set(data) - {"parameters", "operations"}:
        raise DataError(f"--data {path}: a mapping of `parameters` and `operations` is expected")
    parameters = data.get("parameters") or {}
    operations = data.get("operations") or {}
    if not isinstance(parameters, dict) or not isinstance(operations, dict):
        raise DataError(f"--data {path}: `parameters` and `operations` are mappings")
    by_label = {f"{op.method.upper()} {op.path}": op for op in spec.operations.values()}
    for name in operations:
        if name not in spec.operations and name not in by_label:
            where = f"--data {path}, line {document.line(pointer_join('/operations', name))}"
            raise DataError(f"{where}: no operation {name} in the description (nearest: "
                            f"{nearest(str(name), [*spec.operations, *by_label])})")
    names = {p.name for op in spec.operations.values() for p in op.parameters}
    for name in parameters:
        if name not in names:  # it would be sent nowhere, silently
            where = f"--data {path}, line {document.line(pointer_join('/parameters', name))}"
            raise DataError(f"{where}: no operation has a parameter {name} (nearest: {nearest(str(name), names)})")
    found: dict[str, list[Combo]] = {}
    for op in spec.operations.values():
        own = operations.get(op.id) or operations.get(f"{op.method.upper()} {op.path}") or []
        if not isinstance(own, list):
            raise DataError(f"--data {path}: operations.{op.id} is a list of mappings")
        combos = [_combo(op, entry, path) for entry in own] + _shared(op, parameters)
        if combos:
            found[op.id] = [combo for combo in combos if combo]
    return found


def _combo(op: Operation, entry: Any, path: Path) -> Combo:
    if not isinstance(entry, dict):
        raise DataError(f"--data {path}: each request of operations.{op.id} is a mapping of parameter values")
    locations = {p.name: p.location for p in op.parameters}
    missing = [name for name in entry if name not in locations]
    if missing:
        raise DataError(f"--data {path}: {op.id} has no parameter {', '.join(map(str, missing))}")
    return {(locations[name], name): value for name, value in entry.items() if isinstance(value, _SCALARS)}


def _shared(op: Operation, parameters: dict[str, Any]) -> list[Combo]:
    """The file's per-parameter values this operation takes, the n-th of each together."""
    lists = {(p.location, p.name): _as_list(parameters[p.name]) for p in op.parameters if p.name in parameters}
    count = max((len(values) for values in lists.values()), default=0)
    return [{key: values[i % len(values)] for key, values in lists.items() if values} for i in range(count)]


def _as_list(value: Any) -> list[Any]:
    values = value if isinstance(value, list) else [value]
    return [v for v in values if isinstance(v, _SCALARS)]
