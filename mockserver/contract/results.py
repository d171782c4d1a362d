"""What a run saw, folded from Schemathesis' engine events into what a person acts on: per operation, the statuses
its own method answered (probes with other methods apart), what the calls that carried the run's credentials got,
and each check's passes, failures and the answers it did not apply to; per failure, what was expected, what came
back and a curl that repeats it."""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from itertools import takewhile
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from schemathesis import Case
from schemathesis.engine import Status, events
from schemathesis.engine.recorder import CheckNode, Request, ScenarioRecorder
from schemathesis.openapi.checks import (
    IgnoredAuth,
    JsonSchemaError,
    MissingHeaders,
    UndefinedStatusCode,
    UnsupportedMethodResponse,
)

from .credentials import Sent

MOCK_ORIGIN = "http://127.0.0.1:4010"  # where `mockserver serve` listens: curl commands of an in-process run go there
_GOT_BYTES = 300


@dataclass
class Finding:
    """One check failing one operation for one cause and rule, however often (`count`)."""

    operation: str
    check: str
    title: str
    expected: str
    got: str
    curl: str
    count: int = 1
    cause: str = ""  # what broke the rule: a body field, header, parameter or status ("body /notes/*/id")
    rule: str = ""  # the rule broken there ("type", "Value greater than maximum")
    also: str = ""  # another curl that repeats it, when the run sent another

    @property
    def family(self) -> str:
        """The operation's family: its path up to the first templated segment (`/flows` for `PUT /flows/{id}`)."""
        path = self.operation.partition(" ")[2]
        return "/".join(takewhile(lambda part: not part.startswith("{"), path.split("/"))) or "/"

    @property
    def root(self) -> tuple[str, ...]:
        """What the findings of one root cause share: the check and a cause that names a header, parameter, field
        or status with its rule (the same fault wherever it shows: a malformed header on every operation), or, for
        a cause that is only the failure's title, the family too (a 500 of /flows and one of /owners are two)."""
        return (self.check, self.cause) if self.rule else (self.check, self.family, self.cause)


@dataclass
class Problem:
    """One root cause: the findings of one check for one cause, whatever the rules, the operations and however
    often, so a malformed header on every operation is one problem, not hundreds (see `Finding.root`)."""

    check: str
    cause: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def families(self) -> list[str]:
        return list(dict.fromkeys(finding.family for finding in self.findings))

    @property
    def count(self) -> int:
        """Occurrences: answers that failed for it."""
        return sum(finding.count for finding in self.findings)

    @property
    def operations(self) -> list[str]:
        return list(dict.fromkeys(finding.operation for finding in self.findings))

    @property
    def rules(self) -> list[str]:
        return list(dict.fromkeys(finding.rule for finding in self.findings if finding.rule))

    @property
    def examples(self) -> list[str]:
        """Two curls that repeat it (another rule's first, where there is one)."""
        curls = [finding.curl for finding in self.findings] + [finding.also for finding in self.findings]
        return list(dict.fromkeys(curl for curl in curls if curl))[:2]


@dataclass
class OperationResult:
    label: str  # "GET /v1/test-sets"
    operation_id: str
    declared: list[str] = field(default_factory=list)  # its declared responses' keys: "200", "4XX", "default"
    must_apply: list[str] = field(default_factory=list)  # checks that must apply once it answered with success
    sent: Sent | None = None  # the run's credentials for it; None when it sends none
    statuses: Counter[int] = field(default_factory=Counter)  # answers to its own method
    probes: Counter[int] = field(default_factory=Counter)  # answers to other methods: no answer of the operation's
    authenticated: Counter[int] = field(default_factory=Counter)  # answers to the calls that carried `sent`
    checked: int = 0  # answers the checks ran on
    sample: Request | None = None  # a request it answered with success (with the run's credentials, if any)
    passed: Counter[str] = field(default_factory=Counter)  # by check: answers it passed
    failed: Counter[str] = field(default_factory=Counter)  # by check: answers it failed
    findings: dict[tuple[str, str, str], Finding] = field(default_factory=dict)  # by (check, cause, rule)

    def skipped(self, check: str) -> int:
        """Answers the check ran on but did not apply to."""
        return max(self.checked - self.passed[check] - self.failed[check], 0)

    @property
    def succeeded(self) -> int:
        return sum(count for status, count in self.statuses.items() if 200 <= status < 300)

    @property
    def declares_success(self) -> bool:
        return any(key.startswith("2") for key in self.declared)

    def observed(self) -> dict[str, int]:
        """By declared response key, how many answers it covered (an answer counts for its own status's key,
        else its range's, `4XX`, else `default`)."""
        seen = dict.fromkeys(self.declared, 0)
        for status, count in self.statuses.items():
            key = response_key(status, self.declared)
            if key is not None:
                seen[key] += count
        return seen


