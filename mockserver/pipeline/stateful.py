"""Stateful mode: operations that `create` into a collection, `update` (JSON merge patch, RFC 7396) or `replace`
an item their rules find, or `delete` it; the lists, items and `require` rules reading that collection then see
the writes of the caller's session on top of the fixtures (without a session, the whole mock's own writes).

Only collections some operation writes to pay for it: a `LiveCollection` keeps, per scope, the view it built from
the store's rows (rebuilt when their version changes), so a read costs one look-up in the store.

Ranks: each list gives every item a rank (a list of ints) when the item comes to exist, and the item keeps it:
fixture items in the list's order, a created item between the neighbours the list's order gives it then. A cursor
holds the rank of the last item served, so a page taken before a write goes on right after it: every item that
existed when the cursor was issued and still exists is served once, none twice; an item created later shows on
a later page when its rank comes after the cursor (it sorts after the last item served), else only in a new
listing. An update keeps the item's place, even when it changes a field the list is ordered by."""
from __future__ import annotations

import copy
import json
import logging
import random
import re
import threading
import uuid
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeGuard
from urllib.parse import quote

from jsonschema.exceptions import ValidationError

from ..base.bounded import BoundedCache
from ..base.errors import MockError
from ..base.json_values import find_unservable, unservable_message
from ..base.pointers import pointer_join
from ..fixtures.loading import Collection
from ..spec.index import Operation
from ..spec.schema_walk import Parts, SchemaWalk, below
from ..spec.schemas import direct, fits, instance_pointer, iter_errors, json_types
from ..spec.write_only import WriteOnly
from ..state import UNKNOWN, Rows, RowsUpdate, Store
from .generation import SchemaGenerator
from .query import Entry, ListQuery, Source, not_found, singular, to_json
from .response_validation import ContractViolation
from .rules import Context, Filter

log = logging.getLogger("mockserver")
GAP = 1 << 32  # between two neighbouring ranks: 32 items can be created at one place before a rank grows
ITEMS_LIMIT = 10_000  # items per collection per session, by default (`--max-items`)
VIEWS_CACHE_SIZE = 1024  # scopes whose view of a collection is cached; beyond, they are built again
COMPLETER_CACHE_SIZE = 4096  # schemas whose parts and properties the `Completer` keeps
_MAX_DEPTH = 32  # of a written item completed (`Completer`): a recursive schema stops there

Schema = tuple[Any, str]  # a schema node and its URI
Check = tuple[str, Any, Callable[[Any], Any]]  # an operation, the validator of its answer, what makes that answer
Quick = tuple[Any, Callable[[Any], Any]]  # a check's validator rooted at its schema (`direct`), and its wrap
# keywords of an object schema that judge each property on its own, or say nothing of the value: an object fits
# such a schema when each property fits its own, the required ones are there and no undeclared one is where it is
# closed. Any other keyword (`dependentRequired`, `if`, `oneOf`, `minProperties` …) may tie properties together.
_ANNOTATIONS = frozenset({"title", "description", "example", "examples", "default", "deprecated", "readOnly",
                          "writeOnly", "$comment", "externalDocs", "xml"})
_PER_PROPERTY = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}
_ARRAY_OF_ITEMS = _ANNOTATIONS | {"type", "items"}  # a page's array of items: one item fits where its items do


