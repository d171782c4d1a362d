"""The description, indexed once at start-up: operations with their resolved parameters, bodies, responses,
security and compiled validators. Nothing on the request path reads the raw documents again."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlparse

from jsonschema import Draft202012Validator

from ..base.errors import LoadError, Problem
from ..base.http import is_json
from ..base.pointers import pointer_join, unescape_token
from .cycles import impossible_schemas
from .documents import Document, DocumentSet, OutsideFolder, RefError
from .expressions import ExpressionError, Template, parse
from .schemas import SchemaCompiler, direct, fits, openapi30_to_jsonschema, schema_types

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_STATUS_KEY = re.compile(r"^([1-5]\d\d|[1-5]XX)$")
_DEFAULT_STYLE = {"query": "form", "cookie": "form", "path": "simple", "header": "simple"}


@dataclass
class Schema:
    """A schema as it stands in its document, its URI (for messages and refs) and its compiled validator."""

    node: Any
    uri: str
    validator: Draft202012Validator

    @cached_property
    def quick(self) -> Any:
        """The validator rooted at the schema (`schemas.direct`), for the common case of a valid value: the same
        verdict as `validator` at less cost, which then says what is wrong. Made on first use: most schemas of a
        large description never are."""
        return direct(self.validator)

    def fits(self, value: Any) -> bool:
        """Whether a value is valid, told by `quick` (`validator` then says what is wrong, when it is not)."""
        return fits(self.quick, value)


@dataclass
class Parameter:
    name: str
    location: str
    required: bool
    schema: Schema | None
    style: str
    explode: bool
    uri: str
    json_content: bool = False  # `content: {application/json: …}`: the value is JSON text

    @property
    def default(self) -> Any:
        node = self.schema.node if self.schema else None
        return node.get("default") if isinstance(node, dict) else None

    @property
    def has_default(self) -> bool:
        return isinstance(self.schema.node if self.schema else None, dict) and "default" in self.schema.node  # type: ignore[union-attr]


@dataclass
class MediaType:
    name: str
    schema: Schema | None
    examples: dict[str, Any]  # name -> value, in the description's order; a lone `example` is named "example"
    # a form's fields whose `encoding` entry says `allowReserved: false`: reserved characters must come encoded
    reserved_encoded: frozenset[str] = frozenset()


@dataclass
class Header:
    name: str
    required: bool
    schema: Schema | None
    kinds: set[str] = field(default_factory=set)  # the JSON types its schema admits, to read the header's text
    examples: list[Any] = field(default_factory=list)  # the header's own example(s), then its schema's


@dataclass
class Response:
    status: str
    description: str
    headers: dict[str, Header]
    content: dict[str, MediaType]
    uri: str


@dataclass
class RequestBody:
    required: bool
    content: dict[str, MediaType]


@dataclass
class Outbound:
    """A request the API itself sends: an operation of a callback (to the URL its runtime expression names in
    the call that triggers it) or of a 3.1 webhook (`url` None: to the URLs subscribed to it)."""

    name: str  # the callback's name (`onData`) or the webhook's (`newPet`)
    method: str
    url: Template | None
    request_body: RequestBody | None
    responses: dict[str, Response]
    uri: str
    headers: list[Parameter] = field(default_factory=list)  # what a receiver may require (the contract checks)

    def declares(self, status: int) -> bool:
        """Whether a receiver's answer with this status keeps to the description (its code, range or default)."""
        return declares(self.responses, status)


