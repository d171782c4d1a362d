"""Picking the answer of an operation: its fixture (a list, an item, or a fixed answer, after the fixture's
`require` and `reject` rules), else an example from the description, else data generated from the schema. Picking
(`decide`: a `negotiation.Decision`) comes before building the body (`build`).

Everything a fixture can serve is checked against the description here, at start-up; a problem names the fixture
file, line and pointer, and the schema rule."""
from __future__ import annotations

import copy
import random
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..base.bounded import BoundedCache
from ..base.errors import MockError, Problem
from ..base.http import is_json
from ..base.pointers import pointer_join, pointer_tokens
from ..fixtures.format import PAGE_DEFAULTS
from ..fixtures.loading import Collection, FixtureSet, Located
from ..spec.index import MediaType, Operation, SpecIndex, range_status
from ..spec.schema_walk import Parts, SchemaWalk, below
from ..spec.schemas import instance_pointer, iter_errors, schema_types
from ..spec.write_only import WriteOnly
from ..state import Store
from ..state.memory import MemoryStore
from .echo import Echo
from .envelope import fill
from .generation import GenerationError, SchemaGenerator
from .negotiation import Decision, Prefer, negotiate
from .pagination import CursorSealer
from .query import ItemQuery, ListQuery, page_names, singular, to_json
from .request_validation import ValidRequest, invalid_request_status
from .rules import Condition, Context, Filter, compile_condition
from .search import Search
from .stateful import ITEMS_LIMIT, LiveCollection, Write
from .templates import AnswerTemplate

GENERATED_CACHE_SIZE = 2048
GENERATION_ATTEMPTS = 8
# an action's outcome, as an enum of its answer says it (Prefect's `SetStateStatus`): the mock did the action
_DONE = frozenset({"accept", "accepted", "ok", "success", "succeeded", "successful", "done", "applied", "complete",
                   "completed"})
WRITES = {"create": "into", "update": "in", "replace": "in", "delete": "from"}  # a write and its collection key


@dataclass
class Answer:
    status: int
    payload: Any
    media_type: str | None
    source: str  # fixture, example, generated
    headers: dict[str, str] = field(default_factory=dict)
    origin: str = ""  # where a fixture answer came from (file:line), for contract-violation messages
    body: bytes | None = None  # already serialised (a page joined from JSON made at start-up)
    prechecked: bool = False  # its body was checked against the description already
    key: tuple[str, str, str] | None = None  # a generated answer's identity: operation, media type, request
    fresh: bool = False  # made for this request alone (a template read it): never served again from a cache


@dataclass
class _ErrorRule:
    status: int
    code: str | None
    message: str | None
    details: dict[str, Any] | None

    def raise_for(self, ctx: Context, default_message: str) -> None:
        values = {f"{loc}.{k}": v for loc in ("path", "query") for k, v in getattr(ctx.request, loc).items()}
        message = fill(self.message, values) if self.message else default_message
        raise MockError(self.status, message, code=self.code,
                        details=fill(self.details, values) if self.details else None)


@dataclass
class _Respond:
    when: Condition | None
    answer: Answer
    template: AnswerTemplate | None = None  # None: the answer is served as written


@dataclass
class OperationFixture:
    requires: list[tuple[Collection, list[Filter], _ErrorRule]] = field(default_factory=list)
    rejects: list[tuple[Condition, _ErrorRule]] = field(default_factory=list)
    listing: ListQuery | None = None
    item: ItemQuery | None = None
    search: Search | None = None
    respond: list[_Respond] = field(default_factory=list)
    write: Write | None = None
    origin: str = ""


def pick_media_type(content: dict[str, MediaType]) -> MediaType | None:
    """JSON first, as most clients expect it; otherwise the first declared."""
    return negotiate(content, None)


def preferred_status(op: Operation, code: str) -> int:
    """The status `Prefer: code=` asks for: any the operation declares, itself or through a range (`4XX`) or
    `default`; a range asked for (`code=4XX`) is its first code. Anything else is a 400 listing what there is."""
    upper = code.upper()
    if re.fullmatch(r"[1-5]XX", upper) and upper in op.responses:
        return range_status(upper)
    if code.isdigit() and op.declares(int(code)):
        return int(code)
    declared = ", ".join(op.declared_statuses)
    raise MockError(400, f"Prefer: code={code} is not a status {op.id} declares; it declares {declared}",
                    details={"preferred": code, "declared": op.declared_statuses})