def response_key(status: int, declared: list[str]) -> str | None:
    """The declared response an answer of `status` is (None: an undeclared status)."""
    by_key = {key.upper(): key for key in declared}
    for key in (str(status), f"{str(status)[0]}XX", "DEFAULT"):
        if key in by_key:
            return by_key[key]
    return None


@dataclass
class RunResult:
    target: str
    seed: int
    max_examples: int
    examples: dict[str, int]  # operationId -> request value combinations from the fixtures
    values: dict[str, dict[str, int]] = field(default_factory=dict)  # by source ("discovered", "data") likewise
    operations: dict[str, OperationResult] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # every check the run had, in the order they first ran
    elapsed: float = 0.0
    declared: int = 0  # operations in the description, before --operation and skip chose among them
    filtered: int = 0  # failures a filter_failure hook set aside (explained by the contract, or by the caller's)
    notes: list[str] = field(default_factory=list)  # what the run left out, and why
    gaps: list[Gap] = field(default_factory=list)  # what the run had to see and did not: it fails closed
    excused: list[Gap] = field(default_factory=list)  # gaps of operations the run was told to allow untested
    min_responses: float | None = None  # percent of declared responses the run must observe, if any
    mode: str = "all"  # Schemathesis' generation mode: positive, negative or all
    phases: list[str] = field(default_factory=list)  # Schemathesis' phases the run had
    blocked: str | None = None  # why the preflight stopped the run before any check (see preflight.py)

    @property
    def passed(self) -> bool:
        return (not self.blocked and not self.errors and not self.gaps and not self.too_few_responses
                and not any(op.findings for op in self.operations.values()))

    @property
    def responses(self) -> tuple[int, int]:
        """Declared responses observed, and declared, over every operation."""
        seen = [count for op in self.operations.values() for count in op.observed().values()]
        return sum(1 for count in seen if count), len(seen)

    @property
    def response_percent(self) -> float:
        observed, declared = self.responses
        return 100.0 * observed / declared if declared else 100.0

    @property
    def too_few_responses(self) -> bool:
        return self.min_responses is not None and self.response_percent < self.min_responses

    @property
    def requests(self) -> int:
        return sum(sum(op.statuses.values()) + sum(op.probes.values()) for op in self.operations.values())

    def findings(self) -> list[Finding]:
        return [finding for op in self.operations.values() for finding in op.findings.values()]

    def problems(self) -> list[Problem]:
        """The findings grouped by root cause (`Finding.root`), in the operations' order."""
        grouped: dict[tuple[str, ...], Problem] = {}
        for op in sorted(self.operations.values(), key=lambda op: op.label):
            for finding in op.findings.values():
                grouped.setdefault(finding.root, Problem(finding.check, finding.cause)).findings.append(finding)
        return list(grouped.values())

    def failures(self) -> Counter[str]:
        """Failed checks, by name, over every operation."""
        total: Counter[str] = Counter()
        for op in self.operations.values():
            total.update(op.failed)
        return total


@dataclass
class Gap:
    """Something the run had to see to mean anything and did not: the credentials refused, no success answer, or
    a check that never applied."""

    kind: str  # "credentials", "success" or "check"
    operation: str  # its label
    detail: str  # what was seen instead, for the report


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
            found = result.operations[op.label] = OperationResult(
                op.label, str(op.definition.raw.get("operationId", "")))
        return found

    for case_id, interaction in recorder.interactions.items():
        if interaction.response is None or case_id not in recorder.cases:
            continue
        op, status = operation(case_id), interaction.response.status_code
        if interaction.request.method.upper() != recorder.cases[case_id].value.operation.method.upper():
            op.probes[status] += 1
            continue
        op.statuses[status] += 1
        authenticated = op.sent is not None and carries(interaction.request, op.sent)
        if authenticated:
            op.authenticated[status] += 1
        if op.sample is None and 200 <= status < 300 and (authenticated or op.sent is None):
            op.sample = interaction.request
    for case_id, checks in recorder.checks.items():
        if case_id not in recorder.cases or not checks:
            continue
        op = operation(case_id)
        op.checked += 1
        verdicts: dict[str, Status] = {}
        for check in checks:
            if check.name not in result.checks:
                result.checks.append(check.name)
            if check.status == Status.FAILURE:
                verdicts[check.name] = Status.FAILURE
                keep(op, _finding(recorder, case_id, check, in_process))
            elif check.status == Status.SUCCESS:
                verdicts.setdefault(check.name, Status.SUCCESS)
        for name, verdict in verdicts.items():
            (op.failed if verdict == Status.FAILURE else op.passed)[name] += 1


