"""What changed between two descriptions, for the clients of the API: each change classified breaking or not, with
where it stands in both documents.

Requests and responses flip: a client *sends* requests, so a request narrowed (an enum value gone, a tighter
bound, a new required parameter or property) rejects what clients send: breaking; widened is not. A client
*receives* responses, so a response widened (a new enum value, a looser bound, a new type, made nullable, a
property no longer required or gone) hands clients what they may not handle: breaking; narrowed is not for
clients (it may still reject what the server sends today: that is what the evidence, `tools/evidence.py`, shows).
A parameter or request property removed is breaking too: what clients send in it is ignored from now on.

Schemas are compared through `$ref`s across files, once per pair of schemas (a component used by a hundred
operations is compared once), so two descriptions of several MB compare in seconds.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from ..base.pointers import pointer_join
from ..spec.index import Operation, Response, SpecIndex, pointer_uri

REQUEST, RESPONSE = "request", "response"
_TEMPLATE_PARAM = re.compile(r"\{[^}]*\}")
# bound keyword -> True when a larger value narrows (a minimum), False when a smaller one does (a maximum)
_BOUNDS = {"minimum": True, "exclusiveMinimum": True, "minLength": True, "minItems": True, "minProperties": True,
           "maximum": False, "exclusiveMaximum": False, "maxLength": False, "maxItems": False, "maxProperties": False}
_COMBINERS = ("allOf", "anyOf", "oneOf")
_CLOSERS = ("additionalProperties", "unevaluatedProperties")  # `false`: an object that refuses other properties
# keyword -> (kind when added, kind when removed, side it breaks when added): a readOnly property is not to be
# sent (servers may refuse it), a writeOnly one is no longer answered (clients reading it get nothing)
_ACCESS = {"readOnly": ("made-read-only", "no-longer-read-only", REQUEST),
           "writeOnly": ("made-write-only", "no-longer-write-only", RESPONSE)}


@dataclass(frozen=True)
class Location:
    file: str
    line: int | None
    pointer: str

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "pointer": self.pointer}


@dataclass(frozen=True)
class Site:
    """Where a change bites in an exchange: an operation (OLD's, as `operation_name` names it), the side, the
    status of a response (None on the request side) and a place like drift's (`/body/items/*/kind`)."""

    operation: str
    side: str
    status: str | None
    place: str


@dataclass
class Change:
    kind: str  # operation-removed, enum-narrowed, property-removed, …
    breaking: bool
    side: str
    message: str
    old: Location | None
    new: Location | None
    sites: list[Site] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "breaking": self.breaking, "side": self.side, "message": self.message,
                "old": self.old.as_dict() if self.old else None, "new": self.new.as_dict() if self.new else None,
                "operations": sorted({s.operation for s in self.sites}),
                "sites": [{"operation": s.operation, "status": s.status, "place": s.place} for s in self.sites]}


@dataclass(frozen=True)
class _Found:
    """A change inside a schema, relative to it (memoised per pair of schemas)."""

    kind: str
    breaking: bool
    message: str
    old_uri: str
    new_uri: str
    tokens: tuple[str, ...]  # instance path below the schema; "*" for any index or key


def operation_name(op: Operation) -> str:
    """An operation as reports name it: `GET /items/{id}` (with the query of a path key such as `?beta=true`)."""
    query = "?" + urlencode(op.query_match) if op.query_match else ""
    return f"{op.method} {op.path}{query}"


def _identity(op: Operation) -> str:
    """An operation's identity across versions: its name, path parameter names left out (a renamed path
    parameter is the same URL)."""
    return _TEMPLATE_PARAM.sub("{}", operation_name(op))


def response_key(op: Operation, status: int) -> str | None:
    """The declared response a status falls under: its code, its range, or `default`."""
    for key in (str(status), f"{str(status)[0]}XX", "default"):
        if key in op.responses:
            return key
    return None


