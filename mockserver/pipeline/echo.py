"""Generated answers that agree with the request, as a client reading them expects: the value of a path or query
parameter in the field that carries it (`GET /dags/tutorial` answers `dag_id: tutorial`, `/pets/{petId}` the
pet's `id`), the fields of a created or replaced resource as they were sent, and a list as long as `limit` asks
(within the schema's bounds, and a page of at most PAGE_CAP) with a total that agrees with it, no item twice, and
a page envelope that does not contradict itself (`hasMore: false` and no `nextCursor`, or more and a cursor). Each
echo is kept only if the answer still fits its schema."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..spec.index import Operation
from ..spec.schema_walk import SchemaWalk
from .request_validation import ValidRequest

PAGE_CAP = 100  # items in one generated page, whatever `limit` asks
LIMIT_NAMES = frozenset({"limit", "perpage", "pagesize", "size", "maxresults", "top", "first", "count", "pagelen"})
OFFSET_NAMES = frozenset({"offset", "skip", "start", "startindex"})
PAGE_NAMES = frozenset({"page", "pagenumber", "pageno", "pageindex"})  # 1-based, `limit` items a page
CURSOR_NAMES = frozenset({"cursor", "after", "before", "pagetoken", "nextpagetoken", "continuationtoken", "marker",
                          "startingafter", "endingbefore"})
# a list's count of every item, beside the list or in an object beside it (`meta: {total: …}`)
TOTAL_NAMES = frozenset({"total", "totalcount", "totalentries", "totalitems", "totalresults", "totalrecords",
                         "totalsize", "totalelements", "totalhits", "totalrows", "count", "numfound"})
# a page's "there is more" flag and the cursor of the next page, beside the list or in an object beside it
MORE_NAMES = frozenset({"hasmore", "hasnext", "hasnextpage", "more", "moreitems", "hasmoreitems", "hasmoreresults"})
NEXT_NAMES = frozenset({"nextcursor", "nextpagetoken", "nexttoken", "nextpage", "next", "cursor", "nextmarker",
                        "continuationtoken", "nextlink", "nexturl"})
_PAGING = LIMIT_NAMES | OFFSET_NAMES | PAGE_NAMES | CURSOR_NAMES
_PATH_PARAM = re.compile(r"{([^}]+)}")

MakeItem = Callable[[Any, str, int], Any]  # (items schema, its URI, index) -> a new item
MakeValue = Callable[[Any, str, str], Any]  # (schema, its URI, salt) -> a value, the same for the same salt


def _norm(name: str) -> str:
    """`dag_id`, `dagId` and `DAG-ID` alike."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _paging(request: ValidRequest) -> tuple[int | None, int]:
    """The page a request asks for: its `limit` (None when it gives none), and how many items come before it
    (`offset`, or `page` counted in pages of `limit`)."""
    asked = dict(request.query)
    for value in request.query.values():  # an object parameter's properties (`page: {limit: 3}`) count too
        if isinstance(value, dict):
            asked.update(value)
    by_norm = {_norm(name): value for name, value in asked.items() if _count(value)}
    limit = next((value for name, value in by_norm.items() if name in LIMIT_NAMES), None)
    offset = next((value for name, value in by_norm.items() if name in OFFSET_NAMES), None)
    page = next((value for name, value in by_norm.items() if name in PAGE_NAMES), None)
    if offset is None and page is not None and limit is not None:
        offset = (page - 1) * limit
    return limit, max(offset or 0, 0)