class Answers:
    def __init__(self, spec: SpecIndex, fixtures: FixtureSet, sealer: CursorSealer, *, seed: int = 0,
                 store: Store | None = None, max_items: int = ITEMS_LIMIT) -> None:
        """`store` keeps what operations declared as writes change (per session); `max_items` bounds each
        written collection per session."""
        self.spec = spec
        self.store = store or MemoryStore()
        self.seed = seed
        self.generator = SchemaGenerator(spec.docs.resolve)
        self.write_only = WriteOnly(spec.docs.resolve)
        # the API's own version (`info.version`) where it is one a client parses: `GET /version` answers it, as
        # Prefect's client checks its major version against the server's
        self.own_version = spec.api_version if _SEMVER.fullmatch(spec.api_version) else None
        self._names = {op.id: _named(op.path) for op in spec.operations.values()}  # what each answer is called
        # (operation, response schema) whose generated answer is that version: a `…/version` operation's, where
        # it fits (a schema is named by its place, which a `$ref`'d response shares with other operations)
        self._version_schemas = frozenset(
            (op.id, media.schema.uri) for op in spec.operations.values() if self._names[op.id] == "version"
            for response in op.responses.values() for media in response.content.values()
            if self.own_version and media.schema is not None and media.schema.validator.is_valid(self.own_version))
        self.walk = SchemaWalk(spec.docs.resolve)
        self.echo = Echo(self.walk)
        self.problems: list[Problem] = []
        self.fixtures: dict[str, OperationFixture] = {}
        self._generated: BoundedCache[tuple[str, str, str], Answer] = BoundedCache(GENERATED_CACHE_SIZE)
        self.warnings: list[Problem] = []
        # operation -> status -> why it may answer that status undeclared: the description's gap, said once
        self.gaps: dict[str, dict[int, str]] = {}
        # (operation, response key, media type) -> name -> example, as served: without `writeOnly` properties
        self._examples: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._fitting: set[tuple[str, str, str, str]] = set()  # (operation, response, media type, example name)
        self._usable = self._check_examples()
        # operation -> (request example, its name), for the request examples a response has one of the same name
        self._paired = {op.id: pairs for op in spec.operations.values() if (pairs := _paired_examples(op))}
        # the collections some operation writes to: their reads go through the store (the others' never do)
        self.live = {located.value[kind][into]: LiveCollection(fixtures.collections[located.value[kind][into]],
                                                                max_items)
                     for located in fixtures.operations.values() for kind, into in WRITES.items()
                     if kind in located.value and located.value[kind][into] in fixtures.collections}
        for op_id, located in fixtures.operations.items():
            op = spec.operations.get(op_id)
            if op is None:
                self.problems.append(located.problem(f"no operation {op_id!r} in the description; it has: "
                                                     + ", ".join(sorted(spec.operations)), "operationId"))
                continue
            self.fixtures[op_id] = self._compile(op, located, fixtures, sealer)
        self._prepare_live()
        for op in spec.operations.values():
            self._check_bad_request(op, fixtures)
        # the operations whose answer reads or writes a written collection: each of their calls asks the store
        self.stored = frozenset(op_id for op_id, fixture in self.fixtures.items() if self._asks_store(fixture))

    # -- start-up ------------------------------------------------------------------------------------------
    def _collection(self, name: str, fixtures: FixtureSet, located: Located, *where: Any) -> Collection | None:
        collection = fixtures.collections.get(name)
        if collection is None:
            known = ", ".join(sorted(fixtures.collections)) or "none"
            self.problems.append(located.problem(f"no collection {name!r} (collections: {known})", "from", *where))
        return collection

    def _error_rule(self, op: Operation, raw: dict[str, Any], located: Located, *where: Any) -> _ErrorRule:
        status = raw["status"]
        if not op.declares(status):
            self.problems.append(located.problem(f"{op.id} does not declare status {status}; it declares "
                                                 + ", ".join(op.declared_statuses), "status", *where, "status"))
        return _ErrorRule(status, raw.get("code"), raw.get("message"), raw.get("details"))

    def _compile(self, op: Operation, located: Located, fixtures: FixtureSet, sealer: CursorSealer) -> OperationFixture:
        config = located.value
        result = OperationFixture(origin=f"{located.doc.path}:{located.doc.line(located.pointer)}")
        for i, raw in enumerate(config.get("require", [])):
            collection = self._collection(raw["from"], fixtures, located, "require", i)
            if collection:
                result.requires.append((collection, [Filter(f) for f in raw["where"]],
                                        self._error_rule(op, raw, located, "require", i)))
        for i, raw in enumerate(config.get("reject", [])):
            result.rejects.append((self._condition(raw["when"], located, "reject", i, "when"),
                                   self._error_rule(op, raw, located, "reject", i)))
        if "list" in config:
            collection = self._collection(config["list"]["from"], fixtures, located, "list", "from")
            if collection:
                limit = next((p for p in op.parameters if p.location == "query"
                              and p.name == page_names(config["list"])["limit"]), None)
                result.listing = ListQuery(op.id, config["list"], collection, sealer, limit.default if limit else None)
                self._check_items(op, result.listing, located)
                if collection.name in self.live:
                    self.live[collection.name].lists[op.id] = result.listing
        if "item" in config:
            collection = self._collection(config["item"]["from"], fixtures, located, "item", "from")
            if collection:
                result.item = ItemQuery(config["item"], collection)
                self._check_collection(op, collection, wrap=None)
        if "search" in config:
            collection = self._collection(config["search"]["from"], fixtures, located, "search", "from")
            if collection:
                result.search = self._search(op, config["search"], collection, located)
        kind = next((k for k in WRITES if k in config), None)
        if kind is not None:
            result.write = self._write(op, kind, located, fixtures)
        self._check_undeclared(op, result, located)
        for i, raw in enumerate(config.get("respond", [])):
            origin = f"{located.doc.path}:{located.doc.line(pointer_join(located.pointer, 'respond', i))}"
            template = AnswerTemplate.of(raw, origin)
            for problem in template.problems if template else ():
                self.problems.append(located.problem(problem.message, "template", "respond", i, *problem.tokens))
            # a templated status is known once rendered: its body is checked in each answer, not here
            answer = Answer(op.success_status if template and template.status else raw["status"], raw.get("body"),
                            raw.get("mediaType"), "fixture", dict(raw.get("headers", {})), origin)
            if not (template and template.status):
                self._check_body(op, answer, located, "respond", i, "body",
                                 templated=template.pointers if template else ())
            when = self._condition(raw["when"], located, "respond", i, "when") if "when" in raw else None
            result.respond.append(_Respond(when, answer, template))
        return result

    def _condition(self, spec: dict[str, Any], located: Located, *where: Any) -> Condition:
        """A `when`, compiled; a `matches` that is not a regular expression is a problem at its place."""
        for tokens, pattern in _patterns(spec):
            try:
                re.compile(pattern)
            except re.error as exc:
                self.problems.append(located.problem(f"matches {pattern!r} is not a regular expression: {exc}",
                                                     "matches", *where, *tokens))
                return lambda ctx: False
        return compile_condition(spec)

    def _write(self, op: Operation, kind: str, located: Located, fixtures: FixtureSet) -> Write | None:
        """A declared write: its collection must have a key (the create's own `key` can give it one) and an
        operation that creates, updates or replaces must take a request body."""
        raw = located.value[kind]
        collection = self._collection(raw[WRITES[kind]], fixtures, located, kind, WRITES[kind])
        if collection is None:
            return None
        if kind == "create" and "key" in raw:
            if collection.key and collection.key != [raw["key"]]:
                self.problems.append(located.problem(f"the collection {collection.name!r} has the key "
                                                     f"{collection.key}, not {raw['key']!r}", "key", kind, "key"))
            collection.key = collection.key or [raw["key"]]
        if not collection.key:
            self.problems.append(located.problem(f"{kind} needs items with a key: give the collection "
                                                 f"{collection.name!r} a `key` (or the create a `key`)", "key", kind))
        if kind != "delete" and op.request_body is None and not raw.get("set"):
            self.problems.append(located.problem(f"{op.id} takes no request body to {kind} an item with", "body",
                                                 kind))
        media, _ = self._success_schema(op)
        many = media is not None and media.schema is not None and kind == "create" and schema_types(
            media.schema.node, media.schema.uri, self.spec.docs.resolve) == {"array"}  # a create of many answers them
        action: bool | str = raw.get("action") or False
        sent = pick_media_type(op.request_body.content) if op.request_body else None
        write = Write(kind, self.live[collection.name], [Filter(f) for f in raw.get("where", [])], op,
                      self.generator, [], (sent.schema.node, sent.schema.uri) if sent and sent.schema else None,
                      action, raw.get("set") or {},
                      conflict=400 if not op.declares(409) and op.declares(400) else 409)
        if media and media.schema and not action:
            write.answer = None if many else (media.schema.node, media.schema.uri)
            write.checks.append((op.id, media.schema.validator, (lambda item: [item]) if many else write.shown))
        return write

    def _search(self, op: Operation, raw: dict[str, Any], collection: Collection, located: Located) -> Search:
        """A search: the fields its filters and sort may name are those of the items its answer holds (by its
        schema) and of the collection's items. Its answer without items (an empty page, or a count of 0) must
        fit the operation's schema: a page of another shape is a start-up problem, not a 500 per request."""
        page = raw.get("page") or {}
        items_field = page.get("items", PAGE_DEFAULTS["items"])
        fields = {name for item in collection.items for name in item}
        media, _ = self._success_schema(op)
        if media is not None and media.schema is not None and not raw.get("count"):
            items = self.walk.page_items(media.schema.node, media.schema.uri, items_field)
            if items[0] is not None:
                fields |= {name for part, _ in self.walk.parts(*items) for name in part.get("properties") or {}}
        search = Search(op.id, collection, frozenset(fields), items_field,
                        page.get("hasMore", PAGE_DEFAULTS["hasMore"]), bool(raw.get("count")))
        for error in iter_errors(media.schema.validator, search.answer({}, [])) if media and media.schema else ():
            self.problems.append(located.problem(f"an empty answer of {op.id}'s search breaks its schema: "
                                                 f"{error.message}", str(error.validator), "search"))
        return search

    def _check_undeclared(self, op: Operation, fixture: OperationFixture, located: Located) -> None:
        """An item the request names may be missing (an unknown id): its status, 404, is answered within the
        operation's `4XX` or `default` response where it declares no 404. A create whose body may carry the key
        may name an item that exists already: 409, as a real server answers a conflict (its declared 400 where
        it declares that alone). Where it declares none of them, the status is answered all the same and said
        once, at start-up, as the description's gap."""
        write = fixture.write
        if fixture.item is not None:
            collection, status = fixture.item.collection, fixture.item.status or 404
        elif write is not None and write.kind != "create":
            collection, status = write.live.collection, 404
        elif write is not None and self._sends_key(write):
            collection, status = write.live.collection, write.conflict
        else:
            return
        if not op.declares(status):
            why = "it names may not exist" if status == 404 else \
                f"it creates may be sent with a {', '.join(collection.key)} another has already"
            self.gaps.setdefault(op.id, {})[status] = _undeclared(op, status, f"a {singular(collection.name)} {why}")
            self.warnings.append(located.problem(self.gaps[op.id][status], "responses"))

    def _check_bad_request(self, op: Operation, fixtures: FixtureSet) -> None:
        """A 400 the operation declares not (nor `4XX`, nor `default`) is answered all the same, as the
        description's gap: to a request that breaks the description where it declares no 422 either (not said
        at start-up: many descriptions declare no error at all), and to a list's cursor the mock did not issue
        (said at start-up)."""
        if op.declares(400):
            return
        reasons = ["a request may break its parameters or body"] if (
            op.parameters or op.request_body) and invalid_request_status(op) == 400 else []
        fixture = self.fixtures.get(op.id)
        if fixture is not None and fixture.listing is not None and not fixture.listing.bare:
            reasons.append(f"a {fixture.listing.cursor_param} it is sent may not be one the mock issued")
            self.warnings.append(fixtures.operations[op.id].problem(_undeclared(op, 400, reasons[-1]), "responses"))
        if reasons:
            self.gaps.setdefault(op.id, {})[400] = _undeclared(op, 400, ", or ".join(reasons))

    def _sends_key(self, write: Write) -> bool:
        """Whether a create's body may carry the key of the item (a name the client chooses), or of each item of
        an array."""
        if write.body is None:
            return False
        return any(key in (part.get("properties") or {}) for part, _ in self.walk.parts(*self.walk.one_item(
            *write.body)) for key in write.live.collection.key)

    def _asks_store(self, fixture: OperationFixture) -> bool:
        read = [collection.name for collection, _, _ in fixture.requires]
        read += [query.collection.name for query in (fixture.listing, fixture.item, fixture.search)
                 if query is not None]
        counts = any(entry.template is not None and entry.template.uses_sequence for entry in fixture.respond)
        return fixture.write is not None or counts or any(name in self.live for name in read)

    def _next_in_sequence(self, op_id: str) -> int:
        """A template's `sequence`: 1, 2, 3 … per operation, counted in the store (shared by every worker on
        Redis); a reset starts it again."""
        return self.store.draw(f"sequence|{op_id}") + 1

    def versions(self, session: str | None) -> tuple[str | None, ...]:
        """The version of each written collection as the session sees it: what a kept answer was made from."""
        return tuple(live.view(self.store, session).version for live in self.live.values())

    def _prepare_live(self) -> None:
        """What the reads of each written collection answer with: every item written must fit them, so every
        schema that serves its items (each item read's and each list's items', else the create's answer) says
        which properties the mock fills (`readOnly` ones, the key, what any of them requires); the first of them
        says which it never serves (`writeOnly`)."""
        walk = self.walk
        formats = self._id_formats()
        schemas: dict[str, dict[str, list[tuple[Any, str]]]] = {}  # collection -> kind of read -> its schemas
        bodies: dict[str, list[tuple[Any, str]] | None] = {}  # its writes' bodies (None: one has none)
        for op_id, fixture in self.fixtures.items():
            if fixture.write is not None and fixture.write.kind != "delete":
                body = self.spec.operations[op_id].request_body
                media = pick_media_type(body.content) if body else None
                known = bodies.get(fixture.write.live.name, [])
                bodies[fixture.write.live.name] = (None if known is None or media is None or media.schema is None
                                                   else [*known, (media.schema.node, media.schema.uri)])
            media, _ = self._success_schema(self.spec.operations[op_id])
            if media is None or media.schema is None:
                continue
            node, uri, validator = media.schema.node, media.schema.uri, media.schema.validator
            if fixture.listing is not None and fixture.listing.collection.name in self.live:
                query, live = fixture.listing, self.live[fixture.listing.collection.name]
                items = walk.page_items(node, uri, query.items_field)
                if items[0] is not None:
                    schemas.setdefault(query.collection.name, {}).setdefault("list", []).append(items)
                    if (cut := _closed_properties(walk.parts(*items))) is not None:
                        live.cuts[op_id] = cut
                live.checks.append((op_id, validator, partial(_wrapped, query, live, op_id)))
            if fixture.item is not None and fixture.item.collection.name in self.live:
                self.live[fixture.item.collection.name].checks.append((op_id, validator, lambda item: item))
                schemas.setdefault(fixture.item.collection.name, {}).setdefault("item", []).append((node, uri))
            if fixture.write is not None and fixture.write.kind == "create":
                schemas.setdefault(fixture.write.live.name, {}).setdefault("create", []).append((node, uri))
            if fixture.search is not None and not fixture.search.count and fixture.search.collection.name in self.live:
                items = walk.page_items(node, uri, fixture.search.items_field)
                if items[0] is not None:
                    schemas.setdefault(fixture.search.collection.name, {}).setdefault("search", []).append(items)
        for name, live in self.live.items():  # what the items read as: their reads, else searches, else a create's
            found = schemas.get(name, {})
            reads = list({uri: (node, uri) for node, uri in [*found.get("item", []), *found.get("list", [])]}
                         .values()) or found.get("search", [])[:1] or found.get("create", [])[:1]
            live.schema = reads[0] if reads else None
            live.prepare(walk, self.write_only, self.generator, bodies.get(name), reads, formats)
        for fixture in self.fixtures.values():
            if fixture.write is not None:
                fixture.write.prepare()
        for fixture in self.fixtures.values():  # a count's answer names no field: the reads' items do
            if fixture.search is not None and fixture.search.collection.name in self.live:
                fixture.search.fields |= self.live[fixture.search.collection.name].fields
            write = fixture.write  # an action whose answer is the items' schema answers the item
            if write is not None and write.action and (media := self._success_schema(write.op)[0]) is not None \
                    and media.schema is not None:
                write.answers_item = walk.deref(media.schema.node, media.schema.uri)[1] in {
                    walk.deref(*read)[1] for read in write.live.reads}
                enums = walk.string_enums(media.schema.node, media.schema.uri)
                write.done = {name: done for name, values in enums.items()
                              if (done := next((v for v in values if v.lower() in _DONE), None)) is not None}

    def _id_formats(self) -> dict[str, str]:
        """The format of a string the mock can make (`uuid`, `date-time`, `date`) that the description gives a
        name, as a parameter or a property of a JSON body, and never another one: a key the mock generates by
        that name takes it."""
        found: dict[str, set[str | None]] = {}
        for op in self.spec.operations.values():
            named = [(p.name, *self.walk.deref(p.schema.node, p.schema.uri)) for p in op.parameters
                     if p.schema is not None]
            media = pick_media_type(op.request_body.content) if op.request_body else None
            if media is not None and media.schema is not None:
                named += [(name, *self.walk.deref(node, below(uri, "properties", name)))
                          for part, uri in self.walk.parts(media.schema.node, media.schema.uri)
                          for name, node in (part.get("properties") or {}).items()]
            for name, node, _ in named:
                if isinstance(node, dict) and node.get("type") in ("string", None):
                    found.setdefault(name, set()).add(node.get("format"))
        return {name: fmt for name, fmts in found.items() if len(fmts - {None}) == 1
                and (fmt := next(iter(fmts - {None}))) in ("uuid", "date-time", "date")}

    def _success_schema(self, op: Operation) -> tuple[MediaType | None, int]:
        status = op.success_status
        response = op.response(status)
        media = pick_media_type(response.content) if response else None
        return media, status

    def _check_items(self, op: Operation, query: ListQuery, located: Located) -> None:
        """Each item as it would be served, inside a one-item page, and the page's own fields, against the
        success response's schema: pages built from them need no check per request."""
        self._check_collection(op, query.collection, lambda item: query.wrap([item]),
                               pointer_join("", query.items_field, 0) if not query.bare else "/0")
        media, _ = self._success_schema(op)
        if media is None or media.schema is None:
            return
        for skeleton in query.skeletons():
            for error in iter_errors(media.schema.validator, skeleton):
                self.problems.append(located.problem(f"a page of {op.id} breaks its schema: {error.message}",
                                                     str(error.validator), "list", "page"))
    def _check_collection(self, op: Operation, collection: Collection, wrap: Any, prefix: str = "") -> None:
        media, _ = self._success_schema(op)
        if media is None or media.schema is None:
            return
        for index, item in enumerate(collection.items):
            served = collection.public(item)
            for error in iter_errors(media.schema.validator, wrap(served) if wrap else served):
                pointer = instance_pointer(error)
                inner = pointer[len(prefix):] if pointer.startswith(prefix) else pointer
                self.problems.append(collection.item_problem(
                    index, f"breaks the {op.id} response schema: {error.message}", str(error.validator), inner))
                break  # one problem per item is enough to find it

    def _check_body(self, op: Operation, answer: Answer, located: Located, *where: Any,
                    templated: Sequence[str] = ()) -> None:
        """A fixed answer's body against its status's schema; where it has templates (`templated`: pointers
        into the body), each rendered answer is checked instead."""
        response = op.response(answer.status)
        if response is None:
            self.problems.append(located.problem(f"{op.id} declares no status {answer.status}", "status", *where[:-1]))
            return
        media = response.content.get(answer.media_type) if answer.media_type else pick_media_type(response.content)
        if media is None or media.schema is None:
            return
        for error in iter_errors(media.schema.validator, answer.payload):
            pointer = instance_pointer(error)
            if any(_related(pointer, str(error.validator), place) for place in templated):
                continue
            self.problems.append(located.problem(f"breaks the {op.id} {answer.status} schema: {error.message}",
                                                 str(error.validator), *where, *pointer_tokens(pointer)))

    # -- request path --------------------------------------------------------------------------------------
    def check_rules(self, op: Operation, ctx: Context) -> None:
        """The fixture's `reject` and `require` rules: errors the API gives for this request, whatever answers."""
        fixture = self.fixtures.get(op.id)
        if fixture is None:
            return
        for condition, rule in fixture.rejects:
            if condition(ctx):
                rule.raise_for(ctx, "the request breaks a rule of this operation")
        for collection, filters, rule in fixture.requires:
            tests = [t for t in (f.bind(ctx) for f in filters) if t is not None]
            live = self.live.get(collection.name)
            items = (item for item, _ in live.pairs(live.view(self.store, ctx.session), ctx, filters)) if live \
                else collection.items
            if not any(all(t(item) for t in tests) for item in items):
                shown = ", ".join(f"{k}={v!r}" for k, v in ctx.request.path.items())
                rule.raise_for(ctx, f"not found: {shown}" if shown else "not found")

    def decide(self, op: Operation, ctx: Context, prefer: Prefer, accept: str | None) -> Decision:
        """What answers, before any body is built: the status (`Prefer: code=`, else the success), the media type
        `Accept` picks, and the source: the example `Prefer: example=` names (a 400 when there is none of that
        name), else the fixture (JSON only, for the success; not for a request's own `Prefer: dynamic=true`), else
        the response example named as the request example the body agrees with (Prism's pairing), else the first
        usable example (neither for varied data), else data generated from the schema. A templated fixture
        answer's status is known once it is rendered (`build`)."""
        status = preferred_status(op, prefer.code) if prefer.code is not None else op.success_status
        response = op.response(status)
        media = negotiate(response.content, accept) if response else None
        if prefer.example is not None and self._example(op, media, prefer.example, status) is not None:
            return Decision(status, media, "example", example=prefer.example)
        # a request's own `Prefer: dynamic=true` skips fixtures and examples; `--dynamic` (no preference sent)
        # skips the examples only: a fixture is what the user wrote for that operation (and where writes happen)
        if not prefer.asked_dynamic and status == op.success_status:
            fixture = self.fixtures.get(op.id)
            if fixture is not None and (media is None or is_json(media.name)):
                if (fixture.write is not None or fixture.listing is not None or fixture.item is not None
                        or fixture.search is not None):
                    return Decision(status, media, "fixture")
                for index, entry in enumerate(fixture.respond):
                    if entry.when is None or entry.when(ctx):
                        return Decision(entry.answer.status, media, "fixture", respond=index)
        if not prefer.dynamic:
            name = self._paired_example(op, ctx, media, status) or self._example(op, media, None, status)
            if name is not None:
                return Decision(status, media, "example", example=name)
        return Decision(status, media, "generated", static=not prefer.dynamic)

    def build(self, op: Operation, ctx: Context, decision: Decision, key: str) -> Answer:
        """The answer `decision` names, its body built; `key` names the request (generated data is the same for
        the same seed and key)."""
        status, media = decision.status, decision.media
        if decision.source == "example":
            assert media is not None and decision.example is not None
            response = op.response(status)
            assert response is not None  # media comes from it
            return Answer(status, self._examples[(op.id, response.status, media.name)][decision.example],
                          media.name, "example")
        if decision.source == "fixture":
            return self._from_fixture(op, ctx, decision, key)
        return self.generated(op, media, key, status=status, static=decision.static, request=ctx.request)

    def _from_fixture(self, op: Operation, ctx: Context, decision: Decision, key: str) -> Answer:
        """Fixtures hold JSON: they answer when the client accepts it (`decision.media` is the negotiated type)."""
        fixture = self.fixtures[op.id]
        status = decision.status
        media_type = decision.media_type or "application/json"
        if decision.respond is not None:
            entry = fixture.respond[decision.respond]
            answer = entry.answer
            if entry.template is None:
                return Answer(answer.status, answer.payload, answer.media_type or media_type, "fixture",
                              dict(answer.headers), answer.origin)
            names = entry.template.names(ctx, partial(self._next_in_sequence, op.id))
            status, headers, payload = entry.template.render(names, answer.status, answer.headers, answer.payload)
            return Answer(status, payload, answer.media_type or media_type, "fixture", headers, answer.origin,
                          fresh=True)
        if fixture.write is not None:
            payload, headers = fixture.write.apply(ctx, self.store)
            if fixture.write.action:
                return self._acted(op, ctx, decision, key, fixture.write, payload)
            return Answer(status, payload, media_type if payload is not None else None, "fixture", headers,
                          fixture.origin, prechecked=True)  # checked against this answer's schema as written
        if fixture.listing is not None:
            live = self.live.get(fixture.listing.collection.name)
            page = fixture.listing.page(ctx, live.source(self.store, ctx.session, op.id) if live else None)
            return Answer(status, page.payload, media_type, "fixture", origin=fixture.origin, body=page.body,
                          prechecked=True)
        if fixture.search is not None:
            collection = fixture.search.collection
            live = self.live.get(collection.name)
            found = live.view(self.store, ctx.session).pairs() if live else (
                (item, collection.public(item)) for item in collection.items)
            return Answer(status, fixture.search.answer(ctx.request.body, found), media_type, "fixture",
                          origin=fixture.origin)
        assert fixture.item is not None  # `decide` names a fixture with a list, an item, a write or an answer
        live = self.live.get(fixture.item.collection.name)
        pairs = live.pairs(live.view(self.store, ctx.session), ctx, fixture.item.where) if live else None
        # every item it may serve was checked against this answer's schema: at start-up (the fixtures' items) or as
        # written (`LiveCollection.check`)
        return Answer(status, fixture.item.find(ctx, pairs), media_type, "fixture", origin=fixture.origin,
                      prechecked=True)

    def _acted(self, op: Operation, ctx: Context, decision: Decision, key: str, write: Write, served: Any) -> Answer:
        """An action's answer agrees with the item it changed: the item itself where the operation answers the
        items' schema (`POST /schedules/{id}/pause` answering the schedule), else the operation's own answer, made
        up, holding each field the action changed as the item now has it (Prefect's `set_state` answers the
        `state` stored, with the `id` and `timestamp` the mock gave it, where the client reads them), and saying
        it was done where an enum of it can (`status: ACCEPT`, not `ABORT`: the mock did it)."""
        media = decision.media
        if write.answers_item and isinstance(served, dict):
            return Answer(decision.status, served, decision.media_type or "application/json", "fixture", fresh=True)
        answer = self.generated(op, media, key, status=decision.status, static=decision.static, request=ctx.request)
        if media is None or media.schema is None or not isinstance(served, dict):
            return answer
        changed = {**write.done, **{name: served[name] for name in write.changed(ctx.request.body) if name in served}}
        payload = self.echo.agreeing(answer.payload, changed, media.schema.validator.is_valid)
        if payload is answer.payload:
            return answer
        return Answer(answer.status, payload, answer.media_type, "generated", prechecked=True, fresh=True)

    def collections(self, session: str | None, shown: int = 100) -> list[dict[str, Any]]:
        """The collections operations write to, as a session (None: the whole mock) sees them now: for the
        control API, the first `shown` items as served."""
        found = []
        for name, live in sorted(self.live.items()):
            view = live.view(self.store, session)
            found.append({"name": name, "count": len(view.items), "written": view.version is not None,
                          "items": list(view.served.values())[:shown]})
        return found

    def _check_examples(self) -> dict[tuple[str, str, str], str]:
        """The first example of each answer (any declared response: `Prefer: code=` may ask for one) that fits its
        own schema; one that does not is left out of the answers (said once, as a warning naming its place) and
        the answer is generated instead. Asked for by name (`Prefer: example=`), it is still served, and the
        response check says what it breaks. Examples lose their `writeOnly` properties, with a warning, as
        answers must not carry them."""
        usable: dict[tuple[str, str, str], str] = {}
        for op in self.spec.operations.values():
            for key, response in op.responses.items():
                for media in response.content.values():
                    where = (op.id, key, media.name)
                    served = self._examples.setdefault(where, {})
                    for name, value in media.examples.items():
                        served[name], fits = self._served_example(op, media, name, value)
                        if fits:
                            usable.setdefault(where, name)
                            self._fitting.add((*where, name))
        return usable

    def _served_example(self, op: Operation, media: MediaType, name: str, value: Any) -> tuple[Any, bool]:
        """The example as served (without `writeOnly` properties, with the required ones it lacks filled in), and
        whether it fits its schema."""
        if media.schema is None:
            return value, True
        value, cut = self.write_only.cut(value, media.schema.node, media.schema.uri)
        file, line, pointer = self.spec.docs.location(media.schema.uri)
        if cut:
            self.warnings.append(Problem(file, pointer, f"the example {name!r} of {op.id} has writeOnly "
                                         f"properties ({', '.join(cut)}); they are not served", "writeOnly", line))
        value, added = self._completed(op, media, name, value)
        if added:
            self.warnings.append(Problem(file, pointer, f"the example {name!r} of {op.id} lacks required "
                                         f"properties ({', '.join(added)}); they are served with values made from "
                                         "its schema", "required", line))
        error = next(iter_errors(media.schema.validator, value), None)
        if error is not None:
            self.warnings.append(Problem(file, pointer, f"the example {name!r} of {op.id} breaks its schema "
                                         f"at {instance_pointer(error) or '/'}: {error.message}; it is not "
                                         "served unless asked for", str(error.validator), line))
        return value, error is None

    def _completed(self, op: Operation, media: MediaType, name: str, value: Any) -> tuple[Any, list[str]]:
        """The example with each required property it lacks taken from a value made from its schema (the
        example's own values kept: a client asking for it by name gets what it wrote, and what the schema
        promises), and the pointers of those added. Only a missing property is filled; a wrong value stays."""
        assert media.schema is not None
        made: Any = _NOTHING
        added: list[str] = []
        for _ in range(_COMPLETION_PASSES):  # a property filled in may be an object whose own are checked next
            missing = [e for e in iter_errors(media.schema.validator, value)
                       if e.validator == "required" and isinstance(e.instance, dict)]
            if not missing:
                break
            if made is _NOTHING:
                value = copy.deepcopy(value)  # the description's own value stays as written
                try:
                    made = self._made(media.schema.node, media.schema.uri, f"{op.id}|{name}|example", True)
                except GenerationError:
                    break  # nothing to fill from: served as written, and the response check says what it lacks
                continue  # the errors name the copy's objects
            filled = False
            for error in missing:
                source = _along(made, list(error.absolute_path))
                for prop in error.validator_value:
                    if prop not in error.instance and isinstance(source, dict) and prop in source:
                        error.instance[prop] = copy.deepcopy(source[prop])
                        added.append(pointer_join(instance_pointer(error), prop))
                        filled = True
            if not filled:
                break
        return value, added

    def _paired_example(self, op: Operation, ctx: Context, media: MediaType | None, status: int) -> str | None:
        """The name of the first request example the request's body agrees with (`_agrees`) when the answer's
        media type has an example of that name that fits its schema (one that does not is served only when asked
        for by name, as ever)."""
        pairs = self._paired.get(op.id)
        response = op.response(status)
        if not pairs or media is None or response is None:
            return None
        body = ctx.request.body
        return next((name for example, name in pairs if (op.id, response.status, media.name, name) in self._fitting
                     and _agrees(example, body)), None)

    def _example(self, op: Operation, media: MediaType | None, name: str | None, status: int) -> str | None:
        """The name of the example that answers `status`: `name` (`Prefer: example=`; one the answer lacks is a 400
        listing those it has, none included), else the first usable one; None when there is none."""
        examples = media.examples if media else {}
        if name is not None and name not in examples:
            has = ", ".join(examples) or "none"
            raise MockError(400, f"no example {name!r} for {op.id} {status}; it has: {has}",
                            details={"examples": list(examples)})
        if media is None or not examples:
            return None
        response = op.response(status)
        assert response is not None  # media comes from it
        return name if name is not None else self._usable.get((op.id, response.status, media.name))

    def generated(self, op: Operation, media: MediaType | None, key: str, *, status: int | None = None,
                  static: bool = True, request: ValidRequest | None = None) -> Answer:
        """Data made up from the schema (static: its examples first, every optional property; else varied), made
        to agree with the `request` (`echo.py`), the same for the same seed and request: so once it has been
        made and checked (`remember`), it is served again as it was."""
        status = op.success_status if status is None else status
        if media is None or media.schema is None:
            return Answer(status, None, media.name if media else None, "generated")
        key = f"{key}|{status}|{'static' if static else 'dynamic'}"
        identity = (op.id, media.name, key)
        known = self._generated.get(identity)
        if known is not None:
            return known
        valid: list[Any] = []  # the last value found to fit: the response check need not read it again

        def fits(value: Any) -> bool:
            if media.schema is None or not media.schema.validator.is_valid(value):
                return False
            valid[:] = [value]
            return True

        try:
            # the generator's `oneOf` exclusivity is best effort: a value that fits two branches is made again
            # with the next draw, a few times, before the response check has the last word
            if (op.id, media.schema.uri) in self._version_schemas:
                payload: Any = self.own_version  # what the server would say: a client compares it with its own
                valid[:] = [payload]  # it fits: checked at start-up
            else:
                for attempt in range(GENERATION_ATTEMPTS):
                    payload = self._made(media.schema.node, media.schema.uri, f"{key}|{attempt}", static,
                                         self._names[op.id])
                    if fits(payload):
                        break
            if request is not None:
                def make_item(node: Any, uri: str, index: int) -> Any:
                    return self._made(node, uri, f"{key}|item|{index}", static)
                def make_value(node: Any, uri: str, salt: str) -> Any:
                    return self._made(node, uri, salt, static)
                payload = self.echo.apply(op, payload, media.schema.node, media.schema.uri, fits, request,
                                          make_item, make_value)
        except GenerationError as exc:
            raise MockError(500, f"the mock cannot make up a value for this answer: {exc}",
                            code="mock-cannot-generate", details={"schema": media.schema.uri}) from None
        return Answer(status, payload, media.name, "generated", key=identity,
                      prechecked=bool(valid) and valid[0] is payload)

    def _made(self, node: Any, uri: str, key: str, static: bool, name: str | None = None) -> Any:
        """A value generated for a schema, without its `writeOnly` properties; `name`: what the answer is called."""
        value = self.generator.generate(node, uri, self.rng(key), static=static, name=name)
        return self.write_only.cut(value, node, uri)[0]

    def remember(self, answer: Answer) -> None:
        """Cache a generated answer that passed the response check, serialised; once."""
        if answer.key is None or self._generated.get(answer.key) is answer:
            return
        self._generated.put(answer.key, Answer(
            answer.status, answer.payload, answer.media_type, "generated", body=to_json(answer.payload)
            if is_json(answer.media_type) else None, prechecked=True))

    def rng(self, key: str) -> random.Random:
        """Deterministic for a seed and a request: the same call gives the same data."""
        return random.Random(zlib.crc32(f"{self.seed}|{key}".encode()))


