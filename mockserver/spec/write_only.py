"""`writeOnly` properties (a password, an IP address to create a record with) are sent by clients and never
answered: OpenAPI says they SHOULD NOT be in a response, and contract tools (Schemathesis) treat one there as a
failure. Examples and generated data are made from the same schemas as requests, so they are cut here before
they are served."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..base.bounded import BoundedCache
from ..base.pointers import pointer_join
from .documents import RefError
from .schemas import Resolve

_MAX_DEPTH = 64  # of schemas followed for one value without reaching a deeper instance (a `$ref` loop)
_CUT: Any = object()  # `_cut`'s default: leave the property out (else: its value replaced by this one)
_PLANS = 4096  # places of values whose plans are cached

Schemas = list[tuple[Any, str]]


@dataclass(frozen=True)
class _Plan:
    """What `_cut` does at one place of a value, which its schemas alone decide (not the value): made once per
    place, not once per value cut there."""

    schemas: tuple[tuple[Any, str], ...]  # held, so that the ids of its nodes, the plan's key, are never another's
    props: dict[str, Schemas]  # each declared property's schemas
    cut: frozenset[str]  # the properties declared `writeOnly`
    items: Schemas  # an array's items' schemas


def _write_only(node: dict[str, Any]) -> bool:
    return node.get("writeOnly") is True


class WriteOnly:
    """Cuts the `writeOnly` properties out of an answer. Whether a schema can reach one at all is worked out once
    per schema, so answers whose schemas have none (nearly all of them) cost a dictionary lookup."""

    def __init__(self, resolve: Resolve) -> None:
        self._resolve = resolve
        self._reaches: dict[str, bool] = {}
        self._plans: BoundedCache[tuple[tuple[int, str], ...], _Plan] = BoundedCache(_PLANS)

    def reaches(self, node: Any, uri: str) -> bool:
        """Whether any `writeOnly` keyword is reachable from the schema at `uri` (through `$ref`s too)."""
        known = self._reaches.get(uri)
        if known is None:
            known = self._reaches[uri] = self.search(node, uri, _write_only)
        return known

    def search(self, node: Any, uri: str, found: Callable[[dict[str, Any]], bool]) -> bool:
        """Whether any schema reachable from the one at `uri` (through `$ref`s too) is `found`."""
        stack, seen = [(node, uri)], set()
        while stack:
            node, uri = stack.pop()
            if isinstance(node, list):
                stack.extend((sub, uri) for sub in node)
                continue
            if not isinstance(node, dict) or id(node) in seen:
                continue
            seen.add(id(node))
            if found(node):
                return True
            if isinstance(node.get("$ref"), str):
                try:
                    stack.append(self._resolve(node["$ref"], uri))
                except RefError:
                    continue
            stack.extend((sub, uri) for key, sub in node.items() if key not in ("$ref", "example", "examples",
                                                                                "default", "enum", "const"))
        return False

    def cut(self, value: Any, node: Any, uri: str) -> tuple[Any, list[str]]:
        """The value without its `writeOnly` properties, and the JSON pointers of those cut (for a warning)."""
        if not self.reaches(node, uri):
            return value, []
        cut: list[str] = []
        return self._cut(value, [(node, uri)], "", cut), cut

    def mask(self, value: Any, node: Any, uri: str, masked: str) -> Any:
        """The value with each `writeOnly` property's value replaced by `masked` (the key kept): what a journal
        may keep of a request that carried a password."""
        if not self.reaches(node, uri):
            return value
        return self._cut(value, [(node, uri)], "", [], masked)

    def _cut(self, value: Any, schemas: Schemas, pointer: str, cut: list[str], keep: Any = _CUT) -> Any:
        if isinstance(value, dict):
            plan = self._plan(schemas)
            result = {}
            for name, item in value.items():
                if name in plan.cut:
                    cut.append(pointer_join(pointer, name))
                    if keep is not _CUT:
                        result[name] = keep
                    continue
                subs = plan.props.get(name)
                result[name] = self._cut(item, subs, pointer_join(pointer, name), cut, keep) if subs else item
            return result
        if isinstance(value, list):
            items = self._plan(schemas).items
            return [self._cut(item, items, pointer_join(pointer, i), cut, keep)
                    for i, item in enumerate(value)] if items else value
        return value

    def _plan(self, schemas: Schemas) -> _Plan:
        return self._plans.made(tuple((id(node), uri) for node, uri in schemas), lambda: self._planned(schemas))

    def _planned(self, schemas: Schemas) -> _Plan:
        flat = self._flatten(schemas)
        props: dict[str, Schemas] = {}
        for node, uri in flat:
            for name, sub in (node.get("properties") or {}).items():
                props.setdefault(name, []).append((sub, uri))
        cut = frozenset(name for name, subs in props.items()
                        if any(s.get("writeOnly") is True for s, _ in self._flatten(subs)))
        return _Plan(tuple(schemas), props, cut,
                     [(node["items"], uri) for node, uri in flat if isinstance(node.get("items"), dict)])

    def _flatten(self, schemas: Schemas) -> list[tuple[dict[str, Any], str]]:
        """The schemas that apply at one place of the value: through `$ref`, `allOf`, `anyOf` and `oneOf`."""
        flat: list[tuple[dict[str, Any], str]] = []
        stack, seen = list(schemas), set[int]()
        while stack and len(seen) < _MAX_DEPTH:
            node, uri = stack.pop()
            if not isinstance(node, dict) or id(node) in seen:
                continue
            seen.add(id(node))
            flat.append((node, uri))
            if isinstance(node.get("$ref"), str):
                try:
                    stack.append(self._resolve(node["$ref"], uri))
                except RefError:
                    pass
            stack.extend((sub, uri) for key in ("allOf", "anyOf", "oneOf") for sub in node.get(key) or [])
        return flat
