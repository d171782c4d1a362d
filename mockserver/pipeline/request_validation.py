"""Validating a request against its operation: parameters (parsed by style, coerced to the schema's type,
defaults applied) and the body. Every violation is collected, then answered once as `400` with details a program
can read: the parameter, where it was, the JSON pointer inside its value, and the rule. With a lenient mode
(`--request-validation warn`) the request is let through instead, its violations kept for the journal (and, on
request, a header); `off` lets it through and keeps nothing."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any
from urllib.parse import quote, unquote_plus

from ..base.bounded import BoundedCache
from ..base.errors import MockError
from ..base.http import MockRequest, bare_media_type, is_json, parse_cookies, parse_query
from ..base.json_values import MAX_DEPTH, JsonRefused, parse_json
from ..base.pointers import pointer_join, pointer_tokens
from ..spec.index import MediaType, Operation, Parameter
from ..spec.schema_walk import below
from ..spec.schemas import Resolve, instance_pointer, iter_errors, schema_types

_INT = re.compile(r"^-?\d+$")
_NUMBER = re.compile(r"^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
# OpenAPI: described elsewhere (the body's media type, the security schemes), so ignored here. `Accept` is ignored
# by the letter too, but a description that declares it (FastAPI's `accept: enum [application/json, text/plain]`)
# has a server that checks it: it is checked as declared, unless it is `*/*` alone (what HTTP clients send when
# nobody chose a value: a request that leaves the optional parameter out)
_SKIPPED_HEADERS = {"content-type", "authorization"}
_SEEN_SIZE = 4096
# how a request that breaks the description is met: refused (400/422), let through with its violations kept, or
# let through with nothing kept (its values still parsed and typed, as the answer needs them)
MODES = ("strict", "warn", "off")
_RESERVED = re.compile(r"[:/?#\[\]@!$&'()*+,;=]")  # RFC 3986's reserved characters
_RESERVED_IN_FORM = re.compile(r"[:/?#\[\]@!$'()*,;=]")  # in a urlencoded value: `+` is a space, `&` ends it
DELIMITERS = {"form": ",", "simple": ",", "spaceDelimited": " ", "pipeDelimited": "|"}


def _readings(param: _Param, raw: list[str], value: Any) -> Iterator[Any]:
    """Other readings of the same text, tried when the first breaks the schema, for schemas that admit more than
    one: a lone value of `oneOf: [string, array]` as the string; `null` as null where a string is allowed too."""
    if isinstance(value, list):
        if len(raw) == 1 and (scalar := param.kinds - {"array"}):
            yield coerce(raw[0], scalar)
        if {"null", "string"} <= param.item_kinds and "null" in value:
            yield [None if item == "null" else item for item in value]
    elif value == "null" and {"null", "string"} <= param.kinds:
        yield None


@dataclass
class Violation:
    parameter: str
    location: str
    pointer: str
    rule: str
    message: str
    value: Any = None  # the offending value (FastAPI's `input`), as parsed; None where none was given

    def as_dict(self) -> dict[str, str]:
        return {"parameter": self.parameter, "in": self.location, "pointer": self.pointer, "rule": self.rule,
                "message": self.message}

    def where(self) -> str:
        """A JSON pointer into the request: `/query/limit`, `/body/name`, `/header/X-Tenant/0`."""
        if self.location == "body":
            return "/body" + self.pointer
        return pointer_join(f"/{self.location}", self.parameter) + self.pointer if self.parameter \
            else f"/{self.location}"


VIOLATIONS_HEADER = "X-Mock-Violations"  # `--violations-header`'s default name
PRISM_VIOLATIONS_HEADER = "sl-violations"  # Prism's, whose value is its JSON list
HEADER_NAMES = (VIOLATIONS_HEADER, PRISM_VIOLATIONS_HEADER)
_HEADER_LIMIT = 2000  # characters of a violations header: proxies refuse headers of a few kB
_SAFE = "/~-._!$&'()*+,=:@"  # a pointer's characters kept as they are in the `;` list; the rest percent-escaped


def violations_header(name: str, violations: list[Violation]) -> str:
    """The violations a lenient mock let through, as a client may read them in a header: ASCII, one line, at most
    _HEADER_LIMIT characters (then how many more there were). `X-Mock-Violations`: `pointer rule` items joined by
    `; ` (`/query/limit maximum; /body/name type`); `sl-violations`: Prism's JSON list."""
    prism = name.lower() == PRISM_VIOLATIONS_HEADER
    items = [json.dumps({"location": ["request", *pointer_tokens(v.where())], "severity": "Error", "code": v.rule,
                         "message": v.message[:200]}, separators=(",", ":")) if prism
             else f"{quote(v.where(), safe=_SAFE)} {v.rule}" for v in violations]
    kept: list[str] = []
    for item in items:
        if sum(len(k) + 2 for k in kept) + len(item) > _HEADER_LIMIT - 20 and kept:
            break
        kept.append(item)
    if prism:  # Prism's readers parse JSON: what does not fit is left out
        return "[" + ",".join(kept) + "]"
    more = f"; +{len(items) - len(kept)} more" if len(kept) < len(items) else ""
    return "; ".join(kept) + more


