"""Scenarios: error cases and faults on demand, declared in fixtures or set while the server runs.

A scenario matches requests (operation, path parameters, query values, headers, the caller's token) and says
what to do: answer a status (the operation's own error, or a body of its own), add latency, fail the first N
calls, fail a seeded fraction of calls, or break the connection. Counts are kept in the store, atomically, so
`times: 2` is exact however many requests arrive at once, in however many workers and replicas."""
from __future__ import annotations

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
from ..state import Book, Record, Store, unit
from .envelope import dig, path_to

log = logging.getLogger("mockserver")

SCENARIO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
        "description": {"type": "string"},
        "operationId": {"type": "string", "minLength": 1},
        "method": {"type": "string", "pattern": "^[A-Za-z]+$"},
        "path": {"type": "string", "pattern": "^/"},
        "pathParams": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        "query": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "token": {"type": "string", "minLength": 1},
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
        "times": {"type": "integer", "minimum": 1},
        "rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "seed": {"type": "integer"},
        "break": {"enum": ["close", "truncate"]},
        "undeclared": {"type": "boolean"},
        "proxy": {"enum": ["html", "empty"]},
    },
    "anyOf": [{"required": ["status"]}, {"required": ["latency"]}, {"required": ["break"]}],
    "dependentRequired": {"method": ["path"], "path": ["method"], "body": ["status"], "seed": ["rate"],
                          "undeclared": ["status"], "proxy": ["undeclared"]},
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


@dataclass
class Scenario:
    id: str
    uid: str  # names its counts in the store
    spec: dict[str, Any]
    operation: Operation
    origin: str  # "fixtures" or "runtime"
    session: str | None = None

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

    @property
    def times(self) -> int | None:
        return self.spec.get("times")

    def with_id(self, scenario_id: str, uid: str | None = None) -> Scenario:
        return replace(self, id=scenario_id, uid=uid or self.uid)

    def as_dict(self, hits: int) -> dict[str, Any]:
        shown = {"id": self.id, **{k: v for k, v in self.spec.items() if k != "id"}, "origin": self.origin,
                 "hits": hits}
        if self.session is not None:
            shown["session"] = self.session
        if self.times is not None:
            shown["remaining"] = max(self.times - hits, 0)
        return shown


class Scenarios:
    """The scenarios in force: the fixtures' and those set at run time, which live in the store (shared by every
    worker and replica there). Precedence: the request's session's own (newest first), then the global ones
    (newest first), then the fixtures'. The store's book is compiled against this description once per version,
    so a request that matches no scenario costs no round trip; one that matches is counted in the store,
    atomically."""

    def __init__(self, operations: dict[str, Operation], store: Store, check_body: Any = None,
                 envelope: Any = None) -> None:
        """`envelope`: the fixtures' error template, to read a declared example's message and details."""
        self._operations = operations
        self._template = envelope
        self._declared: dict[tuple[str, int], tuple[str, dict[str, Any] | None]] = {}
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
        self._spent: set[str] = set()  # uids whose `times` are used up, as this process learnt it
        self._unfit: set[str] = set()  # uids already said not to fit this description

    def compile(self, spec: Any, origin: str, uid: str = "", session: str | None = None) -> Scenario:
        """A checked scenario, or ScenarioError naming the first problem."""
        if isinstance(spec, dict) and not {"status", "latency", "break"} & spec.keys():
            raise ScenarioError("a scenario must do something: give a status, a latency or a break", "", "required")
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
        status = spec.get("status")
        undeclared = spec.get("undeclared", False)
        if status is not None and not op.declares(status) and not undeclared:
            raise ScenarioError(f"{op.id} does not declare status {status}; it declares "
                                + ", ".join(op.declared_statuses) + " (a gateway's or rate limiter's answer the "
                                "description does not declare: add \"undeclared\": true)", "/status", "status")
        if undeclared and (status < 400 or op.declares(status)):
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
        return Scenario(spec.get("id", ""), uid, dict(spec), op, origin, session)

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
        """The scenarios a call of the session sees (without one: every scenario), in the order they are tried;
        those whose `times` are used up are gone."""
        scenarios = self._in_force(session, everything=session is None)
        hits = self._store.hits(s.uid for s in scenarios)
        return [s.as_dict(hits[s.uid]) for s in scenarios if s.times is None or hits[s.uid] < s.times]

    # -- the request path -----------------------------------------------------------------------------------
    def effect(self, op: Operation, path_params: dict[str, str], query: dict[str, list[str]],
               request: MockRequest, token: str | None, session: str | None = None) -> Effect | None:
        """The effect of the first scenario that matches and is due; its firing is counted in the store."""
        for scenario in self._in_force(session):
            if scenario.uid in self._spent or not scenario.matches(op, path_params, query, request, token):
                continue
            spec = scenario.spec
            if "rate" in spec and unit(spec.get("seed", 0), "rate", self._store.draw(scenario.uid)) >= spec["rate"]:
                continue
            hit = self._store.hit(scenario.uid, scenario.times)
            if hit < 0 or hit == scenario.times:
                self._spent.add(scenario.uid)
            if hit < 0:
                continue
            return self._effect_of(scenario, hit)
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
        """Compile the store's book when it changed; a scenario that no longer fits this description (after a
        reload, or set through a replica serving another) is left out, and said once."""
        book = self._store.book()
        if book.version == self._version:
            return
        with self._lock:
            if book.version == self._version:
                return
            by_session: dict[str, list[Scenario]] = {}
            global_: list[Scenario] = []
            for record in book.runtime:
                try:
                    scenario = self.compile(record.spec, "runtime", record.uid, record.session).with_id(record.id)
                except ScenarioError as exc:
                    if record.uid not in self._unfit:
                        self._unfit.add(record.uid)
                        log.warning("the scenario %r no longer fits the description and is left out: %s",
                                    record.id, exc)
                    continue
                (global_ if record.session is None else by_session.setdefault(record.session, [])).append(scenario)
            self._global, self._by_session, self._removed = global_, by_session, book.removed
            self._named = frozenset(s.operation.id for s in self._gathered(None, everything=True))
            self._version = book.version

    def _unspent(self, records: Iterable[Record], hits: Callable[[Iterable[str]], dict[str, int]]) -> list[Record]:
        records = list(records)
        counts = hits(r.uid for r in records if "times" in r.spec)
        return [r for r in records if "times" not in r.spec or counts[r.uid] < r.spec["times"]]

    def declared(self, op: Operation, status: int) -> tuple[str, dict[str, Any] | None]:
        """`declared_error` of a status, worked out once."""
        key = (op.id, status)
        if key not in self._declared:
            self._declared[key] = declared_error(op, status, self._template)
        return self._declared[key]

    def _effect_of(self, scenario: Scenario, hit: int) -> Effect:
        spec = scenario.spec
        latency = spec.get("latency", 0)
        delay = latency if isinstance(latency, int) else latency["min"] + int(
            unit(spec.get("seed", 0), "latency", hit) * (latency["max"] - latency["min"] + 1))
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
            message, _ = self.declared(scenario.operation, status)
            effect.error = MockError(status, spec.get("message") or message, code=spec.get("code"),
                                     details={"scenario": scenario.id}, headers=effect.headers)
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


def _has_content(op: Operation, status: int) -> bool:
    response = op.response(status)
    return bool(response and response.content)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