class Echo:
    def __init__(self, walk: SchemaWalk) -> None:
        self._walk = walk

    def apply(self, op: Operation, payload: Any, schema: Any, uri: str, fits: Callable[[Any], bool],
              request: ValidRequest, make_item: MakeItem, make_value: MakeValue) -> Any:
        """Every echo made at once and checked once (checking a page of 99 big items takes a second): only when
        the whole does not fit, each echo is made again on its own and kept if it fits (a new item is made once)."""
        made: dict[int, Any] = {}

        def item(node: Any, item_uri: str, index: int) -> Any:
            if index not in made:
                made[index] = make_item(node, item_uri, index)
            return made[index]

        echoed = self._echoed(op, payload, schema, uri, lambda _: True, request, item, make_value)
        if echoed is payload or fits(echoed):
            return echoed
        return self._echoed(op, payload, schema, uri, fits, request, item, make_value)

    @staticmethod
    def agreeing(payload: Any, values: dict[str, Any], fits: Callable[[Any], bool]) -> Any:
        """The answer with `values` in its properties of the same names, each where it still fits: an action's
        own answer holding what the action changed, as the item now has it."""
        if not isinstance(payload, dict):
            return payload
        return _fitting(payload, [([name], value) for name, value in values.items() if name in payload], fits)

    def _echoed(self, op: Operation, payload: Any, schema: Any, uri: str, fits: Callable[[Any], bool],
                request: ValidRequest, make_item: MakeItem, make_value: MakeValue) -> Any:
        limit, offset = _paging(request)
        payload = self._sized(payload, schema, uri, fits, limit, make_item)
        asked = {name: value for name, value in request.path.items() if _scalar(value)}
        asked.update({name: value for (location, name) in request.sent if location == "query"
                      and _norm(name) not in LIMIT_NAMES and _scalar(value := request.query.get(name))})
        changes: list[tuple[list[Any], Any]] = []
        if isinstance(payload, dict):
            changes += _matches(payload, asked, [])
            if isinstance(request.body, dict):
                changes += [([key], value) for key, value in request.body.items() if key in payload]
            resource = _PATH_PARAM.findall(op.path)[-1:]
            if resource and "id" in payload and resource[0] != "id" and _norm(resource[0]).endswith("id") and \
                    not any(_norm(key) == _norm(resource[0]) for key in payload) and resource[0] in request.path:
                changes.append((["id"], request.path[resource[0]]))
        payload = _fitting(payload, changes, fits)
        # then the items of its list, as it stands now (a list sent in the body may have taken its place)
        items = [change for path, values in _lists(payload) for index, item in enumerate(values)
                 if isinstance(item, dict) for change in _matches(item, asked, [*path, index])]
        payload = _fitting(payload, items, fits)
        payload = _distinct(payload, fits)
        payload = self._counted(op, payload, schema, uri, fits, request, (limit, offset), make_value)
        return self._coherent(payload, schema, uri, fits, limit)

    def _coherent(self, payload: Any, schema: Any, uri: str, fits: Callable[[Any], bool], limit: int | None) -> Any:
        """A page envelope that agrees with itself: no next cursor where there is no more (`hasMore: false`, or
        the last page: fewer items than `limit`), and, where the schema has a cursor, no `hasMore: true` without
        one to get the more with. The cursor is left out, else null, as the schema takes it; else the flag gives
        way. Beside the list, or in an object beside it (`pagination: {hasMore, nextCursor}`)."""
        found = next(iter(_lists(payload)), None)
        if found is None or not isinstance(payload, dict):
            return payload
        last = limit is not None and len(found[1]) < limit
        places: list[tuple[list[Any], dict[str, Any]]] = [([], payload)]
        for at, envelope in places + [([key], value) for key, value in payload.items() if isinstance(value, dict)]:
            node, node_uri = schema, uri
            for step in at:
                node, node_uri = self._walk.property(node, node_uri, step)
            named = next((str(key) for part, _ in self._walk.parts(node, node_uri)
                          for key in part.get("properties") or {} if _norm(str(key)) in NEXT_NAMES), None)
            more = next((key for key, value in envelope.items()
                         if _norm(key) in MORE_NAMES and isinstance(value, bool)), None)
            if more is None and named is None:
                continue
            cursor = named if named is not None and _scalar(envelope.get(named)) else None
            if named is None:  # paged by offset: only the last page's flag can be wrong
                has_more = bool(more is not None and envelope[more]) and not last
            else:
                has_more = not last and cursor is not None and (more is None or envelope[more])
            if (more is None or envelope[more] == has_more) and (named is None or (cursor is not None) == has_more):
                return payload  # coherent; else there is no more: the flag false, no cursor
            flag = [([*at, more], False)] if more is not None else []
            tries = [_applied(_without(payload, [*at, cursor]), flag),
                     _applied(payload, [*flag, ([*at, cursor], None)])] if cursor is not None else []
            for candidate in [*tries, _applied(payload, flag)]:
                if fits(candidate):
                    return candidate
            return payload
        return payload

    def _counted(self, op: Operation, payload: Any, schema: Any, uri: str, fits: Callable[[Any], bool],
                 request: ValidRequest, page: tuple[int | None, int], make_value: MakeValue) -> Any:
        """The list's total (`total_entries`, `totalCount`, `meta.total`, …) agreeing with its items: made for
        the list (the request without its paging), so every page of it says the same, never less than the items
        up to this page's end, and exactly that on the last page (fewer items than `limit` asks)."""
        found = next(iter(_lists(payload)), None)
        if found is None or not found[0]:
            return payload
        fields = [[key] for key, value in payload.items() if _norm(key) in TOTAL_NAMES and _count(value)]
        fields += [[key, inner] for key, value in payload.items() if isinstance(value, dict)
                   for inner, count in value.items() if _norm(inner) in TOTAL_NAMES and _count(count)]
        if not fields:
            return payload
        limit, offset = page
        seen = offset + len(found[1])
        if limit is not None and len(found[1]) < limit:
            total = seen
        else:
            node, node_uri = schema, uri
            for step in fields[0]:
                node, node_uri = self._walk.property(node, node_uri, step)
            identity = sorted((name, repr(value)) for name, value in [*request.path.items(), *request.query.items()]
                              if _norm(name) not in _PAGING)
            made = make_value(node, node_uri, f"{op.id}|total|{identity}") if node is not None else None
            total = max(made, seen) if isinstance(made, int) and not isinstance(made, bool) else seen
        return _fitting(payload, [(path, total) for path in fields], fits)

    def _sized(self, payload: Any, schema: Any, uri: str, fits: Callable[[Any], bool], limit: int | None,
               make_item: MakeItem) -> Any:
        """The answer's list (the answer itself, or its first list-valued property) as long as `limit` asks."""
        found = next(iter(_lists(payload)), None)
        if limit is None or found is None:
            return payload
        path, items = found
        node, node_uri = schema, uri
        for step in path:
            node, node_uri = self._walk.property(node, node_uri, step)
        low, high = self._walk.bounds(node, node_uri)
        want = max(low, min(limit, PAGE_CAP, high if high is not None else PAGE_CAP))
        if want == len(items):
            return payload
        item_node, item_uri = self._walk.items(node, node_uri)
        if want > len(items) and item_node is None:
            return payload
        resized = items[:want] + [make_item(item_node, item_uri, i) for i in range(len(items), want)]
        candidate = _applied(payload, [(path, resized)])
        return candidate if fits(candidate) else payload