@dataclass
class ValidRequest:
    """Parameter values after coercion and defaults, and which ones the caller really sent."""

    path: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    header: dict[str, Any] = field(default_factory=dict)
    cookie: dict[str, Any] = field(default_factory=dict)
    sent: set[tuple[str, str]] = field(default_factory=set)
    body: Any = None
    violations: list[Violation] = field(default_factory=list)  # what a lenient mock let through (`warn`)

    def get(self, location: str, name: str) -> Any:
        values: dict[str, Any] = getattr(self, location)
        return values.get(name.lower() if location == "header" else name)


def invalid_request_status(op: Operation) -> int:
    """The status an invalid request gets, as the description chooses it: 400 where it declares one (or `4XX`),
    else 422 where it declares that (FastAPI's `HTTPValidationError`, rendered in that response's schema), else
    400 (in the envelope)."""
    if "400" in op.responses or "4XX" in op.responses:
        return 400
    return 422 if "422" in op.responses else 400


class InvalidRequest(MockError):
    """A request refused for its violations, which an API's own validation error body may list one by one
    (FastAPI's `detail: [{loc, msg, type, input}]`)."""

    def __init__(self, status: int, message: str, violations: list[Violation]) -> None:
        super().__init__(status, message, details={"violations": [v.as_dict() for v in violations]})
        self.violations = violations


def bad_input(violations: list[Violation], status: int = 400) -> InvalidRequest:
    first = violations[0]
    if first.location == "body":
        where = "request body"
    elif first.parameter:
        where = f"{first.location} parameter {first.parameter!r}"
    else:
        where = f"the {first.location}"
    more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
    return InvalidRequest(status, f"{where}: {first.message}{more}", violations)


def items_schema(node: Any, uri: str, resolve: Resolve, depth: int = 0) -> tuple[Any, str]:
    """An array parameter's items schema, also where the array is one branch of a `oneOf`/`anyOf`/`allOf`."""
    if isinstance(node, dict) and isinstance(node.get("$ref"), str):
        node, uri = resolve(node["$ref"], uri)
    if not isinstance(node, dict) or "items" in node or depth > 4:
        return (node.get("items") if isinstance(node, dict) else None), uri + "/items"
    for kind in ("oneOf", "anyOf", "allOf"):
        for i, branch in enumerate(node.get(kind) or []):
            found, where = items_schema(branch, f"{uri}/{kind}/{i}", resolve, depth + 1)
            if found is not None:
                return found, where
    return None, uri + "/items"


def coerce(raw: str, kinds: set[str]) -> Any:
    """A query/path/header string as the schema's type, when it reads as one; else the string (so the validator
    reports the type error in the API's words)."""
    if "integer" in kinds and _INT.match(raw):
        return int(raw)
    if "number" in kinds and _NUMBER.match(raw):
        number = float(raw)
        return int(number) if number.is_integer() and "." not in raw and "e" not in raw.lower() else number
    if "boolean" in kinds and raw in ("true", "false"):
        return raw == "true"
    if "null" in kinds and raw in ("", "null") and "string" not in kinds:
        return None
    return raw