@dataclass
class Operation:
    id: str
    method: str
    path: str
    parameters: list[Parameter]
    request_body: RequestBody | None
    responses: dict[str, Response]
    security: list[dict[str, list[str]]]
    uri: str
    deprecated: bool = False
    tags: list[str] = field(default_factory=list)
    summary: str = ""
    query_match: dict[str, str] = field(default_factory=dict)  # from a path key such as `/responses?beta=true`
    callbacks: list[Outbound] = field(default_factory=list)  # sent after a success (web/outgoing.py)

    def response(self, status: int) -> Response | None:
        """The declared response for a status: exact code, then its range (`4XX`), then `default`."""
        return response_for(self.responses, status)

    def declares(self, status: int) -> bool:
        """Whether an answer with this status keeps to the description: its code, its range (`4XX`), or any
        HTTP status when a `default` is declared."""
        return declares(self.responses, status)

    @cached_property
    def success_status(self) -> int:
        """The status a normal answer takes: the lowest declared 2xx, else the lowest 3xx (a redirect-only
        operation), else 200 (for a bare `2XX` or `default`); an operation that declares no success at all (only
        `405`, or only `4XX`) answers its lowest declared status, a range as its first code (`4XX` as 400), since
        an undeclared 200 would break its own contract."""
        codes = sorted(int(s) for s in self.responses if s.isdigit())
        successes = [c for c in codes if c < 400]
        if successes:
            return lowest_success(self.responses) or successes[0]  # else a 3xx, as declared
        if "2XX" in self.responses or "default" in self.responses:
            return 200
        return min(codes + [range_status(key) for key in self.responses if key.endswith("XX")], default=200)

    @property
    def declared_statuses(self) -> list[str]:
        return sorted(self.responses)


