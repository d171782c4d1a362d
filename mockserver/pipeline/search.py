"""Searches (`search` in the fixtures, inferred for `POST /things/filter`, `…/search`, `…/query` and `…/count`): a
list whose filters, order and window come in the JSON body, as SDKs of FastAPI servers send them
(`{"flows": {"name": {"any_": ["a"]}}, "sort": "NAME_ASC", "limit": 10, "offset": 0}`). What is understood:

- `limit` and `offset` (integers) cut the window; `sort` names a field with `_ASC`/`_DESC` (`CREATED_DESC`), or
  a field, `-` first for descending; a sort by a field the items lack keeps the collection's order.
- any other member whose name is a field of the items filters on it: a value is equality, an array is one of,
  an object holds operators (`any_`, `not_any_`, `eq_`, `ne_`, `like_`, `before_`, `after_`, `ge_`, `le_`,
  `gt_`, `lt_`, `is_null_`) or the fields of a nested object (`state: {type: {any_: [...]}}`); the member named
  for the collection itself (`flows`, `flow`) holds filters on its items. A `null` filter filters nothing.
- members naming no field of the items (another collection's filters) are left out of the match.

A `count` search answers the number of items that match, window left aside."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..base.errors import MockError
from ..fixtures.format import PAGE_DEFAULTS
from ..fixtures.loading import Collection
from .query import singular
from .rules import MISSING, field_getter

_WINDOW = ("limit", "offset", "sort")


def _ordered(value: Any) -> Any:
    """A value as sorted: absent last, numbers before strings."""
    return (value is MISSING or value is None, isinstance(value, str), value if isinstance(value, (int, float, str))
            and not isinstance(value, bool) else str(value))


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "any_": lambda v, ref: isinstance(ref, list) and v in ref,
    "not_any_": lambda v, ref: isinstance(ref, list) and v not in ref,
    "eq_": lambda v, ref: v == ref,
    "ne_": lambda v, ref: v != ref,
    "like_": lambda v, ref: isinstance(v, str) and str(ref).lower() in v.lower(),
    "is_null_": lambda v, ref: (v is None or v is MISSING) == bool(ref),
    "before_": lambda v, ref: _ordered(v) <= _ordered(ref),
    "le_": lambda v, ref: _ordered(v) <= _ordered(ref),
    "lt_": lambda v, ref: _ordered(v) < _ordered(ref),
    "after_": lambda v, ref: _ordered(v) >= _ordered(ref),
    "ge_": lambda v, ref: _ordered(v) >= _ordered(ref),
    "gt_": lambda v, ref: _ordered(v) > _ordered(ref),
}

Test = Callable[[dict[str, Any]], bool]


@dataclass
class Search:
    """One search operation over a collection; `fields`: the items' top-level fields (the reads' schema's, and
    the fixture items'); `items_field`: where a page object holds the items ("" : the answer is the array)."""

    operation_id: str
    collection: Collection
    fields: frozenset[str]
    items_field: str = ""
    has_more_field: str = PAGE_DEFAULTS["hasMore"]
    count: bool = False

    def answer(self, body: Any, items: Iterable[tuple[dict[str, Any], dict[str, Any]]]) -> Any:
        """The page (or count) of the (stored, served) pairs the body's filters match."""
        body = body if isinstance(body, dict) else {}
        tests = self._tests({k: v for k, v in body.items() if k not in _WINDOW}, ())
        found = [(item, served) for item, served in items if all(t(item) for t in tests)]
        if self.count:
            return len(found)
        found = self._sort(found, body.get("sort"))
        offset, limit = (self._whole(body, name) for name in ("offset", "limit"))
        chunk = [served for _, served in found[offset or 0:None if limit is None else (offset or 0) + limit]]
        if not self.items_field:
            return chunk
        return {self.items_field: chunk, self.has_more_field: (offset or 0) + len(chunk) < len(found)}

    def _whole(self, body: dict[str, Any], name: str) -> int | None:
        value = body.get(name)
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # `1.0` is an integer to JSON Schema, so the body's validation let it in
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise MockError(400, f"{self.operation_id}: the body's {name!r} must be a whole number of items",
                            details={"violations": [{"parameter": "body", "in": "body", "pointer": f"/{name}",
                                                     "rule": "minimum", "message": "a whole number, 0 or more"}]})
        return value

    def _tests(self, filters: dict[str, Any], path: tuple[str, ...]) -> list[Test]:
        tests: list[Test] = []
        for name, value in filters.items():
            if value is None:
                continue
            if not path and name not in self.fields and name in (self.collection.name,
                                                                  singular(self.collection.name)):
                tests += self._tests(value, ()) if isinstance(value, dict) else []
            elif path or name in self.fields:
                if name in _OPERATORS:
                    tests.append(_compare(path, _OPERATORS[name], value))
                elif isinstance(value, dict):
                    tests += self._tests(value, (*path, name))
                else:
                    check = _OPERATORS["any_"] if isinstance(value, list) else _OPERATORS["eq_"]
                    tests.append(_compare((*path, name), check, value))
        return tests

    def _sort(self, found: list[tuple[dict[str, Any], dict[str, Any]]], sort: Any,
              ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        if not isinstance(sort, str) or not sort:
            return found
        desc = sort.startswith("-") or sort.upper().endswith("_DESC")
        name = sort.lstrip("-+")
        if name.upper().endswith(("_ASC", "_DESC")):
            name = name.rsplit("_", 1)[0]
        by = next((f for f in self.fields if f.lower() == name.lower()), None)
        if by is None:  # `CREATED` → `created_at`
            by = next((f for f in sorted(self.fields) if f.lower().startswith(name.lower())), None)
        if by is None:
            return found
        get = field_getter(by)
        present = [p for p in found if get(p[0]) not in (MISSING, None)]
        absent = [p for p in found if get(p[0]) in (MISSING, None)]
        return sorted(present, key=lambda p: _ordered(get(p[0])), reverse=desc) + absent


def _compare(path: tuple[str, ...], check: Callable[[Any, Any], bool], ref: Any) -> Test:
    get = field_getter(".".join(path))
    return lambda item: check(get(item), ref)
