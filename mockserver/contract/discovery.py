"""Real ids from the deployment itself, before anything is generated: the ids the mock's fixtures hold rarely exist
on a real deployment (other data, another tenant), and calls with them only reach 404s.

The run calls each list operation (a `GET` that needs no path value and no query value it has no default for)
with its own credentials, once as it is and once per value of each of its enum query parameters; outside a
read-only run also each search operation (a `POST …/filter`, `…/search` or `…/query` that takes an empty JSON
object) with `{}` and each create (another `POST` that needs no value) with its request body's first example. It
reads the items of the JSON answers (objects in an array, at the top or one level down; a create's answer, with
the id its `Location` header ends with). An
operation that needs path (or required query) values then gets each from one item: a field of the parameter's own
name (at any depth: `spec.variantA.agentId`), or the item's own id (`id`, or `testSetId` in a create's answer) when
the parameter names the list's resource (`testSetId` and the items of `/v1/test-sets`, or of a
`POST /v1/test-sets/search`) or is a bare `{id}` right after the path that gave the item. All of an operation's values
come from the same item, so they belong together (a test set's id with its version), and each must fit the
parameter's schema.

Where the description declares OpenAPI `links` to an operation (see `links.py`), they take precedence over the
names: its values come from evaluating the links on the answers discovery got (a list's items, or the answers of
an operation discovered before it, which may link on in turn); the names are read only when its links give none."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import requests

from ..spec.documents import DocumentSet
from ..spec.index import Operation, Parameter, SpecIndex
from .credentials import Sent
from .fixed import fixed, schema_of
from .links import Exchange, Link, links_to, values

Combo = dict[tuple[str, str], Any]
PER_OPERATION = 3  # combinations per operation, as from the fixtures
CANDIDATES = 100  # at most this many combinations tried per operation (a GET each) …
ENOUGH = 2 * PER_OPERATION  # … until this many answered with success: the longest lists of those are kept
MAX_ENUM_VALUES = 10  # calls per enum query parameter of a list
_DEPTH = 3
_SCALARS = (str, int, float, bool)
_SEARCH = re.compile(r"/(filter|search|query)$", re.IGNORECASE)  # the last segment of a search operation's path


class _Item(NamedTuple):
    """An object a list, search or create answered, with where it came from."""

    resource: str  # the singular name of what the path lists or creates: `testSet` for `/v1/test-sets`
    path: str  # the path that listed or created it (a search's without `/search`): its id is `{path}/{id}`'s
    data: dict[str, Any]


def discover(spec: SpecIndex, base_url: str, sent: dict[str, Sent], headers: dict[str, str],
             timeout: float | None, allowed: set[str], posts: bool = True) -> tuple[dict[str, list[Combo]],
                                                                                    list[str]]:
    """By operationId, the combinations of request values found; and what went wrong, for the report. Only the
    `allowed` operations (by label: those the run calls) are called; `posts`: searches and creates too (left out
    of a read-only run)."""
    linked, problems = links_to(spec)
    answers: dict[str, list[Exchange]] = {}  # by operationId: the success answers discovery got
    items: list[_Item] = []
    for op in spec.operations.values():
        body = _post_body(op, spec.docs) if posts else None
        if not (body is not None or is_list(op, spec.docs)) or label(op) not in allowed:
            continue
        path = _SEARCH.sub("", op.path)
        resource = _resource(path)
        for query in [{}] if body is not None else _queries(op, spec.docs):
            given = {**fixed(op, spec.docs), **{("query", name): value for name, value in query.items()}}
            exchange, problem = _get(base_url, op, given, sent.get(label(op)) or Sent(), headers, timeout, body)
            if exchange is not None:
                answers.setdefault(op.id, []).append(exchange)
                items += [_Item(resource, path, item) for item in _objects_in_arrays(exchange.body)]
                items += [_Item(resource, path, item) for item in _created(op, exchange)]
            if problem:
                problems.append(f"{label(op)}: {problem}")
                break
    combos: dict[str, list[Combo]] = {}
    for op in _in_order(spec, linked):  # an operation after those whose answers its links read
        candidates = (_linked(op, linked.get(op.id, []), answers, spec.docs)  # declared links first
                      or _bind(op, items, spec.docs))
        if candidates and op.method.upper() == "GET" and label(op) in allowed:
            ranked = _rank(op, candidates, base_url, sent.get(label(op)) or Sent(), headers, timeout)
            answers[op.id] = [exchange for _, exchange in ranked]
            candidates = [combo for combo, _ in ranked]
        if candidates:
            combos[op.id] = candidates[:PER_OPERATION]
    return combos, list(dict.fromkeys(problems))


def label(op: Operation) -> str:
    """How the run names an operation (`GET /pets/{id}`)."""
    return f"{op.method.upper()} {op.path}"


def _in_order(spec: SpecIndex, linked: dict[str, list[Link]]) -> Iterator[Operation]:
    """Every operation, each after the sources of the links to it (all that remain at once, in a cycle)."""
    pending, done = list(spec.operations.values()), set()
    while pending:
        ready = [op for op in pending if all(link.source.id in done or link.source.id == op.id
                                             for link in linked.get(op.id, []))] or pending
        yield from ready
        done |= {op.id for op in ready}
        pending = [op for op in pending if op.id not in done]


def _linked(op: Operation, links: list[Link], answers: dict[str, list[Exchange]], docs: DocumentSet) -> list[Combo]:
    """The combinations the links to `op` give from the answers of their sources, each with every value the
    operation needs and every value fitting its parameter's schema."""
    needed = [(p.location, p.name) for p in _needed(op, docs)]
    if not needed:
        return []
    pinned = fixed(op, docs)
    schemas = {(p.location, p.name): p.schema for p in op.parameters if p.schema is not None}
    combos: list[Combo] = []
    for link in links:
        for exchange in answers.get(link.source.id, []):
            for given in values(link, exchange):
                combo = {**given, **pinned}
                fits = all(key not in schemas or schemas[key].validator.is_valid(value) for key, value in combo.items())
                if fits and all(key in combo for key in needed) and combo not in combos:
                    combos.append(combo)
    return combos