class SpecIndex:
    """Loads a description and everything it references; raises LoadError listing every problem."""

    def __init__(self, path: Path, allowed: tuple[Path, ...] = ()) -> None:
        """`allowed`: folders besides the description's own that its `$ref`s may read (`--allow-ref-outside`)."""
        self.path = path
        try:
            self.docs = DocumentSet(path, allowed)
        except RefError as exc:
            raise LoadError([Problem(str(path), "", str(exc), "read")]) from None
        root = self.docs.root.data
        self.version = self._check_version(root)
        # 3.0's `nullable` is read in 3.1 documents too: some (openai) still write it, meaning it, as schemathesis
        # and Prism take it; in a true 3.1 document the rewrite finds nothing to do
        self.docs.set_transform(openapi30_to_jsonschema)
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []  # harmless oddities, said once at start-up
        self._load_all_refs()
        if self.problems:  # indexing follows refs: it cannot go on with broken ones
            raise LoadError(self.problems)
        self._repair_schemas()
        self.schemas = SchemaCompiler(self.docs)
        info = self._mapping(root.get("info"), self._uri("info"), "`info`")
        self.title = str(info.get("title", path.name))
        self.api_version = str(info.get("version", ""))  # `info.version`: the API's, not OpenAPI's (`version`)
        self.base_path = _base_path(root.get("servers"))
        self.security_schemes: dict[str, dict[str, Any]] = {}
        components = self._mapping(root.get("components"), self._uri("components"), "`components`")
        for name, scheme, _ in self._entries(components.get("securitySchemes"),
                                             self._uri("components", "securitySchemes"), "`securitySchemes`"):
            self.security_schemes[name] = scheme
        self.operations: dict[str, Operation] = {}
        self._indexed: list[tuple[Any, str]] = []  # every schema an operation uses, with its URI
        self._index_paths(root)
        # 3.1's events the API sends, by name (`POST /__mock/webhooks/{name}`)
        self.webhooks: dict[str, list[Outbound]] = {
            name: self._outbound(name, item, uri, None)
            for name, item, uri in self._entries(root.get("webhooks"), self._uri("webhooks"), "`webhooks`")}
        self.problems += impossible_schemas(self.docs, self._indexed)
        if self.problems:
            raise LoadError(self.problems)

    # -- loading ---------------------------------------------------------------------------------------------
    def _uri(self, *tokens: Any) -> str:
        return self.docs.root.uri + "#" + pointer_join("", *tokens)

    def _check_version(self, root: Any) -> str:
        doc = self.docs.root
        if not isinstance(root, dict):
            raise LoadError([doc.problem("", "an OpenAPI description must be a mapping", "type")])
        if "swagger" in root:
            raise LoadError([doc.problem("/swagger", f"Swagger {root['swagger']} is not supported: convert it to "
                                         "OpenAPI 3 (e.g. with swagger2openapi)", "version")])
        version = str(root.get("openapi", ""))
        if not re.match(r"^3\.[01]\.\d+", version):
            raise LoadError([doc.problem("/openapi", f"unsupported OpenAPI version {version or '(missing)'!r}: "
                                         "3.0.x and 3.1.x are served", "version")])
        return version

    def _load_all_refs(self) -> None:
        """Resolve every `$ref` once, in every document reached, so a broken one stops start-up with its place.
        A `$ref` where OpenAPI allows none (inside an `x-` extension, a tag, `info`) is not followed: it only gets
        a warning, as Prism gives."""
        index = 0
        while index < len(self.docs.documents):  # documents are added as refs reach them
            doc = list(self.docs.documents.values())[index] if index else self.docs.root
            index += 1
            for pointer, key, ref in _refs(doc.data, ""):
                if key == "externalValue":
                    self._check_external(doc, pointer, ref)
                    continue
                if _outside_openapi(doc is self.docs.root, pointer):
                    self.warnings.append(doc.problem(pointer + "/$ref", f"$ref {ref!r} stands where OpenAPI allows "
                                                     "none; it is left as it is", "$ref-ignored"))
                    continue
                try:
                    target, target_uri = self.docs.resolve(ref, doc.uri + "#" + pointer)
                except (RefError, LoadError) as exc:
                    problems = exc.problems if isinstance(exc, LoadError) else [
                        doc.problem(pointer + "/$ref", f"unresolved $ref {ref!r}: {exc}",
                                    "outside-folder" if isinstance(exc, OutsideFolder) else "$ref")]
                    self.problems.extend(problems)
                    continue
                if pointer.endswith("/properties") and _is_property_map(target):
                    self._properties_by_ref(doc, pointer, ref, target, target_uri)

    def _check_external(self, doc: Document, pointer: str, value: str) -> None:
        """An example's `externalValue` that names a file: the mock never reads it, but a contract run's
        Schemathesis would, so it is held to the same folders as a `$ref` (a URL names no file: left as it is)."""
        uri = urljoin(doc.uri, value)
        if urlparse(uri).scheme == "file":
            try:
                self.docs.file_of(uri)
            except RefError as exc:
                self.problems.append(doc.problem(pointer + "/externalValue", f"externalValue {value!r}: {exc}",
                                                 "outside-folder"))

    def _repair_schemas(self) -> None:
        """Every schema of every document (reached from a `schema` or `components/schemas`, then through its
        subschemas and `$ref`s), checked for keywords of the wrong shape (`properties: x`, `type: strin`,
        `items: [..]` in 3.1): each such keyword is left out with a warning naming its place, so the schema
        constrains less but neither validation nor generation fails on it. Places are kept as (parent, key)
        links and spelled out only for a warning: this walks the whole description once."""
        seen: set[int] = set()
        targets: dict[tuple[str, str], tuple[Any, _Place]] = {}
        stack: list[tuple[Any, _Place, bool]] = [(doc.data, (doc.uri, None), False)
                                                 for doc in self.docs.documents.values()]
        while stack:
            node, place, is_schema = stack.pop()
            if not is_schema:
                children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
                for key, sub in children:
                    if key in ("example", "examples", "default") or str(key).startswith("x-"):
                        continue
                    if key == "schema":
                        stack.append((sub, (place, key), True))
                    elif key == "schemas" and isinstance(sub, dict):
                        stack.extend((v, ((place, key), k), True) for k, v in sub.items())
                    elif isinstance(sub, (dict, list)):
                        stack.append((sub, (place, key), False))
                continue
            if not isinstance(node, dict) or id(node) in seen:
                continue
            seen.add(id(node))
            if not _CHECKED.isdisjoint(node.keys()):
                self._repair_schema(node, place)
            stack.extend((node[key], (place, key), True) for key in _ONE_SCHEMA if key in node)
            for key in _SCHEMA_MAPS:
                stack.extend((v, ((place, key), k), True) for k, v in (node.get(key) or {}).items())
            for key in _SCHEMA_LISTS:
                stack.extend((v, ((place, key), i), True) for i, v in enumerate(node.get(key) or []))
            ref = node.get("$ref")
            if isinstance(ref, str):
                doc_uri = _place_doc(place)
                found = targets.get((doc_uri, ref))
                if found is None:
                    try:
                        target, target_uri = self.docs.resolve(ref, _place_uri(place))
                    except RefError:
                        continue  # said by _load_all_refs, or outside OpenAPI
                    base, _, fragment = target_uri.partition("#")
                    found = targets[(doc_uri, ref)] = (target, (base, None) if not fragment else
                                                       _fragment_place(base, fragment))
                stack.append((found[0], found[1], True))

    def _repair_schema(self, node: dict[str, Any], place: _Place) -> None:
        def drop(holder: dict[str, Any], key: str, expected: str, *tokens: Any) -> None:
            self._warn(pointer_uri(_place_uri(place), *tokens, key), f"`{key}` must be {expected}, not "
                       f"{_shown(holder[key])}; it is left out", "ignored")
            del holder[key]
        for key in _SCHEMA_MAPS:
            if key in node and not isinstance(node[key], dict):
                drop(node, key, "a mapping of schemas")
            for name in [n for n, v in (node.get(key) or {}).items() if not isinstance(v, (dict, bool))]:
                drop(node[key], name, "a schema", key)
        for key in _ONE_SCHEMA:
            if key in node and not isinstance(node[key], (dict, bool)):
                drop(node, key, "a schema (a mapping or a boolean)")
        for key in _SCHEMA_LISTS:
            value = node.get(key, [])
            if not (isinstance(value, list) and all(isinstance(v, (dict, bool)) for v in value)):
                drop(node, key, "a list of schemas")
        for key, shaped, expected in _SHAPES:
            if key in node and not shaped(node[key]):
                drop(node, key, expected)

    def _properties_by_ref(self, doc: Document, pointer: str, ref: str, target: dict[str, Any],
                           target_uri: str) -> None:
        """`properties: {$ref: …}` makes, by the letter of JSON Schema, a property named `$ref` whose schema is a
        string (no validator can use it); its author meant the mapping of properties the `$ref` points to, and
        Prism reads it so. Each of those properties becomes a `$ref` to its place, so refs inside stay relative
        to their own file."""
        parent = self.docs.lookup(doc.uri + "#" + pointer[:-len("/properties")])
        parent["properties"] = {name: {"$ref": pointer_uri(target_uri, name)} for name in target}
        self.warnings.append(doc.problem(pointer + "/$ref", f"`properties` is a $ref ({ref!r}) to a mapping of "
                                         "properties, not a property named `$ref`: read as those properties "
                                         f"({', '.join(target)}), as Prism does", "properties-ref"))

    def _problem(self, uri: str, message: str, rule: str) -> None:
        file, line, pointer = self.docs.location(uri)
        self.problems.append(Problem(file, pointer, message, rule, line))

    def _warn(self, uri: str, message: str, rule: str) -> None:
        file, line, pointer = self.docs.location(uri)
        self.warnings.append(Problem(file, pointer, message, rule, line))

    def _mapping(self, node: Any, uri: str, what: str) -> dict[str, Any]:
        """`node` when it is a mapping; anything else (a stray `description: ok` inside `content`, a header
        written as a string) is left out with a warning naming its place, as Prism tolerates it: the rest of
        the description is still served."""
        if node is None or isinstance(node, dict):
            return node or {}
        self._warn(uri, f"{what} must be a mapping, not {type(node).__name__} {_shown(node)}; it is left out",
                   "ignored")
        return {}

    def _entries(self, node: Any, uri: str, what: str) -> list[tuple[str, dict[str, Any], str]]:
        """The entries of a mapping of mappings (content, headers, examples), each dereferenced, with its URI;
        an entry that is no mapping is left out with a warning."""
        found = []
        for name, raw in self._mapping(node, uri, what).items():
            entry, entry_uri = self.docs.deref(raw, pointer_uri(uri, name))
            if entry is None or isinstance(entry, dict):
                found.append((str(name), entry or {}, entry_uri))
            else:
                self._mapping(entry, entry_uri, f"{what} entry {name!r}")
        return found

    def _schema(self, node: Any, uri: str, *, response: bool = False) -> Schema | None:
        if node is None:
            return None
        if not isinstance(node, (dict, bool)):
            self._warn(uri, f"a schema must be a mapping or a boolean, not {type(node).__name__} {_shown(node)}; "
                       "it is read as no schema (anything goes)", "ignored")
            return None
        self._indexed.append((node, uri))
        return Schema(node, uri, self.schemas.validator(uri, response=response))

    def _index_paths(self, root: dict[str, Any]) -> None:
        paths = root.get("paths") or {}
        if not isinstance(paths, dict):
            self._problem(self._uri("paths"), "`paths` must be a mapping", "type")
            return
        global_security = root.get("security", [])
        for template, item in paths.items():
            item, item_uri = self.docs.deref(item, self._uri("paths", template))
            item = self._mapping(item, item_uri, f"the path item {template!r}")
            shared = self._list(item.get("parameters"), pointer_uri(item_uri, "parameters"), "parameters")
            for method in HTTP_METHODS:
                if method in item:
                    # an operation is no `$ref` in OpenAPI, but some descriptions keep each in its own file
                    node, op_uri = self.docs.deref(item[method], pointer_uri(item_uri, method))
                    self._index_operation(template, method, node, op_uri, shared, global_security, item_uri)

    def _status(self, key: str, op_uri: str) -> str | None:
        """A response key as served: a status (`200`), a range (`4XX`; `4xx` read as `4XX`, with a warning, as
        its writer means it) or `default`; None for an extension (`x-…`, silently) and anything else (with a
        warning)."""
        if _STATUS_KEY.match(key) or key == "default":
            return key
        if _STATUS_KEY.match(key.upper()):
            self._warn(pointer_uri(op_uri, "responses", key), f"the range {key!r} is written {key.upper()!r} "
                       "in OpenAPI; it is read as that", "range")
            return key.upper()
        if not key.startswith("x-"):
            self._warn(pointer_uri(op_uri, "responses", key), f"{key!r} is not a status, a range (4XX) or "
                       "`default`; it is left out", "ignored")
        return None

    def _security(self, node: Any, uri: str) -> list[dict[str, list[str]]]:
        """Security requirements: a list of mappings from scheme names to scopes; one of another shape is left
        out with a warning (so it requires nothing)."""
        requirements = []
        for index, requirement in enumerate(self._list(node, uri, "`security`")):
            if isinstance(requirement, dict):
                requirements.append({str(k): v if isinstance(v, list) else [] for k, v in requirement.items()})
            else:
                self._mapping(requirement, pointer_uri(uri, index), "a security requirement")
        return requirements

    def _list(self, node: Any, uri: str, what: str) -> list[Any]:
        if node is None or isinstance(node, list):
            return node or []
        self._warn(uri, f"{what} must be a list, not {type(node).__name__} {_shown(node)}; it is left out", "ignored")
        return []

    def _index_operation(self, template: str, method: str, node: Any, uri: str, shared: list[Any],
                         global_security: list[Any], item_uri: str) -> None:
        if not isinstance(node, dict):
            self._problem(uri, "an operation must be a mapping", "type")
            return
        op_id = str(node.get("operationId") or f"{method.upper()} {template}")
        if op_id in self.operations:
            self._problem(pointer_uri(uri, "operationId"), f"operationId {op_id!r} is used twice", "operationId")
            return
        responses = node.get("responses")
        if isinstance(responses, dict):
            responses = {status: (str(k), v) for k, v in responses.items() if (status := self._status(str(k), uri))}
        if not isinstance(responses, dict) or not responses:
            self._problem(pointer_uri(uri, "responses"), f"{method.upper()} {template} declares no responses",
                          "responses")
            return
        own = self._list(node.get("parameters"), pointer_uri(uri, "parameters"), "parameters")
        path, _, query = template.partition("?")
        self.operations[op_id] = Operation(
            id=op_id,
            method=method.upper(),
            path=path,
            query_match=dict(parse_qsl(query, keep_blank_values=True)),
            parameters=self._parameters([(shared, item_uri), (own, uri)]),
            request_body=self._request_body(node.get("requestBody"), pointer_uri(uri, "requestBody")),
            responses={status: self._response(status, raw, pointer_uri(uri, "responses", key))
                       for status, (key, raw) in responses.items()},
            security=self._security(node.get("security", global_security), pointer_uri(uri, "security")),
            uri=uri,
            deprecated=bool(node.get("deprecated")),
            tags=list(node.get("tags") or []),
            summary=str(node.get("summary") or ""),
            callbacks=self._callbacks(node.get("callbacks"), pointer_uri(uri, "callbacks")),
        )

    def _callbacks(self, node: Any, uri: str) -> list[Outbound]:
        """An operation's callbacks: each one's URL expression parsed once (one that does not parse is left out,
        with a warning naming it), each of its operations as an `Outbound`."""
        found: list[Outbound] = []
        for name, callback, callback_uri in self._entries(node, uri, "`callbacks`"):
            for expression, item in callback.items():
                item_uri = pointer_uri(callback_uri, expression)
                try:
                    url = parse(expression)
                except ExpressionError as exc:
                    self._warn(item_uri, f"callback {name}: {exc}; its URL is no runtime expression, so it is "
                               "never sent", "callback")
                    continue
                item, item_uri = self.docs.deref(item, item_uri)
                found += self._outbound(name, self._mapping(item, item_uri, f"the callback {name!r}"), item_uri, url)
        return found

    def _outbound(self, name: str, item: dict[str, Any], uri: str, url: Template | None) -> list[Outbound]:
        """The operations of a callback's or a webhook's path item."""
        found = []
        for method in HTTP_METHODS:
            if method in item:
                node, op_uri = self.docs.deref(item[method], pointer_uri(uri, method))
                node = self._mapping(node, op_uri, f"the operation {method.upper()} of {name!r}")
                responses = {status: (str(key), raw) for key, raw in (node.get("responses") or {}).items()
                             if (status := self._status(str(key), op_uri))}
                found.append(Outbound(
                    name, method.upper(), url,
                    self._request_body(node.get("requestBody"), pointer_uri(op_uri, "requestBody")),
                    {status: self._response(status, raw, pointer_uri(op_uri, "responses", key))
                     for status, (key, raw) in responses.items()}, op_uri,
                    self._parameters([(item.get("parameters"), uri), (node.get("parameters"), op_uri)], only="header")))
        return found

    def _parameters(self, listed: list[tuple[Any, str]], only: str | None = None) -> list[Parameter]:
        """The parameters of a path item, then of its operation (`listed`: each `parameters` with the URI of the
        object holding it; anything but a list as none), the operation's own over its path item's of the same
        place and name (a header's in any case). `only`: the parameters of that place (a callback's or webhook's
        headers, what a receiver may require); the others, which nothing sends or checks, are passed over."""
        merged: dict[tuple[str, str], Parameter] = {}
        for parameters, uri in listed:
            for index, raw in enumerate(parameters if isinstance(parameters, list) else []):
                node, node_uri = self.docs.deref(raw, pointer_uri(uri, "parameters", index))
                if only is not None and not (isinstance(node, dict) and node.get("in") == only and node.get("name")):
                    continue
                param = self._parameter(node, node_uri)
                if param:
                    merged[(param.location, param.name.lower() if param.location == "header" else param.name)] = param
        return list(merged.values())

    def _parameter(self, node: Any, uri: str) -> Parameter | None:
        if not isinstance(node, dict) or "name" not in node or node.get("in") not in _DEFAULT_STYLE:
            self._problem(uri, "a parameter needs a `name` and an `in` of path, query, header or cookie", "parameter")
            return None
        location = node["in"]
        style = node.get("style", _DEFAULT_STYLE[location])
        schema, json_content = None, False
        if "schema" in node:
            schema = self._schema(node["schema"], pointer_uri(uri, "schema"))
        elif entries := self._entries(node.get("content"), pointer_uri(uri, "content"), "`content`"):
            media, media_node, media_uri = entries[0]
            schema = self._schema(media_node.get("schema"), pointer_uri(media_uri, "schema"))
            json_content = is_json(media)
        return Parameter(
            name=str(node["name"]),
            location=location,
            required=bool(node.get("required")) or location == "path",
            schema=schema,
            style=style,
            explode=bool(node.get("explode", style == "form")),
            uri=uri,
            json_content=json_content,
        )

    def _media_types(self, content: Any, uri: str, *, response: bool = False) -> dict[str, MediaType]:
        result: dict[str, MediaType] = {}
        for name, node, media_uri in self._entries(content, uri, "`content`"):
            if "/" not in name:
                self._warn(media_uri, f"{name!r} in `content` is not a media type; it is left out", "ignored")
                continue
            examples = self._examples(node, media_uri)
            schema = self._schema(node.get("schema"), pointer_uri(media_uri, "schema"), response=response)
            encoding = self._entries(node.get("encoding"), pointer_uri(media_uri, "encoding"), "`encoding`")
            strict = frozenset(field for field, entry, _ in encoding if entry.get("allowReserved") is False)
            result[name] = MediaType(name, schema, examples, strict)
        return result

    def _examples(self, node: dict[str, Any], uri: str) -> dict[str, Any]:
        """A media type's examples by name: `example`, then the Example objects of `examples`; an `examples`
        written as a schema's (a list of values, JSON Schema's form in 3.1) is read as values named by their
        position (`Prefer: example=0`), with a warning, as a user who wrote them means them to answer."""
        examples: dict[str, Any] = {}
        if "example" in node:
            examples["example"] = node["example"]
        listed = node.get("examples")
        if isinstance(listed, list):
            self._warn(pointer_uri(uri, "examples"), "`examples` of a media type is a mapping of Example objects; "
                       "this list is read as examples named by their position (0, 1, …)", "examples")
            return examples | {str(index): value for index, value in enumerate(listed)}
        for name, example, _ in self._entries(listed, pointer_uri(uri, "examples"), "`examples`"):
            if "value" in example:
                examples[name] = example["value"]
        return examples

    def _request_body(self, raw: Any, uri: str) -> RequestBody | None:
        if raw is None:
            return None
        node, uri = self.docs.deref(raw, uri)
        node = self._mapping(node, uri, "`requestBody`")
        return RequestBody(bool(node.get("required")),
                           self._media_types(node.get("content"), pointer_uri(uri, "content")))

    def _response(self, status: str, raw: Any, uri: str) -> Response:
        node, uri = self.docs.deref(raw, uri)
        node = self._mapping(node, uri, f"the response {status!r}")
        headers: dict[str, Header] = {}
        for name, header, header_uri in self._entries(node.get("headers"), pointer_uri(uri, "headers"), "`headers`"):
            if name.lower() == "content-type":
                continue  # OpenAPI: ignored
            schema = self._schema(header.get("schema"), pointer_uri(header_uri, "schema"))
            kinds = schema_types(schema.node, schema.uri, self.docs.resolve) if schema else set()
            examples = examples_of(header) + (
                examples_of(self.docs.deref(schema.node, schema.uri)[0]) if schema else [])
            headers[name] = Header(name, bool(header.get("required")), schema, kinds, examples)
        return Response(status, str(node.get("description", "")), headers,
                        self._media_types(node.get("content"), pointer_uri(uri, "content"), response=True), uri)


