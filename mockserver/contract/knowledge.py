"""What our checks need to know about each operation beyond its schemas, read once from the description and the
fixtures and written into the operation as `x-contract`, so the checks find it on any case of any run (the CLI's
engine and the pytest integration alike) without global state.

- `requestIdHeader`: the header every response carries (the fixtures' settings, else the description's when an
  operation's responses declare `X-Request-Id`), or null: nothing to check.
- `envelope`: where the error code and the request id stand in an error body (the fixtures' error template, with
  `{{code}}` and `{{requestId}}`), or null: look for `code` / `requestId` in the body's top two levels.
- `codes`: by status, the error codes the operation documents (the code in each example of that response).
- `page`: the field names of a list page and its `limit`/`cursor` parameters (the fixture's `page`, with the
  engine's defaults), or null when the operation takes no cursor.
- `order`: the fixture's documented order of a list (`by`, `desc`, `type`), empty when it declares none.
- `rejects`: the fixture's `reject` rules (`when`, `status`): request rules beyond the schema.
- `caller`: the run's caller (`id`, `tenant`), for rules that read it."""
from __future__ import annotations

from typing import Any, Iterator

from ..core.auth import Caller
from ..core.documents import DocumentSet, RefError
from ..core.envelope import dig
from ..core.fixtures import FixtureSet
from ..core.query import page_names
from ..core.request_validation import ValidRequest
from ..core.rules import Context
from ..core.spec import Operation, SpecIndex

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


def annotate(raw: dict[str, Any], spec: SpecIndex, fixtures: FixtureSet, caller: Caller) -> None:
    """Write `x-contract` into every operation of `raw` (the description as read) that stands inline in it."""
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
        takes_cursor = any(p.location == "query" and p.name == page["cursor"] for p in op.parameters)
        node[KEY] = {
            "requestIdHeader": _request_id_header(settings, op),
            "envelope": envelope,
            "codes": _codes(op, envelope),
            "page": page if takes_cursor else None,
            "order": listing.get("order") or [],
            "rejects": [{"when": r["when"], "status": r["status"]} for r in config.get("reject") or []],
            "caller": {"id": caller.id, "tenant": caller.tenant},
        }


def _request_id_header(settings: dict[str, Any], op: Operation) -> str | None:
    if "requestIdHeader" in settings:
        return str(settings["requestIdHeader"])
    declared = any(name.lower() == DEFAULT_REQUEST_ID_HEADER.lower()
                   for response in op.responses.values() for name in response.headers)
    return DEFAULT_REQUEST_ID_HEADER if declared else None


def _codes(op: Operation, envelope: dict[str, list[Any]] | None) -> dict[str, list[str]]:
    codes: dict[str, list[str]] = {}
    for status, response in op.responses.items():
        if not status.isdigit() or int(status) < 400:
            continue
        found = [find(example, "code", envelope) for media in response.content.values()
                 for example in media.examples.values()]
        codes[status] = list(dict.fromkeys(c for c in found if isinstance(c, str)))
    return codes


def rule_context(sent: dict[tuple[str, str], Any], caller: Caller) -> Context:
    """A request as the fixtures' rules read it: the values sent, by (location, name), and the caller."""
    request = ValidRequest()
    for (location, name), value in sent.items():
        key = name.lower() if location == "header" else name
        getattr(request, location)[key] = value
        request.sent.add((location, key))
    return Context(request, caller)


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