def _rank(op: Operation, candidates: list[Combo], base_url: str, credentials: Sent, headers: dict[str, str],
          timeout: float | None) -> list[tuple[Combo, Exchange]]:
    """The candidates the target answers with success, with their answers, the longest lists first (their pages
    have a next one, so the cursor checks get to walk them)."""
    scored: list[tuple[int, int, Combo, Exchange]] = []
    for index, combo in enumerate(candidates[:CANDIDATES]):
        if len(scored) >= ENOUGH:
            break
        exchange, _ = _get(base_url, op, combo, credentials, headers, timeout)
        if exchange is not None:
            scored.append((-len(list(_objects_in_arrays(exchange.body))), index, combo, exchange))
    return [(combo, exchange) for _, _, combo, exchange in sorted(scored, key=lambda entry: entry[:2])]


def _needed(op: Operation, docs: DocumentSet) -> list[Parameter]:
    """The parameters a request must be given a value for (not those the description fixes to one)."""
    pinned = fixed(op, docs)
    return [p for p in op.parameters if (p.location, p.name) not in pinned
            and (p.location == "path" or (p.location == "query" and p.required and not _has_default(p)))]


def _has_default(parameter: Parameter) -> bool:
    return isinstance(parameter.schema.node, dict) and "default" in parameter.schema.node if parameter.schema else False


def is_list(op: Operation, docs: DocumentSet) -> bool:
    return op.method.upper() == "GET" and not _needed(op, docs)


def _post_body(op: Operation, docs: DocumentSet) -> Any:
    """The JSON body discovery sends a `POST` that needs no value: `{}` to a search (`…/filter|search|query`, which
    lists where an API has no `GET` list) that takes it, a create's first example; None for any other operation."""
    if op.method.upper() != "POST" or _needed(op, docs):
        return None
    body = op.request_body
    json_media = [media for name, media in (body.content.items() if body else ()) if "json" in name]
    if _SEARCH.search(op.path):
        fits = body is None or any(media.schema is None or media.schema.validator.is_valid({}) for media in json_media)
        return {} if fits else None
    return next((example for media in json_media for example in media.examples.values()), None)


def _created(op: Operation, exchange: Exchange) -> list[dict[str, Any]]:
    """What a create answered: its body, with the id its `Location` header ends with (the body's own id first)."""
    if _SEARCH.search(op.path):
        return []
    location = exchange.headers.get("Location", "").split("?")[0].rstrip("/")
    item = {"id": location.rsplit("/", 1)[-1]} if location else {}
    if isinstance(exchange.body, dict):
        item.update(exchange.body)
    return [item] if item else []


