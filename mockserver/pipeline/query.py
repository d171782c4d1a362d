"""Serving collections: a list's scoping, latest-version grouping, filters, order and sealed-cursor pages, and a
single item. The order is fixed per operation, so the collection is sorted once at start-up and every item gets
its rank; a request only filters (which keeps the order) and slices."""
from __future__ import annotations

import json
import re
import time
from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from ..base.bounded import BoundedCache
from ..base.errors import MockError
from ..fixtures.format import PAGE_DEFAULTS
from ..fixtures.loading import Collection
from .pagination import CursorSealer
from .rules import Context, Filter, field_getter

_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?")
SELECT_CACHE_SIZE = 4096


class Entry(NamedTuple):
    """An item in the operation's order: its rank, the item as stored, and its served form and JSON, made once.
    A rank is an int; in a collection written at run time, a list of ints (`stateful.rank_between`)."""

    rank: Any
    item: dict[str, Any]
    public: dict[str, Any]
    json: bytes


def to_json(value: Any) -> bytes:
    """Compact UTF-8 JSON; ValueError for what JSON cannot carry (NaN, an infinity, a lone surrogate), which is
    never served as if it were JSON."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def page_names(listing: dict[str, Any]) -> dict[str, str]:
    """The names a fixture's `list` uses for its page fields and parameters."""
    return {**PAGE_DEFAULTS, **(listing.get("page") or {})}


class Source(NamedTuple):
    """The current items of a collection written at run time, as one list sees them, for one scope: `tag` names
    the scope and version (what the page caches are keyed by), `entries` are in the list's order by rank."""

    scope: str
    tag: str
    entries: list[Entry]


class Page(NamedTuple):
    payload: Any  # the page object, or the array itself (`page: {items: ""}`)
    body: bytes


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