def rank_between(before: list[int] | None, after: list[int] | None) -> list[int]:
    """A rank strictly between two (None: the start or the end of the list), as short as the two allow."""
    if after is None:
        return [before[0] + GAP] if before else [0]
    if before is None:
        return [after[0] - GAP]
    i = 0
    while i < len(before) and i < len(after) and before[i] == after[i]:
        i += 1
    if i == len(before):  # `before` is the start of `after`
        return after[:i] + [after[i] - GAP]
    if after[i] - before[i] > 1:
        return before[:i] + [(before[i] + after[i]) // 2]
    return before[:i + 1] + [before[i + 1] + GAP if len(before) > i + 1 else GAP]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396: an object patch merges member by member, `null` removes; anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merge_patch(result.get(name), value)
    return result


@dataclass
class View:
    """A collection as one scope sees it now: stored items by key (fixture order, then creation order), their
    served form, and each list's entries in rank order (the index pages are cut from). A written view changes in
    place, under its collection's lock, by what each write changed (`LiveCollection._apply`): a write and the read
    after it cost what changed, not the collection's size."""

    version: str | None
    rows: dict[str, dict[str, Any]]
    items: dict[str, dict[str, Any]]
    served: dict[str, dict[str, Any]]
    entries: dict[str, list[Entry]]
    made: dict[str, Entry] = field(default_factory=dict)  # written items, served and serialised (rank unset)
    counters: dict[str, int] = field(default_factory=dict)  # see `Rows.counters`
    # per list with an order: (the order's key, rank) of every item, sorted: where a created item is placed
    order: dict[str, list[tuple[Any, list[int]]]] = field(default_factory=dict)
    seq: int = 0  # the creation number the next created item takes
    # the items this process's writes checked (key -> the very item): a PATCH of one checks what it changes
    checked: dict[str, dict[str, Any]] = field(default_factory=dict)

    def pairs(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """(stored, served) of every item (one another thread's write removes meanwhile is left out)."""
        served = self.served
        for key, item in list(self.items.items()):
            if (public := served.get(key)) is not None:
                yield item, public


_GENERATED = object()  # a missing property's value is generated from the reads' schema


@dataclass
class _Fill:
    """A property the mock gives a value (a `readOnly` one, or the key when the client sends none)."""

    name: str
    kind: str  # sequence, uuid, date-time, date, generated; missing: required by reads, filled where left out
    schema: Schema
    default: Any = field(default_factory=lambda: _GENERATED)  # a missing one's value; else one is generated
    floor: int = 0  # a sequence's highest number among the fixtures' items: never given, even once one is deleted


@dataclass
class LiveCollection:
    """A collection some operation writes to. `lists` (operation id → query) and `schema` (what reads answer an
    item with) are set while the fixtures compile; `prepare` then makes the rest once."""

    collection: Collection
    limit: int
    lists: dict[str, ListQuery] = field(default_factory=dict)
    schema: Schema | None = None
    reads: list[Schema] = field(default_factory=list)  # every schema that serves an item (item reads, list items)
    checks: list[Check] = field(default_factory=list)
    fills: list[_Fill] = field(default_factory=list)
    fields: frozenset[str] = frozenset()  # the items' top-level properties (an action updates only those)
    cuts: dict[str, frozenset[str]] = field(default_factory=dict)  # list -> all its closed items may hold
    _write_only: WriteOnly | None = None
    _completer: Completer | None = None
    _quick: list[Quick] = field(default_factory=list)  # `checks`, rooted, of the item itself, once each (`prepare`)
    _fields: list[_Fields] | None = None  # `_quick` property by property, where each of their schemas allows it
    _key: str | None = None  # the collection's key, where it is one field (`key_of` without JSON then)
    # the properties every read requires whatever the item holds (not those of a `oneOf` branch, an `if`'s `then`):
    # any other the mock filled is left out where it would make the item stop fitting (`_refitted`)
    _required: frozenset[str] = frozenset()
    # the properties a read requires of some items only, by a rule (`then`, `else`, `dependentRequired`) the fills
    # do not see: a create whose item breaks the rule without one is given it (`_refitted`)
    _conditional: list[_Fill] = field(default_factory=list)
    _references: dict[str, str] = field(default_factory=dict)  # `flow` -> `flowId`: what a body names by the stem
    _copies: dict[str, tuple[str, str]] = field(default_factory=dict)  # `state_type` -> (`state`, `type`)
    _base: View | None = None
    _base_keys: dict[str, list[str]] = field(default_factory=dict)  # per list: the key of each base entry
    _base_entries: dict[str, dict[str, Entry]] = field(default_factory=dict)  # per list: key -> fixture entry
    _views: BoundedCache[str | None, View] = field(default_factory=lambda: BoundedCache(VIEWS_CACHE_SIZE))
    # held by a write from its first look at the view to its last change of it, and by a read changing a view:
    # a write never sees a view move under it, and a view changes by one write at a time
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def name(self) -> str:
        return self.collection.name

    def key_of(self, item: dict[str, Any]) -> str:
        """The item's key as the views hold it: its key fields as a JSON array (made without JSON for one plain
        string or int, the common case: the same text)."""
        if self._key is not None:
            value = item.get(self._key)
            if type(value) is int:
                return f"[{value}]"
            if type(value) is str and value.isascii() and value.isprintable() and '"' not in value \
                    and "\\" not in value:
                return f'["{value}"]'
        return json.dumps([item.get(k) for k in self.collection.key], separators=(",", ":"))

    def prepare(self, walk: SchemaWalk, write_only: WriteOnly, generator: SchemaGenerator,
                bodies: list[Schema] | None = None, reads: list[Schema] | None = None,
                formats: Mapping[str, str] | None = None) -> None:
        """The properties the mock fills, and the view of the fixtures alone (ranks spaced GAP apart). Besides
        `readOnly` ones and the key, a property any read (`reads`: every schema that serves an item; else
        `schema`) requires is filled where a create leaves it out (or null): with a `default`, the server
        applies it; else null where the body may leave it out and the reads take null; else a value made up.
        A key whose schema says no format takes the one the description gives it elsewhere (`formats`: by
        parameter or body property name, `triggerId` or `projectId` as a uuid), so a client may send it back."""
        self._write_only = write_only
        self._completer = Completer(walk, generator)
        self._key = self.collection.key[0] if len(self.collection.key) == 1 else None
        self._quick, self._fields = self._plan()
        known = formats or {}
        self.reads = reads or ([self.schema] if self.schema is not None else [])
        self.fields = frozenset(name for item in self.collection.items for name in item)
        parts = [found for schema in self.reads for found in walk.parts(*schema)]
        if parts:
            declared = {name for part, _ in parts for name in part.get("properties") or {}}
            self.fields |= declared
            self._references = {stem: name for name in declared for suffix in ("Id", "_id")
                                if name.endswith(suffix) and (stem := name[:-len(suffix)]) and stem not in declared}
            seen: set[str] = set()
            required = {name for part, _ in parts for name in part.get("required") or [] if isinstance(name, str)}
            sendable: dict[str, Schema] = {}
            for body in bodies or []:
                for part, uri in walk.parts(*body):
                    for name, node in (part.get("properties") or {}).items():
                        sendable.setdefault(name, walk.deref(node, f"{uri}/properties/{name}"))
            for part, uri in parts:
                for name, node in (part.get("properties") or {}).items():
                    prop, prop_uri = walk.deref(node, f"{uri}/properties/{name}")
                    if name in seen or not isinstance(prop, dict):
                        continue
                    if prop.get("readOnly") is True or name in self.collection.key:
                        seen.add(name)
                        kind = _fill_kind(prop)
                        if kind == "generated" and name in self.collection.key:
                            kind = next((known[n] for n in (name, *self.aliases(name)) if n in known),
                                        "uuid" if _any_text(walk, (prop, prop_uri)) else kind)
                        self.fills.append(_Fill(name, kind, (prop, prop_uri)))
                    elif name in required and bodies is not None:
                        seen.add(name)
                        self.fills.append(self._missing(walk, name, (prop, prop_uri), sendable))
            self._copies = self._copied(declared - sendable.keys())
            self._required = frozenset(name for schema in self.reads for name in _required_names(walk, schema)[0])
            if bodies is not None:
                self._conditional = [self._missing(walk, name, prop, sendable) for name in sorted(
                    {name for schema in self.reads for name in _required_names(walk, schema)[1]} - seen)
                    if (prop := walk.property(*self.reads[0], name))[0] is not None]
        items = {self.key_of(item): item for item in self.collection.items}
        for fill in self.fills:
            if fill.kind == "sequence":
                fill.floor = max((v for item in items.values() if _is_int(v := item.get(fill.name))), default=0)
        served = {key: self.collection.public(item) for key, item in items.items()}
        entries = {op_id: [Entry([e.rank * GAP], e.item, e.public, e.json) for e in query.entries]
                   for op_id, query in self.lists.items()}
        self._base = View(None, {}, items, served, entries, order=self._order(entries))
        self._base_keys = {op_id: [self.key_of(e.item) for e in es] for op_id, es in entries.items()}
        self._base_entries = {op_id: dict(zip(self._base_keys[op_id], entries[op_id])) for op_id in entries}

    def _copied(self, names: set[str]) -> dict[str, tuple[str, str]]:
        """The server's fields that copy a member of another (Prefect's `state_type` of `state.type`, or
        `stateType`): each follows it on every write."""
        assert self._completer is not None
        props = self._completer.properties([p for schema in self.reads for p in self._completer.walk.parts(*schema)])
        found: dict[str, tuple[str, str]] = {}
        for name in sorted(names):
            splits = [(name[:i], name[i + 1:]) for i, c in enumerate(name) if c == "_"] + [
                (name[:i], name[i].lower() + name[i + 1:]) for i, c in enumerate(name) if i and c.isupper()]
            for whole, member in splits:
                if whole in props and member in self._completer.properties(self._completer.applying({}, props[whole])):
                    found[name] = (whole, member)
        return found

    @staticmethod
    def _missing(walk: SchemaWalk, name: str, schema: Schema, sendable: dict[str, Any]) -> _Fill:
        """How the server fills a property its reads require when a create leaves it out (`server_value`)."""
        return _Fill(name, "missing", schema, server_value(walk, [schema], [sendable[name]] if name in sendable
                                                           else []))

    def _plan(self) -> tuple[list[Quick], list[_Fields] | None]:
        """The checks of a written item, worked out once: each schema the item itself must fit, once (a list's
        page reduced to its items' schema where the rest of the page is fixed and fits), and the same property by
        property where every one of them allows it (None: some does not, a PATCH is checked whole)."""
        found: dict[tuple[type, int, Callable[[Any], Any]], Quick] = {}
        for op_id, validator, wrap in self.checks:
            query = self.lists.get(op_id)
            rooted = direct(validator)
            if query is not None and (items := _page_items(rooted, query)) is not None:
                rooted = items
                wrap = _itself if op_id not in self.cuts else partial(self.listed, op_id)
            elif query is None:
                wrap = _itself  # an item read answers the item as served
            found.setdefault((type(rooted), id(rooted.schema), wrap), (rooted, wrap))
        checks = list(found.values())
        fields = [_fields_of(validator) if wrap is _itself else None for validator, wrap in checks]
        return checks, (None if None in fields else [f for f in fields if f is not None])

    def in_fixtures(self, key: str) -> bool:
        assert self._base is not None
        return key in self._base.items

    def base_row(self, key: str) -> dict[str, Any]:
        """The row a fixture item's first write starts from: its ranks in every list."""
        assert self._base is not None
        return {"seq": -1, "ranks": {op_id: found[key].rank for op_id, found in self._base_entries.items()}}

    def _rank(self, view: View, op_id: str, key: str) -> list[int]:
        """Where an item of the view stands in a list."""
        row = view.rows.get(key)
        return self._base_entries[op_id][key].rank if row is None else _row_rank(row, op_id)

    # -- reading ---------------------------------------------------------------------------------------------
    def view(self, store: Store, scope: str | None) -> View:
        """The scope's view now: one look-up in the store while nothing changed, else what changed applied."""
        for _ in range(3):  # another thread may move the view between the look-up and the change: ask again
            cached = self._views.get(scope)
            rows = store.live(scope, self.name, cached.version if cached else UNKNOWN)
            if rows is None:
                assert cached is not None
                return cached
            with self.lock:
                view = self.advance(scope, rows)
            if view is not None:
                return view
        rows = store.live(scope, self.name, UNKNOWN) or Rows()
        with self.lock:
            view = self.advance(scope, rows)
        assert view is not None, "all the rows apply to any view"
        return view

    def held(self, store: Store, scope: str | None) -> View:
        """The view a write starts from (under `lock`): the one cached, without asking the store (the write itself
        finds out whether another process wrote since), else read now."""
        cached = self._views.get(scope)
        return cached if cached is not None else self.view(store, scope)

    def source(self, store: Store, scope: str | None, op_id: str) -> Source:
        view = self.view(store, scope)
        return Source(scope or "", f"{scope or ''}|{view.version}", view.entries[op_id])

    def advance(self, scope: str | None, rows: Rows) -> View | None:
        """The scope's view brought to `rows` (under `lock`): what changed applied in place when the view is of
        the version they change (`Rows.since`), all of them built afresh; None when they change another version."""
        cached = self._views.get(scope)
        if cached is not None and cached.version == rows.version:
            return cached
        if rows.since is None:
            return self._views.put(scope, self.build(rows))
        if cached is None or cached.version != rows.since:
            return None
        if cached is self._base:  # the fixtures' own view is every scope's start: changed only in a copy
            cached = self._views.put(scope, View(None, {}, dict(cached.items), dict(cached.served),
                                                 {op_id: list(es) for op_id, es in cached.entries.items()},
                                                 order={op_id: list(ix) for op_id, ix in cached.order.items()}))
        self._apply(cached, rows)
        return cached

    def _apply(self, view: View, rows: Rows) -> None:
        """What changed since the view's version, in place: each changed item out of every list and back in at its
        rank (a bisection); new items after the rest, in the order they were created."""
        changes = rows.rows
        fresh = sorted((k for k, row in changes.items() if row is not None and k not in view.rows
                        and k not in view.items), key=lambda k: changes[k]["seq"])  # type: ignore[index]
        for key in [*(k for k in changes if k not in fresh), *fresh]:
            self._place(view, key, changes[key])
        view.counters.update(rows.counters)
        view.version = rows.version

    def _place(self, view: View, key: str, row: dict[str, Any] | None) -> None:
        """One item of the view as its row (None: no row, the fixture's item if there is one) says now."""
        old = view.items.get(key)
        if old is not None:
            for op_id, es in view.entries.items():
                rank = self._rank(view, op_id, key)
                at = bisect_left(es, rank, key=_rank_of)
                if at < len(es) and es[at].rank == rank:
                    del es[at]
                if (index := view.order.get(op_id)) is not None:
                    pair = (self._order_key(op_id)(old), rank)
                    at = bisect_left(index, pair)
                    if at < len(index) and index[at] == pair:
                        del index[at]
        base = self._base
        assert base is not None
        entry: Entry | None = None
        if row is None:
            view.rows.pop(key, None)
            view.made.pop(key, None)
            view.checked.pop(key, None)
            if key in base.items:
                view.items[key], view.served[key] = base.items[key], base.served[key]
                for op_id in view.entries:
                    self._insert(view, op_id, self._base_entries[op_id][key])
                return
        else:
            view.rows[key] = row
            view.seq = max(view.seq, row.get("seq", -1) + 1)
            if not row.get("gone"):
                entry = self._entry(key, row["item"])
        if entry is None:
            for part in (view.items, view.served, view.made, view.checked):
                part.pop(key, None)
            return
        assert row is not None
        view.items[key], view.served[key], view.made[key] = row["item"], entry.public, entry
        for op_id in view.entries:
            self._insert(view, op_id, self._listed_entry(op_id, entry._replace(rank=_row_rank(row, op_id))))

    def listed(self, op_id: str, public: dict[str, Any]) -> dict[str, Any]:
        """A served item as a list holds it: cut to the properties its items declare where they are closed (a
        summary of the item), else whole."""
        cut = self.cuts.get(op_id)
        if cut is None or public.keys() <= cut:
            return public
        return {name: value for name, value in public.items() if name in cut}

    def _listed_entry(self, op_id: str, entry: Entry) -> Entry:
        public = self.listed(op_id, entry.public)
        return entry if public is entry.public else entry._replace(public=public, json=to_json(public))

    def _insert(self, view: View, op_id: str, entry: Entry) -> None:
        insort(view.entries[op_id], entry, key=_rank_of)
        if (index := view.order.get(op_id)) is not None:
            insort(index, (self._order_key(op_id)(entry.item), entry.rank))

    def _order_key(self, op_id: str) -> Callable[[dict[str, Any]], Any]:
        key = self.lists[op_id].order_key
        assert key is not None, "only a list with an order has an order index"
        return key

    def _order(self, entries: dict[str, list[Entry]]) -> dict[str, list[tuple[Any, list[int]]]]:
        """The order index of each list with an order (see `View.order`)."""
        return {op_id: sorted((key(e.item), e.rank) for e in es) for op_id, es in entries.items()
                if (key := self.lists[op_id].order_key) is not None}

    def build(self, rows: Rows) -> View:
        """The view of all the rows (a scope read for the first time, or after a reset)."""
        base = self._base
        assert base is not None, "prepare() first"
        if rows.version is None:
            return base
        items, served = dict(base.items), dict(base.served)
        stored = {key: row for key, row in rows.rows.items() if row is not None}
        written = {key: row for key, row in stored.items() if key in items}
        written.update(sorted(((k, r) for k, r in stored.items() if k not in items), key=lambda kr: kr[1]["seq"]))
        made: dict[str, Entry] = {}
        for key, row in written.items():
            if not row.get("gone") and (entry := self._entry(key, row["item"])) is not None:
                made[key] = entry
                items[key], served[key] = row["item"], entry.public
            else:
                items.pop(key, None)
                served.pop(key, None)
        entries: dict[str, list[Entry]] = {}
        for op_id, base_entries in base.entries.items():
            kept = [e for e, key in zip(base_entries, self._base_keys[op_id]) if key not in written]
            kept += [self._listed_entry(op_id, entry._replace(rank=_row_rank(written[key], op_id)))
                     for key, entry in made.items()]
            kept.sort(key=_rank_of)
            entries[op_id] = kept
        seq = max((row.get("seq", -1) for row in stored.values()), default=-1) + 1
        return View(rows.version, stored, items, served, entries, made, dict(rows.counters), self._order(entries), seq)

    def locate(self, view: View, ctx: Context, where: list[Filter]) -> list[str]:
        """The keys of the items `where` may pick, in the view's order: the one item its filters pin by the
        collection's key (a look-up), else all of them (a scan)."""
        pinned = {f.pins[0]: f.pins[1](ctx) for f in where if f.pins is not None}
        if all(type(pinned.get(name, _UNPINNED)) in (str, int) for name in self.collection.key):  # equal only
            key = self.key_of(pinned)  # to a value of the same JSON
            return [key] if key in view.items else []
        return list(view.items)

    def find(self, view: View, ctx: Context, where: list[Filter]) -> str | None:
        """The key of the first item `where` picks (None: none)."""
        tests = [t for t in (f.bind(ctx) for f in where) if t is not None]
        items = view.items
        return next((key for key in self.locate(view, ctx, where) if all(t(items[key]) for t in tests)), None)

    def pairs(self, view: View, ctx: Context, where: list[Filter]
              ) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """(stored, served) of the items `where` may pick, for a read that tests them itself (one another thread
        removes meanwhile is left out)."""
        items, served = view.items, view.served
        for key in self.locate(view, ctx, where):
            item, public = items.get(key), served.get(key)
            if item is not None and public is not None:
                yield item, public

    def _entry(self, key: str, item: dict[str, Any]) -> Entry | None:
        """A stored item as served, with its JSON; None for one JSON cannot carry (written by an older mock, or
        straight into Redis): it is left out of every read, said in the log, and the rest is served."""
        public = self.serve(item)
        try:
            return Entry(None, item, public, to_json(public))
        except ValueError:
            pointer, rule = find_unservable(public) or ("", "json")
            log.warning("collection %r: the stored item %s is left out of every read: %s", self.name, key,
                        unservable_message(pointer, rule))
            return None

    def serve(self, item: dict[str, Any]) -> dict[str, Any]:
        """An item as reads answer it: private fields and `writeOnly` properties left out."""
        public = self.collection.public(item)
        if self.schema is None or self._write_only is None:
            return public
        return self._write_only.cut(public, *self.schema)[0]

    # -- writing ---------------------------------------------------------------------------------------------
    def complete(self, item: dict[str, Any], sent: Schema | None) -> dict[str, Any]:
        """The item as reads answer it at every depth (`Completer`), the server's copies of a member (`state_type`)
        as the member is now; `sent`: the write body's schema."""
        if self.schema is None or self._completer is None:
            return item
        done = frozenset(fill.name for fill in self.fills)
        item = self._completer.complete(item, self.reads, [sent] if sent else [], done)
        for name, (whole, member) in self._copies.items():
            if isinstance(item.get(whole), dict) and member in item[whole]:
                item[name] = item[whole][member]
        return item

    def check(self, item: dict[str, Any], own: list[Check], own_quick: list[Quick], sent: Any = None,
              old: tuple[dict[str, Any], dict[str, Any]] | None = None, *, before: dict[str, Any] | None = None,
              generator: SchemaGenerator | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The item to store and as served (`serve`), which must fit every read that can answer it and the write's
        `own` answer (`own_quick`: the same, rooted), or the write is the mock's own fault (500) and nothing is
        stored: the write answers with it, not served again. A property the mock filled that no read requires
        whatever the item holds (`_required`), neither sent nor held `before` (the stored item a write changes), is
        left out where it makes the item stop fitting (a made-up `tag` where `oneOf` takes `kind` or `tag`, not
        both); a create (`generator`: what makes up values) is given one a rule requires of it only (`then`): see
        `_refitted`. The error names the field, the schema branch that came closest, and whose the value is: the
        `request`'s (`sent`, the body), or the `description`'s (a value the mock made from it, or one it requires
        that no one gave). `old`: the item (stored, served) an update changes, where this process checked it
        (`View.checked`): only the properties that are not the very same values are checked then, where the
        schemas allow it (`_fields`), with the same verdict."""
        served = self.serve(item)
        try:  # never store what cannot be served (private fields included); the old item's own values were stored
            to_json(item if old is None else {k: v for k, v in item.items() if old[0].get(k, _UNPINNED) is not v})
        except ValueError:
            pointer, rule = find_unservable(item) or ("", "json")
            message = unservable_message(pointer, rule)
            raise MockError(400, f"the item cannot be stored: {message}", details={"violations": [
                {"parameter": "body", "in": "body", "pointer": pointer, "rule": rule, "message": message}]}) from None
        if self._fits_changed(served, old, own_quick) if old is not None and self._fields is not None else \
                _fits(served, [*self._quick, *own_quick]):
            return item, served
        given = {*(sent if isinstance(sent, dict) else ()), *(before or ())}
        if (refitted := self._refitted(item, [*self._quick, *own_quick], given, generator)) is not None:
            return refitted
        for op_id, validator, wrap in (*self.checks, *own):
            answer = wrap(served)
            for error in map(_closest, iter_errors(validator, answer)):
                path = _in_item(answer, served, list(error.absolute_path))
                field_, branch = pointer_join("", *(path or [])), pointer_join("", *error.absolute_schema_path)
                source = "request" if path is not None and _given(sent, path) else "description"
                raise ContractViolation(
                    f"the item written to {self.name!r} would break the {op_id} response schema at "
                    f"{field_ or '/'} (closest schema branch {branch}), by a value of the {source}: {error.message}",
                    {"source": source, "rule": str(error.validator), "operation": op_id, "field": field_,
                     "pointer": instance_pointer(error), "schema": branch, "collection": self.name})
        return item, served

    def _refitted(self, item: dict[str, Any], checks: list[Quick], given: set[str],
                  generator: SchemaGenerator | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """An item that does not fit, made to fit by what the mock fills, where that is what breaks it (`not`,
        `oneOf`, `if`/`then`, `dependentRequired`, `maxProperties`, a closed object): (stored, served) without
        the properties it filled on its own, then each put back, in the item's order, where the item fits with it
        or does not fit yet without it (a `oneOf` of `required: [kind]` and `required: [tag]`, neither sent: the
        made-up `kind` only), then on a create the same with a made-up value of each property a rule requires of
        some items only; None where nothing is to change or nothing fits. Only a write its checks refuse gets
        here."""
        loose = [name for name in item if name not in given and name not in self._required
                 and name not in self.collection.key]
        more = {fill.name: _fill_value(fill, generator, {}) for fill in self._conditional
                if fill.name not in item} if generator is not None else {}
        if not loose and not more:
            return None
        whole = {**item, **more}
        kept = {name: value for name, value in item.items() if name not in loose}
        served = self.serve(kept)
        fitting = _fits(served, checks)
        for name in [*loose, *more]:
            tried = {k: v for k, v in whole.items() if k in kept or k == name}
            if (fits_tried := _fits(tried_served := self.serve(tried), checks)) or not fitting:
                kept, served, fitting = tried, tried_served, fits_tried
        return (kept, served) if fitting else None

    def _fits_changed(self, served: dict[str, Any], old: tuple[dict[str, Any], dict[str, Any]],
                      own_quick: list[Quick]) -> bool:
        """`_fits` of an updated item whose old one fitted: its changed properties against each schema's own; a
        write's own answer of one of those schemas, made of the item's very values, is checked with them."""
        assert self._fields is not None
        before = old[1]
        changed = [name for name in before.keys() | served.keys()
                   if before.get(name, _UNPINNED) is not served.get(name, _UNPINNED)]
        if not all(fields.fit(served, changed) for fields in self._fields):
            return False
        covered = {(type(fields.whole), id(fields.whole.schema)) for fields in self._fields}
        return _fits(served, [(validator, wrap) for validator, wrap in own_quick
                              if (type(validator), id(validator.schema)) not in covered
                              or not _same(wrap(served), served)])

    def projection(self, schema: Schema) -> Projection:
        """How `project` makes an answer of `schema` (at start-up): the properties it declares, and which of them
        name a key of the items."""
        completer = self._completer
        assert completer is not None, "prepare() first"
        deref = completer.walk.deref
        declared = completer.properties(completer.walk.parts(*schema))
        return Projection(schema, declared, [(key, alias) for key in self.collection.key
                                             for alias in self.aliases(key) if alias in declared],
                          deref(*schema)[1] in {deref(*read)[1] for read in self.reads})

    def project(self, served: dict[str, Any], projection: Projection) -> Any:
        """A write's answer where its schema is not an item's (Kindgi's `{id}` of a create, `{agentId, version}`
        of a publish): the item's own values that the answer declares, a property named for the collection and
        its key (`agentId` for an agent's `id`) given the key's value, and what else it requires made up (a
        delete's `object: video.deleted`, its `default`, where the item's `object: video` is ruled out)."""
        if projection.read:
            return served
        completer, declared = self._completer, projection.declared
        assert completer is not None, "prepare() first"
        named = {alias: served[key] for key, alias in projection.named if key in served and alias not in served}
        kept = {name: value for name, value in served.items()  # not the item's `object: video` for `video.deleted`
                if name not in declared or not completer.ruled_out(declared[name], value)}
        return completer.complete({**kept, **named}, [projection.schema], [])

    def aliases(self, key: str) -> tuple[str, str]:
        """The names other operations give a key of the items: `projectId` and `project_id` for a project's `id`."""
        words = [word for word in re.split(r"[^A-Za-z0-9]+", singular(self.name.rsplit("/", 1)[-1])) if word]
        return ("".join([words[0], *(w.title() for w in words[1:]), key[:1].upper() + key[1:]]),
                "_".join([*words, key]))

    def rank_in(self, op_id: str, view: View, item: dict[str, Any]) -> list[int]:
        """The rank a new item takes in a list: right after the item the list's order puts before it (found in
        the view's order index by a bisection; an item updated since keeps its rank but is there by its values)."""
        entries, index, key = view.entries[op_id], view.order.get(op_id), self.lists[op_id].order_key
        if index is None or key is None:  # no order: at the end
            return rank_between(entries[-1].rank if entries else None, None)
        at = bisect_right(index, key(item), key=_first)
        if at == 0:
            return rank_between(None, entries[0].rank if entries else None)
        before = index[at - 1][1]
        after = bisect_right(entries, before, key=_rank_of)
        return rank_between(before, entries[after].rank if after < len(entries) else None)

    def filled(self, item: dict[str, Any], generator: SchemaGenerator, *,
               keep: dict[str, Any] | None = None, counters: Mapping[str, int] | None = None) -> dict[str, Any]:
        """The item with the mock's own values: those of `keep` (the stored item an update or replace starts
        from) where it has them, else new ones (a create: any sent are overwritten; a sequence goes on from
        `counters`, the highest numbers it handed out). A reference the body sends by its stem where the reads
        declare it with `Id` (Kindgi's run started with `flow: ingest` reads `flowId: ingest`) is that field."""
        item = {**{self._references[k]: v for k, v in item.items() if k in self._references
                   and self._references[k] not in item and isinstance(v, str | int)}, **item}
        result = dict(item)
        if keep is not None:
            for fill in self.fills:
                if fill.kind == "missing":  # the client's to change; kept where a replace leaves it out
                    if result.get(fill.name) is None and fill.name in keep:
                        result[fill.name] = keep[fill.name]
                elif fill.name in keep:
                    result[fill.name] = keep[fill.name]
                else:
                    result.pop(fill.name, None)
            return result
        made = {fill.name: _fill_value(fill, generator, counters or {}) for fill in self.fills
                if not ((fill.name in self.collection.key or fill.kind == "missing") and item.get(fill.name)
                        is not None and fill.schema[0].get("readOnly") is not True)}  # as the client chose
        return {**made, **{k: v for k, v in item.items() if k not in made}}  # the mock's own fields first

    def counted(self, item: dict[str, Any], counters: Mapping[str, int]) -> dict[str, int]:
        """The counters a created item moves on: each sequence's number in it (the client's own too) past the
        highest handed out so far, so no later create is given it again, even once this item is deleted."""
        return {fill.name: value for fill in self.fills if fill.kind == "sequence"
                and _is_int(value := item.get(fill.name)) and value > counters.get(fill.name, 0)}


@dataclass(frozen=True)
class Projection:
    """A write's answer of another shape than the item's, worked out at start-up (`LiveCollection.projection`)."""

    schema: Schema
    declared: dict[str, list[Schema]]  # its properties, each with every schema that declares it
    named: list[tuple[str, str]]  # (a key of the items, the property naming it: `agentId` for an agent's `id`)
    # the very schema reads answer an item with, by another `$ref` (a PATCH answering `Pet` as `getPet` does): the
    # answer is the item as served, as reads show it (a projection would drop a value some `oneOf` branch rules out)
    read: bool = False


def quick(checks: list[Check]) -> list[Quick]:
    return [(direct(validator), wrap) for _, validator, wrap in checks]


def _itself(served: dict[str, Any]) -> dict[str, Any]:
    """A check of the served item itself (an item read's, or a list's whose items are not cut)."""
    return served


def _page_items(page: Any, query: ListQuery) -> Any | None:
    """The validator of a list's items, rooted, where a one-item page fits its schema exactly when the item fits
    that (the page's own fields fixed, fitting, and nothing but the items' schema judging the array); else None:
    the page is checked whole."""
    node = page.schema
    if not isinstance(node, dict) or not fits(page, query.wrap([])):
        return None
    if not query.bare:
        if not node.keys() <= _PER_PROPERTY or not isinstance(node.get("additionalProperties", True), bool):
            return None
        node = (node.get("properties") or {}).get(query.items_field)
    if not isinstance(node, dict) or not node.keys() <= _ARRAY_OF_ITEMS or not isinstance(node.get("items"), dict):
        return None
    return direct(page.evolve(schema=node["items"]))


@dataclass(frozen=True)
class _Fields:
    """An item's schema property by property (`LiveCollection._plan`): a changed property fits where it fits its
    own schema, a removed one where it is not required, an undeclared one where the object is open."""

    whole: Any  # the validator of the item's schema, rooted
    properties: dict[str, Any]  # name -> the validator of its schema
    required: frozenset[str]
    closed: bool

    def fit(self, served: dict[str, Any], changed: list[str]) -> bool:
        for name in changed:
            if name not in served:
                if name in self.required:
                    return False
            elif (validator := self.properties.get(name)) is not None:
                if not fits(validator, served[name]):
                    return False
            elif self.closed:
                return False
        return True


def _fields_of(validator: Any) -> _Fields | None:
    """The schema property by property, where its keywords judge each property on its own (`_PER_PROPERTY`);
    None where some keyword may tie properties together (`dependentRequired`, `if`, `oneOf` …)."""
    node = validator.schema
    if not isinstance(node, dict) or not node.keys() <= _PER_PROPERTY \
            or not isinstance(node.get("additionalProperties", True), bool) \
            or not isinstance(node.get("properties", {}), dict) or not isinstance(node.get("required", []), list):
        return None
    properties = {name: direct(validator.evolve(schema=sub)) for name, sub in (node.get("properties") or {}).items()}
    return _Fields(validator, properties, frozenset(node.get("required") or []),
                   node.get("additionalProperties") is False)


def _fits(served: dict[str, Any], checks: list[Quick]) -> bool:
    """Whether the served item fits every check (`LiveCollection.check`'s common case, told at once); an answer
    checked already against the same schema (a read's item, a write's answer made of the item's very values) is
    not checked again."""
    seen: list[tuple[type, int, Any]] = []
    for validator, wrap in checks:
        answer = wrap(served)
        kind, schema = type(validator), id(validator.schema)
        if not any(k is kind and s == schema and _same(a, answer) for k, s, a in seen):
            if not fits(validator, answer):
                return False
            seen.append((kind, schema, answer))
    return True


def _same(a: Any, b: Any) -> bool:
    """The same answer: one object, or two mappings of the very same values (a projection that kept the item's)."""
    return a is b or (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                      and all(a[k] is b[k] for k in a))


def _ids(schemas: list[Schema] | Parts) -> tuple[tuple[int, str], ...]:
    return tuple((id(node), uri) for node, uri in schemas)


def _row_rank(row: dict[str, Any], op_id: str) -> list[int]:
    """A written item's rank in a list; in a list added since it was written: at the end, in creation order."""
    return row["ranks"].get(op_id) or [1 << 62, row["seq"]]


def _rank_of(entry: Entry) -> Any:
    return entry.rank


def _first(pair: tuple[Any, Any]) -> Any:
    return pair[0]


_UNPINNED = object()  # `locate`: a key field no filter pins


def _any_text(walk: SchemaWalk, schema: Schema) -> bool:
    """Whether a string schema takes any text 36 characters long: a key the mock makes there is a uuid, never
    the same twice (a generated word would be: openai's videos, `id: {type: string}`)."""
    parts = [part for part, _ in walk.parts(*schema)]
    return all(part.get("type") in ("string", None) and not part.keys() & {"pattern", "enum", "const", "format"}
               and part.get("maxLength", 36) >= 36 and part.get("minLength", 0) <= 36 for part in parts) and any(
        part.get("type") == "string" for part in parts)


def _fill_kind(schema: dict[str, Any]) -> str:
    kind, fmt = schema.get("type"), schema.get("format")
    if kind in ("integer", "number") or (isinstance(kind, list) and "integer" in kind):
        return "sequence"
    if fmt in ("uuid", "date-time", "date"):
        return str(fmt)
    return "generated"


def _required_names(walk: SchemaWalk, schema: Schema, depth: int = 0) -> tuple[set[str], set[str]]:
    """The properties a schema requires of every object (its own `required` and its `allOf` parts'), and those
    a rule requires of some objects only (`then`, `else`, `dependentRequired`, `dependencies`; a `oneOf` or
    `anyOf` branch's are filled already, `SchemaWalk.parts`)."""
    node, uri = walk.deref(*schema)
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        return set(), set()
    always = {name for name in node.get("required") or [] if isinstance(name, str)}
    sometimes = {name for key in ("then", "else") for branch in [walk.deref(node.get(key), below(uri, key))[0]]
                 if isinstance(branch, dict) for name in branch.get("required") or [] if isinstance(name, str)}
    for key in ("dependentRequired", "dependencies"):
        rules = node.get(key)
        sometimes |= {name for names in (rules.values() if isinstance(rules, dict) else ())
                      if isinstance(names, list) for name in names if isinstance(name, str)}
    for i, sub in enumerate(node.get("allOf") or []):
        more = _required_names(walk, (sub, below(uri, "allOf", i)), depth + 1)
        always |= more[0]
        sometimes |= more[1]
    return always, sometimes


def _closest(error: ValidationError) -> ValidationError:
    """The error of the `anyOf`/`oneOf` branch the value came closest to: the one that went deepest into the
    value before failing (fewest errors on a tie), not the first branch its type rules out."""
    while error.parent is not None:
        error = error.parent
    while error.context:
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0] if sub.relative_schema_path else None, []).append(sub)
        branch = max(branches.values(), key=lambda es: (max(len(e.absolute_path) for e in es), -len(es)))
        error = max(branch, key=lambda e: len(e.absolute_path))
    return error


def _in_item(answer: Any, item: Any, path: list[Any]) -> list[Any] | None:
    """The part of a path into an answer (a page holding the item, or the item itself) inside the item; None
    when the path does not go through it (a page's own field)."""
    while not _is_or_cut(answer, item):
        if not path:
            return None
        answer = answer[path.pop(0)]
    return path


def _is_or_cut(part: Any, item: Any) -> bool:
    """Whether an answer's part is the item, or the item cut to a list's summary (`LiveCollection.listed`)."""
    return part is item or (isinstance(part, dict) and isinstance(item, dict) and bool(part)
                            and all(item.get(name, _UNPINNED) is value for name, value in part.items()))


def _given(sent: Any, path: list[Any]) -> bool:
    """Whether the request's body holds a value at the path (the value at fault is the client's)."""
    for token in path:
        if isinstance(sent, dict) and token in sent or isinstance(sent, list) and isinstance(token, int) \
                and token < len(sent):
            sent = sent[token]
        else:
            return False
    return True


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _fill_value(fill: _Fill, generator: SchemaGenerator, counters: Mapping[str, int]) -> Any:
    if fill.kind == "sequence":  # past every number the fixtures hold and the scope's writes handed out (a
        # written item's number is counted when it is created, and an update keeps it): no scan of the items
        return max(fill.floor, counters.get(fill.name, 0)) + 1
    if fill.kind == "missing" and fill.default is not _GENERATED:
        return copy.deepcopy(fill.default)  # the write body's default (or null), as the server applies it
    return _made(fill.kind, fill.schema, generator)


def _made(kind: str, schema: Schema, generator: SchemaGenerator) -> Any:
    """A value the server makes up: a new uuid, the time now, else one generated from the schema."""
    if kind == "uuid":
        return str(uuid.uuid4())
    now = datetime.now(UTC)
    if kind == "date-time":
        return now.isoformat(timespec="seconds").replace("+00:00", "Z")
    if kind == "date":
        return now.date().isoformat()
    return generator.generate(*schema, random.Random(uuid.uuid4().int), static=kind != "generated")


def _types(walk: SchemaWalk, schemas: list[Schema]) -> set[str] | None:
    """The JSON types the schemas all declare between them (None: some part takes any)."""
    found: set[str] = set()
    for schema in schemas:
        declared = [part["type"] for part, _ in walk.parts(*schema) if "type" in part]
        if not declared:
            return None
        found.update(t for kind in declared for t in ([kind] if isinstance(kind, str) else kind))
    return found


def _takes(types: set[str] | None, value: Any) -> bool:
    return types is None or bool(json_types(value) & types)


def server_value(walk: SchemaWalk, read: list[Schema], sent: list[Schema]) -> Any:
    """What the server gives a property its reads require and a write left out (`sent`: the write body's
    schemas of it, empty when no body may send it): the reads' `default`, else the body's; null where the body
    may leave it out and the reads take null (FastAPI's `team_name: str | None = None`); else `_GENERATED`, a
    value made up, as a server derives one (Kindgi's `isDefault` of a project, a run's `flowVersion`): the
    description lets the client leave it out, so refusing the write would be the mock's own fault."""
    for schemas in (read, sent):
        for schema in schemas:
            default = next((part["default"] for part, _ in walk.parts(*schema) if "default" in part), _GENERATED)
            if default is not _GENERATED:
                return default
    types = _types(walk, read)
    return None if sent and types is not None and "null" in types else _GENERATED


@dataclass
class Completer:
    """Makes a written item what a read answers, at every depth of the reads' schema: a nested object's required
    properties the write left out (or sent as null where reads take none) are the server's to fill
    (`server_value`), an optional one no body may send is null where the reads take null, or a new uuid for a
    reference by id the server sets (Prefect's `default_queue_id` of a pool), what the request gave is kept,
    and a property reads do not declare is dropped where the reads' object is closed or the write body declares
    it `writeOnly` (a secret's value is never stored)."""

    walk: SchemaWalk
    generator: SchemaGenerator
    # what the schemas alone decide, worked out once (each entry holds its schemas: its key is their ids)
    _applying: BoundedCache[tuple[tuple[int, str], ...], tuple[Any, Parts]] = field(
        default_factory=lambda: BoundedCache(COMPLETER_CACHE_SIZE))
    _properties: BoundedCache[tuple[tuple[int, str], ...], tuple[Any, dict[str, list[Schema]]]] = field(
        default_factory=lambda: BoundedCache(COMPLETER_CACHE_SIZE))

    def complete(self, value: Any, read: list[Schema], sent: list[Schema], done: frozenset[str] = frozenset(),
                 depth: int = 0) -> Any:
        """`done`: the top-level properties the collection's own fills gave a value already."""
        if not isinstance(value, dict | list):
            return value  # a string, number, boolean or null: no properties or items, no schema to look up
        parts = self.applying(value, read)
        if depth > _MAX_DEPTH or not parts:
            return value
        if isinstance(value, list):
            items = [self.walk.items(*part) for part in parts]
            items = [item for item in items if item[0] is not None]
            sent_items = [item for item in (self.walk.items(*s) for s in sent) if item[0] is not None]
            return [self.complete(v, items, sent_items, depth=depth + 1) for v in value] if items else value
        if not isinstance(value, dict):
            return value
        props, sent_props = self.properties(parts), self.properties(
            [p for schema in sent for p in self.walk.parts(*schema)])
        closed = any(part.get("additionalProperties") is False or part.get("unevaluatedProperties") is False
                     for part, _ in parts)
        result: dict[str, Any] = {}
        for name, v in value.items():
            if name not in props:
                if not closed and not any(part.get("writeOnly") is True for schema in sent_props.get(name, [])
                                          for part, _ in self.walk.parts(*schema)):
                    result[name] = v
            elif not self.holds(props[name], v):
                continue  # null, or a type, the reads do not hold there (Kindgi's `agent: "id"` of a run that
                # reads an `agent` object): the server's to fill, as if not sent
            else:
                result[name] = self.complete(v, props[name], sent_props.get(name, []), depth=depth + 1)
        required = dict.fromkeys(n for part, _ in parts for n in part.get("required") or [] if n in props)
        for name in props:  # the server's, unset: null, as FastAPI answers it; a uuid reference a made-up id
            if name not in required and name not in result and name not in sent_props and _takes(
                    _types(self.walk, props[name]), None):
                result[name] = str(uuid.uuid4()) if name.endswith(("_id", "Id")) and "uuid" in (
                    part.get("format") for schema in props[name] for part, _ in self.applying("", [schema])) else None
        for name in required:
            if name in result or (depth == 0 and name in done and name not in value):
                continue
            made = server_value(self.walk, props[name], sent_props.get(name, []) if name not in value else [])
            if made is _GENERATED:
                schema = props[name][0]
                kinds = [_fill_kind(part) for part, _ in self.walk.parts(*schema)]
                result[name] = self.complete({}, props[name], [], depth=depth + 1) if "object" in (
                    _types(self.walk, props[name]) or ()) else _made(next(
                        (k for k in kinds if k not in ("generated", "sequence")), "static"), schema, self.generator)
            else:
                result[name] = copy.deepcopy(made)
        return result

    def properties(self, parts: Parts) -> dict[str, list[Schema]]:
        """The properties the parts declare, each with every schema that declares it (not to be changed: it is
        made once per parts)."""
        return self._properties.made(_ids(parts), lambda: (tuple(parts), self._declared(parts)))[1]

    def _declared(self, parts: Parts) -> dict[str, list[Schema]]:
        props: dict[str, list[Schema]] = {}
        for part, uri in parts:
            for name, node in (part.get("properties") or {}).items():
                props.setdefault(name, []).append(self.walk.deref(node, below(uri, "properties", name)))
        return props

    def applying(self, value: Any, schemas: list[Schema]) -> Parts:
        """The parts of the schemas that apply to the value: through `$ref` and `allOf`, and of each `anyOf`
        and `oneOf` the branch that fits the value best (`_fit`); found once for schemas without such branches,
        where the value makes no difference."""
        key = _ids(schemas)
        known = self._applying.get(key)
        if known is not None:
            return known[1]
        found = tuple(self._applying_to(value, schemas))
        if not any(node.get("anyOf") or node.get("oneOf") for node, _ in found):
            self._applying.put(key, (tuple(schemas), found))
        return found

    def _applying_to(self, value: Any, schemas: list[Schema], depth: int = 0) -> list[tuple[dict[str, Any], str]]:
        found: list[tuple[dict[str, Any], str]] = []
        for schema in schemas:
            node, uri = self.walk.deref(*schema)
            if not isinstance(node, dict) or depth > _MAX_DEPTH:
                continue
            found.append((node, uri))
            subs = [(sub, below(uri, "allOf", i)) for i, sub in enumerate(node.get("allOf") or [])]
            for key in ("anyOf", "oneOf"):
                branches = [(sub, below(uri, key, i)) for i, sub in enumerate(node.get(key) or [])]
                if branches:
                    subs.append(max(branches, key=lambda branch: self._fit(value, branch)))
            found += self._applying_to(value, subs, depth + 1)
        return found

    def _fit(self, value: Any, branch: Schema) -> int:
        """How well a value fits a branch: not at all for a type it does not take or a property's `const` or
        `enum` it breaks, else by the number of its properties the branch declares."""
        if not _takes(_types(self.walk, [branch]), value):
            return -1
        if not isinstance(value, dict):
            return 0
        props = self.properties(self.walk.parts(*branch))
        if any(self.ruled_out(props.get(name, []), v) for name, v in value.items()):
            return -1
        return sum(name in props for name in value)

    def holds(self, schemas: list[Schema], value: Any) -> bool:
        """Whether the schemas take a value of its JSON type, in the `anyOf`/`oneOf` branch it fits best."""
        kinds = json_types(value)
        return all(not isinstance(part.get("type"), str | list) or bool(kinds & set(
            [part["type"]] if isinstance(part["type"], str) else part["type"])) for part, _ in self.applying(
                value, schemas))

    def ruled_out(self, schemas: list[Schema], value: Any) -> bool:
        """Whether a `const` or `enum` of the schemas rules the value out."""
        return any(("const" in part and part["const"] != value) or ("enum" in part and value not in part["enum"])
                   for schema in schemas for part, _ in self.walk.parts(*schema))


@dataclass
class Write:
    """One operation's declared write, compiled: what it does, to which collection, how it finds the item."""

    kind: str  # create, update, replace, delete
    live: LiveCollection
    where: list[Filter]
    op: Operation
    generator: SchemaGenerator
    checks: list[Check] = field(default_factory=list)  # its own answer's schema
    body: Schema | None = None  # the request body's schema: what the client may send, and what it may not read
    action: bool | str = False  # an update by the body's members that are fields of the item (or of the body as
    # the field named); the answer is the operation's own (`Answers._acted`), not the item
    sets: dict[str, Any] = field(default_factory=dict)  # an action's own changes, where the body says nothing
    answers_item: bool = False  # an action whose answer is the items' schema: it answers the item changed
    done: dict[str, str] = field(default_factory=dict)  # the values of its own answer that say it was done
    answer: Schema | None = None  # the answer's schema, where it may not be an item's (`shown` makes it fit)
    conflict: int = 409  # a create's status for a key the client chose that an item has already
    _quick: list[Quick] | None = None  # `checks`, rooted (`prepare`)
    _projection: Projection | None = None  # how `shown` makes an answer of another shape (None: the item's own)

    def changed(self, body: Any) -> list[str]:
        """The item's fields an action changes with this body."""
        if isinstance(self.action, str):
            return [self.action]
        sent = [k for k in body if k in self.live.fields] if isinstance(body, dict) else []
        return list(dict.fromkeys([*self.sets, *sent]))

    def prepare(self) -> None:
        """Once the collection is prepared: what every write would otherwise work out again, the checks' validators
        rooted at their schemas and whether (and how) the answer is made to fit a shape other than the item's."""
        self._quick = quick(self.checks)
        if self.answer is not None and not any(self.answer[1] == uri for _, uri in self.live.reads):
            self._projection = self.live.projection(self.answer)

    def shown(self, served: dict[str, Any]) -> Any:
        """The answer to a write of this item: the item as served, or made to fit an answer of another shape."""
        return served if self._projection is None else self.live.project(served, self._projection)

    def apply(self, ctx: Context, store: Store) -> tuple[Any, dict[str, str]]:
        """Write, atomically in the caller's scope; the item as reads will serve it (None after a delete without
        a body to answer; a list of them after a create whose body is an array of items), and the headers the
        answer carries."""
        live, body = self.live, ctx.request.body
        assert self._quick is not None, "prepare() first"
        made: list[Any] = [None, None]  # the item last served and the answer made of it, checked and then sent

        def answer(served: dict[str, Any]) -> Any:
            """The answer of another shape, made once: the check's is the one sent."""
            if made[0] is not served:
                made[:] = [served, self.shown(served)]
            return made[1]

        own_quick = self._quick if self._projection is None else [
            (validator, answer if wrap == self.shown else wrap) for validator, wrap in self._quick]
        if body is None and self.kind != "delete" and not (self.op.request_body and self.op.request_body.required):
            body = {}  # an optional body left out: nothing sent (openai's `POST /videos` with none)
        batch = self.kind == "create" and isinstance(body, list) and all(isinstance(b, dict) for b in body)
        if self.kind != "delete" and not isinstance(body, dict) and not batch:
            raise MockError(400, f"{self.op.id} needs a JSON object in the body to {self.kind} an item"
                            + (", or an array of them" if self.kind == "create" else ""))
        response = self.op.response(self.op.success_status)
        answers = response is not None and bool(response.content)
        if batch and not body:
            return ([] if answers else None), {}  # an empty array creates nothing
        # the items written, each as served (None: a deleted one, served only if the answer shows it)
        kept: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        checked: dict[str, dict[str, Any]] = {}  # the items written, by key, each checked whole or by what changed

        def change(rows: Rows) -> RowsUpdate:
            view = live.advance(ctx.session, rows)
            assert view is not None, "the store answers what changed since the version the view holds"
            return decide(view)

        def create(view: View) -> RowsUpdate:
            """Each item of the body (one, or those of an array, in its order) created: all or none."""
            made: dict[str, dict[str, Any]] = {}
            counters = dict(view.counters)
            kept.clear()
            checked.clear()
            for i, sent in enumerate(body if batch else [body]):
                item = live.complete(live.filled(sent, self.generator, counters=counters), self.body)
                key = live.key_of(item)
                if key in view.items or key in made:
                    shown = ", ".join(f"{k}={item.get(k)!r}" for k in live.collection.key)
                    raise MockError(self.conflict, f"a {singular(live.name)} with {shown} exists already",
                                    details={k: item.get(k) for k in live.collection.key})
                if len(view.items) + len(made) >= live.limit:
                    raise MockError(507, f"{live.name!r} holds {live.limit} items in this session, the most it may "
                                    "(--max-items): delete some, or reset the session", code="mock-state-full",
                                    details={"collection": live.name, "limit": live.limit})
                item, served = live.check(item, self.checks, own_quick, sent, generator=self.generator)
                kept.append((item, served))
                counters.update(live.counted(item, counters))
                # items of one array that land at one place keep the array's order
                ranks = {op_id: live.rank_in(op_id, view, item) + ([i] if batch else []) for op_id in live.lists}
                made[key] = {"item": item, "seq": view.seq + i, "ranks": ranks}
                checked[key] = item
            return RowsUpdate(made, {k: v for k, v in counters.items() if v != view.counters.get(k)})

        def decide(view: View) -> RowsUpdate:
            if self.kind == "create":
                return create(view)
            found = live.find(view, ctx, self.where)
            if found is None:
                raise not_found(live.collection, ctx)
            old = view.items[found]
            if self.kind == "delete":
                kept[:] = [(old, None)]
                return RowsUpdate({found: {"gone": True} if live.in_fixtures(found) else None})
            own = {self.action: body} if isinstance(self.action, str) else \
                {k: v for k, v in body.items() if k in live.fields} if self.action else body
            patch = {**self.sets, **own} if self.sets else own
            new = merge_patch(old, patch) if self.kind == "update" else dict(body)
            item = live.complete(live.filled(new, self.generator, keep=old), self.body)
            fitted = (old, view.served[found]) if view.checked.get(found) is old else None
            kept[:] = [live.check(item, self.checks, own_quick, body, fitted, before=old)]
            checked.clear()
            checked[found] = item
            return RowsUpdate({found: {**(view.rows.get(found) or live.base_row(found)), "item": item}})

        with live.lock:  # the view holds still from the first look to the write's own change of it
            known = live.held(store, ctx.session).version
            view = live.advance(ctx.session, store.change_live(ctx.session, live.name, change, known))
            if view is not None and self.kind != "delete":
                view.checked.update((key, item) for key, item in checked.items() if view.items.get(key) is item)
        item, served = kept[-1]
        headers: dict[str, str] = {}
        if self.kind == "create" and not batch and response is not None and \
                any(h.lower() == "location" for h in response.headers):
            value = item.get(live.collection.key[0])
            headers["Location"] = ctx.path.rstrip("/") + "/" + quote(str(value), safe="")
        if not answers:
            return None, headers
        if batch:
            return [served for _, served in kept], headers
        return answer(live.serve(item) if served is None else served), headers

