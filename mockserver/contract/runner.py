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
from typing import Iterator
from urllib.parse import urlsplit

from schemathesis.engine import Status, events, from_schema
from schemathesis.engine.recorder import CheckNode, ScenarioRecorder
from schemathesis.specs.openapi.schemas import OpenApiSchema

from ..testing import MockServer
from .schema import load_contract

DEFAULT_MAX_EXAMPLES = 100  # the Kindgi run: about 20 s in-process on 2 cores, well inside the 2-minute budget
MOCK_ORIGIN = "http://127.0.0.1:4010"  # where `mockserver serve` listens: curl commands of an in-process run go there
PHASES = ["examples", "coverage", "fuzzing", "stateful"]
_GOT_BYTES = 300


@dataclass
class Options:
    spec: Path
    fixtures: Path | None
    url: str | None = None  # None: the mock, in-process
    token: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    max_examples: int = DEFAULT_MAX_EXAMPLES
    seed: int | None = None  # None: a fresh one, reported so the run can be repeated
    operations: list[str] = field(default_factory=list)


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

    @property
    def passed(self) -> bool:
        return not self.errors and not any(op.findings for op in self.operations.values())

    @property
    def requests(self) -> int:
        return sum(sum(op.statuses.values()) for op in self.operations.values())


def run(options: Options) -> RunResult:
    """Raises LoadError / UnknownOperation before any call when the description or fixtures are unusable."""
    contract = load_contract(options.spec, options.fixtures, token=options.token, headers=options.headers,
                             operations=options.operations, default_token=options.url is None)
    schema = contract.schema
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
    _configure(schema, options.max_examples, seed, sanitize=options.url is not None)
    started = time.monotonic()
    with _target(options, schema) as (base_url, shown):
        schema.config.update(base_url=base_url)
        result = RunResult(shown, seed, options.max_examples, contract.examples)
        in_process = f"http://{urlsplit(base_url).netloc}" if options.url is None else None
        for event in from_schema(schema).execute():
            _fold(result, event, in_process)
    result.elapsed = time.monotonic() - started
    return result


def _configure(schema: OpenApiSchema, max_examples: int, seed: int, *, sanitize: bool) -> None:
    """Every phase and check; the same seed and no example database make the same requests again."""
    schema.config.update(continue_on_failure=True)
    schema.config.seed = seed
    schema.config.generation.update(max_examples=max_examples, database="none")
    schema.config.phases.update(phases=PHASES)
    schema.config.checks.update(included_check_names=["all"])
    # a real deployment's credentials stay out of the output; the mock's fixture tokens make runnable curls
    schema.config.output.sanitization.update(enabled=sanitize)


@contextmanager
def _target(options: Options, schema: OpenApiSchema) -> Iterator[tuple[str, str]]:
    """The base URL to call and how to name the target. Without a URL: the mock of the same description and
    fixtures on a free port, with strict auth (an undeclared token is a 401, as a real API answers)."""
    if options.url is not None:
        yield options.url.rstrip("/"), options.url
        return
    server = MockServer(options.spec, options.fixtures, strict_auth=True).start()
    try:
        yield server.url + schema.declared_base_path().rstrip("/"), "the mock, in-process (strict auth)"
    finally:
        server.stop()


def _fold(result: RunResult, event: events.EngineEvent, in_process: str | None) -> None:
    if isinstance(event, events.ScenarioFinished):
        _fold_scenario(result, event.recorder, in_process)
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
