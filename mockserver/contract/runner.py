"""Running the contract: Schemathesis' engine (every phase, every check, ours included) against a URL or the mock
served in-process, its events folded into what a person acts on: per operation, the statuses seen and each
check's passes and failures; per failure, what was expected, what came back and a curl that repeats it."""
from __future__ import annotations

import json
import random
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

from schemathesis import Case
from schemathesis.engine import Status, events, from_schema
from schemathesis.engine.recorder import CheckNode, ScenarioRecorder
from schemathesis.generation import GenerationMode
from schemathesis.generation.meta import TestPhase
from schemathesis.specs.openapi.schemas import OpenApiSchema

from ..core.pipeline import Pipeline
from ..testing import MockServer
from .examples import usable_token
from .schema import load_contract

DEFAULT_MAX_EXAMPLES = 100  # the Kindgi run: about 20 s in-process on 2 cores, well inside the 2-minute budget
MOCK_ORIGIN = "http://127.0.0.1:4010"  # where `mockserver serve` listens: curl commands of an in-process run go there
PHASES = ["examples", "coverage", "fuzzing", "stateful"]
ALL_CHECKS = ["all"]
_GOT_BYTES = 300


@dataclass
class Options:
    spec: Path
    fixtures: Path | None
    url: str | None = None  # None: the mock, in-process
    token: str | None = None  # bearer, OAuth 2, OpenID Connect and API keys, where each operation wants it
    basic: tuple[str, str] | None = None  # user and password, for operations that take HTTP basic
    headers: dict[str, str] = field(default_factory=dict)
    max_examples: int = DEFAULT_MAX_EXAMPLES  # per operation and phase (the coverage phase is bounded by coverage_cap)
    seed: int | None = None  # None: a fresh one, reported so the run can be repeated
    operations: list[str] = field(default_factory=list)  # only these, by operationId or label (`GET /path`)
    skip: list[str] = field(default_factory=list)  # operations left out, by a regex of their label
    phases: list[str] = field(default_factory=lambda: list(PHASES))
    checks: list[str] = field(default_factory=lambda: list(ALL_CHECKS))  # Schemathesis' names; ours are among "all"
    coverage_cap: int | None = None  # the coverage phase's first requests per operation; None: all of them
    negative_coverage: bool = True  # the coverage phase also breaks each rule of the description on purpose
    # Schemathesis also generates the security schemes' parameters (a query API key travels as one) and cases
    # that leave them out; False: only the run's own credentials, on every call
    security_parameters: bool = True
    request_timeout: float | None = None  # seconds; None: Schemathesis' default
    filter_failure: Callable[..., bool] | None = None  # another Schemathesis `filter_failure` hook


@dataclass
class Finding:
    operation: str
    check: str
    title: str
    expected: str
    got: str
    curl: str
    count: int = 1


@dataclass
class OperationResult:
    label: str  # "GET /v1/test-sets"
    operation_id: str
    statuses: Counter[int] = field(default_factory=Counter)
    passed: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    findings: dict[tuple[str, str], Finding] = field(default_factory=dict)  # by (check, title)


@dataclass
class RunResult:
    target: str
    seed: int
    max_examples: int
    examples: dict[str, int]  # operationId -> request value combinations from the fixtures
    operations: dict[str, OperationResult] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # every check the run had, in the order they first ran
    elapsed: float = 0.0
    declared: int = 0  # operations in the description, before --operation and skip chose among them
    filtered: int = 0  # failures a filter_failure hook set aside (explained by the contract, or by the caller's)
    notes: list[str] = field(default_factory=list)  # what the run left out, and why

    @property
    def passed(self) -> bool:
        return not self.errors and not any(op.findings for op in self.operations.values())

    @property
    def requests(self) -> int:
        return sum(sum(op.statuses.values()) for op in self.operations.values())

    def findings(self) -> list[Finding]:
        return [finding for op in self.operations.values() for finding in op.findings.values()]

    def failures(self) -> Counter[str]:
        """Failed checks, by name, over every operation."""
        total: Counter[str] = Counter()
        for op in self.operations.values():
            total.update(op.failed)
        return total