# where a node stands: (document URI, None) for a document's root, else (its parent's place, its key)
_Place = tuple[Any, Any]


def _place_doc(place: _Place) -> str:
    while place[1] is not None:
        place = place[0]
    return str(place[0])


def _place_uri(place: _Place) -> str:
    tokens = []
    while place[1] is not None:
        place, token = place
        tokens.append(token)
    return pointer_uri(str(place[0]) + "#", *reversed(tokens))


def _fragment_place(base: str, fragment: str) -> _Place:
    place: _Place = (base, None)
    for token in fragment.lstrip("/").split("/"):
        place = (place, unescape_token(token))
    return place


_JSON_TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}
_ONE_SCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
               "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# keywords whose value must have a shape, else jsonschema (or the generator) fails on the first value it checks
_SHAPES: tuple[tuple[str, Any, str], ...] = (
    ("type", lambda v: (v in _JSON_TYPES) if isinstance(v, str) else isinstance(v, list) and bool(v)
     and all(isinstance(t, str) and t in _JSON_TYPES for t in v), f"one of {', '.join(sorted(_JSON_TYPES))}"),
    ("enum", lambda v: isinstance(v, list), "a list"),
    ("required", lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v), "a list of names"),
    ("pattern", lambda v: isinstance(v, str), "a regular expression"),
    ("multipleOf", lambda v: _number(v) and v > 0, "a positive number"),
    *((key, _number, "a number") for key in ("minimum", "maximum")),
    *((key, lambda v: _number(v) or isinstance(v, bool), "a number") for key in ("exclusiveMinimum",
                                                                                 "exclusiveMaximum")),
    *((key, _count, "a count (an integer, 0 or more)") for key in (
        "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")),
)


