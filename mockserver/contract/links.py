"""OpenAPI `links`, as discovery follows them: a response that declares `links: {GetPet: {operationId: getPet,
parameters: {petId: '$response.body#/id'}}}` says where the linked operation's parameter values come from, and
discovery takes them from the answers it got (see `discovery.py`).

A link names its target by `operationId` or by a local `operationRef` (`#/paths/~1pets~1{petId}/get`); its
parameters by name or qualified by location (`path.petId`). A value is a constant or a runtime expression:
`$response.body#/json-pointer`, `$response.body`, `$response.header.NAME`, `$request.path.NAME`,
`$request.query.NAME`, `$statusCode`, `$method`, or a string with expressions in braces (`{$response.body#/id}`).
A pointer through an array index (`$response.body#/data/0/id`) is read from every item of that array, not only
the first: each item gives candidates of its own."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base.pointers import pointer_join, unescape_token
from ..spec.documents import RefError
from ..spec.index import Operation, SpecIndex, pointer_uri

Combo = dict[tuple[str, str], Any]  # (location, name) -> value
LOCATIONS = ("path", "query", "header", "cookie")
MAX_ITEMS = 100  # items of an array a pointer reads from
_MISSING = object()
_EMBEDDED = re.compile(r"\{(\$[^{}]+)\}")
_SCALARS = (str, int, float, bool)


@dataclass
class Link:
    name: str
    source: Operation = field(repr=False)
    status: str  # the source's response that declares it: `200`, `2XX`, `default`
    target: Operation = field(repr=False)
    parameters: tuple[tuple[tuple[str, str], Any], ...]  # ((location, name) of the target's parameter, expression)


@dataclass
class Exchange:
    """One call discovery made, and its answer, as runtime expressions read them."""

    method: str
    sent: Combo  # the path and query values the request carried
    status: int
    headers: Mapping[str, str]  # case-insensitive
    body: Any  # the JSON body, or None


def links_to(spec: SpecIndex) -> tuple[dict[str, list[Link]], list[str]]:
    """By the target's operationId, every link the description declares to it; and the links that cannot be
    followed, each with where it stands."""
    by_ref = {"#" + pointer_join("", "paths", op.path, op.method.lower()): op for op in spec.operations.values()}
    found: dict[str, list[Link]] = {}
    problems: list[str] = []
    for op in spec.operations.values():
        for status, response in op.responses.items():
            try:
                declared = spec.docs.lookup(response.uri).get("links") or {}
            except (RefError, AttributeError):
                continue
            for name, raw in declared.items() if isinstance(declared, dict) else ():
                uri = pointer_uri(response.uri, "links", name)
                file, line, _ = spec.docs.location(uri)
                where = f"{file}:{line}" if line else f"{file}#{uri.partition('#')[2]}"
                try:
                    node, _ = spec.docs.deref(raw, uri)
                    link = _link(str(name), op, status, node, spec, by_ref)
                except (RefError, ValueError) as exc:
                    problems.append(f"link {name} of {op.method.upper()} {op.path} ({where}) not followed: {exc}")
                    continue
                found.setdefault(link.target.id, []).append(link)
    return found, problems


def _link(name: str, source: Operation, status: str, node: Any, spec: SpecIndex,
          by_ref: dict[str, Operation]) -> Link:
    if not isinstance(node, dict):
        raise ValueError("a link is a mapping")
    if isinstance(node.get("operationId"), str):
        target = spec.operations.get(node["operationId"])
        if target is None:
            raise ValueError(f"no operation {node['operationId']!r} in the description")
    elif isinstance(node.get("operationRef"), str):
        ref = node["operationRef"]
        target = by_ref.get(ref.replace("%7B", "{").replace("%7D", "}"))
        if target is None:
            raise ValueError(f"operationRef {ref!r} is not a local #/paths/… reference to an operation")
    else:
        raise ValueError("it names no operationId nor operationRef")
    parameters = node.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise ValueError("its `parameters` are not a mapping")
    return Link(name, source, status, target,
                tuple((_parameter(target, str(key)), value) for key, value in parameters.items()))


def _parameter(target: Operation, key: str) -> tuple[str, str]:
    """The target's parameter a link's key names: `petId`, or `path.petId` qualified by its location."""
    location, _, rest = key.partition(".")
    if location in LOCATIONS and any(p.location == location and p.name == rest for p in target.parameters):
        return location, rest
    for wanted in LOCATIONS:
        if any(p.location == wanted and p.name == key for p in target.parameters):
            return wanted, key
    raise ValueError(f"{target.method.upper()} {target.path} has no parameter {key!r}")


def values(link: Link, exchange: Exchange) -> list[Combo]:
    """The combinations of the target's parameter values the link gives from one exchange: one, or one per item
    of the array its body pointers go through (none when the answer's status is not the one the link is declared
    on). A combination misses what did not resolve to a scalar."""
    declared = link.source.response(exchange.status)
    if declared is None or declared.status != link.status:
        return []
    count = max((_fanout(expression, exchange.body) for _, expression in link.parameters), default=0)
    combos: list[Combo] = []
    for index in range(count) if count else [None]:
        combo: Combo = {}
        for key, expression in link.parameters:
            value = evaluate(expression, exchange, index)
            if isinstance(value, _SCALARS):
                combo[key] = value
        if combo and combo not in combos:
            combos.append(combo)
    return combos


def evaluate(expression: Any, exchange: Exchange, index: int | None = None) -> Any:
    """A link parameter's value from an exchange (a constant as it is); `_MISSING` when it does not resolve.
    `index`: the item to read where a body pointer first goes through an array index."""
    if not isinstance(expression, str):
        return expression
    if expression.startswith("$"):
        return _runtime(expression, exchange, index)
    if "{$" not in expression:
        return expression
    parts = iter([_runtime(match.group(1), exchange, index) for match in _EMBEDDED.finditer(expression)])
    try:
        return _EMBEDDED.sub(lambda _: _text(next(parts)), expression)
    except ValueError:
        return _MISSING


def _text(value: Any) -> str:
    if not isinstance(value, _SCALARS):
        raise ValueError("not a scalar")
    return str(value).lower() if isinstance(value, bool) else str(value)


def _runtime(expression: str, exchange: Exchange, index: int | None) -> Any:
    if expression == "$statusCode":
        return exchange.status
    if expression == "$method":
        return exchange.method.upper()
    if expression == "$response.body" or expression.startswith("$response.body#"):
        return _pointer(exchange.body, expression.partition("#")[2], index)
    source, _, name = expression.partition(".")[2].partition(".")
    if expression.startswith("$response.header."):
        return exchange.headers.get(name, _MISSING)
    if expression.startswith("$request.") and source in ("path", "query"):
        return exchange.sent.get((source, name), _MISSING)
    return _MISSING


def _tokens(pointer: str) -> list[str]:
    return [unescape_token(token) for token in pointer.split("/")[1:]] if pointer else []


def _pointer(body: Any, pointer: str, index: int | None) -> Any:
    node, swapped = body, False
    for token in _tokens(pointer):
        if isinstance(node, list) and token.isdigit():
            position = index if index is not None and not swapped else int(token)
            swapped = True
            node = node[position] if position < len(node) else _MISSING
        elif isinstance(node, dict) and token in node:
            node = node[token]
        else:
            return _MISSING
    return node


def _fanout(expression: Any, body: Any) -> int:
    """How many items the first array a body pointer goes through by index holds (0: none)."""
    if not isinstance(expression, str):
        return 0
    for match in [expression, *(m.group(1) for m in _EMBEDDED.finditer(expression))]:
        if not match.startswith("$response.body#"):
            continue
        node = body
        for token in _tokens(match.partition("#")[2]):
            if isinstance(node, list) and token.isdigit():
                return min(len(node), MAX_ITEMS)
            if not isinstance(node, dict) or token not in node:
                break
            node = node[token]
    return 0