@dataclass
class _Param:
    spec: Parameter
    kinds: set[str]
    item_kinds: set[str]
    props: dict[str, set[str]] = field(default_factory=dict)  # an object's properties and their types

    @property
    def is_object(self) -> bool:
        return "object" in self.kinds and "array" not in self.kinds

    @property
    def spread(self) -> bool:
        """An object sent as query parameters of its own (`style: form, explode: true`: `?offset=1&limit=2`),
        or `style: deepObject` (`?page[offset]=1`)."""
        p = self.spec
        return self.is_object and p.location == "query" and (p.style == "deepObject" or (
            p.style == "form" and p.explode))


class RequestValidator:
    """Per operation, the parameters' coercion rules worked out once at start-up."""

    def __init__(self, op: Operation, resolve: Resolve, max_depth: int = MAX_DEPTH, mode: str = "strict") -> None:
        self.op = op
        self.max_depth = max_depth  # levels a JSON body or parameter may nest
        self.mode = mode  # one of MODES
        # whether violations are kept (and a body held to its schema); parameters are always checked, as the router
        # asks whether a path's values fit (`path_fits`)
        self.checks = mode != "off"
        self.invalid_status = invalid_request_status(op)
        self.params: list[_Param] = []
        for p in op.parameters:
            if p.location == "header" and p.name.lower() in _SKIPPED_HEADERS:
                continue
            kinds: set[str] = set()
            item_kinds: set[str] = set()
            if p.schema is not None and not p.json_content:
                kinds = schema_types(p.schema.node, p.schema.uri, resolve)
                if "array" in kinds:
                    node, uri = items_schema(p.schema.node, p.schema.uri, resolve)
                    item_kinds = schema_types(node, uri, resolve)
            param = _Param(p, kinds, item_kinds)
            if param.is_object and p.schema is not None:
                param.props = {name: kinds for name, (kinds, _) in
                               _property_kinds(p.schema.node, p.schema.uri, resolve).items()}
            self.params.append(param)
        # by location and the key values are kept under (header names in lower case); defaults made once
        self._by_location: dict[str, dict[str, _Param]] = {loc: {} for loc in ("path", "query", "header", "cookie")}
        self._defaults: dict[str, dict[str, Any]] = {loc: {} for loc in self._by_location}
        for param in self.params:
            key = param.spec.name.lower() if param.spec.location == "header" else param.spec.name
            self._by_location[param.spec.location][key] = param
            if param.spec.has_default:
                self._defaults[param.spec.location][key] = param.spec.default
        self._seen: BoundedCache[tuple[int, tuple[str, ...]], tuple[Any, list[Violation]]] = BoundedCache(_SEEN_SIZE)
        self._form_readings = {name: _form_readings(media, resolve) for name, media in
                               (op.request_body.content.items() if op.request_body else ())
                               if name in ("application/x-www-form-urlencoded", "multipart/form-data")}

    def validate(self, request: MockRequest, path_params: dict[str, str]) -> ValidRequest:
        result = ValidRequest(dict(self._defaults["path"]), dict(self._defaults["query"]),
                              dict(self._defaults["header"]), dict(self._defaults["cookie"]))
        violations: list[Violation] = []
        query = request.query()
        if query is None:
            encoding = Violation("", "query", "", "encoding", "the query string is not valid UTF-8")
            if self.mode == "strict":
                raise bad_input([encoding], self.invalid_status)
            violations.append(encoding)  # answered as if no query were sent
            query = {}
        cookies = parse_cookies(request.header("cookie")) if self._by_location["cookie"] else {}
        sources: dict[str, Any] = {"path": path_params, "query": query, "cookie": cookies}
        for location, params in self._by_location.items():
            target: dict[str, Any] = getattr(result, location)
            for key, param in params.items():
                raw = self._spread(param, query) if param.spread else _raw(location, param.spec.name, sources,
                                                                             request)
                if raw is not None and location == "header" and key == "accept" and raw[-1].strip() == "*/*":
                    raw = None
                if raw == [""] and location == "path":
                    raw = None  # an empty segment (`/pets//toys`): the router found the route, the value is missing
                if raw is None:
                    if param.spec.required:
                        violations.append(Violation(param.spec.name, location, "", "required",
                                                    f"the {location} parameter {param.spec.name!r} is required"))
                    continue
                result.sent.add((location, key))
                value, problems = self._checked(param, raw)
                violations.extend(problems)
                if not problems:
                    target[key] = value
                elif self.mode != "strict":  # let through: the value as it was sent (a path id `abc` stays `abc`)
                    target[key] = raw[-1] if value is None else value
        body_violations: list[Violation] = []
        if self.op.request_body is not None:
            result.body = self._body(request, body_violations)
        elif request.body and request.header("content-type"):
            unexpected = f"this operation takes no request body; {_media(request)!r} was sent"
            if self.mode == "strict":
                raise MockError(415, unexpected, details={"contentType": _media(request), "accepted": []})
            body_violations.append(Violation("body", "body", "", "contentType", unexpected))  # answered as if none
        if violations or body_violations:
            if self.mode == "strict":
                raise bad_input(violations + body_violations, self.invalid_status)
            if self.checks:
                result.violations = violations + body_violations
        return result

    def path_fits(self, path_params: dict[str, str]) -> bool:
        """Whether the path's values fit their parameters (the router asks, before it lets a templated path take
        a request whose more concrete path lacks the method)."""
        return all(not self._checked(param, [path_params[key]])[1]
                   for key, param in self._by_location["path"].items() if key in path_params)

    def _spread(self, param: _Param, query: dict[str, list[str]]) -> list[str] | None:
        """An object's properties sent as query parameters of their own, as `name=value` items (None when none
        is there): `?offset=1&limit=2` for its declared properties (for one that declares none: every query
        parameter the operation does not declare), or `?page[offset]=1` for a deepObject."""
        name = param.spec.name
        if param.spec.style == "deepObject":
            found = [(key[len(name) + 1:-1], values) for key, values in query.items()
                     if key.startswith(name + "[") and key.endswith("]")]
        else:
            wanted = param.props or {key: set() for key in query if key not in self._by_location["query"]}
            found = [(key, values) for key, values in query.items() if key in wanted]
        return [f"{key}={values[-1]}" for key, values in found] or None

    def _checked(self, param: _Param, raw: list[str]) -> tuple[Any, list[Violation]]:
        """The parsed value and its violations; the same raw value gets the same answer, so it is cached."""
        key = (id(param), tuple(raw))
        found = self._seen.get(key)
        if found is None:
            found = self._seen.put(key, self._check(param, raw))
        return found

    def _check(self, param: _Param, raw: list[str]) -> tuple[Any, list[Violation]]:
        p = param.spec
        value, problem = self._parse(param, raw)
        if problem:
            return None, [problem]
        if p.schema is None:
            return value, []
        violations = [] if p.schema.fits(value) else [
            Violation(p.name, p.location, instance_pointer(error), str(error.validator), _message(error.message),
                      error.instance) for error in iter_errors(p.schema.validator, value)]
        if violations:
            for other in _readings(param, raw, value):
                if p.schema.fits(other):
                    return other, []
        return value, violations

    def _parse(self, param: _Param, raw: list[str]) -> tuple[Any, Violation | None]:
        p = param.spec
        if p.json_content:
            try:
                return parse_json(raw[-1], self.max_depth), None
            except JsonRefused as exc:
                return None, Violation(p.name, p.location, exc.pointer, exc.rule, exc.message)
        if param.is_object:
            return self._object(param, raw)
        if "array" in param.kinds:
            if p.location == "query" and p.explode and p.style == "form":
                parts = raw
            else:
                parts = raw[-1].split(DELIMITERS.get(p.style, ",")) if raw[-1] != "" else []
            return [coerce(part, param.item_kinds) for part in parts], None
        if len(raw) > 1:
            return None, Violation(p.name, p.location, "", "repeated",
                                   f"given {len(raw)} times; it takes a single value")
        return coerce(raw[0], param.kinds), None

    def _object(self, param: _Param, raw: list[str]) -> tuple[Any, Violation | None]:
        """An object parameter by its style: spread (`name=value` items, from `_spread`), exploded simple
        (`R=100,G=200`), or flat pairs (`R,100,G,200`: form or simple without explode)."""
        p = param.spec
        if param.spread:
            pairs = [item.partition("=")[::2] for item in raw]
        elif p.explode:
            pairs = [item.partition("=")[::2] for item in raw[-1].split(",") if item]
        else:
            parts = raw[-1].split(DELIMITERS.get(p.style, ",")) if raw[-1] else []
            if len(parts) % 2:
                return None, Violation(p.name, p.location, "", "style", f"{raw[-1]!r} is not a list of name,value "
                                       f"pairs, as style {p.style} without explode sends an object")
            pairs = list(zip(parts[::2], parts[1::2]))
        return {key: coerce(value, param.props.get(key, set())) for key, value in pairs}, None

    def _body(self, request: MockRequest, violations: list[Violation]) -> Any:
        body = self.op.request_body
        assert body is not None
        content_type = _media(request)
        # an empty form is an object without fields (what `{}` is in application/x-www-form-urlencoded), not no body
        empty_form = content_type == "application/x-www-form-urlencoded" and content_type in body.content
        if not request.body and not empty_form:
            if body.required:
                violations.append(Violation("body", "body", "", "required", "a request body is required"))
            return None
        media = match_media_type(content_type, body.content)
        if media is None:
            unsupported = (f"unsupported Content-Type {content_type or '(none)'!r}; this operation takes "
                           + ", ".join(body.content))
            if self.mode == "strict":
                raise MockError(415, unsupported,
                                details={"contentType": content_type, "accepted": list(body.content)})
            violations.append(Violation("body", "body", "", "contentType", unsupported))
            return None  # let through, answered as if no body were sent
        if is_json(media.name):
            try:
                value = request.json = parse_json(request.body, self.max_depth)
            except JsonRefused as exc:
                violations.append(Violation("body", "body", exc.pointer, exc.rule, exc.message))
                return None
        elif media.name in ("application/x-www-form-urlencoded", "multipart/form-data"):
            fields = (_multipart(request.header("content-type") or "", request.body)
                      if media.name.startswith("multipart") else parse_query(request.body.decode("utf-8", "replace")))
            if fields is None:
                violations.append(Violation("body", "body", "", "multipart", "malformed multipart body (no boundary "
                                            "or no parts)"))
                return None
            readings = self._form_readings.get(media.name) or [{}]
            violations.extend(_repeated(readings[0], fields))
            if media.reserved_encoded:
                violations.extend(_unencoded_reserved(media, request.body, fields))
            value = self._form_value(media, fields, readings, self.max_depth)
        else:
            return request.body
        if media.schema is not None and self.checks and not media.schema.fits(value):
            for error in iter_errors(media.schema.validator, value):
                violations.append(Violation("body", "body", instance_pointer(error), str(error.validator),
                                            error.message, error.instance))
        return value

    @staticmethod
    def _form_value(media: MediaType, fields: dict[str, list[str]], readings: list[_Kinds],
                    max_depth: int) -> dict[str, Any]:
        """Form fields as the body schema types them (numbers, booleans, null, arrays for repeated fields, JSON
        for a multipart part of an object or array): as every alternative of the body allows, else as the first
        alternative (`oneOf`/`anyOf` of objects) under which the body is valid; as the first when none is."""
        multipart = media.name.startswith("multipart")
        first: dict[str, Any] | None = None
        for kinds in readings:
            value = {name: _form_field(raw, *kinds.get(name, (set(), set())), multipart=multipart,
                                       max_depth=max_depth)
                     for name, raw in fields.items()}
            if media.schema is not None:
                value = _with_nulls(media.schema.validator, value, kinds)
            if media.schema is None or len(readings) == 1 or media.schema.validator.is_valid(value):
                return value
            first = value if first is None else first
        assert first is not None  # there are two readings at least
        return first