_CHECKED = frozenset(_SCHEMA_MAPS + _ONE_SCHEMA + _SCHEMA_LISTS + tuple(key for key, _, _ in _SHAPES))


def response_for(responses: dict[str, Response], status: int) -> Response | None:
    """The declared response for a status: exact code, then its range (`4XX`), then `default`."""
    return responses.get(str(status)) or responses.get(f"{str(status)[0]}XX") or responses.get("default")


def lowest_success(responses: dict[str, Response]) -> int | None:
    """The lowest 2xx code among these responses (ranges and `default` name none), None when there is none."""
    return min((int(key) for key in responses if key.isdigit() and key[0] == "2"), default=None)


def declares(responses: dict[str, Response], status: int) -> bool:
    """Whether `status` keeps to these responses: its code, its range (`4XX`), or any status beside a `default`."""
    return (str(status) in responses or f"{str(status)[0]}XX" in responses
            or (100 <= status <= 599 and "default" in responses))


def range_status(key: str) -> int:
    """The concrete status a range key is served as: `4XX` as 400, `5XX` as 500."""
    return int(key[0]) * 100


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def examples_of(node: Any) -> list[Any]:
    """`example`, `examples` (a list in a schema, a map of Example objects in a header), then `default`."""
    if not isinstance(node, dict):
        return []
    found = [node["example"]] if "example" in node else []
    examples = node.get("examples")
    if isinstance(examples, list):
        found += examples
    elif isinstance(examples, dict):
        found += [e["value"] for e in examples.values() if isinstance(e, dict) and "value" in e]
    return found + ([node["default"]] if "default" in node else [])


