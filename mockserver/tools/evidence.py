"""Evidence for a diff: the answers the mock serves from its fixtures and the exchanges of its journal, checked
against the NEW description with the machinery drift uses (`drift.check`, `drift.read_response`), and each
breach put down to the change that causes it. A spec-to-spec diff says what *may* break; this says what *does*:
"items[3].kind = 'corrections' is no longer in the enum: 6 fixture items, 41 journaled answers"."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import MockError
from ..base.http import MockRequest
from ..fixtures.loading import FixtureSet
from ..pipeline.answers import pick_media_type
from ..pipeline.pipeline import Pipeline
from ..pipeline.query import to_json
from ..spec.index import Operation
from ..state.records import BODY_LIMIT
from .diff import REQUEST, RESPONSE, Change, Differ, Site, operation_name, response_key
from .drift import Violation, check, read_response

FIXTURES, JOURNAL_ANSWERS, JOURNAL_REQUESTS = "fixture answers", "journaled answers", "journaled requests"
_NAMED = re.compile(r"^'([^']+)' is a required property")
_UNEXPECTED = re.compile(r"\('([^']+)'(?:, '[^']+')* (?:was|were) unexpected\)")
_INDEX = re.compile(r"/\d+(?=/|$)")
_TRUNCATED = "…(truncated)"
_GONE = {"property-removed", "parameter-removed", "parameter-renamed", "parameter-moved", "request-body-removed"}
# the kinds of change a broken rule points to, by a word of their name
_RULE_KINDS = {"enum": ("enum",), "const": ("enum",), "type": ("type", "nullable"), "pattern": ("pattern",),
               "format": ("format",), "required": ("required",), "multipleOf": ("multiple-of",),
               "additionalProperties": ("property-removed", "object-closed"),
               "unevaluatedProperties": ("object-closed",),
               **{bound: ("bound",) for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                                  "minLength", "maxLength", "minItems", "maxItems")}}


@dataclass
class Tally:
    """How many answers or requests of one source a change breaks, and the first one as an instance."""

    count: int = 0
    instance: str = ""

    def add(self, instance: str) -> None:
        self.count += 1
        self.instance = self.instance or instance


@dataclass
class Evidence:
    by_change: dict[int, dict[str, Tally]] = field(default_factory=dict)  # id(change) -> source -> tally
    # breaches no change explains, by (operation, place, rule)
    unexplained: dict[tuple[str, str, str], dict[str, Tally]] = field(default_factory=dict)
    checked: dict[str, int] = field(default_factory=dict)  # how many of each source were checked
    skipped: dict[str, int] = field(default_factory=dict)  # and left out (truncated bodies, …), with why

    def of(self, change: Change) -> dict[str, Tally]:
        return self.by_change.get(id(change), {})


@dataclass
class Exhibit:
    """One answer or request: where it came from, its old operation, and what NEW finds wrong with it."""

    source: str
    where: str
    operation: str  # OLD's key
    status: str | None
    payload: Any  # the body as JSON, to show values and to find the fields a removed property held
    side: str
    violations: list[Violation]
    pointer_prefix: tuple[str, str] = ("", "")  # a listing's item checked inside a one-item page: /items/0 → /items/3
    sent: dict[str, str] = field(default_factory=dict)  # a request's parameters: "/query/kind" -> value (headers
    # lower-case), to find those a removed, renamed or moved parameter held


class Attributor:
    """Puts each breach of NEW down to the change it comes from, by operation, side, status and place."""

    def __init__(self, changes: list[Change]) -> None:
        self.evidence = Evidence()
        self._sites: dict[str, list[tuple[Site, Change]]] = {}  # by OLD's operation key
        for change in changes:  # non-breaking ones too: a narrowed response can still reject today's answers
            for site in change.sites:
                self._sites.setdefault(site.operation, []).append((site, change))

    def add(self, exhibit: Exhibit) -> None:
        source = exhibit.source
        self.evidence.checked[source] = self.evidence.checked.get(source, 0) + 1
        counted: set[int] = set()
        unexplained: set[tuple[str, str, str]] = set()
        every = self._sites.get(exhibit.operation, [])
        sites = [(site, change) for site, change in every if site.side == exhibit.side]
        for violation in exhibit.violations:
            if violation.side != exhibit.side:
                continue
            pointer = violation.pointer
            if exhibit.pointer_prefix[0] and pointer.startswith(exhibit.pointer_prefix[0]):
                pointer = exhibit.pointer_prefix[1] + pointer[len(exhibit.pointer_prefix[0]):]
            change = self._explain(every if pointer == "/path" else sites, exhibit.status, violation, pointer)
            instance = f"{exhibit.where}: {_describe(pointer, exhibit.payload, violation)}"
            if change is None:
                key = (exhibit.operation, _INDEX.sub("/*", pointer), violation.rule)
                if key not in unexplained:  # once per answer or request, as for a change
                    unexplained.add(key)
                    self.evidence.unexplained.setdefault(key, {}).setdefault(source, Tally()).add(instance)
                continue
            if id(change) not in counted:
                counted.add(id(change))
                self.evidence.by_change.setdefault(id(change), {}).setdefault(source, Tally()).add(instance)
        for site, change in sites:  # a field gone breaks the clients that read (or send) it where it was
            if change.kind not in _GONE or id(change) in counted or not _status_fits(site, exhibit.status):
                continue
            found = _carried(change.kind, exhibit, site.place)
            if found is not None:
                counted.add(id(change))
                pointer, value = found
                said = "is served today" if exhibit.side == RESPONSE else "is sent today"
                self.evidence.by_change.setdefault(id(change), {}).setdefault(source, Tally()).add(
                    f"{exhibit.where}: {_dotted(pointer) if change.kind == 'property-removed' else pointer} = "
                    f"{_value(value)} {said}")

    def skip(self, source: str, why: str) -> None:
        key = f"{source} ({why})"
        self.evidence.skipped[key] = self.evidence.skipped.get(key, 0) + 1

    @staticmethod
    def _explain(sites: list[tuple[Site, Change]], status: str | None, violation: Violation,
                 pointer: str) -> Change | None:
        """The change whose place is where the breach is (for a missing required or an unexpected property, the
        property's own place), of the kind the broken rule speaks of when several changes stand there."""
        places = [_INDEX.sub("/*", pointer)]
        named = _NAMED.match(violation.message) if violation.rule == "required" else None
        unexpected = _UNEXPECTED.search(violation.message)
        for found in (named, unexpected):
            if found:
                places.insert(0, places[0].rstrip("/") + "/" + found.group(1))
        family = _RULE_KINDS.get(violation.rule, ())
        for place in places:
            here = [change for site, change in sites if _status_fits(site, status) and _matches(site.place, place)]
            if here:
                return next((c for c in here if any(word in c.kind for word in family)), here[0])
        return None


def _carried(kind: str, exhibit: Exhibit, place: str) -> tuple[str, Any] | None:
    """Where an answer or request carries what a change took away (a property, a parameter, the body), and what."""
    if kind == "property-removed":
        return next(_present(exhibit.payload, place), None)
    if kind == "request-body-removed":
        return (place, exhibit.payload) if exhibit.payload is not None else None
    location, _, name = place[1:].partition("/")
    key = f"/{location}/{name.lower() if location == 'header' else name}"
    return (place, exhibit.sent[key]) if key in exhibit.sent else None


def _status_fits(site: Site, status: str | None) -> bool:
    return site.status is None or site.status == status


def _matches(pattern: str, place: str) -> bool:
    """A site's place against a breach's: `*` in the site stands for any index or key."""
    wanted, got = pattern.split("/"), place.split("/")
    return len(wanted) == len(got) and all(w in ("*", g) for w, g in zip(wanted, got))


def _present(payload: Any, place: str) -> Iterator[tuple[str, Any]]:
    """Where a place (`/body/items/*/summary`) holds a value in a body, with the value."""
    tokens = place.split("/")[1:]
    if not tokens or tokens[0] != "body":
        return
    stack: list[tuple[Any, str, list[str]]] = [(payload, "/body", tokens[1:])]
    while stack:
        node, where, rest = stack.pop(0)
        if not rest:
            yield where, node
            continue
        head, tail = rest[0], rest[1:]
        if head == "*":
            children: Iterable[tuple[Any, Any]] = (enumerate(node) if isinstance(node, list)
                                                   else node.items() if isinstance(node, dict) else ())
            stack.extend((child, f"{where}/{key}", tail) for key, child in children)
        elif isinstance(node, dict) and head in node:
            stack.append((node[head], f"{where}/{head}", tail))


def _dotted(pointer: str) -> str:
    """`/body/items/3/kind` as a person reads it: `items[3].kind`."""
    shown = ""
    for token in pointer.split("/")[1:]:
        if token in ("body", ""):
            continue
        shown += f"[{token}]" if token.isdigit() else ("." if shown else "") + token
    return shown or "the body"


def _value(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "…"


def _at(payload: Any, pointer: str) -> tuple[bool, Any]:
    node = payload
    for token in pointer.split("/")[2:]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False, None
    return True, node


def _describe(pointer: str, payload: Any, violation: Violation) -> str:
    enum = violation.rule in ("enum", "const")
    if pointer.startswith("/body/") and violation.rule not in ("required", "additionalProperties"):
        found, value = _at(payload, pointer)
        if found:
            return f"{_dotted(pointer)} = {_value(value)} " + ("is not in NEW's enum" if enum else
                                                                f"breaks NEW: {violation.message}")
    if enum and " is not one of " in violation.message:  # jsonschema lists every value: the one sent says enough
        return f"{pointer} = {violation.message.split(' is not one of ')[0]} is not in NEW's enum"
    return f"{pointer}: {violation.message}"


# -- sources -----------------------------------------------------------------------------------------------
def fixture_exhibits(old: Pipeline, differ: Differ) -> Iterator[Exhibit]:
    """Every answer the fixtures make OLD serve (each item of a listed or fetched collection, fixed answers,
    scenario bodies, the examples it serves), checked against NEW's operation at the same method and path."""
    pairs = {old_op.id: (key, new_op) for key, (old_op, new_op) in differ.matched().items()}
    for op_id, fixture in old.answers.fixtures.items():
        key, new_op = pairs[op_id]
        old_op = old.spec.operations[op_id]
        status = old_op.success_status
        response = old_op.response(status)
        media = pick_media_type(response.content) if response else None
        media_type = media.name if media else "application/json"
        collection = fixture.listing.collection if fixture.listing else fixture.item.collection if fixture.item \
            else None
        if collection is not None:
            for index, item in enumerate(collection.items):
                served, where = collection.public(item), _item_place(collection, index)
                if fixture.listing:
                    items_field = fixture.listing.items_field
                    page = {items_field: [served], fixture.listing.has_more_field: False}
                    yield _answer(key, old_op, new_op, status, media_type, page, where,
                                  (f"/body/{items_field}/0", f"/body/{items_field}/{index}"),
                                  {items_field: [*[None] * index, served]})
                else:
                    yield _answer(key, old_op, new_op, status, media_type, served, where)
        for respond in fixture.respond:
            answer = respond.answer
            yield _answer(key, old_op, new_op, answer.status, answer.media_type or media_type, answer.payload,
                          answer.origin)
    yield from _scenario_exhibits(old.fixtures, old, pairs)
    for op in old.spec.operations.values():
        response = op.response(op.success_status)
        for media in (response.content.values() if response else []):
            for name, value in media.examples.items():
                if media.schema is None or media.schema.validator.is_valid(value):
                    file, line, _ = old.spec.docs.location(media.schema.uri if media.schema else op.uri)
                    key, new_op = pairs[op.id]
                    yield _answer(key, op, new_op, op.success_status, media.name, value,
                                  f"example {name!r} of {op.id} ({file}:{line})")


def _item_place(collection: Any, index: int) -> str:
    problem = collection.item_problem(index, "")
    return f"{collection.name}[{index}] ({problem.file}:{problem.line})"


def _scenario_exhibits(fixtures: FixtureSet, old: Pipeline, pairs: dict[str, tuple[str, Operation | None]]
                       ) -> Iterator[Exhibit]:
    by_route = {(op.method, op.path): op for op in old.spec.operations.values()}
    for located in fixtures.scenarios:
        spec = located.value
        if "body" not in spec or "status" not in spec or spec.get("undeclared"):
            continue
        op = old.spec.operations.get(spec.get("operationId", "")) or by_route.get(
            (str(spec.get("method", "")).upper(), spec.get("path")))
        if op is None:
            continue
        key, new_op = pairs[op.id]
        response = op.response(spec["status"])
        media = pick_media_type(response.content) if response else None
        yield _answer(key, op, new_op, spec["status"], media.name if media else "application/json", spec["body"],
                      f"scenario {spec.get('id') or located.pointer} ({located.doc.path}:"
                      f"{located.doc.line(located.pointer)})")


def _answer(key: str, old_op: Operation, new_op: Operation | None, status: int, media_type: str, payload: Any,
            where: str, prefix: tuple[str, str] = ("", ""), shown: Any = None) -> Exhibit:
    """An answer of OLD checked as NEW would check it: status, media type, body. A listing's item is checked
    inside a one-item page; `prefix` and `shown` put it back at its own index for the report."""
    if new_op is None:
        violations = [Violation(RESPONSE, "/path", "path", f"NEW has no operation {key}")]
    else:
        violations = read_response(new_op, status, media_type, to_json(payload))[2]
    return Exhibit(FIXTURES, where, key, response_key(old_op, status), payload if shown is None else shown,
                   RESPONSE, violations, prefix)


def journal_exhibits(entries: list[dict[str, Any]], old: Pipeline, new: Pipeline, attributor: Attributor
                     ) -> Iterator[Exhibit]:
    """Each journaled exchange replayed through NEW (`drift.check`): its answer, and its request unless OLD
    refused it (an error of the client's own, not of the change). A body the journal cut is not checked."""
    for number, entry in enumerate(entries):
        method, path = str(entry.get("method", "GET")).upper(), str(entry.get("path", "/"))
        query = str(entry.get("query") or "")
        request_body, response_body = entry.get("requestBody") or "", entry.get("responseBody") or ""
        headers = {str(k).lower(): str(v) for k, v in (entry.get("requestHeaders") or {}).items()}
        request = MockRequest(method, path, query, headers, request_body.encode())
        try:
            old_op = old.router.match(method, path, request.query() or {}).operation
        except MockError:  # OLD routes it nowhere either: no change explains it
            attributor.skip(JOURNAL_REQUESTS, "not an operation of OLD")
            continue
        status = int(entry.get("status") or 0)
        response_headers = {str(k): str(v) for k, v in (entry.get("responseHeaders") or {}).items()}
        body = response_body.encode()
        already = {(v.side, v.place, v.rule) for v in check(old, request, status, response_headers, body).violations}
        violations = [v for v in check(new, request, status, response_headers, body).violations
                      if (v.side, v.place, v.rule) not in already]  # what OLD rejected too is no change's doing
        key = operation_name(old_op)
        shown = f"journal #{entry.get('id', number)} {method} {path}{'?' + query if query else ''} → {status}"
        cut = f"bodies over {BODY_LIMIT // 1024} KB are cut in the journal"
        if response_body.endswith(_TRUNCATED):
            attributor.skip(JOURNAL_ANSWERS, cut)
        else:
            yield Exhibit(JOURNAL_ANSWERS, shown, key, response_key(old_op, status), _json(response_body), RESPONSE,
                          violations)
        if request_body.endswith(_TRUNCATED):
            attributor.skip(JOURNAL_REQUESTS, cut)
        elif entry.get("source") != "error":
            sent = {f"/query/{name}": values[0] for name, values in (request.query() or {}).items()}
            sent.update({f"/header/{name}": value for name, value in headers.items()})
            yield Exhibit(JOURNAL_REQUESTS, shown, key, None, _json(request_body), REQUEST, violations, sent=sent)


def _json(text: str) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def gather(changes: list[Change], differ: Differ, old: Pipeline, new: Pipeline | None, *, fixtures: bool,
           entries: list[dict[str, Any]] | None) -> Evidence:
    """The evidence of what `old` serves from its fixtures (when asked) and of journal entries (when given,
    with `new` to replay them through)."""
    attributor = Attributor(changes)
    if fixtures:
        for exhibit in fixture_exhibits(old, differ):
            attributor.add(exhibit)
    if entries is not None and new is not None:
        for exhibit in journal_exhibits(entries, old, new, attributor):
            attributor.add(exhibit)
    return attributor.evidence