def _repeated(kinds: _Kinds, fields: dict[str, list[str]]) -> list[Violation]:
    """A field the schema types as one value (not an array, in no alternative), sent more than once: which one
    was meant?"""
    single = {name for name, (field_kinds, _) in kinds.items() if field_kinds and "array" not in field_kinds}
    return [Violation(name, "body", pointer_join("", name), "repeated",
                      f"given {len(raw)} times; it takes a single value")
            for name, raw in fields.items() if len(raw) > 1 and name in single]


def _unencoded_reserved(media: MediaType, body: bytes, fields: dict[str, list[str]]) -> list[Violation]:
    """Fields whose encoding says `allowReserved: false`, sent with a reserved character (RFC 3986) as it is. In
    a urlencoded form the raw text is read (`%2F` is fine, `/` is not; `+` is a space there); a multipart part
    has no percent-encoding, so its value is."""
    if media.name.startswith("multipart"):
        sent, reserved = [(name, value) for name, values in fields.items() for value in values], _RESERVED
    else:
        pairs = (pair.partition("=") for pair in body.decode("utf-8", "replace").split("&"))
        sent, reserved = [(unquote_plus(name), value) for name, _, value in pairs], _RESERVED_IN_FORM
    return [Violation(name, "body", pointer_join("", name), "allowReserved",
                      f"the field {name!r} has {found.group()!r} as it is: its encoding sets allowReserved: false, "
                      "so reserved characters must be percent-encoded")
            for name, value in sent if name in media.reserved_encoded and (found := reserved.search(value))]