def run(options: Options, mock: MockServer | None = None) -> RunResult:
    """Raises LoadError / UnknownOperation before any call when the description or fixtures are unusable.
    Without a URL the mock of the same description and fixtures answers in-process: `mock` when given (built, not
    started: the run starts and stops it), else one made here, with strict auth when the fixtures declare a usable
    token (an undeclared token is then a 401, as a real API answers). Either way the mock's own pipeline is what
    the contract reads the description and fixtures from: they are loaded once."""
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
    started = time.monotonic()
    server = mock if options.url is None else None
    if options.url is None and server is None:
        server = MockServer(options.spec, options.fixtures, strict_auth=True)
    pipeline = server.pipeline if server else None
    if pipeline is not None and pipeline.auth.strict and usable_token(pipeline.auth) is None:
        pipeline.auth.strict = False  # no token is declared: strict, the mock would answer every call 401
    contract = load_contract(options.spec, options.fixtures, token=options.token, basic=options.basic,
                             headers=options.headers, operations=options.operations,
                             default_token=options.url is None, pipeline=pipeline,
                             security_parameters=options.security_parameters)
    schema = contract.schema
    for regex in options.skip:
        schema = schema.exclude(name_regex=regex)
    checks, notes = _checks(options.checks, pipeline if contract.credentials else None)
    _configure(schema, options, checks, seed, sanitize=options.url is not None)
    with _serving(server, options, schema) as (base_url, shown):
        schema.config.update(base_url=base_url)  # before anything reads the operations: they keep the URL they saw
        result = RunResult(shown, seed, options.max_examples, contract.examples, declared=len(contract.operations),
                           notes=notes)
        in_process = f"http://{urlsplit(base_url).netloc}" if server else None
        for event in from_schema(schema).execute():
            fold(result, event, in_process)
    result.elapsed = time.monotonic() - started
    return result


def _checks(wanted: list[str], pipeline: Pipeline | None) -> tuple[dict[str, list[str]], list[str]]:
    """Schemathesis' included and excluded check names, and why a check was left out. `pipeline`: the in-process
    mock's, when the run sends credentials."""
    if pipeline is None or pipeline.auth.strict or not ({"all", "ignored_auth"} & set(wanted)):
        return {"included": wanted, "excluded": []}, []
    return {"included": wanted, "excluded": ["ignored_auth"]}, [
        "ignored_auth left out: the fixtures declare no usable token, so the mock lets any well-formed credential in"]


def _configure(schema: OpenApiSchema, options: Options, checks: dict[str, list[str]], seed: int, *,
               sanitize: bool) -> None:
    """The options' phases and checks; the same seed and no example database make the same requests again."""
    schema.config.update(continue_on_failure=True, request_timeout=options.request_timeout)
    schema.config.seed = seed
    schema.config.generation.update(max_examples=options.max_examples, database="none")
    if not options.negative_coverage:
        schema.config.phases.coverage.generation.update(modes=[GenerationMode.POSITIVE])
    schema.config.phases.update(phases=options.phases)
    schema.config.checks.update(included_check_names=checks["included"], excluded_check_names=checks["excluded"])
    if options.coverage_cap is not None:
        schema.hook("filter_case")(CoverageCap(options.coverage_cap))
    if options.filter_failure is not None:
        schema.hook("filter_failure")(options.filter_failure)
    # a real deployment's credentials stay out of the output; the mock's fixture tokens make runnable curls
    schema.config.output.sanitization.update(enabled=sanitize)