def _queries(op: Operation, docs: DocumentSet) -> Iterator[dict[str, str]]:
    yield {}
    for p in op.parameters:
        node = schema_of(p, docs)
        if p.location == "query" and isinstance(node, dict) and isinstance(node.get("enum"), list):
            for value in node["enum"][:MAX_ENUM_VALUES]:
                if isinstance(value, _SCALARS):
                    yield {p.name: str(value).lower() if isinstance(value, bool) else str(value)}


def _get(base_url: str, op: Operation, combo: Combo, credentials: Sent, headers: dict[str, str],
         timeout: float | None, body: Any = None) -> tuple[Exchange | None, str | None]:
    """A success answer to a call of `op` with these values (None for any other answer), and what went wrong."""
    try:
        response = call(base_url, op, combo, credentials, headers, timeout, body)
    except requests.RequestException as exc:
        return None, type(exc).__name__
    if response.status_code in (401, 403):
        return None, f"answered {response.status_code}"
    if not 200 <= response.status_code < 300:
        return None, None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    return Exchange(op.method.upper(), combo, response.status_code, response.headers, answer), None


def call(base_url: str, op: Operation, combo: Combo, credentials: Sent, headers: dict[str, str],
         timeout: float | None, body: Any = None) -> requests.Response:
    """A call of `op` with these values, credentials and JSON body, if any (raises requests' errors)."""
    path = op.path.format(**{name: value for (where, name), value in combo.items() if where == "path"})
    query = {name: str(value) for (where, name), value in combo.items() if where == "query"}
    return requests.request(op.method.upper(), base_url + path, params={**credentials.query, **query},
                            headers={**headers, **credentials.headers}, cookies=credentials.cookies,
                            timeout=timeout or 10, json=body)


def _objects_in_arrays(body: Any) -> Iterator[dict[str, Any]]:
    candidates = [body, *(body.values() if isinstance(body, dict) else [])]
    for value in candidates:
        if isinstance(value, list):
            yield from (item for item in value if isinstance(item, dict))


def _resource(path: str) -> str:
    """The singular camelCase name of a list's resource: `/v1/test-sets` -> `testSet`."""
    static = [part for part in path.split("/") if part and not part.startswith("{")]
    words = re.split(r"[-_]", static[-1]) if static else [""]
    name = words[0].lower() + "".join(word.capitalize() for word in words[1:])
    return name[:-1] if name.endswith("s") else name


def _own_id(item: _Item) -> Any:
    """The item's id: its `id`, else a field naming its resource (`flowId`, `flow_id`), as a create may answer."""
    keys = ("id", f"{item.resource}Id", f"{item.resource}_id")
    return next((item.data[key] for key in keys if isinstance(item.data.get(key), _SCALARS)), None)


def _fields(item: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(leaf name, value) of every scalar in an item, shallowest first."""
    if not isinstance(item, dict) or depth > _DEPTH:
        return
    nested = []
    for key, value in item.items():
        if isinstance(value, _SCALARS):
            yield key, value
        elif isinstance(value, dict):
            nested.append(value)
    for value in nested:
        yield from _fields(value, depth + 1)


def _bind(op: Operation, items: list[_Item], docs: DocumentSet) -> list[Combo]:
    """The combinations the items give `op` by name: a field of the parameter's name, or the item's own id for
    a parameter that names its resource (`testSetId`) or for a bare `{id}` right after the path that listed or
    created the item (`/flows/{id}` a flow's, never an owner's)."""
    needed = _needed(op, docs)
    if not needed:
        return []
    combos: list[Combo] = []
    for item in items:
        fields: dict[str, Any] = {}
        for name, value in _fields(item.data):
            fields.setdefault(name, value)
        combo: Combo = fixed(op, docs)
        for p in needed:
            if p.name.lower() == "id":
                value = _own_id(item) if op.path.partition(f"/{{{p.name}}}")[0] == item.path else None
            else:
                value = fields.get(p.name)
                if value is None and p.name.lower() in (item.resource.lower() + "id", item.resource.lower() + "_id"):
                    value = _own_id(item)
            if value is None or (p.schema is not None and not p.schema.validator.is_valid(value)):
                break
            combo[(p.location, p.name)] = value
        else:
            if combo not in combos:
                combos.append(combo)
    return combos