class Differ:
    def __init__(self, old: SpecIndex, new: SpecIndex) -> None:
        self.old, self.new = old, new
        self._memo: dict[tuple[str, str, str, bool, bool], list[_Found]] = {}
        self._changes: dict[tuple[Any, ...], Change] = {}

    def matched(self) -> dict[str, tuple[Operation, Operation | None]]:
        """OLD's operations by name, each with NEW's operation at the same method and path (or None)."""
        new_ops = {_identity(op): op for op in self.new.operations.values()}
        return {operation_name(op): (op, new_ops.get(_identity(op))) for op in self.old.operations.values()}

    def run(self) -> list[Change]:
        pairs = self.matched()
        old_identities = {_identity(op) for op in self.old.operations.values()}
        for key, (old_op, new_op) in pairs.items():
            if new_op is None:
                self._add("operation-removed", True, REQUEST, f"{key} ({old_op.id}) is removed", old_op.uri,
                          self._parent(self.new, old_op), Site(key, REQUEST, None, "/path"))
            else:
                self._operation(key, old_op, new_op)
        for new_op in self.new.operations.values():
            key = operation_name(new_op)
            if _identity(new_op) not in old_identities:
                self._add("operation-added", False, REQUEST, f"{key} ({new_op.id}) is added",
                          self._parent(self.old, new_op), new_op.uri, Site(key, REQUEST, None, "/path"))
        return sorted(self._changes.values(), key=lambda c: (not c.breaking, c.kind, c.message))

    # -- recording -----------------------------------------------------------------------------------------
    def _location(self, spec: SpecIndex, uri: str | None) -> Location | None:
        if uri is None:
            return None
        file, line, pointer = spec.docs.location(uri)
        return Location(file, line, pointer)

    @staticmethod
    def _parent(spec: SpecIndex, op: Operation) -> str:
        """Where an operation missing from `spec` would stand: its path item if the path is there, else `paths`."""
        root = spec.docs.root
        there = op.path in (root.data.get("paths") or {})
        return root.uri + "#" + (pointer_join("/paths", op.path) if there else "/paths")

    def _add(self, kind: str, breaking: bool, side: str, message: str, old_uri: str | None, new_uri: str | None,
             site: Site) -> None:
        """One change per place in the documents; the operations it reaches are its sites."""
        identity = (kind, side, message, old_uri, new_uri)
        change = self._changes.get(identity)
        if change is None:
            change = self._changes[identity] = Change(kind, breaking, side, message,
                                                      self._location(self.old, old_uri),
                                                      self._location(self.new, new_uri))
        if site not in change.sites:  # reached twice (two `allOf` branches naming one schema): one site
            change.sites.append(site)

    # -- operations ----------------------------------------------------------------------------------------
    def _operation(self, key: str, old: Operation, new: Operation) -> None:
        self._parameters(key, old, new)
        self._request_body(key, old, new)
        self._security(key, old, new)
        for status, old_response in old.responses.items():
            new_response = new.responses.get(status)
            if new_response is None:
                self._add("response-removed", True, RESPONSE, f"{key} no longer declares response {status}",
                          old_response.uri, pointer_uri(new.uri, "responses"), Site(key, RESPONSE, status, "/status"))
                continue
            self._headers(key, status, old_response, new_response)
            for name, old_media in old_response.content.items():
                new_media = new_response.content.get(name)
                if new_media is None:
                    self._add("media-type-removed", True, RESPONSE, f"{key} {status} no longer answers {name}",
                              pointer_uri(old_response.uri, "content", name), pointer_uri(new_response.uri, "content"),
                              Site(key, RESPONSE, status, "/headers/content-type"))
                elif old_media.schema and new_media.schema:
                    self._schemas(key, RESPONSE, status, "/body", old_media.schema.node, old_media.schema.uri,
                                  new_media.schema.node, new_media.schema.uri)
        for status, new_response in new.responses.items():
            if status not in old.responses:
                self._add("response-added", False, RESPONSE, f"{key} declares a new response {status}",
                          pointer_uri(old.uri, "responses"), new_response.uri, Site(key, RESPONSE, status, "/status"))

    def _headers(self, key: str, status: str, old: Response, new: Response) -> None:
        """A response header clients read: gone is breaking, its schema compared as the body's."""
        news = {name.lower(): header for name, header in new.headers.items()}
        for name, old_header in old.headers.items():
            new_header = news.get(name.lower())
            site = Site(key, RESPONSE, status, f"/headers/{name}")
            if new_header is None:
                self._add("header-removed", True, RESPONSE, f"{key} {status} no longer sends the header {name}",
                          pointer_uri(old.uri, "headers", name), pointer_uri(new.uri, "headers")
                          if new.headers else new.uri, site)
            elif old_header.schema and new_header.schema:
                self._schemas(key, RESPONSE, status, f"/headers/{name}", old_header.schema.node,
                              old_header.schema.uri, new_header.schema.node, new_header.schema.uri)

    def _parameters(self, key: str, old: Operation, new: Operation) -> None:
        def by_key(op: Operation) -> dict[tuple[str, str], tuple[int, Any]]:
            return {(p.location, p.name.lower() if p.location == "header" else p.name): (i, p)
                    for i, p in enumerate(op.parameters) if p.location != "path"}

        olds, news = by_key(old), by_key(new)
        removed = {k: v for k, v in olds.items() if k not in news}
        added = {k: v for k, v in news.items() if k not in olds}
        for k in list(removed):
            index, param = removed[k]
            moved = next((a for a in added if a[1] == k[1]), None)  # same name, another place
            renamed = next((a for a, (i, p) in added.items() if a[0] == k[0] and i == index), None)
            site = Site(key, REQUEST, None, f"/{k[0]}/{param.name}")
            if moved is not None:
                target = added.pop(moved)[1]
                self._add("parameter-moved", True, REQUEST, f"{key}: parameter {param.name} moved from {k[0]} to "
                          f"{moved[0]}", param.uri, target.uri, site)
            elif renamed is not None:
                target = added.pop(renamed)[1]
                self._add("parameter-renamed", True, REQUEST, f"{key}: {k[0]} parameter {param.name} is renamed "
                          f"{target.name}", param.uri, target.uri, site)
            else:
                self._add("parameter-removed", True, REQUEST, f"{key}: {k[0]} parameter {param.name} is removed "
                          "(what clients send in it is ignored)", param.uri, pointer_uri(new.uri, "parameters"), site)
        for k, (_, param) in added.items():
            site = Site(key, REQUEST, None, f"/{k[0]}/{param.name}")
            if param.required:
                self._add("parameter-added-required", True, REQUEST, f"{key}: new required {k[0]} parameter "
                          f"{param.name}", pointer_uri(old.uri, "parameters"), param.uri, site)
            else:
                self._add("parameter-added", False, REQUEST, f"{key}: new optional {k[0]} parameter {param.name}",
                          pointer_uri(old.uri, "parameters"), param.uri, site)
        for k, (_, old_param) in olds.items():
            if k not in news:
                continue
            new_param = news[k][1]
            place = f"/{k[0]}/{old_param.name}"
            if new_param.required and not old_param.required:
                self._add("parameter-made-required", True, REQUEST, f"{key}: {k[0]} parameter {old_param.name} is "
                          "now required", old_param.uri, new_param.uri, Site(key, REQUEST, None, place))
            if old_param.schema and new_param.schema:
                self._schemas(key, REQUEST, None, place, old_param.schema.node, old_param.schema.uri,
                              new_param.schema.node, new_param.schema.uri)
        for old_param, new_param in zip([p for p in old.parameters if p.location == "path"],
                                        [p for p in new.parameters if p.location == "path"]):
            if old_param.schema and new_param.schema:  # by position: a renamed path parameter is the same URL
                self._schemas(key, REQUEST, None, f"/path/{new_param.name}", old_param.schema.node,
                              old_param.schema.uri, new_param.schema.node, new_param.schema.uri)

    def _request_body(self, key: str, old: Operation, new: Operation) -> None:
        old_body, new_body = old.request_body, new.request_body
        body_uri = pointer_uri(new.uri, "requestBody")
        site = Site(key, REQUEST, None, "/body")
        if new_body is None and old_body is not None:
            self._add("request-body-removed", True, REQUEST, f"{key}: takes no request body any more (what clients "
                      "send is ignored)", pointer_uri(old.uri, "requestBody"), new.uri, site)
        if new_body is None or (old_body is None and not new_body.required):
            return
        if old_body is None or (new_body.required and not old_body.required):
            self._add("request-body-made-required", True, REQUEST, f"{key}: a request body is now required",
                      pointer_uri(old.uri, "requestBody") if old_body else old.uri, body_uri, site)
        if old_body is None:
            return
        for name, old_media in old_body.content.items():
            new_media = new_body.content.get(name)
            if new_media is None:
                self._add("media-type-removed", True, REQUEST, f"{key}: request bodies in {name} are no longer "
                          "accepted", pointer_uri(old.uri, "requestBody", "content", name),
                          pointer_uri(body_uri, "content"), Site(key, REQUEST, None, "/headers/content-type"))
            elif old_media.schema and new_media.schema:
                self._schemas(key, REQUEST, None, "/body", old_media.schema.node, old_media.schema.uri,
                              new_media.schema.node, new_media.schema.uri)

    def _security(self, key: str, old: Operation, new: Operation) -> None:
        """An old way in that is gone breaks the clients using it; no security before means any client."""
        def ways(op: Operation) -> set[frozenset[str]]:
            return {frozenset(requirement) for requirement in op.security} or {frozenset()}

        gone = ways(old) - ways(new)
        site = Site(key, REQUEST, None, "/security")
        for way in sorted(gone, key=sorted):
            what = f"{key}: security added (" + " or ".join(
                "+".join(sorted(w)) or "none" for w in sorted(ways(new), key=sorted)) + ")" if not way else \
                f"{key}: {'+'.join(sorted(way))} is no longer accepted"
            self._add("security-added", True, REQUEST, what, old.uri, new.uri, site)

    # -- schemas -------------------------------------------------------------------------------------------
    def _schemas(self, key: str, side: str, status: str | None, place: str, old: Any, old_uri: str, new: Any,
                 new_uri: str) -> None:
        for found in self._compare(old, old_uri, new, new_uri, side):
            self._add(found.kind, found.breaking, side, found.message, found.old_uri, found.new_uri,
                      Site(key, side, status, place + "".join("/" + t for t in found.tokens)))

    def _resolve(self, spec: SpecIndex, node: Any, uri: str) -> tuple[Any, str]:
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            node, uri = spec.docs.resolve(node["$ref"], uri)
        return node, uri

    def _unwrapped(self, spec: SpecIndex, node: Any, uri: str) -> tuple[Any, str, bool]:
        """The schema itself, and whether it admits null: `{anyOf: [S, {type: null}]}` (3.0's `nullable` beside a
        `$ref`, as `schemas.py` rewrites it, or written so in 3.1) is S that may be null."""
        node, uri = self._resolve(spec, node, uri)
        for keyword in ("anyOf", "oneOf"):
            branches = node.get(keyword) if isinstance(node, dict) else None
            if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
                index = 1 - branches.index({"type": "null"})
                inner, inner_uri = self._resolve(spec, branches[index], pointer_uri(uri, keyword, index))
                return inner, inner_uri, True
        return node, uri, False

    def _compare(self, old: Any, old_uri: str, new: Any, new_uri: str, side: str) -> list[_Found]:
        old, old_uri, old_null = self._unwrapped(self.old, old, old_uri)
        new, new_uri, new_null = self._unwrapped(self.new, new, new_uri)
        memo_key = (old_uri, new_uri, side, old_null, new_null)
        if memo_key in self._memo:
            return self._memo[memo_key]
        self._memo[memo_key] = []  # a recursive schema: what lies below it is being compared already
        found: list[_Found] = []
        if isinstance(old, dict) and isinstance(new, dict):
            found = _Schemas(self, old, old_uri, new, new_uri, side, (old_null, new_null)).compare()
        self._memo[memo_key] = found
        return found


