"""Secrets never stored: the names credentials go by (the description's security schemes, and the usual names) and
the `writeOnly` properties of each operation's bodies, worked out once at start-up, so what the mock keeps or
writes of a request (the journal, the access log, a recording) holds "[masked]" where a credential stood. The
request path only looks names up: a body is read again only when it can hold a secret (a request body naming one,
an answer whose schema declares one, or an answer from a proxied deployment)."""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote_plus

from ..base.http import UNREAD, MockRequest, bare_media_type, is_json, parse_query
from ..base.json_values import parse_json

if TYPE_CHECKING:
    from .index import MediaType, SpecIndex
    from .write_only import WriteOnly

MASK = "[masked]"
MIN_SECRET = 4  # a shorter credential is masked where it stands, but not hunted inside other text
# what a body's key (exact: lower-case) calls a credential when no description says so; a header or a query
# name besides: the usual header names
BODY_NAMES = frozenset({"api_key", "access_token", "token", "password", "secret", "client_secret"})
USUAL_NAMES = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"}) | BODY_NAMES
_FORM = "application/x-www-form-urlencoded"
_NEEDLES = {"json": tuple(f'"{n}"'.encode() for n in BODY_NAMES),  # a key, as JSON writes it
            "form": tuple(f"{n}=".encode() for n in BODY_NAMES)}
_SET_COOKIE = re.compile(r"(^|,\s*)([^=;,\s]+)=[^;,]*")  # each cookie's `name=value`, not its attributes
Schema = tuple[Any, str]  # a schema node and its URI, as `WriteOnly` reads them


def _declares_secret(node: dict[str, Any]) -> bool:
    properties = node.get("properties")
    return node.get("writeOnly") is True or (isinstance(properties, dict) and not BODY_NAMES.isdisjoint(properties))


class Secrets:
    """Which names and properties of one description hold secrets, and how to mask them in what is kept."""

    def __init__(self, spec: SpecIndex, write_only: WriteOnly) -> None:
        self._write_only = write_only
        # an API key's header or query name; every cookie's value is masked (an API key's cookie among them) and
        # an http scheme's credential is in Authorization, which the usual names hold
        headers, query = set(USUAL_NAMES | {"x-mock-control-token"}), set(USUAL_NAMES)
        for scheme in spec.security_schemes.values():
            name, where = str(scheme.get("name", "")), scheme.get("in")
            if str(scheme.get("type", "")).lower() == "apikey" and name and where in ("header", "query"):
                if where == "header":
                    headers.add(name.lower())
                else:
                    query.add(name)
        self.headers = frozenset(headers)  # lower-case (HTTP/1.1 and 2 header names are case-insensitive)
        self.query = frozenset(query)
        # names as a response's headers may spell them (the mock's own answers say `Set-Cookie`)
        self._response_headers = frozenset(v for n in headers for v in (n, n.title(), n.upper()))
        self._requests: dict[str, dict[str, Schema]] = {}  # operation -> media type -> schema with a secret
        # operation -> status key (`200`, `4XX`, `default`: each it declares) -> the same, for its answers
        self._responses: dict[str, dict[str, dict[str, Schema]]] = {}
        for op in spec.operations.values():
            if op.request_body is not None and (found := self._secret_schemas(op.request_body.content)):
                self._requests[op.id] = found
            responses = {key: self._secret_schemas(response.content) for key, response in op.responses.items()}
            if any(responses.values()):
                self._responses[op.id] = responses

    def _secret_schemas(self, content: dict[str, MediaType]) -> dict[str, Schema]:
        return {name: (media.schema.node, media.schema.uri) for name, media in content.items()
                if media.schema is not None
                and self._write_only.search(media.schema.node, media.schema.uri, _declares_secret)}

    # -- the request path: look-ups, and a body read again only when it may hold a secret ------------------------
    def request_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """The request's headers (lower-case names) with credentials masked."""
        if self.headers.isdisjoint(headers):
            return dict(headers)
        return {k: mask_header(k, v) if k in self.headers else v for k, v in headers.items()}

    def response_headers(self, headers: dict[str, str]) -> dict[str, str]:
        if self._response_headers.isdisjoint(headers):
            return dict(headers)
        return {k: mask_header(k.lower(), v) if k.lower() in self.headers else v for k, v in headers.items()}

    def query_string(self, text: str, parsed: dict[str, list[str]] | None = None) -> str:
        """The query with the value of each credential replaced (`api_key=[masked]`); `parsed`: the request's
        parsed query, when it was parsed already."""
        if not text:
            return text
        if parsed is None:
            parsed = parse_query(text)
        if self.query.isdisjoint(parsed):
            return text
        return _masked_pairs(text, self.query.__contains__)

    def request_body(self, request: MockRequest, operation_id: str | None) -> bytes:
        """The request's body as kept: credentials and `writeOnly` properties masked (JSON and forms)."""
        data = request.body
        if not data:
            return data
        schemas = self._requests.get(operation_id or "")
        return self._body(data, request.header("content-type"), schemas, read=request.json)

    def response_body(self, data: bytes, media_type: str | None, operation_id: str | None, status: int,
                      foreign: bool) -> bytes:
        """An answer's body as kept. The mock's own answers are read again only where the operation's schema
        declares a secret and a credential's name appears in it; a deployment's (`foreign`: proxied) where the
        schema declares one or one of the names appears in it."""
        if not data:
            return data
        schemas = self._answer_schemas(operation_id, status)
        if foreign:
            return self._body(data, media_type, schemas)
        if not schemas:
            return data
        # the mock's own answer never holds a `writeOnly` value (the response check refuses one): only a key named
        # as a credential can need masking, so it is read again only when such a key is in it (a list of 200 pets
        # walked for `writeOnly` values cost 5 ms an answer)
        return self._body(data, media_type, None)

    def write_only(self, value: Any, media_type: str | None, operation_id: str, status: int) -> Any:
        """A parsed answer with its `writeOnly` values masked: a recording keeps one that breaks the description."""
        schema = _schema_for(self._answer_schemas(operation_id, status), media_type)
        return self._write_only.mask(value, *schema, MASK) if schema is not None else value

    def carried(self, request: MockRequest) -> set[str]:
        """The credentials a request carries: its credential headers' values (with and without their scheme),
        its cookies' values and its credential query values."""
        found: set[str] = set()
        for name in self.headers.intersection(request.headers):
            value = request.headers[name]
            if name == "cookie":
                found.update(pair.partition("=")[2].strip() for pair in value.split(";"))
            else:
                found.update((value, value.partition(" ")[2].strip()))
        query = request.query() or {}
        found.update(value for name in self.query.intersection(query) for value in query[name])
        return found

    def repeated(self, request: MockRequest, data: bytes) -> bytes:
        """A deployment's answer with each credential of the request it repeats masked (a message that says
        "the key SIG-555… may not …")."""
        for secret in sorted(self.carried(request), key=len, reverse=True):
            if len(secret) >= MIN_SECRET and secret.encode() in data:
                data = data.replace(secret.encode(), MASK.encode())
        return data

    def _answer_schemas(self, operation_id: str | None, status: int) -> dict[str, Schema] | None:
        """The schemas with a secret of the response an answer with this status is described by."""
        responses = self._responses.get(operation_id or "")
        if responses is None:
            return None
        code = str(status)
        return next((responses[k] for k in (code, f"{code[0]}XX", "default") if k in responses), None)

    def _body(self, data: bytes, media_type: str | None, schemas: dict[str, Schema] | None, *,
              read: Any = UNREAD) -> bytes:
        """`data` as kept; `read` is its JSON value when the request path read it already."""
        kind = "json" if is_json(media_type) else "form" if bare_media_type(media_type) == _FORM \
            else None
        if kind is None:
            return data  # multipart, XML, text: kept as it is (docs/SERVING.md says so)
        schema = _schema_for(schemas, media_type)
        if schema is None and not any(n in data for n in _NEEDLES[kind]):
            return data
        if kind == "form":
            return self._form(data, schema)
        try:
            value = parse_json(data) if read is UNREAD else read
        except ValueError:
            return data  # not JSON after all, or JSON the request path refused (too deep, NaN, …): kept as it is
        if schema is not None:
            value = self._write_only.mask(value, *schema, MASK)
        masked = _masked_keys(value)
        return json.dumps(masked, ensure_ascii=False, separators=(",", ":")).encode()

    def _form(self, data: bytes, schema: Schema | None) -> bytes:
        try:
            text = data.decode()
        except UnicodeDecodeError:
            return data
        names: Collection[str] = BODY_NAMES
        if schema is not None:  # a form's fields are its schema's top-level properties
            fields = dict(parse_qsl(text, keep_blank_values=True))
            masked = self._write_only.mask(fields, *schema, MASK)
            names = BODY_NAMES | {k for k, v in masked.items() if v is MASK}
        return _masked_pairs(text, names.__contains__).encode()