def carries(request: Request, sent: Sent) -> bool:
    """Whether a recorded request carried every one of the run's credentials for its operation (a case made
    without them, or with Schemathesis' invalid ones, did not)."""
    headers = {name.lower(): values[0] if values else "" for name, values in request.headers.items()}
    query = dict(parse_qsl(urlsplit(request.uri).query, keep_blank_values=True))
    cookies = dict(part.strip().partition("=")[::2] for part in headers.get("cookie", "").split(";") if "=" in part)
    return (all(headers.get(name.lower()) == value for name, value in sent.headers.items())
            and all(query.get(name) == value for name, value in sent.query.items())
            and all(cookies.get(name) == value for name, value in sent.cookies.items()))


def keep(op: OperationResult, finding: Finding) -> None:
    """Add a finding to `op`: a new (check, cause, rule) is kept, another occurrence counted (and its curl kept as
    `also` when it differs)."""
    key = (finding.check, finding.cause, finding.rule)
    kept = op.findings.get(key)
    if kept is None:
        op.findings[key] = finding
        return
    kept.count += 1
    if not kept.also and finding.curl != kept.curl:
        kept.also = finding.curl


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
    case = recorder.cases.get(failure.case_id or case_id) or recorder.cases.get(case_id)
    cause, rule = _cause(check.name, failure, case.value if case else None, response)
    return Finding(failure.operation or "", check.name, failure.title, expected, got, curl, cause=cause, rule=rule)


def _cause(check: str, failure: Any, case: Case | None, response: Any) -> tuple[str, str]:
    """What broke which rule, the same for every answer of one root cause: a body field (array indices as `*`) or
    a response header and its schema keyword, missing headers, an undeclared status, the parameter a generated
    case broke on purpose and how, the answer to undeclared methods, or credentials let through; else the
    failure's title."""
    if isinstance(failure, JsonSchemaError):
        rule = str(failure.schema_path[-1]) if failure.schema_path else "schema"
        if check == "response_headers_conformance":
            return f"header {_header_named(case, response, failure.instance)}", rule
        where = "/".join("*" if isinstance(part, int) else str(part) for part in failure.instance_path)
        return f"body /{where}", rule
    if isinstance(failure, MissingHeaders):
        return f"header {', '.join(failure.missing_headers)}", "missing"
    if isinstance(failure, UndefinedStatusCode):
        return f"status {failure.status_code}", "not declared"
    if isinstance(failure, UnsupportedMethodResponse):
        wrong = failure.failure_reason == "wrong_status"
        return "undeclared methods", f"answered {failure.status_code}" if wrong else "405 without Allow"
    if isinstance(failure, IgnoredAuth):
        return "authentication", failure.title
    data = case.meta.phase.data if case is not None and case.meta is not None else None
    if data is not None and data.parameter:
        location = getattr(data.parameter_location, "value", data.parameter_location) or data.location or ""
        rule = (data.description or failure.title).removeprefix(f"{data.parameter}: ")
        return f"{location} {data.parameter}".strip(), rule
    return failure.title, ""


def _header_named(case: Case | None, response: Any, value: Any) -> str:
    """The declared response header whose value broke its schema (Schemathesis' failure names none): the one that
    answered `value`, else the only one declared."""
    status = getattr(response, "status_code", None)
    definition = case.operation.responses.find_by_status_code(status) if case is not None and status else None
    declared = [name for name, _ in definition.headers.items()] if definition is not None else []
    sent: dict[str, list[str]] = getattr(response, "headers", None) or {}
    forms = {str(value), json.dumps(value)}
    named = [name for name in declared if sent.get(name.lower(), [""])[0] in forms]
    if not named and len(declared) == 1:
        named = declared
    return named[0] if named else "(not named)"


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