def _distinct(payload: Any, fits: Callable[[Any], bool]) -> Any:
    """The list without an item twice (the same `id`, or the same value), where the schema allows it shorter."""
    found = next(iter(_lists(payload)), None)
    if found is None:
        return payload
    path, items = found
    seen: set[str] = set()
    kept = []
    for item in items:
        identity = repr(item["id"]) if isinstance(item, dict) and _scalar(item.get("id")) else repr(item)
        if identity not in seen:
            seen.add(identity)
            kept.append(item)
    if len(kept) == len(items):
        return payload
    candidate = _applied(payload, [(path, kept)])
    return candidate if fits(candidate) else payload


def _without(value: Any, path: list[Any]) -> Any:
    """A copy of `value` without the property at `path`."""
    if len(path) == 1:
        return {key: sub for key, sub in value.items() if key != path[0]}
    return {**value, path[0]: _without(value[path[0]], path[1:])}


def _matches(target: dict[str, Any], asked: dict[str, Any], path: list[Any]) -> list[tuple[list[Any], Any]]:
    by_norm = {_norm(name): value for name, value in asked.items()}
    return [([*path, key], by_norm[_norm(key)]) for key, current in target.items()
            if _norm(key) in by_norm and _scalar(current)]


def _lists(payload: Any) -> list[tuple[list[Any], list[Any]]]:
    """The answer's list of items: the answer itself, or its first property holding a list."""
    if isinstance(payload, list):
        return [([], payload)]
    if isinstance(payload, dict):
        return [([key], value) for key, value in payload.items() if isinstance(value, list)][:1]
    return []


def _fitting(payload: Any, changes: list[tuple[list[Any], Any]], fits: Callable[[Any], bool]) -> Any:
    """The payload with every change, if it fits so; else with those that fit, a field at a time: the same value
    in the same field of every item is one change (a value that breaks one item's field breaks them all), so a
    page of 100 items is checked once per field, not once per item and field (200 checks took Twilio 4 s)."""
    if not changes:
        return payload
    echoed = _applied(payload, changes)
    if fits(echoed):
        return echoed
    fields: dict[tuple[tuple[Any, ...], str], list[tuple[list[Any], Any]]] = {}
    for path, value in changes:
        fields.setdefault((tuple(step for step in path if not isinstance(step, int)), repr(value)), []).append(
            (path, value))
    for field_changes in fields.values():
        candidate = _applied(payload, field_changes)
        if fits(candidate):
            payload = candidate
    return payload


def _applied(value: Any, changes: list[tuple[list[Any], Any]]) -> Any:
    """A copy of `value` with each change made (`path` into dicts and lists, then the new value)."""
    for path, new in changes:
        value = _put(value, path, new)
    return value


def _put(value: Any, path: list[Any], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, list):
        return [*value[:head], _put(value[head], rest, new), *value[head + 1:]]
    return {**value, head: _put(value[head], rest, new)}