_SEMVER = re.compile(r"\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]*)?")


def _named(path: str) -> str | None:
    """What an operation's answer is called: its path's last word (`GET /api/version` answers a version), None
    when that is a parameter."""
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return None if "{" in last else last


_NOTHING = object()
_COMPLETION_PASSES = 8  # levels of nested objects an example's missing required properties are filled at


def _along(value: Any, path: list[Any]) -> Any:
    """What a generated value holds where an example's object stands: by key, and in an array by the same index
    (else its last item: a generated array is often shorter than the example's)."""
    for step in path:
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(value, list) and value and isinstance(step, int):
            value = value[min(step, len(value) - 1)]
        else:
            return None
    return value

# rules an object or array breaks whatever values its members have: a templated member does not excuse them
_SHAPE_RULES = frozenset({"required", "additionalProperties", "unevaluatedProperties", "propertyNames",
                          "minProperties", "maxProperties", "minItems", "maxItems"})


def _related(pointer: str, rule: str, templated: str) -> bool:
    """Whether an error at `pointer` may come from the template at `templated` (whose value is not known
    before a request): it is there or inside it, or around it and not about the shape alone."""
    if pointer == templated or pointer.startswith(templated + "/"):
        return True
    return templated.startswith(pointer + "/") and rule not in _SHAPE_RULES


