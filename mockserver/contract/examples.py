"""Explicit examples from the fixtures, so generated calls reach real `200` answers and not only `404`s.

An operation's fixture says which items its answer needs: `require` rules and the `where` of its `list` or `item`
(`{field: id, equals: {path: testSetId}}`, `{field: tenantId, equals: {caller: tenant}}`, literal filters …).
Every request value bound by an `equals` is taken from one item that passes ALL the rule's filters, judged by the
engine's own rule code for the caller of the run's token, so a combination (test set id + version) really exists.
The values go into the description's parameters as named `examples`; Schemathesis pairs equally-named examples
of different parameters into one request."""
from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..core.auth import Authenticator, Caller
from ..core.documents import DocumentSet
from ..core.fixtures import FixtureSet
from ..core.rules import LOCATIONS, Filter, field_getter
from ..core.spec import Operation, SpecIndex
from .knowledge import resolve_local, rule_context

PER_OPERATION = 3  # request value combinations per operation: enough to vary, few enough to stay quick
Binding = tuple[tuple[str, str], ...]  # ((location, name), value) pairs, hashable to keep them unique


def caller_for(auth: Authenticator, token: str | None) -> Caller:
    """Who the run's token is, per the tokens the fixtures declare (an undeclared token is a caller of the default
    tenant, as the mock treats it)."""
    declared = auth.tokens.get(token) if token else None
    if declared:
        return Caller(declared.caller, declared.tenant, True, "")
    return Caller("anonymous", auth.default_tenant, False, "")


def usable_token(auth: Authenticator) -> str | None:
    """The first token the fixtures declare that is neither expired nor revoked: the in-process mock's caller."""
    return next((name for name, t in auth.tokens.items() if not t.expired and not t.revoked), None)


@dataclass
class _Rule:
    """One set of filters an item of one collection must pass, and the request values its `equals` bind."""

    items: list[dict[str, Any]]
    filters: list[Filter]
    binds: list[tuple[tuple[str, str], Any]]  # ((location, name), getter of the item's field)

    @classmethod
    def parse(cls, fixtures: FixtureSet, spec: dict[str, Any]) -> _Rule | None:
        collection = fixtures.collections.get(spec.get("from", ""))
        if collection is None:
            return None
        where = spec.get("where") or []
        binds = [((loc, f["equals"][loc]), field_getter(f["field"])) for f in where if "when" not in f
                 for loc in LOCATIONS if loc != "caller" and isinstance(f.get("equals"), dict)
                 and isinstance(f["equals"].get(loc), str)]
        return cls(collection.items, [Filter(f) for f in where], binds)

    def extend(self, binding: Binding, caller: Caller) -> Counter[Binding]:
        """Every binding this rule allows on top of `binding`, with how many items pass under it."""
        found: Counter[Binding] = Counter()
        fixed = dict(binding)
        for item in self.items:
            values = dict(fixed)
            for key, get in self.binds:
                value = get(item)
                if key not in values and isinstance(value, (str, int, float, bool)):
                    values[key] = value
            if _passes(item, self.filters, values, caller):
                found[tuple(values.items())] += 1
        return found


def _passes(item: dict[str, Any], filters: list[Filter], values: dict[tuple[str, str], Any], caller: Caller) -> bool:
    ctx = rule_context(values, caller)
    tests = [f.bind(ctx) for f in filters]
    return all(test is None or test(item) for test in tests)


def derive(fixtures: FixtureSet, operation_id: str, caller: Caller) -> list[dict[tuple[str, str], Any]]:
    """Up to PER_OPERATION combinations of request values for which every rule of the operation finds an item.
    The list's (or item's) rule comes first and its combinations are ranked by how many items they select, so
    the longest lists come first: their pages have a next page, and the cursor checks get to walk them."""
    located = fixtures.operations.get(operation_id)
    config = located.value if located else {}
    specs = [config[k] for k in ("list", "item") if isinstance(config.get(k), dict)] + list(config.get("require") or [])
    rules = [rule for rule in (_Rule.parse(fixtures, s) for s in specs) if rule is not None]
    if not any(rule.binds for rule in rules):
        return []
    ranked = [binding for binding, _ in rules[0].extend((), caller).most_common()]
    for rule in rules[1:]:  # the others only need one item each to agree
        ranked = [extended for binding in ranked for extended in list(rule.extend(binding, caller))[:1]]
    return [dict(binding) for binding in ranked if binding][:PER_OPERATION]


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
