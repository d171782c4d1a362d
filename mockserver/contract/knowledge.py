"""What our checks need to know about each operation beyond its schemas, read once from the description and the
fixtures and written into the operation as `x-contract`, so the checks find it on any case of any run (the CLI's
engine and the pytest integration alike) without global state.

- `requestIdHeader`: the header every response carries (the fixtures' settings, else the description's when an
  operation's responses declare `X-Request-Id`), or null: nothing to check.
- `envelope`: where the error code and the request id stand in an error body (the fixtures' error template, with
  `{{code}}` and `{{requestId}}`), or null: look for `code` / `requestId` in the body's top two levels.
- `codes`: by status, the error codes the description allows (an `enum`/`const` in the response's schema; see
  `stated.py`); a status whose schema states none is absent.
- `page`: the field names of a list page and its `limit`/`cursor` parameters (the fixture's `page`, with the
  engine's defaults), or null when the operation takes no cursor, or (with no fixture `list`) its success
  schema has no `hasMore` of that name (Airflow's `cursor` pages say `next_cursor` only).
- `sealed`: whether the description says the cursor is sealed (`x-sealed` on the cursor parameter).
- `order`: the list's documented order (`x-order` of the operation: `by`, `desc`, `type`), empty when the
  description states none. The fixtures' `order` is the mock's, which may add a tie-break: not read here.
- `retryAfter`: by status, the declared `Retry-After` header (`required`, `form`).
- `rejects`: the fixture's `reject` rules (`when`, `status`): request rules beyond the schema.
- `caller`: the run's caller (`id`, `tenant`), for rules that read it."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..fixtures.loading import FixtureSet
from ..pipeline.answers import pick_media_type
from ..pipeline.auth import Caller
from ..pipeline.envelope import dig
from ..pipeline.query import page_names
from ..spec.documents import DocumentSet, RefError
from ..spec.index import Operation, SpecIndex
from ..spec.schema_walk import SchemaWalk
from . import stated

KEY = "x-contract"
DEFAULT_REQUEST_ID_HEADER = "X-Request-Id"
_FALLBACK_DEPTH = 2


def placeholders(template: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[str, list[Any]]]:
    """Every `"{{name}}"` value of an envelope template with the path to it: ("code", ["error", "code"]) …"""
    if isinstance(template, dict):
        for key, sub in template.items():
            yield from placeholders(sub, (*path, key))
    elif isinstance(template, str) and template.strip().startswith("{{") and template.strip().endswith("}}"):
        yield template.strip()[2:-2].strip(), list(path)


def find(body: Any, name: str, envelope: dict[str, list[Any]] | None) -> Any:
    """The value named `code` or `requestId` in an error body: at the envelope's path when it is known, else the
    first key of that name in the body's top two levels (RFC 7807 and `{"error": {...}}` shapes alike)."""
    if envelope is not None:
        path = envelope.get(name)
        return dig(body, path) if path is not None else None
    level = [body]
    for _ in range(_FALLBACK_DEPTH):
        for node in level:
            if isinstance(node, dict) and name in node:
                return node[name]
        level = [v for node in level if isinstance(node, dict) for v in node.values()]
    return None


def annotate(docs: DocumentSet, spec: SpecIndex, fixtures: FixtureSet, caller: Caller) -> None:
    """Write `x-contract` into every operation of the description as read (`docs.root.data`) that stands inline
    in it."""
    raw = docs.root.data
    settings = fixtures.settings
    template = (settings.get("errors") or {}).get("template")
    envelope = {name: path for name, path in placeholders(template) if name in ("code", "requestId")} \
        if template else None
    for op in spec.operations.values():
        node = (raw.get("paths") or {}).get(op.path, {}).get(op.method.lower())
        if not isinstance(node, dict):
            continue
        located = fixtures.operations.get(op.id)
        config = located.value if located else {}
        listing = config.get("list") or {}
        page = page_names(listing)
        takes_cursor = any(p.location == "query" and p.name == page["cursor"] for p in op.parameters) and (
            bool(listing) or _declares(spec, op, page["hasMore"]))
        node[KEY] = {
            "requestIdHeader": _request_id_header(settings, op),
            "envelope": envelope,
            "codes": stated.error_codes(op, spec.docs, envelope.get("code") if envelope else None),
            "page": page if takes_cursor else None,
            "sealed": takes_cursor and stated.sealed(_parameter(docs, op.path, node, "query", page["cursor"])),
            "order": stated.order(node),
            "retryAfter": stated.retry_after(op),
            "rejects": [{"when": r["when"], "status": r["status"]} for r in config.get("reject") or []],
            "caller": {"id": caller.id, "tenant": caller.tenant},
        }


def _declares(spec: SpecIndex, op: Operation, name: str) -> bool:
    """Whether the operation's success answer has a property `name` (at its top level, through `$ref`s and
    `allOf`/`oneOf`/`anyOf`)."""
    response = op.response(op.success_status)
    media = pick_media_type(response.content) if response else None
    if media is None or media.schema is None:
        return False
    return SchemaWalk(spec.docs.resolve).property(media.schema.node, media.schema.uri, name)[0] is not None


def _request_id_header(settings: dict[str, Any], op: Operation) -> str | None:
    if "requestIdHeader" in settings:
        return str(settings["requestIdHeader"])
    declared = any(name.lower() == DEFAULT_REQUEST_ID_HEADER.lower()
                   for response in op.responses.values() for name in response.headers)
    return DEFAULT_REQUEST_ID_HEADER if declared else None


def _parameter(docs: DocumentSet, path: str, node: dict[str, Any], location: str, name: str) -> Any:
    """The operation's parameter as written (its own, else the path's), `$ref` followed within the file."""
    item = (docs.root.data.get("paths") or {}).get(path) or {}
    for entry in [*(node.get("parameters") or []), *(item.get("parameters") or [])]:
        resolved = resolve_local(docs, entry)
        if isinstance(resolved, dict) and resolved.get("in") == location and resolved.get("name") == name:
            return resolved
    return None


def resolve_local(docs: DocumentSet, node: Any) -> Any:
    """`node`, or what its `#/…` reference points to in the description's own file (None when it points elsewhere
    or nowhere)."""
    for _ in range(32):  # a chain of references, not a loop
        if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
            return node
        if not node["$ref"].startswith("#/"):
            return None
        try:
            node = docs.lookup(docs.root.uri + node["$ref"])
        except RefError:
            return None
    return None