def mask_header(name: str, value: str) -> str:
    """A credential header's value as kept: cookies by name (`theme=[masked]; sid=[masked]`, a Set-Cookie's
    attributes kept), any other as `mask` shows it."""
    if name == "cookie":
        return "; ".join(f"{pair.partition('=')[0].strip()}={MASK}" for pair in value.split(";") if pair.strip())
    if name == "set-cookie":  # a deployment's several Set-Cookie headers come folded into one, `, ` apart
        return _SET_COOKIE.sub(rf"\1\2={MASK}", value)
    return mask(value)


def mask(value: str) -> str:
    """A header's credential as kept: the scheme and a hint of it (`Bearer demo…`), never the whole of it."""
    scheme, _, credential = value.partition(" ")
    if credential:
        return f"{scheme} {credential[:4]}…" if len(credential) > 8 else f"{scheme} ****"
    return value[:4] + "…" if len(value) > 8 else "****"


def _schema_for(schemas: dict[str, Schema] | None, media_type: str | None) -> Schema | None:
    """The schema of the body's media type (or of the first that declares a secret, when it is not listed)."""
    if not schemas:
        return None
    return schemas.get(bare_media_type(media_type)) or next(iter(schemas.values()))


def _masked_keys(value: Any) -> Any:
    """A copy with the value of each key named as a credential masked, at any depth."""
    if isinstance(value, dict):
        return {k: MASK if k in BODY_NAMES else _masked_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked_keys(v) for v in value]
    return value


def _masked_pairs(text: str, secret: Callable[[str], bool]) -> str:
    """`a=1&api_key=s3cr3t` as `a=1&api_key=[masked]`: each pair whose (decoded) name is a secret."""
    pairs = []
    for pair in text.split("&"):
        name, equals, _ = pair.partition("=")
        pairs.append(f"{name}={MASK}" if equals and secret(unquote_plus(name)) else pair)
    return "&".join(pairs)
