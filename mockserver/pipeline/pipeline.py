"""Where the stages meet. One request flows one way:
match route → check auth → validate request → pick the answer → paginate → validate the response → serialize.
Any stage may raise a MockError; it is rendered once, at the end, into the API's envelope."""
from __future__ import annotations

import dataclasses
import json
import logging
import re
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..base import tracing
from ..base.errors import LoadError, MockError
from ..base.http import MockRequest, MockResponse, is_json
from ..base.json_values import MAX_DEPTH
from ..fixtures.inference import infer
from ..fixtures.loading import FixtureSet, load_fixtures
from ..spec.index import Operation, SpecIndex
from ..spec.secrets import Secrets
from ..state import SESSION_TTL, STATE_TIMEOUT, Store, open_store, session_of
from ..state.journal import Journal
from . import startup
from .answer_cache import AnswerCache
from .answers import Answer, Answers, pick_media_type, preferred_status
from .auth import Authenticator, Caller, Token, bearer_token
from .callbacks import CALLBACK_RETRIES, CALLBACK_TIMEOUT, Callbacks
from .coverage import CoverageModel
from .envelope import ErrorRenderer
from .front_door import FrontDoor
from .negotiation import Prefer
from .pagination import CursorSealer
from .request_validation import (
    HEADER_NAMES,
    MODES,
    RequestValidator,
    ValidRequest,
    Violation,
    bad_input,
    violations_header,
)
from .response_validation import ContractViolation, check_response
from .router import Router
from .rules import Context
from .scenarios import SCENARIO_HEADER, Effect, Scenarios
from .stateful import ITEMS_LIMIT
from .xml_body import XmlWriter, is_xml

log = logging.getLogger("mockserver")
_SANE_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")


@dataclass
class Options:
    seed: int = 0
    strict_auth: bool = False
    validate_responses: bool = True
    cursor_secret: str | None = None
    journal_size: int = 1000
    max_body: int = 1024 * 1024  # bytes; a larger body is 413
    max_url: int = 8192  # bytes of path and query; longer is 414
    max_header: int = 8192  # bytes of one header value; longer is 431
    max_depth: int = MAX_DEPTH  # levels a JSON body (or JSON parameter, or control call) may nest; deeper is 400
    accept_tokens: tuple[str, ...] = ()  # credentials let in as callers besides the fixtures' (--accept-token)
    # let in as callers too, but only when the fixtures declare no token of their own: then the mock has no callers
    # to tell them from (the credentials `mockserver contract` runs with against its in-process mock)
    guest_tokens: tuple[str, ...] = ()
    state: str | None = None  # where runtime state lives: None/"memory" (this process) or a Redis URL
    session_ttl: float = SESSION_TTL  # seconds a session may stay idle before it is forgotten
    state_timeout: float = STATE_TIMEOUT  # seconds a call to a shared store may wait; then 503, never longer
    max_items: int = ITEMS_LIMIT  # items a written collection may hold per session; past it, a create is 507
    stateful: bool = False  # infer writes from the REST shape (as `stateful: true` in the fixtures' settings)
    dynamic: bool = False  # every answer varied generated data, as if each request said `Prefer: dynamic=true`
    allow_outside: tuple[Path, ...] = ()  # folders besides their own that the description and fixtures may read
    dashboard: bool = True  # the control API's pages are served: a browser's GET / is sent there (front_door.py)
    # a request that breaks the description: "strict" refuses it (400/422), "warn" answers it as if valid and keeps
    # its violations in the journal, "off" does not check (request_validation.MODES)
    request_validation: str = "strict"
    violations_header: str | None = None  # the header naming a let-through request's violations (HEADER_NAMES)
    # the calls the mock sends (callbacks, webhooks: web/outgoing.py): tries after the first, each one's timeout,
    # and the hosts they may reach besides loopback
    callback_retries: int = CALLBACK_RETRIES
    callback_timeout: float = CALLBACK_TIMEOUT
    callback_allow: tuple[str, ...] = ()
    # on a mock of several APIs (`serve --api`): this one's name, the path prefix it is mounted at (its paths start
    # there, before the description's own base path) and the host it is mounted at (None: every host)
    api: str | None = None
    mount: str = ""
    mount_host: str | None = None


@dataclass
class Resolved:
    """What the front half of the request path found out (`Pipeline.resolve`)."""

    operation: Operation
    path_params: dict[str, str]
    query: dict[str, list[str]]
    caller: Caller | None = None
    valid: ValidRequest | None = None
    errors: list[tuple[str, MockError]] = field(default_factory=list)


