"""Stateful mode inferred (`--stateful`, or `stateful: true` in the fixtures' settings): the conventional REST
shape, `POST /things` creates, `GET /things` lists, `GET|PUT|PATCH|DELETE /things/{id}` reads, replaces, updates,
deletes, read from the description's paths, methods and schemas, and turned into the same declarations a
fixture file would hold (`list`, `item`, `create`, `replace`, `update`, `delete`), so they compile and are checked
as if written by hand. An operation whose fixtures declare anything is left as declared. The collection is the
fixtures' of the same name, else seeded from the description's examples of its list and item reads (those that
fit them). `mockserver validate` prints what was inferred, per operation."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .fixtures import Collection, FixtureSet, Located
from .schema_walk import SchemaWalk
from .spec import MediaType, Operation, SpecIndex

_PARAMETER = re.compile(r"^\{([^{}]+)\}$")
_ITEM_WRITES = {"put": "replace", "patch": "update", "delete": "delete"}


@dataclass(frozen=True)
class Inferred:
    """One operation given a declaration: `what` says it in the words of the fixture format."""

    operation: str
    what: str


def infer(spec: SpecIndex, fixtures: FixtureSet) -> list[Inferred]:
    """Add to `fixtures` the declarations the REST shape implies (in place); what was added, or left out and why."""
    walk = SchemaWalk(spec.docs.resolve)
    by_path: dict[str, dict[str, Operation]] = {}
    for op in spec.operations.values():
        by_path.setdefault(op.path, {})[op.method.lower()] = op
    found: list[Inferred] = []
    # top-level resources first: a nested one (`/owners/{o}/pets`) shares the collection they seed
    for path, methods in sorted(by_path.items(), key=lambda pm: (pm[0].count("/"), pm[0])):
        segments = path.strip("/").split("/")
        if not segments[-1] or _PARAMETER.match(segments[-1]):
            continue
        item_path, param = next(((p, _PARAMETER.match(p.rsplit("/", 1)[1]).group(1))  # type: ignore[union-attr]
                                 for p in sorted(by_path) if p.rsplit("/", 1)[0] == path.rstrip("/")
                                 and _PARAMETER.match(p.rsplit("/", 1)[1])), (None, None))
        item_methods = by_path.get(item_path, {}) if item_path else {}
        if "post" not in methods and not any(m in item_methods for m in _ITEM_WRITES):
            continue  # nothing writes here: the mock answers it as before
        found += _infer_resource(spec, walk, fixtures, segments[-1], methods, item_methods, param)
    return found


def _infer_resource(spec: SpecIndex, walk: SchemaWalk, fixtures: FixtureSet, name: str,
                    methods: dict[str, Operation], item_methods: dict[str, Operation],
                    param: str | None) -> list[Inferred]:
    lister, creator, reader = methods.get("get"), methods.get("post"), item_methods.get("get")
    item_schema = next((s for s in (_schema(reader), _schema(creator)) if s is not None), None)
    if item_schema is None and lister is not None and (page := _schema(lister)) is not None:
        node, uri = walk.deref(page.node, page.uri)
        item_schema = None if node.get("type") != "array" else page
    props = {name for part, _ in (walk.parts(item_schema.node, item_schema.uri) if item_schema else [])
             for name in (part.get("properties") or {})}
    key = param if param in props or not props else next(
        (k for k in (_last_word(param), "id") if k in props), param)
    if key is None or (props and key not in props):
        return [Inferred(op.id, f"not inferred: {name} items have no key property ({param or 'id'})")
                for op in (lister, creator, reader, *item_methods.values()) if op is not None]
    todo: list[tuple[Operation, dict[str, Any], str]] = []
    where = [{"field": key, "equals": {"path": param}}] if param else []
    left_out: list[Inferred] = []
    if lister is not None:
        page = _page_names(walk, lister)
        if page is None:
            left_out.append(Inferred(lister.id, f"not inferred: its answer is not an array of {name} nor a page "
                                                "holding one (data, hasMore, nextCursor)"))
        else:
            todo.append((lister, {"list": {"from": name, **({"page": page} if page else {})}}, f"lists {name}"))
    if creator is not None and creator.request_body is not None:  # a POST without a body is an action
        todo.append((creator, {"create": {"into": name}}, f"creates into {name} (key {key})"))
    if param:
        if reader is not None:
            todo.append((reader, {"item": {"from": name, "where": where}}, f"reads one of {name} by {key}"))
        for method, kind in _ITEM_WRITES.items():
            if method in item_methods and (kind == "delete" or item_methods[method].request_body is not None):
                into = "from" if kind == "delete" else "in"
                todo.append((item_methods[method], {kind: {into: name, "where": where}},
                             f"{kind}s one of {name} by {key}" + (" (merge patch)" if kind == "update" else "")))
    todo = [t for t in todo if t[0].id not in fixtures.operations]
    if not todo:
        return left_out
    if name not in fixtures.collections:
        seeds = _seeds(walk, lister, reader, key)
        fixtures.collections[name] = Collection(name, seeds, frozenset(), [key], None, _located(spec, todo[0][0], {}))
    elif not fixtures.collections[name].key:
        fixtures.collections[name].key = [key]
    for op, config, _ in todo:
        fixtures.operations[op.id] = _located(spec, op, config)
    return left_out + [Inferred(op.id, what) for op, _, what in todo]


def _last_word(param: str | None) -> str | None:
    """`pool_name` → `name`, `xcomKey` → `key`: the property a path parameter names inside its resource."""
    if not param:
        return None
    words = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", param)
    return words[-1].lower() if len(words) > 1 else None


def _schema(op: Operation | None) -> Any:
    media = _media(op)
    return media.schema if media is not None else None


def _media(op: Operation | None) -> MediaType | None:
    response = op.response(op.success_status) if op else None
    if response is None:
        return None
    return next((m for t, m in response.content.items() if "json" in t and m.schema is not None), None)


def _page_names(walk: SchemaWalk, lister: Operation) -> dict[str, str] | None:
    """How the list answers: `{}` (the default page), `{items: ""}` (a bare array), another array property as
    the items, or None when no page the mock makes fits the schema."""
    media = _media(lister)
    if media is None or media.schema is None:
        return None
    node, uri = walk.deref(media.schema.node, media.schema.uri)
    if isinstance(node, dict) and node.get("type") == "array":
        return {"items": ""}
    arrays = [n for part, _ in walk.parts(node, uri) for n, p in (part.get("properties") or {}).items()
              if isinstance(p, dict) and walk.deref(p, uri)[0].get("type") == "array"]
    for items in (["data"] if "data" in arrays else []) + arrays:
        if all(media.schema.validator.is_valid(page) for page in (
                {items: [], "hasMore": False}, {items: [], "hasMore": True, "nextCursor": "c"})):
            return {} if items == "data" else {"items": items}
    return None


def _seeds(walk: SchemaWalk, lister: Operation | None, reader: Operation | None, key: str) -> list[dict[str, Any]]:
    """Items from the examples of the list and item reads: each one that fits the item read and has a key."""
    candidates: list[Any] = []
    for op in (lister, reader):
        media = _media(op)
        for example in (media.examples.values() if media else ()):
            if op is lister and isinstance(example, dict):
                example = next((v for v in example.values() if isinstance(v, list)), [])
            candidates += example if isinstance(example, list) else [example]
    check = _media(reader)
    seeds: dict[str, dict[str, Any]] = {}
    for item in candidates:
        if isinstance(item, dict) and key in item and (check is None or check.schema is None
                                                        or check.schema.validator.is_valid(item)):
            seeds.setdefault(repr(item[key]), item)
    return list(seeds.values())


def _located(spec: SpecIndex, op: Operation, value: Any) -> Located:
    """An inferred declaration is placed at its operation in the description, for any problem it has."""
    uri, _, pointer = op.uri.partition("#")
    return Located(value, spec.docs.document(uri), pointer)
