"""What a description states as a constraint, and only that: the checks fail a server for nothing else. An
example shows one possible answer and binds no server, so nothing here is read from examples.

- Error codes: the `enum` or `const` of the code's place in an error response's schema (through `$ref`,
  `allOf`, and `anyOf`/`oneOf` when every branch states some).
- Order: the operation's `x-order`, a list of `{by: field, desc: bool, type: semver}` keys, most significant
  first: only the keys the API documents (a tie-break it does not state is not written, so not checked).
- Sealed cursors: `x-sealed: true` on the cursor parameter, where the API says it refuses any cursor it did
  not issue for that very list; without it a changed cursor may be answered as the server likes.
- `Retry-After`: where a response declares the header, as its schema types it (integer seconds, or a string:
  seconds or an HTTP-date)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..spec.documents import DocumentSet, RefError
from ..spec.index import Operation, Schema

ORDER_KEY = "x-order"
SEALED_KEY = "x-sealed"
_DEPTH = 32  # `$ref`s and combinators followed at most this deep: a guard against loops


def error_codes(op: Operation, docs: DocumentSet, path: list[Any] | None) -> dict[str, list[str]]:
    """By error status, the codes its schema allows, where it states them. `path`: where the code stands in an
    error body (the envelope's); None: `code` at the top, or one level down."""
    codes: dict[str, list[str]] = {}
    for status, response in op.responses.items():
        if not status.isdigit() or int(status) < 400:
            continue
        found = [_codes_in(media.schema, docs, path) for media in response.content.values() if media.schema]
        if found and all(values is not None for values in found):
            codes[status] = list(dict.fromkeys(value for values in found for value in values or []))
    return codes


def _codes_in(schema: Schema, docs: DocumentSet, path: list[Any] | None) -> list[str] | None:
    if path is not None:
        return constants(schema.node, schema.uri, docs, path)
    for candidate in [["code"], *(([name, "code"]) for name in _property_names(schema.node, schema.uri, docs))]:
        found = constants(schema.node, schema.uri, docs, candidate)
        if found is not None:
            return found
    return None


def constants(node: Any, uri: str, docs: DocumentSet, path: list[Any], depth: int = 0) -> list[str] | None:
    """The string values the schema `node` allows at `path` (property names), or None when it states none."""
    if depth > _DEPTH or not isinstance(node, dict):
        return None
    if isinstance(node.get("$ref"), str):
        try:
            target, target_uri = docs.resolve(node["$ref"], uri)
        except RefError:
            return None
        return constants(target, target_uri, docs, path, depth + 1)
    stated: list[list[str]] = []
    for part in node.get("allOf") or []:  # every part holds: the narrowest statement wins
        found = constants(part, uri, docs, path, depth + 1)
        if found is not None:
            stated.append(found)
    branches = [constants(part, uri, docs, path, depth + 1)
                for key in ("anyOf", "oneOf") for part in node.get(key) or []]
    if branches and all(found is not None for found in branches):
        stated.append([value for found in branches for value in found or []])
    if not path:
        if "const" in node:
            stated.append([node["const"]])
        elif isinstance(node.get("enum"), list):
            stated.append(list(node["enum"]))
    else:
        sub = (node.get("properties") or {}).get(path[0])
        if sub is not None:
            found = constants(sub, uri, docs, path[1:], depth + 1)
            if found is not None:
                stated.append(found)
    if not stated:
        return None
    allowed = [value for value in stated[0] if all(value in other for other in stated[1:])]
    return [value for value in allowed if isinstance(value, str)]


def _property_names(node: Any, uri: str, docs: DocumentSet, depth: int = 0) -> Iterator[str]:
    if depth > _DEPTH or not isinstance(node, dict):
        return
    if isinstance(node.get("$ref"), str):
        try:
            target, target_uri = docs.resolve(node["$ref"], uri)
        except RefError:
            return
        yield from _property_names(target, target_uri, docs, depth + 1)
        return
    yield from node.get("properties") or {}
    for part in node.get("allOf") or []:
        yield from _property_names(part, uri, docs, depth + 1)


def order(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The operation's documented order keys (`x-order`), or none."""
    keys = node.get(ORDER_KEY)
    return [key for key in keys if isinstance(key, dict) and isinstance(key.get("by"), str)] \
        if isinstance(keys, list) else []


def retry_after(op: Operation) -> dict[str, dict[str, Any]]:
    """By status, the response's declared `Retry-After`: whether it is required, and its form — `seconds` (a
    numeric schema) or `seconds-or-date` (a string, or no type: either of RFC 9110's forms)."""
    found: dict[str, dict[str, Any]] = {}
    for status, response in op.responses.items():
        header = next((h for name, h in response.headers.items() if name.lower() == "retry-after"), None)
        if header is not None:
            numeric = bool(header.kinds) and header.kinds <= {"integer", "number"}
            found[status] = {"required": header.required, "form": "seconds" if numeric else "seconds-or-date"}
    return found


def sealed(parameter: Any) -> bool:
    """Whether the description says the cursor parameter (as written, `$ref` followed) is sealed."""
    return isinstance(parameter, dict) and parameter.get(SEALED_KEY) is True
