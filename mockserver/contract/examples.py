"""Explicit examples from the fixtures, so generated calls reach real `200` answers and not only `404`s.

An operation's fixture says which items its answer needs: `require` rules and the `where` of its `list` or `item`
(`{field: id, equals: {path: testSetId}}`, `{field: tenantId, equals: {caller: tenant}}`, literal filters …).
Every request value bound by an `equals` is taken from one item that passes ALL the rule's filters, judged by the
engine's own rule code for the caller of the run's token, so a combination (test set id + version) really exists.
The values go into the description's parameters as named `examples`; Schemathesis pairs equally-named examples
of different parameters into one request."""
from __future__ import annotations

import copy
from typing import Any

from ..fixtures.loading import FixtureSet
from ..pipeline.auth import Caller
from ..pipeline.fixture_values import caller_for, derive, usable_token
from ..spec.documents import DocumentSet
from ..spec.index import Operation, SpecIndex
from .knowledge import resolve_local

__all__ = ["add_examples", "caller_for", "derive", "usable_token", "write"]

def add_examples(docs: DocumentSet, spec: SpecIndex, fixtures: FixtureSet, caller: Caller) -> dict[str, int]:
    """Write the derived values into the description as read (`docs.root.data`) as named examples of each operation's
    parameters (`fixtures-1`, `fixtures-2` …). A parameter behind a `$ref` is copied into the operation first,
    so the examples stay with it. Returns how many combinations each operation got."""
    raw = docs.root.data
    added: dict[str, int] = {}
    for op in spec.operations.values():
        combos = derive(fixtures, op.id, caller)
        node = (raw.get("paths") or {}).get(op.path, {}).get(op.method.lower())
        if not combos or not isinstance(node, dict):
            continue
        named = [(f"fixtures-{i}", combo) for i, combo in enumerate(combos, 1)]
        missing = _missing(op, combos[0])
        if missing is not None:
            named.append(("fixtures-missing", missing))
        write(docs, op, named, "from the fixtures")
        added[op.id] = len(combos)
    return added


def write(docs: DocumentSet, op: Operation, named: list[tuple[str, dict[tuple[str, str], Any]]], summary: str) -> None:
    """Put each named combination of request values into the operation's parameters (in the description as
    read) as examples of that name: Schemathesis sends equally-named examples of different parameters together."""
    node = (docs.root.data.get("paths") or {}).get(op.path, {}).get(op.method.lower())
    if not isinstance(node, dict):
        return
    for example, combo in named:
        for (location, name), value in combo.items():
            parameter = _own_parameter(docs, op.path, node, location, name)
            if parameter is not None:
                _add_example(parameter, example, value, summary)


def _missing(op: Operation, combo: dict[tuple[str, str], Any]) -> dict[tuple[str, str], Any] | None:
    """The first combination with one path value changed into one no fixture holds but the schema still takes
    (`work` -> `workw`, `1.2.0` -> `1.2.00`): so every run also reaches the operation's not-found answer."""
    schemas = {("path", p.name): p.schema for p in op.parameters if p.location == "path" and p.schema}
    for key, value in combo.items():
        schema = schemas.get(key)
        if schema is None or not isinstance(value, str) or not value:
            continue
        for candidate in (value + value[0], value + value[-1], value[::-1]):
            if candidate != value and schema.validator.is_valid(candidate):
                return {**combo, key: candidate}
    return None


def _own_parameter(docs: DocumentSet, path: str, node: dict[str, Any], location: str,
                   name: str) -> dict[str, Any] | None:
    """The operation's own (inline) definition of a parameter, copying a `$ref`'d or path-level one into it.
    Only references inside the description's own file are followed: a parameter from another file gets none."""
    own = node.setdefault("parameters", [])
    inherited = docs.root.data["paths"][path].get("parameters") or []
    for entries, owned in ((own, True), (inherited, False)):
        for index, entry in enumerate(entries):
            resolved = resolve_local(docs, entry)
            if not (isinstance(resolved, dict) and resolved.get("in") == location
                    and _fold(str(resolved.get("name")), location) == _fold(name, location)):
                continue
            if owned and resolved is entry:
                return entry
            inline = copy.deepcopy(resolved)
            if owned:
                own[index] = inline
            else:
                own.append(inline)
            return inline
    return None


def _fold(name: str, location: str) -> str:
    return name.lower() if location == "header" else name  # header names are case-insensitive


def _add_example(parameter: dict[str, Any], name: str, value: Any, summary: str) -> None:
    examples = parameter.setdefault("examples", {})
    if "example" in parameter:  # `example` and `examples` exclude each other: keep the description's as one
        examples["description"] = {"value": parameter.pop("example")}
    examples[name] = {"summary": summary, "value": value}