def _form_field(raw: list[str], kinds: set[str], item_kinds: set[str], *, multipart: bool, max_depth: int) -> Any:
    """A form field's texts as its schema types it: an array from repeated fields; an object (or an array of
    them) as JSON, which is how a multipart part of one comes (OpenAPI's default Content-Type for such a part is
    application/json), and how a form field of one may."""
    if multipart and len(raw) == 1 and (kinds & {"object", "array"}):
        whole = _json(raw[0], max_depth)
        if (isinstance(whole, dict) and "object" in kinds) or (
                isinstance(whole, list) and "array" in kinds and (not item_kinds or item_kinds & {"object", "array"})):
            return whole
    if "array" in kinds:
        if raw == ["null"] and "null" in kinds and "string" not in item_kinds:
            return None  # a client's None, as for a single value (`coerce`): no item could be the text
        return [_form_text(text, item_kinds, max_depth) for text in raw]
    return _form_text(raw[-1], kinds, max_depth)


def _form_text(raw: str, kinds: set[str], max_depth: int) -> Any:
    if "object" in kinds and raw[:1] in ("{", "["):
        found = _json(raw, max_depth)
        return raw if found is _NOT_JSON else found
    return coerce(raw, kinds)


_NOT_JSON = object()


def _json(text: str, max_depth: int) -> Any:
    """A form field's JSON; one that is not (or cannot be served) is the field's text, checked as such."""
    try:
        return parse_json(text, max_depth)
    except JsonRefused:
        return _NOT_JSON