class Pipeline:
    def __init__(self, spec: SpecIndex, fixtures: FixtureSet, options: Options | None = None,
                 store: Store | None = None) -> None:
        """`store`: where runtime state lives (kept across reloads, shared by workers when it is Redis); a memory
        store of this process when None."""
        self.spec = spec
        self.fixtures = fixtures
        self.options = options or Options()
        self.store = store or open_store(None, journal_size=self.options.journal_size)
        settings = fixtures.settings
        self.request_id_header = settings.get("requestIdHeader", "X-Request-Id")
        auth = settings.get("auth", {})
        declared = auth.get("tokens") or {}
        tokens = {name: Token(**raw) for name, raw in declared.items()}
        for number, name in enumerate(self.options.accept_tokens, 1):  # after the fixtures' own, never over one
            tokens.setdefault(name, Token(f"accepted-{number}", auth.get("defaultTenant")))
        for name in () if declared else self.options.guest_tokens:
            tokens.setdefault(name, Token(f"given-{len(tokens)}", auth.get("defaultTenant")))
        self.auth = Authenticator(spec.security_schemes, tokens,
                                  default_tenant=auth.get("defaultTenant"), strict=self.options.strict_auth)
        _check_choice("request_validation", self.options.request_validation, MODES)
        if self.options.violations_header is not None:
            _check_choice("violations_header", self.options.violations_header, HEADER_NAMES)
        self.validators = {op.id: RequestValidator(op, spec.docs.resolve, self.options.max_depth,
                                                   self.options.request_validation)
                           for op in spec.operations.values()}
        self.base_path = self.options.mount + spec.base_path  # where its paths start, as served
        self.router = Router(list(spec.operations.values()), self.base_path,
                             lambda op, values: self.validators[op.id].path_fits(values))
        self.errors = ErrorRenderer(settings.get("errors"), spec)
        self.front_door = FrontDoor(self.options.dashboard)
        # inferred declarations join the fixtures' before anything compiles: they are checked as if hand-written
        self.inferred = infer(spec, fixtures) if self.options.stateful or settings.get("stateful") else []
        # an explicit secret (--cursor-secret, MOCKSERVER_CURSOR_SECRET) wins; else the store's, the same for every
        # process sharing it
        self.answers = Answers(spec, fixtures, CursorSealer(self.options.cursor_secret or self.store.secret()),
                               seed=self.options.seed, store=self.store, max_items=self.options.max_items)
        self.header_values = startup.declared_header_values(spec, self.request_id_header, self.answers)
        self.xml = XmlWriter(spec.docs.resolve)
        # with written collections a key carries each one's version (a write makes the next read's key new); a
        # shared store would pay a round trip per collection for them, more than the answer costs: no cache there
        self.answer_cache = AnswerCache.of(spec, enabled=not (self.answers.live and self.store.shared))
        self._no_prefer = Prefer(dynamic=self.options.dynamic)  # most requests send none: read it once
        self.coverage = CoverageModel(spec, self.router)
        self.secrets = Secrets(spec, self.answers.write_only)
        self.journal = Journal(self.store, self.secrets, self.coverage.header_names)
        self.scenarios = Scenarios(spec.operations, self.store, startup.check_scenario_body,
                                   (settings.get("errors") or {}).get("template"), self.auth.challenge_of)
        # `waits_on_store`'s tests: with the scenarios' operations it was made for, and for every operation
        self._waiting: tuple[frozenset[str], Callable[[str, str], bool]] | None = None
        self._reaching_any = self.router.reaching(frozenset(spec.operations))
        self._id_schemas = [h.schema for op in spec.operations.values() for r in op.responses.values()
                            for h in r.headers.values()
                            if h.name.lower() == self.request_id_header.lower() and h.schema]
        self.new_request_id = self._request_id_maker()
        # values the mock itself sets: checked here once, so requests only check they are present
        self._fixed_headers = frozenset({self.request_id_header.lower()} | {
            name.lower() for values in self.header_values.values() for name in values})
        self.callbacks = Callbacks(spec, fixtures, self.answers)
        problems = fixtures.problems + self.answers.problems + self.callbacks.problems
        problems += startup.check_error_envelope(spec, fixtures, self.errors, self.answers)
        startup.learn_error_convention(spec, fixtures, self.errors, self.answers)
        problems += startup.check_fixed_headers(spec, self.header_values, self.request_id_header,
                                                self.new_request_id())
        problems += startup.load_scenarios(fixtures, self.scenarios)
        if problems:
            raise LoadError(problems)
        self.warnings = spec.warnings + self.answers.warnings  # said once, at start-up, by whoever serves

    @classmethod
    def load(cls, spec_path: Path, fixtures_path: Path | None, options: Options | None = None,
             store: Store | None = None) -> Pipeline:
        """Load and check everything; LoadError lists every problem of the description and the fixtures."""
        allowed = (options or Options()).allow_outside
        fixtures = load_fixtures(fixtures_path, allowed)
        try:
            spec = SpecIndex(spec_path, allowed)
        except LoadError as exc:
            raise LoadError(exc.problems + fixtures.problems) from None
        return cls(spec, fixtures, options, store)

    # -- request path --------------------------------------------------------------------------------------
    def _request_id_maker(self) -> Callable[[], str]:
        """Request ids shaped as the description declares them: `req_<hex>`, or a UUID where it says `uuid`."""
        for maker in (lambda: "req_" + uuid.uuid4().hex, lambda: str(uuid.uuid4())):
            if self._fits_id_schemas(maker()):
                return maker
        return lambda: str(uuid.uuid4())  # startup.check_fixed_headers says why it does not fit

    def _fits_id_schemas(self, value: str) -> bool:
        return all(schema.validator.is_valid(value) for schema in self._id_schemas)

    def request_id(self, request: MockRequest) -> str:
        """The caller's own id when it is sane (and fits the description), else a new one: never echoed raw."""
        given = request.header(self.request_id_header)
        if given and _SANE_ID.match(given) and (not self._id_schemas or self._fits_id_schemas(given)):
            return given
        return self.new_request_id()

    def waits_on_store(self, method: str, path: str) -> bool:
        """Whether the answer to a request (its method and raw path) may wait on a round trip to a shared store
        (Redis): its operation reads or writes a written collection or sends callbacks (into the store's outbox),
        or a scenario in force names it (a firing is counted there), or it is among a process's first calls to
        reach an operation, which wait until the store is known to be reachable. A server makes such an answer off
        its event loop, so a Redis that does not answer holds up no other call (web/rsgi.py). A dict and a pattern
        per request: the pattern is made again only when the scenarios change (a scenario set between this and the
        answer may still make its one wait)."""
        if not self.store.shared:
            return False
        named = self.scenarios.named()
        waiting = self._waiting
        if waiting is None or waiting[0] is not named:
            # an answer that sends callbacks puts them in the store's outbox: a round trip too
            waiting = self._waiting = (named, self.router.reaching(named | self.answers.stored
                                                                   | self.callbacks.triggers))
        return waiting[1](method, path) or not self.store.settled() and self._reaching_any(method, path)

    def handle(self, request: MockRequest) -> MockResponse:
        request_id = self.request_id(request)
        op: Operation | None = None
        effect: Effect | None = None
        session, session_error = None, None
        violations: list[Violation] = []  # what `--request-validation warn` let through
        try:
            session = session_of(request)
        except MockError as error:
            session_error = error
        try:
            with tracing.stage("route, authenticate, validate"):
                resolved = self.resolve(request)
            op = resolved.operation  # known first, so a refusal below takes the operation's own error shape
            if resolved.errors:
                raise resolved.errors[0][1]
            if session_error is not None:
                raise session_error
            self.store.check()
            query, caller, valid = resolved.query, resolved.caller, resolved.valid
            assert caller is not None and valid is not None  # resolve raised otherwise
            violations = valid.violations
            header = request.header("prefer")
            prefer = self._no_prefer if header is None else Prefer.read(header, self.options.dynamic)
            if prefer.code is not None and (preferred := self._preferred_error(op, prefer.code)) is not None:
                raise preferred
            with tracing.stage("scenarios"):
                effect = self.scenarios.effect(op, resolved.path_params, query, request, bearer_token(request),
                                               session)
            if effect is not None and effect.error is not None:
                raise effect.error
            if effect is not None and effect.undeclared:
                response = self._gateway_answer(op, effect, request_id)
            else:
                with tracing.stage("answer"):
                    response = self._respond(op, Context(valid, caller, session, request.path, request.headers,
                                                         request_id), prefer, request, effect, request_id)
            response.path_params, response.callback_delay = resolved.path_params, prefer.callback_delay
        except MockError as error:
            if op is None and error.status == 404 and (own := self.front_door.answer(request)) is not None:
                return own  # no operation at the path: the mock's own page or icon, where it has one
            if isinstance(error, ContractViolation):
                log.error("CONTRACT VIOLATION %s %s: %s", request.method, request.path, error.message)
            response = self.error_response(error, request_id, op)
            if effect is not None and effect.error is error:
                response.source = "scenario-undeclared" if effect.undeclared else "scenario"
        if effect is not None:  # named in a header and the journal, never in the API's body
            response.scenario_id, response.delay_ms, response.disconnect = (
                effect.scenario_id, effect.delay_ms, effect.disconnect)
            response.headers[SCENARIO_HEADER] = effect.scenario_id
        response.session = session
        if violations:
            self._tell(response, violations)
        return response

    def _tell(self, response: MockResponse, violations: list[Violation]) -> None:
        """A request let through despite its violations: they go to the journal, and to the client in the
        violations header when one is asked for."""
        response.violations = [v.as_dict() for v in violations]
        name = self.options.violations_header
        if name is not None:
            response.headers[name] = violations_header(name, violations)

    def _respond(self, op: Operation, ctx: Context, prefer: Prefer, request: MockRequest,
                 effect: Effect | None, request_id: str) -> MockResponse:
        """The answer of a request that passed every check, validated against the description; the same request
        again within a second is given the same answer (pipeline/answer_cache.py)."""
        key = None
        if effect is None and not prefer.dynamic:
            key = self.answer_cache.key(op.id, request, ctx.caller.key, ctx.session,
                                        partial(self.answers.versions, ctx.session))
            cached = self.answer_cache.get(key) if key is not None else None
            if cached is not None:
                return MockResponse(cached.status, cached.body, cached.media_type,
                                    {**cached.headers, self.request_id_header: request_id}, cached.source, op.id,
                                    cached.payload)
        answer = self._answer(op, ctx, prefer, request, effect)
        headers = {**self.declared_headers(op, answer.status), **answer.headers}
        if op.deprecated:
            headers.setdefault("Deprecation", "true")  # as Prism says it: a client sees it is on its way out
        shared = dict(headers)
        headers[self.request_id_header] = request_id
        if self.options.validate_responses:
            check_response(op, answer.status, answer.media_type, answer.payload, headers, answer.source,
                           answer.origin, body_checked=answer.prechecked,
                           fixed_headers=self._fixed_headers.difference(h.lower() for h in answer.headers))
        if answer.source == "generated":
            self.answers.remember(answer)
        body = answer.body if answer.body is not None else serialize(answer.payload, answer.media_type)
        if key is not None and not answer.fresh:
            self.answer_cache.put(key, answer.status, body, answer.media_type, shared, answer.source, answer.payload)
        return MockResponse(answer.status, body, answer.media_type, headers, answer.source, op.id, answer.payload)

    def _gateway_answer(self, op: Operation, effect: Effect, request_id: str) -> MockResponse:
        """A scenario's answer with a status the description does not declare (a gateway's 502, a rate limiter's
        429): as the scenario says, never validated, marked as such in the journal."""
        return MockResponse(effect.status or 500, serialize(effect.body, effect.media_type), effect.media_type,
                            {**effect.headers, self.request_id_header: request_id}, "scenario-undeclared", op.id,
                            effect.body)

    def resolve(self, request: MockRequest, *, limits: bool = True, collect: bool = False) -> Resolved:
        """The front half of the request path, shared by the mock and the proxy's drift check: route, then the
        size limits (`limits`), the caller, the valid inputs. A request that reaches no operation raises; after
        that, a stage that refuses it is kept in `errors` (by stage: "limits", "auth", "request") and, unless
        `collect`, the later stages are skipped."""
        query = request.query() or {}  # not UTF-8: the request check says so, once the operation is known
        match = self.router.match(request.method, request.path, query)
        op = match.operation
        resolved = Resolved(op, match.path_params, query)

        def refused(stage: str, error: MockError) -> bool:
            resolved.errors.append((stage, error))
            return not collect

        if limits:
            try:
                self._check_size(request)
            except MockError as error:
                if refused("limits", error):
                    return resolved
        try:
            resolved.caller = self.auth.authenticate(op, request)
        except MockError as error:
            if refused("auth", error):
                return resolved
        try:
            resolved.valid = self.validators[op.id].validate(request, match.path_params)
        except MockError as error:
            refused("request", error)
        else:
            if collect and resolved.valid.violations:  # let through by a lenient mode, still the request's fault
                refused("request", bad_input(resolved.valid.violations))
        return resolved

    def _check_size(self, request: MockRequest) -> None:
        """Limits that protect the mock, answered in the API's envelope like any other refusal."""
        options = self.options
        if len(request.path) + len(request.query_string) > options.max_url:
            raise MockError(414, f"the URL is longer than {options.max_url} bytes", code="uri-too-long",
                            details={"limit": options.max_url})
        for name, value in request.headers.items():
            if len(value) > options.max_header:
                raise MockError(431, f"the {name} header is longer than {options.max_header} bytes",
                                code="header-too-large", details={"header": name, "limit": options.max_header})
        if len(request.body) > options.max_body:
            raise MockError(413, f"the request body is larger than {options.max_body} bytes",
                            code="payload-too-large", details={"limit": options.max_body})

    def _answer(self, op: Operation, ctx: Context, prefer: Prefer, request: MockRequest,
                effect: Effect | None) -> Answer:
        """The answer, and for an XML media type its body written as XML along the response's schema (the
        payload stays the value the response check reads; a text is written as is only when it is XML)."""
        self.answers.check_rules(op, ctx)
        if effect is not None and effect.status is not None:
            declared = op.response(effect.status)
            media = pick_media_type(declared.content) if declared else None
            answer = Answer(effect.status, effect.body, media.name if media else None, "scenario",
                            dict(effect.headers))
        else:  # decided first, then built: a scenario's body is given
            decision = self.answers.decide(op, ctx, prefer, request.header("accept"))
            key = f"{request.method} {request.path}?{request.query_string}|{zlib.crc32(request.body)}"
            answer = self.answers.build(op, ctx, decision, key)
        if not is_xml(answer.media_type) or answer.payload is None or isinstance(answer.payload, bytes):
            return answer
        response = op.response(answer.status)
        media = response.content.get(answer.media_type or "") if response else None
        schema = media.schema if media else None
        body = self.xml.write(answer.payload, schema.node if schema else None, schema.uri if schema else "")
        return dataclasses.replace(answer, body=body)

    def _preferred_error(self, op: Operation, code: str) -> MockError | None:
        """`Prefer: code=` of an error status: that error, in the envelope; of a success: None (`_answer` serves
        that response's example or generated body); of a status the operation does not declare: 400."""
        status = preferred_status(op, code)
        if status < 400:
            return None
        message, details, headers = self.scenarios.declared(op, status)
        return MockError(status, message, details=details, headers=headers)

    def declared_headers(self, op: Operation, status: int) -> dict[str, str]:
        """The header values fixed at start-up for the response that answers `status`: its own, else its range's
        (`4XX`), else `default`'s."""
        response = op.response(status)
        return self.header_values.get((op.id, response.status), {}) if response is not None else {}

    def refusal(self, status: int, message: str, request_line: str, reason: str | None = None) -> MockResponse:
        """The answer to a request the HTTP server refuses before the app sees it, in the envelope (of the
        operation the request line names, when it names one), never the server's own page."""
        error = MockError(status, message, details={"reason": reason} if reason else None)
        return self.error_response(error, self.new_request_id(), self.router.guess(request_line))

    def error_response(self, error: MockError, request_id: str, op: Operation | None) -> MockResponse:
        rendered = self.errors.rendered(error.status, op, error.code)  # what errors of its kind share
        payload = rendered.body(error, request_id)
        media_type = rendered.media_type
        headers = {**(self.declared_headers(op, error.status) if op else {}), **error.headers,
                   self.request_id_header: request_id}
        return MockResponse(error.status, serialize(payload, media_type), media_type, headers, "error",
                            op.id if op else None, payload)


def _check_choice(option: str, value: str, choices: tuple[str, ...]) -> None:
    if value.lower() not in (choice.lower() for choice in choices):
        raise ValueError(f"{option}={value!r}: it is one of {', '.join(choices)}")


def serialize(payload: Any, media_type: str | None) -> bytes:
    if payload is None:
        return b"null" if is_json(media_type) else b""  # JSON's null is a body; no content is not
    if isinstance(payload, bytes):
        return payload
    if is_xml(media_type):  # a text too: XML only when it is XML already
        return _PLAIN_XML.write(payload, None, "")
    if media_type and not is_json(media_type) and isinstance(payload, str):
        return payload.encode()
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


_PLAIN_XML = XmlWriter(None)