class _Descending:
    """A value that sorts the other way round."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Descending) -> bool:
        return bool(other.value < self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and bool(self.value == other.value)

    __hash__ = None  # type: ignore[assignment]


class ListQuery:
    def __init__(self, operation_id: str, config: dict[str, Any], collection: Collection, sealer: CursorSealer,
                 limit_default: int | None) -> None:
        self.operation_id = operation_id
        self.collection = collection
        self.sealer = sealer
        self.where = [Filter(f) for f in config.get("where", [])]
        self.filters = [Filter(f) for f in config.get("filters", [])]
        page = page_names(config)
        self.items_field, self.has_more_field, self.next_field = page["items"], page["hasMore"], page["nextCursor"]
        self.limit_param, self.cursor_param = page["limit"], page["cursor"]
        self.bare = self.items_field == ""  # the answer is the array itself: `limit` applies, no cursor
        self.limit_default = limit_default
        latest = config.get("latest")
        self.group_by = field_getter(latest["by"]) if latest else None
        self.version = version_key(latest["version"].get("type")) if latest else None
        self.version_field = field_getter(latest["version"]["field"]) if latest else None
        self.prefer = Filter(latest["prefer"]) if latest and "prefer" in latest else None
        self.order: list[dict[str, Any]] = config.get("order", [])
        self.order_key = self.key_of_order(self.order)
        ordered = self.order_items(collection.items, self.order)
        served = [collection.public(item) for item in ordered]
        self.entries = [Entry(rank, item, public, to_json(public))
                        for rank, (item, public) in enumerate(zip(ordered, served))]
        self._selected: BoundedCache[str, list[Entry]] = BoundedCache(SELECT_CACHE_SIZE)
        self._pages: dict[tuple[Any, ...], Page] = {}  # made this second (a cursor is sealed per second)
        self._pages_second = 0
        self._prefix = b"{" + to_json(self.items_field) + b":["
        self._tails = {more: b"]," + to_json(self.has_more_field) + (b":true" if more else b":false")
                       for more in (True, False)}
        self._next_key = b"," + to_json(self.next_field) + b":"

    @staticmethod
    def order_items(items: list[dict[str, Any]], order: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Items in the operation's order (stable: ties keep file order)."""
        ordered = list(items)
        for rule in reversed(order):  # stable sorts, last key first
            key = _absent_last(field_getter(rule["by"]), version_key(rule.get("type")))
            if rule.get("desc"):
                ordered.sort(key=lambda item: key(item), reverse=True)
                # reverse=True would put absent values first: move them back to the end, in order
                ordered = [i for i in ordered if key(i)[0]] + [i for i in ordered if not key(i)[0]]
            else:
                ordered.sort(key=key)
        return ordered

    @staticmethod
    def key_of_order(order: list[dict[str, Any]]) -> Callable[[dict[str, Any]], tuple[Any, ...]] | None:
        """A sort key giving the operation's order (as `order_items` sorts; None: no order), for the index a
        written collection places a created item by, with a bisection instead of a sort."""
        if not order:
            return None
        rules = [(_absent_last(field_getter(rule["by"]), version_key(rule.get("type"))), bool(rule.get("desc")))
                 for rule in order]

        def key(item: dict[str, Any]) -> tuple[Any, ...]:
            found: list[Any] = []
            for part, desc in rules:
                present, value = part(item)
                found += [not present, _Descending(value)] if desc else [present, value]  # desc: absent last
            return tuple(found)

        return key

    def select(self, ctx: Context, key: str, source: Source | None = None) -> list[Entry]:
        """The items this request lists, in order, before paging. The data does not change while it is served
        (a written collection's `source` names its version), so the answer for the same request values and
        caller is cached."""
        found = self._selected.get(key)
        if found is None:
            found = self._selected.put(key, self._select(ctx, self.entries if source is None else source.entries))
        return found

    def _select(self, ctx: Context, entries: list[Entry]) -> list[Entry]:
        tests = [t for t in (f.bind(ctx) for f in self.where) if t is not None]
        if tests:  # else the list itself: no copy of every entry per version of a written collection
            entries = [e for e in entries if all(t(e.item) for t in tests)]
        if self.group_by is not None:
            entries = self._latest(entries, ctx)
        tests = [t for t in (f.bind(ctx) for f in self.filters) if t is not None]
        if tests:
            entries = [e for e in entries if all(t(e.item) for t in tests)]
        return entries

    def _latest(self, entries: list[Entry], ctx: Context) -> list[Entry]:
        assert self.group_by and self.version and self.version_field
        prefer = self.prefer.bind(ctx) if self.prefer else None
        best: dict[Any, tuple[tuple[bool, Any], Entry]] = {}
        for entry in entries:
            score = (bool(prefer(entry.item)) if prefer else True, self.version(self.version_field(entry.item)))
            group = repr(self.group_by(entry.item))
            if group not in best or score > best[group][0]:
                best[group] = (score, entry)
        return sorted((e for _, e in best.values()), key=lambda e: e.rank)

    def page(self, ctx: Context, source: Source | None = None) -> Page:
        """One page, its body joined from JSON made at start-up (or when a write made the item); the same request
        within a second (whose `nextCursor` is the same string) gets the page made for the first one. `source`:
        the current items of a collection written at run time, for the caller's session."""
        request = ctx.request
        filters = {k: v for k, v in request.query.items() if k not in (self.limit_param, self.cursor_param)}
        values = repr((sorted(request.path.items()), sorted(filters.items()), sorted(request.header.items()),
                       sorted(request.cookie.items())))
        now = int(time.time())
        if now != self._pages_second or len(self._pages) >= SELECT_CACHE_SIZE:
            self._pages, self._pages_second = {}, now
        key = (f"{ctx.caller.key}|{ctx.caller.id}|{ctx.caller.tenant}", values, request.query.get(self.cursor_param),
               request.query.get(self.limit_param), source.tag if source else "")
        page = self._pages.get(key)
        if page is None:
            page = self._pages[key] = self._page(ctx, values, source)
        return page

    def _page(self, ctx: Context, values: str, source: Source | None) -> Page:
        request = ctx.request
        tag = f"|{source.tag}" if source else ""
        entries = self.select(ctx, f"{ctx.caller.id}|{ctx.caller.tenant}|{values}{tag}", source)
        # a written collection's cursor is bound to the session too: another session's items have other ranks
        binding = self.sealer.binding(self.operation_id, values + (f"|{source.scope}" if source else ""),
                                      ctx.caller.key)
        start = 0
        cursor = request.query.get(self.cursor_param)
        if cursor is not None and cursor != "":  # `cursor=` (a client's unset cursor) asks for the first page
            after = self.sealer.open(str(cursor), binding, self.cursor_param, list if source else int)
            start = bisect_right(entries, after, key=lambda e: e.rank)
        limit = request.query.get(self.limit_param, self.limit_default) or len(entries)
        chunk = entries[start:start + limit]
        if self.bare:
            return Page([e.public for e in chunk], b"[" + b",".join(e.json for e in chunk) + b"]")
        has_more = start + limit < len(entries)
        payload: dict[str, Any] = {self.items_field: [e.public for e in chunk], self.has_more_field: has_more}
        tail = self._tails[has_more]
        if has_more:
            payload[self.next_field] = self.sealer.seal(binding, chunk[-1].rank)
            tail += self._next_key + to_json(payload[self.next_field])
        return Page(payload, self._prefix + b",".join(e.json for e in chunk) + tail + b"}")

    def wrap(self, served: list[dict[str, Any]]) -> Any:
        """A last page holding these items (as served): what an item is checked inside, against the list's schema."""
        return served if self.bare else {self.items_field: served, self.has_more_field: False}

    def skeletons(self) -> list[Any]:
        """The page without items, as it can come: checked once at start-up instead of on every request."""
        if self.bare:
            return [[]]
        return [{self.items_field: [], self.has_more_field: False},
                {self.items_field: [], self.has_more_field: True, self.next_field: "cursor"}]


class ItemQuery:
    def __init__(self, config: dict[str, Any], collection: Collection) -> None:
        self.collection = collection
        self.where = [Filter(f) for f in config["where"]]
        self.status = config.get("status")

    def find(self, ctx: Context, items: Iterable[tuple[dict[str, Any], dict[str, Any]]] | None = None
             ) -> dict[str, Any]:
        """The first item the rules pick, as served; `items`: (stored, served) pairs of a collection written at
        run time, instead of the fixture's."""
        tests = [t for t in (f.bind(ctx) for f in self.where) if t is not None]
        pairs = ((item, item) for item in self.collection.items) if items is None else items
        for item, served in pairs:
            if all(t(item) for t in tests):
                return self.collection.public(served) if items is None else served
        raise not_found(self.collection, ctx, self.status)


def not_found(collection: Collection, ctx: Context, status: int | None = None) -> MockError:
    """No item of the collection matches the request: the operation's own 404 (or the status its fixture says)."""
    return MockError(status or 404, "no such " + singular(collection.name),
                     details={k: v for k, v in ctx.request.path.items()})


def singular(name: str) -> str:
    return name[:-1] if name.endswith("s") else name