def _with_nulls(validator: Any, value: dict[str, Any], kinds: _Kinds) -> dict[str, Any]:
    """A form field whose text is `null` and whose schema allows a string or null is read as a string first; when
    the body is then invalid, null (a client's spelling of None, as Schemathesis sends it) is tried instead, and
    kept if it leaves fewer problems (so what is reported is what is really wrong)."""
    ambiguous = [name for name, field in value.items()
                 if field == "null" and {"null", "string"} <= kinds.get(name, (set(), set()))[0]]
    if not ambiguous or validator.is_valid(value):
        return value
    nulled = {**value, **dict.fromkeys(ambiguous)}
    return nulled if sum(1 for _ in validator.iter_errors(nulled)) < sum(1 for _ in validator.iter_errors(value)) \
        else value


def _form_readings(media: MediaType, resolve: Resolve) -> list[_Kinds]:
    """How a form body's fields may be read: first as every alternative of its schema allows (each property's
    types in any of them), then, for a `oneOf`/`anyOf` of objects, as each alternative alone types them."""
    if media.schema is None:
        return [{}]
    node, uri = media.schema.node, media.schema.uri
    if isinstance(node, dict) and isinstance(node.get("$ref"), str):
        node, uri = resolve(node["$ref"], uri)
    branches = [(branch, uri) for key in ("oneOf", "anyOf") for branch in
                (node.get(key) or [] if isinstance(node, dict) else [])]
    shared = {key: value for key, value in node.items() if key not in ("oneOf", "anyOf")} \
        if isinstance(node, dict) else {}
    alternatives = [_joined(_property_kinds(shared, uri, resolve), _property_kinds(*branch, resolve))
                    for branch in branches]
    return [_property_kinds(node, uri, resolve), *alternatives]


