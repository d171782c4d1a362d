"""Scenarios: error cases and faults on demand, declared in fixtures or set while the server runs.

A scenario matches requests (operation, path parameters, query values, headers, the caller's token) and says
what to do: answer a status (the operation's own error, as `Prefer: code=` answers it, or a body of its own), add
latency, fail the next N calls, fail a seeded fraction of calls, or break the connection. It may wait (`after`:
let N calls through first), do one thing after another (`steps`, each for its `times`), and read and move a named
state machine (`state`, `requiredState`, `newState`, WireMock's scenario states, kept per session) for flows across
operations. Counts and states are kept in the store, atomically, so `times: 2` and `after: 2` are exact however
many requests arrive at once, in however many workers and replicas."""
from __future__ import annotations

import itertools
import logging
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from typing import Any

from jsonschema import Draft202012Validator

from ..base.errors import MockError
from ..base.http import MockRequest
from ..base.json_values import find_unservable, unservable_message
from ..spec.index import Operation
from ..spec.schemas import instance_pointer, iter_errors
from ..state import Book, Record, Store, Transition, unit
from .envelope import dig, path_to

log = logging.getLogger("mockserver")
SCENARIO_HEADER = "X-Mock-Scenario"  # names the scenario that answered a call

_NAME = {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}
_EFFECT: dict[str, Any] = {  # what a scenario, or one of its steps, does to a call
    "status": {"type": "integer", "minimum": 100, "maximum": 599},
    "code": {"type": "string", "minLength": 1},
    "message": {"type": "string"},
    "body": {},
    "responseHeaders": {"type": "object", "additionalProperties": {"type": "string"}},
    "latency": {"oneOf": [
        {"type": "integer", "minimum": 0, "maximum": 120000},
        {"type": "object", "required": ["min", "max"], "additionalProperties": False,
         "properties": {"min": {"type": "integer", "minimum": 0, "maximum": 120000},
                        "max": {"type": "integer", "minimum": 0, "maximum": 120000}}},
    ]},
    "break": {"enum": ["close", "truncate"]},
    "undeclared": {"type": "boolean"},
    "proxy": {"enum": ["html", "empty"]},
}
_EFFECT_NEEDS = {"body": ["status"], "undeclared": ["status"], "proxy": ["undeclared"]}
_TIMES = {"type": "integer", "minimum": 1}
_STEP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {**_EFFECT, "times": _TIMES},
    "dependentRequired": _EFFECT_NEEDS,
}
SCENARIO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "id": _NAME,
        "description": {"type": "string"},
        "operationId": {"type": "string", "minLength": 1},
        "method": {"type": "string", "pattern": "^[A-Za-z]+$"},
        "path": {"type": "string", "pattern": "^/"},
        "pathParams": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        "query": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "token": {"type": "string", "minLength": 1},
        **_EFFECT,
        "times": _TIMES,
        "rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "seed": {"type": "integer"},
        "after": {"type": "integer", "minimum": 0},
        "steps": {"type": "array", "minItems": 1, "maxItems": 100, "items": _STEP_SCHEMA},
        "state": _NAME,
        "requiredState": {"type": "string", "minLength": 1, "maxLength": 64},
        "newState": {"type": "string", "minLength": 1, "maxLength": 64},
    },
    "anyOf": [{"required": [key]} for key in ("status", "latency", "break", "steps", "newState")],
    "dependentRequired": {"method": ["path"], "path": ["method"], "seed": ["rate"], "requiredState": ["state"],
                          "newState": ["state"], **_EFFECT_NEEDS},
    "not": {"required": ["times", "rate"]},
}
_VALIDATOR = Draft202012Validator(SCENARIO_SCHEMA)


class ScenarioError(ValueError):
    """A scenario that cannot be set: says what is wrong and where (a JSON pointer in the scenario; `index`, the
    scenario's place in a list set at once)."""

    def __init__(self, message: str, pointer: str = "", rule: str = "") -> None:
        super().__init__(message)
        self.pointer = pointer
        self.rule = rule
        self.index: int | None = None


@dataclass
class Effect:
    """What a matched scenario does to one request."""

    scenario_id: str
    delay_ms: int = 0
    error: MockError | None = None
    status: int | None = None
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    disconnect: str | None = None
    undeclared: bool = False  # a status the description does not declare: answered as is, never validated
    media_type: str | None = None  # of `body` for an undeclared status (a proxy's page)


