"""`--data FILE`: request values a team knows exist on its deployment, for what the run cannot discover.

```yaml
parameters:                      # by parameter name, for every operation that has it
  testSetId: [acme.a, acme.b]    # one value or a list; the n-th values of several parameters go together
  version: [1.2.0, 2.0.0]
operations:                      # by operationId or label: values that go together, one mapping per request
  listAgentTestSetCases:
    - {agentId: acme.drafting, projectId: 2489e9ad-2ee2-8e00-8ec9-32d5f69181c0}
paths:                           # by path family: every operation of the path and the paths below it
  /flows/{id}:                   # (`id` of a flow, where `/users/{id}` takes another `id`)
    - {id: flow-1}
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
    if not isinstance(data, dict) or set(data) - {"parameters", "operations", "paths"}:
        raise DataError(f"--data {path}: a mapping of `parameters`, `operations` and `paths` is expected")
    parameters = data.get("parameters") or {}
    operations = data.get("operations") or {}
    families = data.get("paths") or {}
    if not all(isinstance(part, dict) for part in (parameters, operations, families)):
        raise DataError(f"--data {path}: `parameters`, `operations` and `paths` are mappings")
    by_label = {f"{op.method.upper()} {op.path}": op for op in spec.operations.values()}
    for name in operations:
        if name not in spec.operations and name not in by_label:
            where = f"--data {path}, line {document.line(pointer_join('/operations', name))}"
            raise DataError(f"{where}: no operation {name} in the description (nearest: "
                            f"{nearest(str(name), [*spec.operations, *by_label])})")
    for family, entries in families.items():
        where = f"--data {path}, line {document.line(pointer_join('/paths', family))}"
        members = [op for op in spec.operations.values() if _in_family(op.path, str(family))]
        if not members:
            raise DataError(f"{where}: no path {family} in the description (nearest: "
                            f"{nearest(str(family), {op.path for op in spec.operations.values()})})")
        if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
            raise DataError(f"{where}: paths.{family} is a list of mappings of parameter values")
        taken = {p.name for op in members for p in op.parameters}
        unused = sorted({str(name) for entry in entries for name in entry if name not in taken})
        if unused:
            raise DataError(f"{where}: no operation of {family} has a parameter {', '.join(unused)}")
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
        family = [_taken(op, entry) for name, entries in families.items() if _in_family(op.path, str(name))
                  for entry in entries]
        combos = [_combo(op, entry, path) for entry in own] + family + _shared(op, parameters)
        if combos:
            found[op.id] = [combo for combo in combos if combo]
    return found


def _combo(op: Operation, entry: Any, path: Path) -> Combo:
    if not isinstance(entry, dict):
        raise DataError(f"--data {path}: each request of operations.{op.id} is a mapping of parameter values")
    names = {p.name for p in op.parameters}
    missing = [name for name in entry if name not in names]
    if missing:
        raise DataError(f"--data {path}: {op.id} has no parameter {', '.join(map(str, missing))}")
    return _taken(op, entry)


def _in_family(path: str, family: str) -> bool:
    """Whether an operation's path is the family's or one below it (`/flows/{id}/steps` of `/flows/{id}`)."""
    return path == family or path.startswith(family.rstrip("/") + "/")


def _taken(op: Operation, entry: dict[str, Any]) -> Combo:
    """The values of a family's entry that this operation has parameters for."""
    locations = {p.name: p.location for p in op.parameters}
    return {(locations[name], name): value for name, value in entry.items()
            if name in locations and isinstance(value, _SCALARS)}


def _shared(op: Operation, parameters: dict[str, Any]) -> list[Combo]:
    """The file's per-parameter values this operation takes, the n-th of each together."""
    lists = {(p.location, p.name): _as_list(parameters[p.name]) for p in op.parameters if p.name in parameters}
    count = max((len(values) for values in lists.values()), default=0)
    return [{key: values[i % len(values)] for key, values in lists.items() if values} for i in range(count)]


def _as_list(value: Any) -> list[Any]:
    values = value if isinstance(value, list) else [value]
    return [v for v in values if isinstance(v, _SCALARS)]