_Kinds = dict[str, tuple[set[str], set[str]]]  # a form's fields: each one's types and, for arrays, its items'


def _joined(a: _Kinds, b: _Kinds) -> _Kinds:
    """Both readings: a field's types in either."""
    joined = dict(a)
    for name, (kinds, items) in b.items():
        _add(joined, name, kinds, items)
    return joined


def _add(kinds: _Kinds, name: str, types: set[str], items: set[str]) -> None:
    """A field's types (and its items'), with those it has already: the types either allows."""
    known = kinds.get(name)
    kinds[name] = (types, items) if known is None else (known[0] | types, known[1] | items)


def _property_kinds(schema: Any, schema_uri: str, resolve: Resolve) -> _Kinds:
    """For an object schema (through `$ref`, `allOf`, `anyOf`, `oneOf`): each property's types and, for
    arrays, its items' types (where several subschemas declare a property, the types any of them allow)."""
    kinds: _Kinds = {}
    stack = [(schema, schema_uri)]
    while stack:
        node, uri = stack.pop()
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            node, uri = resolve(node["$ref"], uri)
        if not isinstance(node, dict):
            continue
        for name, prop in (node.get("properties") or {}).items():
            prop_uri = below(uri, "properties", name)
            prop_kinds = schema_types(prop, prop_uri, resolve)
            items = schema_types(*items_schema(prop, prop_uri, resolve), resolve) if "array" in prop_kinds else set()
            _add(kinds, name, prop_kinds, items)
        stack.extend((sub, uri) for key in ("allOf", "anyOf", "oneOf") for sub in node.get(key) or [])
    return kinds


def _multipart(content_type: str, body: bytes) -> dict[str, list[str]] | None:
    """The fields of a multipart/form-data body; a file's content is kept as text (latin-1: any bytes)."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n"
                                                   + body)
    if not message.is_multipart():
        return None
    fields: dict[str, list[str]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not name:
            continue
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        text = data.decode("latin-1") if part.get_filename() else data.decode("utf-8", "replace")
        fields.setdefault(str(name), []).append(text)
    return fields


def _media(request: MockRequest) -> str:
    """The request's media type, without parameters, in lower case ('' when none is named)."""
    return bare_media_type(request.header("content-type"))


def _raw(location: str, name: str, sources: dict[str, Any], request: MockRequest) -> list[str] | None:
    if location == "query":
        return sources["query"].get(name)
    value = request.header(name) if location == "header" else sources[location].get(name)
    return None if value is None else [value]


def match_media_type(content_type: str, content: dict[str, MediaType]) -> MediaType | None:
    """The declared media type a concrete one falls under: exact, then `type/*`, then `*/*`."""
    if content_type in content:
        return content[content_type]
    major = content_type.split("/")[0]
    for name, media in content.items():
        if name == f"{major}/*" or name == "*/*":
            return media
    if not content_type:
        return None
    for name, media in content.items():
        if bare_media_type(name) == content_type:
            return media
    return None


def _message(message: str) -> str:
    """jsonschema's words, capped: a 100 kB parameter must not come back whole in the error."""
    return message if len(message) <= 300 else message[:297] + "..."