class CoverageCap:
    """Schemathesis `filter_case` hook: lets through the coverage phase's first `cap` requests per operation (the
    coverage phase is not bounded by max_examples: over 1,000 requests for some operations of big descriptions)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.seen: Counter[str] = Counter()

    def __call__(self, context: Any, case: Case) -> bool:
        if case.meta is None or case.meta.phase.name is not TestPhase.COVERAGE:
            return True
        self.seen[case.operation.label] += 1
        return self.seen[case.operation.label] <= self.cap


@contextmanager
def _serving(server: MockServer | None, options: Options, schema: OpenApiSchema) -> Iterator[tuple[str, str]]:
    """The base URL to call and how to name the target: the URL, or the in-process mock, started for the run."""
    if server is None:
        assert options.url is not None
        yield options.url.rstrip("/"), options.url
        return
    server.start()
    strict = " (strict auth)" if server.pipeline.auth.strict else ""
    try:
        yield server.url + schema.declared_base_path().rstrip("/"), f"the mock, in-process{strict}"
    finally:
        server.stop()


def fold(result: RunResult, event: events.EngineEvent, in_process: str | None = None) -> None:
    """Add one of Schemathesis' engine events to `result`. `in_process`: the origin of an in-process mock, whose
    curl commands are rewritten to `mockserver serve`'s."""
    if isinstance(event, events.ScenarioFinished):
        _fold_scenario(result, event.recorder, in_process)
        result.filtered += sum(event.recorder.filtered_failures.values())
    elif isinstance(event, (events.NonFatalError, events.FatalError)):
        error = (f"{event.label}: {event.info.format()}" if isinstance(event, events.NonFatalError)
                 else f"{type(event.exception).__name__}: {event.exception}")
        if error not in result.errors:  # the same error in every phase is one error
            result.errors.append(error)


def _fold_scenario(result: RunResult, recorder: ScenarioRecorder, in_process: str | None) -> None:
    def operation(case_id: str) -> OperationResult:
        op = recorder.cases[case_id].value.operation
        found = result.operations.get(op.label)
        if found is None:
            found = result.operations[op.label] = OperationResult(op.label, str(op.definition.raw.get("operationId", "")))
        return found

    for case_id, interaction in recorder.interactions.items():
        if interaction.response is not None and case_id in recorder.cases:
            operation(case_id).statuses[interaction.response.status_code] += 1
    for case_id, checks in recorder.checks.items():
        if case_id not in recorder.cases:
            continue
        op = operation(case_id)
        for check in checks:
            if check.name not in result.checks:
                result.checks.append(check.name)
            if check.status == Status.SUCCESS:
                op.passed[check.name] += 1
            elif check.status == Status.FAILURE:
                op.failed[check.name] += 1
                finding = _finding(recorder, case_id, check, in_process)
                key = (check.name, finding.title)
                if key in op.findings:
                    op.findings[key].count += 1
                else:
                    op.findings[key] = finding


def _finding(recorder: ScenarioRecorder, case_id: str, check: CheckNode, in_process: str | None) -> Finding:
    """`in_process`: the origin of the in-process mock, which is gone after the run; its curl commands go to
    `mockserver serve` instead."""
    info = check.failure_info
    assert info is not None, "a failed check carries its failure"
    failure = info.failure
    response = recorder.find_response(case_id=failure.case_id or case_id)
    expected = getattr(failure, "expected", None) or failure.message.strip() or failure.title
    got = getattr(failure, "got", None) or _summary(response)
    curl = getattr(failure, "curl", None) or info.code_sample
    if in_process:
        curl = curl.replace(in_process, MOCK_ORIGIN)
    return Finding(failure.operation or "", check.name, failure.title, expected, got, curl)


def _summary(response: object) -> str:
    """Status and the start of the body, on one line."""
    status = getattr(response, "status_code", None)
    if status is None:
        return "no response"
    content: bytes = getattr(response, "content", b"") or b""
    try:
        body = json.dumps(json.loads(content), ensure_ascii=False)
    except ValueError:
        body = content.decode("utf-8", "replace")
    return f"{status} {body[:_GOT_BYTES]}{'…' if len(body) > _GOT_BYTES else ''}".strip()