def _patterns(spec: dict[str, Any], tokens: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """The `matches` patterns of a condition, with where each is."""
    if "matches" in spec:
        yield (*tokens, "matches"), spec["matches"]
    for combined in ("all", "any"):
        for index, inner in enumerate(spec.get(combined, [])):
            yield from _patterns(inner, (*tokens, combined, index))
    if "not" in spec:
        yield from _patterns(spec["not"], (*tokens, "not"))


def _paired_examples(op: Operation) -> list[tuple[Any, str]]:
    """The request body's examples (of any media type; the first of a name) that some response of the operation
    has an example of the same name for."""
    if op.request_body is None:
        return []
    answered = {name for response in op.responses.values() for media in response.content.values()
                for name in media.examples}
    found: dict[str, Any] = {}
    for media in op.request_body.content.values():
        for name, example in media.examples.items():
            if name in answered:
                found.setdefault(name, example)
    return [(example, name) for name, example in found.items()]


def _agrees(example: Any, body: Any) -> bool:
    """A body agrees with a request example that is an object when it has each of its members with the same
    value (it may have more); with any other example when it is equal to it."""
    if isinstance(example, dict) and isinstance(body, dict):
        return all(name in body and body[name] == value for name, value in example.items())
    return bool(example == body)


def _wrapped(query: ListQuery, live: LiveCollection, op_id: str, item: dict[str, Any]) -> Any:
    """An item as a list's answer holds it: a stored item is checked against what the reads answer."""
    return query.wrap([live.listed(op_id, item)])


def _closed_properties(parts: Parts) -> frozenset[str] | None:
    """The properties a closed object schema (`additionalProperties: false`, no `patternProperties`) declares;
    None when it is open."""
    if not any(part.get("additionalProperties") is False for part, _ in parts) or any(
            "patternProperties" in part for part, _ in parts):
        return None
    return frozenset(name for part, _ in parts for name in part.get("properties") or {})


def _undeclared(op: Operation, status: int, why: str) -> str:
    """What a status the mock answers where the operation declares none says: the description's gap."""
    return (f"{op.id} declares no {status} (nor 4XX, nor default), yet {why}: answered {status} all the same; "
            "the description should declare it")