# what a gateway in front of a real deployment answers, as nginx words it
_PROXY_PAGE = ("<html>\r\n<head><title>{status} {phrase}</title></head>\r\n<body>\r\n<center><h1>{status} {phrase}"
               "</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


# what a server says for an error status it is made to answer: message, details, headers
Declared = tuple[str, dict[str, Any] | None, dict[str, str]]

# a stretch of a scenario's calls: the count at which it ends (None: never) and what it does to them (None: they
# go on as usual: the calls `after` lets through, a step that only counts)
Phase = tuple[int | None, dict[str, Any] | None]


@dataclass
class Scenario:
    id: str
    uid: str  # names its counts in the store
    spec: dict[str, Any]
    operation: Operation
    origin: str  # "fixtures" or "runtime"
    session: str | None = None
    phases: tuple[Phase, ...] = field(init=False)
    limit: int | None = field(init=False)  # the calls it counts before it is gone (None: no end)
    moves_from: int = field(init=False)  # the first count that moves its state machine: after the calls let through

    def __post_init__(self) -> None:
        self.phases = _phases(self.spec)
        self.limit = self.phases[-1][0]
        waiting = [end or 0 for end, _ in itertools.takewhile(lambda p: p[1] is None, self.phases[:-1])]
        self.moves_from = (waiting[-1] if waiting else 0) + 1

    def matches(self, op: Operation, path_params: dict[str, str], query: dict[str, list[str]],
                request: MockRequest, token: str | None) -> bool:
        spec = self.spec
        if op.id != self.operation.id:
            return False
        if any(path_params.get(k) != _text(v) for k, v in spec.get("pathParams", {}).items()):
            return False
        if any(_text(v) not in query.get(k, []) for k, v in spec.get("query", {}).items()):
            return False
        if any(request.header(k) != v for k, v in spec.get("headers", {}).items()):
            return False
        return "token" not in spec or spec["token"] == token

    def counter(self, session: str | None) -> str:
        """What its calls of `session` are counted under: a global or fixtures' scenario counts each session's
        calls apart (a test in its session sees `after: 2` as if alone), and those without a session under its uid."""
        return self.uid if session is None or self.session is not None else f"{self.uid}@{session}"

    def transition(self, session: str | None) -> Transition | None:
        """Its part in its state machine for a call of `session` (the machines are kept per session)."""
        spec = self.spec
        if "state" not in spec:
            return None
        return Transition(session, spec["state"], spec.get("requiredState"), spec.get("newState"), self.moves_from)

    def phase(self, hit: int) -> int:
        """The index of the phase the `hit`-th counted call falls in."""
        return next((i for i, (end, _) in enumerate(self.phases) if end is None or hit <= end),
                    len(self.phases) - 1)

    def with_id(self, scenario_id: str, uid: str | None = None) -> Scenario:
        return replace(self, id=scenario_id, uid=uid or self.uid)

    def as_dict(self, hits: int, state: str | None = None) -> dict[str, Any]:
        """As the control API shows it, with its position: the calls it counted, those it still lets through
        (`waiting`), the step the next call gets, the state its machine is in."""
        shown = {"id": self.id, **{k: v for k, v in self.spec.items() if k != "id"}, "origin": self.origin,
                 "hits": hits}
        if self.session is not None:
            shown["session"] = self.session
        if self.limit is not None:
            shown["remaining"] = max(self.limit - hits, 0)
        if "after" in self.spec:
            shown["waiting"] = max(self.spec["after"] - hits, 0)
        if "steps" in self.spec:
            shown["step"] = max(self.phase(hits + 1) - (len(self.phases) - len(self.spec["steps"])), 0)
        if state is not None:
            shown["currentState"] = state
        return shown


def _phases(spec: dict[str, Any]) -> tuple[Phase, ...]:
    """A scenario's calls in order: those `after` lets through, then each step (a scenario without `steps` is one
    step: what it does, for `times` calls)."""
    steps = spec.get("steps") or [{k: v for k, v in spec.items() if k in _EFFECT or k == "times"}]
    count: int | None = spec.get("after", 0)
    phases: list[Phase] = [(count, None)] if count else []
    for step in steps:
        count = count + step["times"] if "times" in step and count is not None else None
        phases.append((count, {k: v for k, v in step.items() if k != "times"} or None))
    return tuple(phases)


class Scenarios:
    """The scenarios in force: the fixtures' and those set at run time, which live in the store (shared by every
    worker and replica there). Precedence: the request's session's own (newest first), then the global ones
    (newest first), then the fixtures'. The store's book is compiled against this description once per version,
    so a request that matches no scenario costs no round trip; one that matches is counted in the store,
    atomically."""

    def __init__(self, operations: dict[str, Operation], store: Store, check_body: Any = None,
                 envelope: Any = None, challenge: Callable[[Operation], str] | None = None) -> None:
        """`envelope`: the fixtures' error template, to read a declared example's message and details;
        `challenge`: an operation's WWW-Authenticate challenge, for the 401s it is made to answer."""
        self._operations = operations
        self._template = envelope
        self._challenge = challenge
        self._declared: dict[tuple[str, int], Declared] = {}
        self._by_route = {(op.method, op.path): op for op in operations.values()}
        self._store = store
        self._check_body = check_body
        self._baseline: list[Scenario] = []
        self._lock = threading.Lock()
        self._version = -1
        self._global: list[Scenario] = []
        self._by_session: dict[str, list[Scenario]] = {}
        self._removed: frozenset[str] = frozenset()
        self._named: frozenset[str] = frozenset()  # the operations some scenario in force names, in any session
        self._spent: set[str] = set()  # counters whose `times` are used up, as this process learnt it
        self._unfit: set[str] = set()  # uids already said not to fit this description
        self._compiled: dict[str, Scenario] = {}  # the book's scenarios by uid, as last compiled

    def compile(self, spec: Any, origin: str, uid: str = "", session: str | None = None) -> Scenario:
        """A checked scenario, or ScenarioError naming the first problem."""
        if isinstance(spec, dict) and not _DOES & spec.keys():
            raise ScenarioError("a scenario must do something: give a status, a latency, a break, steps or a "
                                "newState", "", "required")
        for error in iter_errors(_VALIDATOR, spec):
            raise ScenarioError(error.message, instance_pointer(error), str(error.validator))
        if (unservable := find_unservable(spec)) is not None:  # NaN passes `maximum`, and could not be listed
            raise ScenarioError(unservable_message(*unservable), *unservable)
        if "operationId" in spec:
            op = self._operations.get(spec["operationId"])
            if op is None:
                raise ScenarioError(f"no operation {spec['operationId']!r} in the description", "/operationId",
                                    "operationId")
        elif "method" in spec:
            op = self._by_route.get((spec["method"].upper(), spec["path"]))
            if op is None:
                raise ScenarioError(f"no operation {spec['method'].upper()} {spec['path']} in the description",
                                    "/path", "path")
        else:
            raise ScenarioError("a scenario names its operation: operationId, or method and path", "", "required")
        _check_order(spec)
        for at, step in ([(f"/steps/{i}", step) for i, step in enumerate(spec["steps"])] if "steps" in spec
                         else [("", spec)]):
            try:
                self._check_effect(op, step)
            except ScenarioError as exc:
                exc.pointer = at + exc.pointer
                raise
        return Scenario(spec.get("id", ""), uid, dict(spec), op, origin, session)

    def _check_effect(self, op: Operation, spec: dict[str, Any]) -> None:
        """What a scenario (or one of its steps) does fits the operation: a declared status, a body that fits."""
        status = spec.get("status")
        undeclared = spec.get("undeclared", False)
        if status is not None and not op.declares(status) and not undeclared:
            raise ScenarioError(f"{op.id} does not declare status {status}; it declares "
                                + ", ".join(op.declared_statuses) + " (a gateway's or rate limiter's answer the "
                                "description does not declare: add \"undeclared\": true)", "/status", "status")
        if undeclared and status is not None and (status < 400 or op.declares(status)):
            raise ScenarioError(f"`undeclared` is for an error status {op.id} does not declare; {status} "
                                + ("is declared" if op.declares(status) else "is not an error"), "/undeclared",
                                "undeclared")
        if undeclared and "body" in spec and "proxy" in spec:
            raise ScenarioError("give a `body` or a `proxy` page, not both", "/proxy", "proxy")
        if "latency" in spec and isinstance(spec["latency"], dict) and spec["latency"]["min"] > spec["latency"]["max"]:
            raise ScenarioError("latency.min is above latency.max", "/latency", "range")
        if status is not None and status < 400 and "body" not in spec and _has_content(op, status):
            raise ScenarioError(f"status {status} needs a `body` (errors take the API's envelope on their own)",
                                "/status", "body")
        if "body" in spec and self._check_body is not None and not undeclared:  # undeclared: no schema to check
            self._check_body(op, status, spec["body"])

    def set_baseline(self, specs: list[dict[str, Any]]) -> None:
        """The fixtures' scenarios, checked by `compile` already; their counts are kept in the store too."""
        self._baseline = []
        for number, spec in enumerate(specs, 1):
            scenario_id = spec.get("id") or f"f{number}"
            self._baseline.append(self.compile(spec, "fixtures", f"fixtures:{scenario_id}").with_id(scenario_id))

    # -- the control API ------------------------------------------------------------------------------------
    def add(self, specs: list[Any], session: str | None) -> list[dict[str, Any]]:
        """Check every scenario (ScenarioError with the index of the first bad one in `.index`), then set them all
        at once; a taken id is a ScenarioError with rule `unique`."""
        compiled = []
        for index, spec in enumerate(specs):
            try:
                compiled.append(self.compile(spec, "runtime", session=session))
            except ScenarioError as exc:
                exc.index = index
                raise
        added: list[Scenario] = []

        def change(book: Book, hits: Callable[[Iterable[str]], dict[str, int]]) -> Book:
            kept = self._unspent(book.runtime, hits)
            taken = {r.id for r in kept if r.session == session}
            if session is None:
                taken |= {s.id for s in self._baseline if s.id not in book.removed}
            serial = book.version
            added.clear()
            for scenario in compiled:
                serial += 1
                scenario_id = scenario.id or f"s{serial}"
                if scenario_id in taken:
                    raise ScenarioError(f"a scenario with id {scenario_id!r} is already set", "/id", "unique")
                taken.add(scenario_id)
                added.append(scenario.with_id(scenario_id, uuid.uuid4().hex))
            records = [Record(s.uid, s.id, s.spec, session) for s in reversed(added)]
            return book.next([*records, *kept])

        self._store.change_book(change)
        return [s.as_dict(0) for s in added]

    def remove(self, session: str | None, scenario_id: str | None = None) -> int:
        """One scenario of the session (or a global or fixtures' one without a session), or all of them (without a
        session: every scenario, every session's and the fixtures' too); how many were removed."""
        gone: list[str] = []

        def change(book: Book, hits: Callable[[Iterable[str]], dict[str, int]]) -> Book:
            gone.clear()
            if scenario_id is None:
                drop = [r for r in book.runtime if session is None or r.session == session]
                removed = {s.id for s in self._baseline} if session is None else book.removed
            else:
                drop = [r for r in book.runtime if r.session == session and r.id == scenario_id]
                removed = book.removed | ({scenario_id} if session is None and any(
                    s.id == scenario_id for s in self._baseline) else set())
            live = self._unspent(drop, hits)
            gone.extend(r.uid for r in live)
            gone.extend(f"fixtures:{i}" for i in removed - book.removed)
            return book.next([r for r in book.runtime if r not in drop], removed)

        self._store.change_book(change)
        self._store.forget_counts(gone)
        return len(gone)

    def shown(self, session: str | None) -> list[dict[str, Any]]:
        """The scenarios a call of the session sees (without one: every scenario), in the order they are tried,
        each with its position; those used up are gone. A state machine is shown as the scenario's calls see it:
        a session's scenario, its session's; another, `session`'s (without one: that of calls without one)."""
        scenarios = self._in_force(session, everything=session is None)
        hits = self._store.hits(s.counter(session) for s in scenarios)
        machines: dict[str | None, set[str]] = {}
        for scenario in scenarios:
            if "state" in scenario.spec:
                machines.setdefault(scenario.session or session, set()).add(scenario.spec["state"])
        states = {scope: self._store.states(scope, names) for scope, names in machines.items()}
        return [s.as_dict(hits[s.counter(session)],
                          states[s.session or session][s.spec["state"]] if "state" in s.spec else None)
                for s in scenarios if s.limit is None or hits[s.counter(session)] < s.limit]

    # -- the request path -----------------------------------------------------------------------------------
    def effect(self, op: Operation, path_params: dict[str, str], query: dict[str, list[str]],
               request: MockRequest, token: str | None, session: str | None = None) -> Effect | None:
        """The effect of the first scenario that matches and is due; each call a scenario takes (its state
        machine allowing) is counted in the store, those it lets through too, which then go on to the next."""
        for scenario in self._in_force(session):
            if not scenario.matches(op, path_params, query, request, token):
                continue
            counter = scenario.counter(session)
            if counter in self._spent:
                continue
            spec = scenario.spec
            if "rate" in spec and unit(spec.get("seed", 0), "rate", self._store.draw(counter)) >= spec["rate"]:
                continue
            hit = self._store.hit(counter, scenario.limit, scenario.transition(session))
            if hit == -1 or hit == scenario.limit:
                self._spent.add(counter)
            if hit < 0:
                continue
            does = scenario.phases[scenario.phase(hit)][1]
            if does is not None:
                return self._effect_of(scenario, does, hit)
        return None

    def named(self) -> frozenset[str]:
        """The operations some scenario in force (of any session) names: the calls a firing may be counted for.
        The same set until the book changes."""
        self._refresh()
        return self._named

    def _in_force(self, session: str | None, everything: bool = False) -> list[Scenario]:
        self._refresh()
        return self._gathered(session, everything)

    def _gathered(self, session: str | None, everything: bool) -> list[Scenario]:
        if everything:
            own = [s for scenarios in self._by_session.values() for s in scenarios]
        else:
            own = self._by_session.get(session, []) if session is not None else []
        return [*own, *self._global, *(s for s in self._baseline if s.id not in self._removed)]

    def _refresh(self) -> None:
        """Compile the store's book when it changed: only the scenarios set since (a uid is one scenario as set,
        never changed; 64 sessions setting and removing one each made every change compile all of them in every
        process); a scenario that no longer fits this description (after a reload, or set through a replica
        serving another) is left out, and said once."""
        book = self._store.book()
        if book.version == self._version:
            return
        with self._lock:
            if book.version == self._version:
                return
            by_session: dict[str, list[Scenario]] = {}
            global_: list[Scenario] = []
            compiled: dict[str, Scenario] = {}
            for record in book.runtime:
                try:
                    scenario = self._compiled.get(record.uid) or self.compile(
                        record.spec, "runtime", record.uid, record.session).with_id(record.id)
                except ScenarioError as exc:
                    if record.uid not in self._unfit:
                        self._unfit.add(record.uid)
                        log.warning("the scenario %r no longer fits the description and is left out: %s",
                                    record.id, exc)
                    continue
                compiled[record.uid] = scenario
                (global_ if record.session is None else by_session.setdefault(record.session, [])).append(scenario)
            self._global, self._by_session, self._removed = global_, by_session, book.removed
            self._compiled = compiled
            self._named = frozenset(s.operation.id for s in self._gathered(None, everything=True))
            self._spent.clear()  # a reset counts the fixtures' scenarios afresh: learnt again at one round trip each
            self._version = book.version

    def _unspent(self, records: Iterable[Record], hits: Callable[[Iterable[str]], dict[str, int]]) -> list[Record]:
        records = list(records)
        limits = {r.uid: _phases(r.spec)[-1][0] for r in records}
        counts = hits(uid for uid, limit in limits.items() if limit is not None)
        return [r for r in records if (limit := limits[r.uid]) is None or counts[r.uid] < limit]

    def declared(self, op: Operation, status: int) -> Declared:
        """`declared_error` of a status, worked out once, with the headers a server sends with it: a 401 of an
        operation that takes credentials carries its WWW-Authenticate challenge (RFC 9110), unless the description
        declares that header itself."""
        key = (op.id, status)
        if key not in self._declared:
            response = op.response(status)
            declares = response is not None and any(h.lower() == "www-authenticate" for h in response.headers)
            challenged = status == 401 and bool(op.security) and not declares
            headers = {"WWW-Authenticate": self._challenge(op)} if challenged and self._challenge is not None else {}
            self._declared[key] = (*declared_error(op, status, self._template), headers)
        return self._declared[key]

    def _effect_of(self, scenario: Scenario, spec: dict[str, Any], hit: int) -> Effect:
        """What `spec` (the scenario's, or its step's) does to its `hit`-th call. An error status the operation
        declares answers what `Prefer: code=` answers (the declared example's message and details; its declared
        headers are added where errors are rendered), a `code` or `message` of the scenario's own in their place."""
        latency = spec.get("latency", 0)
        delay = latency if isinstance(latency, int) else latency["min"] + int(
            unit(scenario.spec.get("seed", 0), "latency", hit) * (latency["max"] - latency["min"] + 1))
        effect = Effect(scenario.id, delay, headers=dict(spec.get("responseHeaders", {})),
                        disconnect=spec.get("break"), undeclared=spec.get("undeclared", False))
        status = spec.get("status")
        if effect.undeclared and "proxy" in spec:
            page = _PROXY_PAGE.format(status=status, phrase=HTTPStatus(status).phrase) if (
                spec["proxy"] == "html" and isinstance(status, int) and status in HTTPStatus._value2member_map_) else ""
            effect.status, effect.body = status, page.encode()
            effect.media_type = "text/html" if page else None
        elif effect.undeclared and "body" in spec:
            effect.status, effect.body = status, spec["body"]
            effect.media_type = "application/json"
        elif status is not None and "body" in spec:
            effect.status, effect.body = status, spec["body"]
        elif status is not None and status >= 400:
            message, details, headers = self.declared(scenario.operation, status)
            effect.error = MockError(status, spec.get("message") or message, code=spec.get("code"),
                                     details=None if "code" in spec else details, headers={**headers, **effect.headers})
        elif status is not None:
            effect.status = status
        return effect


def declared_error(op: Operation, status: int, template: Any = None) -> tuple[str, dict[str, Any] | None]:
    """What a real server would say for a status it is made to answer: the message and details of the response's
    own example where it gives one in the envelope's shape (`template`: the fixtures' envelope), else the
    description's first sentence (its Markdown code marks dropped) and no details."""
    response = op.response(status)
    examples = [value for media in (response.content.values() if response else ()) for value in media.examples.values()]
    if template is not None and examples:
        message = dig(examples[0], path_to(template, "{{message}}") or [])
        details = dig(examples[0], path_to(template, "{{details}}") or [])
        if isinstance(message, str):
            return message, details if isinstance(details, dict) else None
    text = (response.description if response else "").strip().replace("`", "")
    sentence = text.split(". ")[0].split("\n")[0].rstrip(".")
    return (sentence + "." if sentence else f"status {status}"), None


_DOES = frozenset({"status", "latency", "break", "steps", "newState"})


def _check_order(spec: dict[str, Any]) -> None:
    """`after`, `steps` and the state fields make sense together: steps carry what is done, each but the last for
    a number of calls; a state machine is read or moved."""
    if "steps" in spec:
        beside = next((key for key in [*_EFFECT, "times", "rate"] if key in spec), None)
        if beside is not None:
            raise ScenarioError(f"with `steps`, `{beside}` goes in each step, not beside them", f"/{beside}", "steps")
        steps = spec["steps"]
        for index, step in enumerate(steps[:-1]):
            if "times" not in step:
                raise ScenarioError("every step but the last needs `times`: the calls it answers before the next "
                                    "step", f"/steps/{index}", "required")
        if "newState" not in spec and not any(_DOES & step.keys() for step in steps):
            raise ScenarioError("the steps do nothing: give one a status, a latency or a break", "/steps",
                                "required")
    if "after" in spec and "rate" in spec:
        raise ScenarioError("`after` counts calls and `rate` draws them: give one of them", "/after", "rate")
    if "state" in spec and not {"requiredState", "newState"} & spec.keys():
        raise ScenarioError("`state` names a state machine: give the `requiredState` it must be in, the "
                            "`newState` it moves to, or both", "/state", "required")


def _has_content(op: Operation, status: int) -> bool:
    response = op.response(status)
    return bool(response and response.content)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
