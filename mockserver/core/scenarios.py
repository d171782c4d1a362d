"""Scenarios: error cases and faults on demand, declared in fixtures or set while the server runs.

A scenario matches requests (operation, path parameters, query values, headers, the caller's token) and says
what to do: answer a status (the operation's own error, or a body of its own), add latency, fail the first N
calls, fail a seeded fraction of calls, or break the connection. Counts are kept under a lock, so `times: 2`
is exact however many requests arrive at once."""
from __future__ import annotations

import itertools
import random
import threading
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from .errors import MockError
from .http import MockRequest
from .schemas import instance_pointer, iter_errors
from .spec import Operation

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
    },
    "anyOf": [{"required": ["status"]}, {"required": ["latency"]}, {"required": ["break"]}],
    "dependentRequired": {"method": ["path"], "path": ["method"], "body": ["status"], "seed": ["rate"]},
    "not": {"required": ["times", "rate"]},
}
_VALIDATOR = Draft202012Validator(SCENARIO_SCHEMA)


class ScenarioError(ValueError):
    """A scenario that cannot be set: says what is wrong and where (a JSON pointer in the scenario)."""

    def __init__(self, message: str, pointer: str = "", rule: str = "") -> None:
        super().__init__(message)
        self.pointer = pointer
        self.rule = rule


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


@dataclass
class Scenario:
    id: str
    spec: dict[str, Any]
    operation: Operation
    origin: str  # "fixtures" or "runtime"
    remaining: int | None = None
    rng: random.Random = field(default_factory=random.Random)  # draws `rate` and latency ranges, seeded
    hits: int = 0

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

    def as_dict(self) -> dict[str, Any]:
        shown = {"id": self.id, **{k: v for k, v in self.spec.items() if k != "id"}, "origin": self.origin,
                 "hits": self.hits}
        if self.remaining is not None:
            shown["remaining"] = self.remaining
        return shown


class Scenarios:
    """The scenarios in force: those from the fixtures, then those set at run time (newest first wins)."""

    def __init__(self, operations: dict[str, Operation]) -> None:
        self._operations = operations
        self._by_route = {(op.method, op.path): op for op in operations.values()}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._baseline: list[tuple[dict[str, Any], str]] = []
        self._active: list[Scenario] = []

    def compile(self, spec: Any, origin: str, check_body: Any = None) -> Scenario:
        """A checked scenario, or ScenarioError naming the first problem."""
        if isinstance(spec, dict) and not {"status", "latency", "break"} & spec.keys():
            raise ScenarioError("a scenario must do something: give a status, a latency or a break", "", "required")
        for error in iter_errors(_VALIDATOR, spec):
            raise ScenarioError(error.message, instance_pointer(error), str(error.validator))
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
        if status is not None and not op.declares(status):
            raise ScenarioError(f"{op.id} does not declare status {status}; it declares "
                                + ", ".join(op.declared_statuses), "/status", "status")
        if "latency" in spec and isinstance(spec["latency"], dict) and spec["latency"]["min"] > spec["latency"]["max"]:
            raise ScenarioError("latency.min is above latency.max", "/latency", "range")
        if status is not None and status < 400 and "body" not in spec and _has_content(op, status):
            raise ScenarioError(f"status {status} needs a `body` (errors take the API's envelope on their own)",
                                "/status", "body")
        if "body" in spec and check_body is not None:
            check_body(op, status, spec["body"])
        return Scenario(spec.get("id") or f"s{next(self._ids)}", dict(spec), op, origin, spec.get("times"),
                        random.Random(spec.get("seed", 0)))

    def set_baseline(self, specs: list[tuple[dict[str, Any], str]], check_body: Any = None) -> None:
        """The fixtures' scenarios (spec, origin): checked now, and restored by `reset`."""
        compiled = [self.compile(spec, origin, check_body) for spec, origin in specs]
        self._baseline = specs
        self._check_body = check_body
        with self._lock:
            self._active = compiled

    def adopt(self, previous: "Scenarios", check_body: Any = None) -> list[str]:
        """Take over the scenarios set at run time from the state this one replaces (a reload); those that no
        longer fit the description are dropped, and said why."""
        dropped = []
        with previous._lock:
            runtime = [s for s in previous._active if s.origin == "runtime"]
        for old in reversed(runtime):
            try:
                scenario = self.compile(old.spec, "runtime", check_body)
            except ScenarioError as exc:
                dropped.append(f"{old.id}: {exc}")
                continue
            scenario.id, scenario.remaining, scenario.hits, scenario.rng = old.id, old.remaining, old.hits, old.rng
            self.add(scenario)
        return dropped

    def reset(self) -> None:
        self.set_baseline(self._baseline, getattr(self, "_check_body", None))

    def add(self, scenario: Scenario) -> None:
        with self._lock:
            if any(s.id == scenario.id for s in self._active):
                raise ScenarioError(f"a scenario with id {scenario.id!r} is already set", "/id", "unique")
            self._active.insert(0, scenario)

    def remove(self, scenario_id: str | None = None) -> int:
        """Remove one scenario, or all of them; how many were removed."""
        with self._lock:
            before = len(self._active)
            self._active = [s for s in self._active if scenario_id is not None and s.id != scenario_id]
            return before - len(self._active)

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return [s.as_dict() for s in self._active]

    def effect(self, op: Operation, path_params: dict[str, str], query: dict[str, list[str]],
               request: MockRequest, token: str | None) -> Effect | None:
        """The effect of the first scenario that matches and is due; counts are consumed atomically."""
        with self._lock:
            for scenario in self._active:
                if not scenario.matches(op, path_params, query, request, token):
                    continue
                if "rate" in scenario.spec and scenario.rng.random() >= scenario.spec["rate"]:
                    continue
                scenario.hits += 1
                if scenario.remaining is not None:
                    scenario.remaining -= 1
                    if scenario.remaining == 0:
                        self._active.remove(scenario)
                return self._effect_of(scenario)
        return None

    @staticmethod
    def _effect_of(scenario: Scenario) -> Effect:
        spec = scenario.spec
        latency = spec.get("latency", 0)
        delay = latency if isinstance(latency, int) else scenario.rng.randint(latency["min"], latency["max"])
        effect = Effect(scenario.id, delay, headers=dict(spec.get("responseHeaders", {})),
                        disconnect=spec.get("break"))
        status = spec.get("status")
        if status is not None and "body" in spec:
            effect.status, effect.body = status, spec["body"]
        elif status is not None and status >= 400:
            effect.error = MockError(status, spec.get("message") or declared_message(scenario.operation, status),
                                     code=spec.get("code"), details={"scenario": scenario.id},
                                     headers=effect.headers)
        elif status is not None:
            effect.status = status
        return effect


def declared_message(op: Operation, status: int) -> str:
    """The description's own words for the status (its first sentence), as a real server would say it."""
    response = op.response(status)
    text = (response.description if response else "").strip()
    sentence = text.split(". ")[0].split("\n")[0].rstrip(".")
    return sentence + "." if sentence else f"status {status}"


def _has_content(op: Operation, status: int) -> bool:
    response = op.response(status)
    return bool(response and response.content)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
