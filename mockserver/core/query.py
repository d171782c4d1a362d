"""Serving collections: a list's scoping, latest-version grouping, filters, order and sealed-cursor pages, and a
single item. The order is fixed per operation, so the collection is sorted once at start-up and every item gets
its rank; a request only filters (which keeps the order) and slices."""
from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any, Callable

from .errors import MockError
from .fixtures import Collection
from .pagination import CursorSealer
from .rules import Context, Filter, field_getter

_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?")
Ranked = tuple[int, dict[str, Any]]


def version_key(kind: str | None) -> Callable[[Any], Any]:
    """A sort key for a value read as `semver` (1.10.0 after 1.9.0), `number` or plain `string`."""
    if kind == "semver":
        def semver(value: Any) -> Any:
            m = _SEMVER.match(str(value))
            if not m:
                return (-1, -1, -1, 0, "")
            major, minor, patch, pre = m.groups()
            return (int(major), int(minor), int(patch), 0 if pre else 1, pre or "")
        return semver
    if kind == "number":
        return lambda v: float(v) if isinstance(v, (int, float)) else float("-inf")
    return lambda v: "" if v is None else str(v)


def _absent_last(get: Callable[[dict[str, Any]], Any], key: Callable[[Any], Any]) -> Callable[[dict[str, Any]], Any]:
    def sort_key(item: dict[str, Any]) -> Any:
        value = get(item)
        present = isinstance(value, (str, int, float, bool))
        return (present, key(value) if present else key(None))
    return sort_key


class ListQuery:
    def __init__(self, operation_id: str, config: dict[str, Any], collection: Collection, sealer: CursorSealer,
                 limit_default: int | None) -> None:
        self.operation_id = operation_id
        self.collection = collection
        self.sealer = sealer
        self.where = [Filter(f) for f in config.get("where", [])]
        self.filters = [Filter(f) for f in config.get("filters", [])]
        page = config.get("page", {})
        self.items_field = page.get("items", "data")
        self.has_more_field = page.get("hasMore", "hasMore")
        self.next_field = page.get("nextCursor", "nextCursor")
        self.limit_param = page.get("limit", "limit")
        self.cursor_param = page.get("cursor", "cursor")
        self.limit_default = limit_default
        latest = config.get("latest")
        self.group_by = field_getter(latest["by"]) if latest else None
        self.version = version_key(latest["version"].get("type")) if latest else None
        self.version_field = field_getter(latest["version"]["field"]) if latest else None
        self.prefer = Filter(latest["prefer"]) if latest and "prefer" in latest else None
        self.ranked = self._rank(collection.items, config.get("order", []))
        self.public = [collection.public(item) for item in collection.items]
        self._public_by_id = {id(item): pub for item, pub in zip(collection.items, self.public)}

    @staticmethod
    def _rank(items: list[dict[str, Any]], order: list[dict[str, Any]]) -> list[Ranked]:
        """Items in the operation's order (stable: ties keep file order), numbered."""
        ordered = list(items)
        for rule in reversed(order):  # stable sorts, last key first
            key = _absent_last(field_getter(rule["by"]), version_key(rule.get("type")))
            if rule.get("desc"):
                ordered.sort(key=lambda item: key(item), reverse=True)
                # reverse=True would put absent values first: move them back to the end, in order
                ordered = [i for i in ordered if key(i)[0]] + [i for i in ordered if not key(i)[0]]
            else:
                ordered.sort(key=key)
        return list(enumerate(ordered))

    def select(self, ctx: Context) -> list[Ranked]:
        """The items this request lists, in order, before paging."""
        tests = [t for t in (f.bind(ctx) for f in self.where) if t is not None]
        items = [(r, i) for r, i in self.ranked if all(t(i) for t in tests)]
        if self.group_by is not None:
            items = self._latest(items, ctx)
        tests = [t for t in (f.bind(ctx) for f in self.filters) if t is not None]
        if tests:
            items = [(r, i) for r, i in items if all(t(i) for t in tests)]
        return items

    def _latest(self, items: list[Ranked], ctx: Context) -> list[Ranked]:
        assert self.group_by and self.version and self.version_field
        prefer = self.prefer.bind(ctx) if self.prefer else None
        best: dict[Any, tuple[tuple[bool, Any], Ranked]] = {}
        for ranked in items:
            item = ranked[1]
            score = (bool(prefer(item)) if prefer else True, self.version(self.version_field(item)))
            group = repr(self.group_by(item))
            if group not in best or score > best[group][0]:
                best[group] = (score, ranked)
        return sorted((r for _, r in best.values()), key=lambda r: r[0])

    def page(self, ctx: Context) -> dict[str, Any]:
        items = self.select(ctx)
        query = ctx.request.query
        binding = self.sealer.binding(
            self.operation_id, ctx.request.path,
            {k: v for k, v in query.items() if k not in (self.limit_param, self.cursor_param)}, ctx.caller.key)
        start = 0
        cursor = query.get(self.cursor_param)
        if cursor is not None:
            after = self.sealer.open(str(cursor), binding, self.cursor_param)
            start = bisect_right([r for r, _ in items], after)
        limit = query.get(self.limit_param, self.limit_default) or len(items)
        chunk = items[start:start + limit]
        has_more = start + limit < len(items)
        payload: dict[str, Any] = {
            self.items_field: [self._public_by_id[id(item)] for _, item in chunk],
            self.has_more_field: has_more,
        }
        if has_more:
            payload[self.next_field] = self.sealer.seal(binding, chunk[-1][0])
        return payload


class ItemQuery:
    def __init__(self, config: dict[str, Any], collection: Collection) -> None:
        self.collection = collection
        self.where = [Filter(f) for f in config["where"]]
        self.status = config.get("status")

    def find(self, ctx: Context) -> dict[str, Any]:
        tests = [t for t in (f.bind(ctx) for f in self.where) if t is not None]
        for item in self.collection.items:
            if all(t(item) for t in tests):
                return self.collection.public(item)
        raise MockError(self.status or 404, "no such " + _singular(self.collection.name),
                        details={k: v for k, v in ctx.request.path.items()})


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") else name