class _Schemas:
    """One pair of (resolved) schemas: their own keywords, then their subschemas through the Differ's memo."""

    def __init__(self, differ: Differ, old: dict[str, Any], old_uri: str, new: dict[str, Any], new_uri: str,
                 side: str, nullable: tuple[bool, bool]) -> None:
        self.differ, self.side = differ, side
        self.old, self.old_uri, self.new, self.new_uri = old, old_uri, new, new_uri
        self.nullable = nullable  # admitted null through a wrapper (see Differ._unwrapped), OLD and NEW
        self.found: list[_Found] = []

    def add(self, kind: str, narrowed: bool, message: str, keyword: str = "", tokens: tuple[str, ...] = ()) -> None:
        """`narrowed` from the value's view; breaking follows the side (see the module's docstring)."""
        breaking = narrowed if self.side == REQUEST else not narrowed
        old_uri = self._uri(self.old_uri, self.old, keyword) if keyword else self.old_uri
        new_uri = self._uri(self.new_uri, self.new, keyword) if keyword else self.new_uri
        self.found.append(_Found(kind, breaking, message, old_uri, new_uri, tokens))

    def compare(self) -> list[_Found]:
        self._types()
        self._enum()
        self._bounds()
        self._multiple_of()
        self._pattern()
        self._closed()
        self._access()
        self._discriminator()
        self._properties()
        self._below()
        return self.found

    def _types(self) -> None:
        old_types = _types(self.old) | ({"null"} if self.nullable[0] else set())
        new_types = _types(self.new) | ({"null"} if self.nullable[1] else set())
        old_null, new_null = "null" in old_types, "null" in new_types
        if new_null and not old_null:
            self.add("made-nullable", False, "may now be null", "type")
        elif old_null and not new_null and old_types:
            self.add("no-longer-nullable", True, "may no longer be null", "type")
        old_types, new_types = old_types - {"null"}, new_types - {"null"}
        if not old_types or not new_types or old_types == new_types:
            return
        # an integer is a number: integer → number widens, number → integer narrows
        gone = {t for t in old_types - new_types if not (t == "integer" and "number" in new_types)}
        came = {t for t in new_types - old_types if not (t == "integer" and "number" in old_types)}
        shown = f"type {'/'.join(sorted(old_types))} is now {'/'.join(sorted(new_types))}"
        if gone and came:  # both ways: breaking on either side
            self.found.append(_Found("type-changed", True, shown, pointer_uri(self.old_uri, "type"),
                                     pointer_uri(self.new_uri, "type"), ()))
        elif gone or came:
            self.add("type-changed", bool(gone), shown, "type")

    def _enum(self) -> None:
        old_values, new_values = _enum(self.old), _enum(self.new)
        if new_values is not None and old_values is None:
            self.add("enum-narrowed", True, f"now limited to the enum {_shown(new_values)}", "enum")
        elif old_values is not None and new_values is None:
            self.add("enum-widened", False, f"no longer limited to the enum {_shown(old_values)}", "enum")
        if old_values is None or new_values is None:
            return
        gone = [v for k, v in old_values.items() if k not in new_values]
        came = [v for k, v in new_values.items() if k not in old_values]
        if gone:
            self.add("enum-narrowed", True, f"enum value(s) {_shown(gone)} removed", "enum")
        if came:
            self.add("enum-widened", False, f"enum value(s) {_shown(came)} added", "enum")

    def _bounds(self) -> None:
        for keyword, larger_narrows in _BOUNDS.items():
            before, after = self.old.get(keyword), self.new.get(keyword)
            if before == after or not all(v is None or _is_number(v) for v in (before, after)):
                continue
            if after is None:
                self.add("bound-widened", False, f"{keyword} {before} removed", keyword)
            elif before is None:
                self.add("bound-narrowed", True, f"{keyword} {after} added", keyword)
            else:
                narrowed = (after > before) == larger_narrows
                self.add("bound-narrowed" if narrowed else "bound-widened", narrowed,
                         f"{keyword} {before} is now {after}", keyword)

    def _multiple_of(self) -> None:
        """A new `multipleOf` keeps only multiples of it: widened when it divides the old one (every old multiple
        is one of it), else narrowed."""
        before, after = self.old.get("multipleOf"), self.new.get("multipleOf")
        if before == after or not all(v is None or _is_number(v) for v in (before, after)):
            return
        if after is None:
            self.add("multiple-of-widened", False, f"multipleOf {before} removed", "multipleOf")
        elif before is None:
            self.add("multiple-of-narrowed", True, f"multipleOf {after} added", "multipleOf")
        else:
            widened = after != 0 and (before / after).is_integer()
            self.add("multiple-of-widened" if widened else "multiple-of-narrowed", not widened,
                     f"multipleOf {before} is now {after}", "multipleOf")

    def _closed(self) -> None:
        """An object closed (`additionalProperties: false`) refuses what clients send beyond its properties; one
        opened hands strict clients (generated code) properties they do not expect."""
        for keyword in _CLOSERS:
            before, after = self.old.get(keyword) is False, self.new.get(keyword) is False
            if after and not before:
                self.add("object-closed", True, f"{keyword}: false added (no other property allowed)", keyword)
            elif before and not after:
                self.add("object-opened", False, f"{keyword}: false removed (other properties allowed)", keyword)

    def _access(self) -> None:
        """`readOnly` added breaks clients that send the property, `writeOnly` added those that read it; either
        removed breaks nobody."""
        for keyword, (added, removed, breaks) in _ACCESS.items():
            before, after = self.old.get(keyword) is True, self.new.get(keyword) is True
            if before != after:
                kind, breaking = (added, self.side == breaks) if after else (removed, False)
                self.found.append(_Found(kind, breaking, f"{keyword} {'added' if after else 'removed'}",
                                         self._uri(self.old_uri, self.old, keyword),
                                         self._uri(self.new_uri, self.new, keyword), ()))

    def _discriminator(self) -> None:
        """Another `propertyName` breaks both sides; a mapping value gone refuses what clients send (requests), one
        added hands clients a variant they do not know (responses); a value mapped elsewhere breaks both."""
        old, new = self.old.get("discriminator"), self.new.get("discriminator")
        if not isinstance(old, dict) or not isinstance(new, dict):
            return
        if old.get("propertyName") != new.get("propertyName"):
            self.found.append(_Found("discriminator-changed", True, f"discriminator propertyName "
                                     f"{old.get('propertyName')!r} is now {new.get('propertyName')!r}",
                                     self._uri(self.old_uri, self.old, "discriminator"),
                                     self._uri(self.new_uri, self.new, "discriminator"), ()))
            return
        before, after = old.get("mapping") or {}, new.get("mapping") or {}
        if not isinstance(before, dict) or not isinstance(after, dict):
            return
        gone, came = [v for v in before if v not in after], [v for v in after if v not in before]
        moved = [v for v in before if v in after and before[v] != after[v]]
        if gone:
            self.add("discriminator-narrowed", True, f"discriminator value(s) {_shown(gone)} removed", "discriminator")
        if came:
            self.add("discriminator-widened", False, f"discriminator value(s) {_shown(came)} added", "discriminator")
        if moved:
            self.found.append(_Found("discriminator-changed", True, f"discriminator value(s) {_shown(moved)} map to "
                                     "another schema", self._uri(self.old_uri, self.old, "discriminator"),
                                     self._uri(self.new_uri, self.new, "discriminator"), ()))

    @staticmethod
    def _uri(uri: str, schema: dict[str, Any], keyword: str) -> str:
        """The keyword's place when the schema has it, else the schema's."""
        return pointer_uri(uri, keyword) if keyword in schema else uri

    def _pattern(self) -> None:
        """`pattern` and `format`: another one may reject what the old one took, so a change reads as narrowed."""
        for keyword in ("pattern", "format"):
            before, after = self.old.get(keyword), self.new.get(keyword)
            if before == after:
                continue
            if after is None:
                self.add(f"{keyword}-widened", False, f"{keyword} {before!r} removed", keyword)
            else:
                self.add(f"{keyword}-narrowed", True, f"{keyword} {before!r} is now {after!r}" if before else
                         f"{keyword} {after!r} added", keyword)

    def _properties(self) -> None:
        old_props, new_props = self.old.get("properties") or {}, self.new.get("properties") or {}
        if not isinstance(old_props, dict) or not isinstance(new_props, dict):
            return
        old_required = set(self.old.get("required") or [])
        new_required = set(self.new.get("required") or [])
        for name in old_props:
            if name in new_props:
                continue
            old_uri = pointer_uri(self.old_uri, "properties", name)
            new_uri = pointer_uri(self.new_uri, "properties") if "properties" in self.new else self.new_uri
            # clients read it; or send it, and it is ignored now (refused, if NEW closes the object)
            self.found.append(_Found("property-removed", True, f"property {name} removed", old_uri, new_uri,
                                     (str(name),)))
        for name in new_props:
            if name in old_props or name not in new_required or self.side != REQUEST:
                continue
            self.found.append(_Found("property-added-required", True, f"new required property {name}",
                                     pointer_uri(self.old_uri, "properties") if "properties" in self.old
                                     else self.old_uri, pointer_uri(self.new_uri, "properties", name), (str(name),)))
        for name in sorted((new_required - old_required) & set(old_props) & set(new_props)):
            self.add("property-made-required", True, f"property {name} is now required", "required", (str(name),))
        for name in sorted((old_required - new_required) & set(new_props)):
            self.add("property-made-optional", False, f"property {name} is no longer required", "required",
                     (str(name),))

    def _below(self) -> None:
        """Subschemas, each pair once: properties, items, additionalProperties, allOf/anyOf/oneOf by position."""
        pairs: list[tuple[Any, str, Any, str, tuple[str, ...]]] = []
        old_props, new_props = self.old.get("properties") or {}, self.new.get("properties") or {}
        if isinstance(old_props, dict) and isinstance(new_props, dict):
            pairs += [(old_props[n], pointer_uri(self.old_uri, "properties", n), new_props[n],
                       pointer_uri(self.new_uri, "properties", n), (str(n),)) for n in old_props if n in new_props]
        for keyword in ("items", "additionalProperties"):
            if isinstance(self.old.get(keyword), dict) and isinstance(self.new.get(keyword), dict):
                pairs.append((self.old[keyword], pointer_uri(self.old_uri, keyword), self.new[keyword],
                              pointer_uri(self.new_uri, keyword), ("*",)))
        for keyword in _COMBINERS:
            olds, news = self.old.get(keyword), self.new.get(keyword)
            if isinstance(olds, list) and isinstance(news, list):
                pairs += [(o, pointer_uri(self.old_uri, keyword, i), n, pointer_uri(self.new_uri, keyword, i), ())
                          for i, (o, n) in enumerate(zip(olds, news))]
        for old, old_uri, new, new_uri, tokens in pairs:
            for found in self.differ._compare(old, old_uri, new, new_uri, self.side):
                self.found.append(_Found(found.kind, found.breaking, found.message, found.old_uri, found.new_uri,
                                         tokens + found.tokens))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _types(schema: dict[str, Any]) -> set[str]:
    """A schema's own types, and "null" when it admits null (3.0's `nullable` is rewritten as type or anyOf)."""
    kind = schema.get("type")
    types = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()
    for keyword in ("anyOf", "oneOf"):
        if any(isinstance(b, dict) and b.get("type") == "null" for b in schema.get(keyword) or []):
            types.add("null")
    return types


def _enum(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The enum's values (null aside: that is nullability) by their JSON text; `const` as a one-value enum."""
    values = schema["enum"] if isinstance(schema.get("enum"), list) else [schema["const"]] if "const" in schema \
        else None
    if values is None:
        return None
    return {json.dumps(v, sort_keys=True): v for v in values if v is not None}


def _shown(values: Any) -> str:
    listed = list(values.values()) if isinstance(values, dict) else list(values)
    return ", ".join(json.dumps(v) for v in listed[:8]) + (f" and {len(listed) - 8} more" if len(listed) > 8 else "")


def diff(old: SpecIndex, new: SpecIndex) -> list[Change]:
    """Every change from OLD to NEW, breaking ones first."""
    return Differ(old, new).run()