def pointer_uri(uri: str, *tokens: Any) -> str:
    base, _, fragment = uri.partition("#")
    return base + "#" + pointer_join(fragment, *tokens)


_SUBSCHEMA_KEYWORDS = {"properties", "patternProperties", "additionalProperties", "items", "prefixItems", "not",
                       "if", "then", "else", "$defs", "definitions", "dependentSchemas", "propertyNames", "contains",
                       "unevaluatedProperties", "unevaluatedItems", "discriminator", "xml", "externalDocs", "example",
                       "default", "const", "contentSchema"}


def _is_property_map(node: Any) -> bool:
    """A mapping of names to schemas rather than a schema: every value a mapping, no key a schema keyword."""
    return (isinstance(node, dict) and bool(node) and all(isinstance(v, dict) for v in node.values())
            and not _SUBSCHEMA_KEYWORDS & node.keys())


def _refs(node: Any, pointer: str) -> list[tuple[str, str, str]]:
    """Every `$ref` and `externalValue` below the node: (pointer of the object holding it, key, value)."""
    found: list[tuple[str, str, str]] = []
    stack = [(node, pointer)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            for key in _FILE_KEYS:
                if isinstance(value.get(key), str):
                    found.append((where, key, value[key]))
            stack.extend((v, pointer_join(where, k)) for k, v in value.items() if k != "$ref")
        elif isinstance(value, list):
            stack.extend((v, pointer_join(where, i)) for i, v in enumerate(value))
    return found


_FILE_KEYS = ("$ref", "externalValue")  # what names another file
_NOT_OPENAPI_ROOT_KEYS = ("/tags/", "/info/", "/externalDocs/")


def _outside_openapi(in_root: bool, pointer: str) -> bool:
    """Where a `$ref` means nothing to OpenAPI: under an `x-` extension anywhere, or the root's tags and info."""
    if "/x-" in pointer or pointer.startswith("x-"):
        return True
    return in_root and pointer.startswith(_NOT_OPENAPI_ROOT_KEYS)


def _base_path(servers: Any) -> str:
    """The path part of the first server URL, variables replaced by their defaults (`/api/v3`, or empty)."""
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], dict):
        return ""
    url = str(servers[0].get("url", ""))
    variables = servers[0].get("variables")
    for name, var in (variables.items() if isinstance(variables, dict) else ()):
        url = url.replace("{" + name + "}", str(var.get("default", "") if isinstance(var, dict) else ""))
    path = urlparse(urljoin("http://host/", url)).path
    return path.rstrip("/")
