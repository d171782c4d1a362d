"""Running the contract: Schemathesis' engine (every phase, every check, ours included) against a URL or the mock
served in-process, its events folded into a `RunResult` (see `results.py`) and judged by the gate (`gate.py`), so
a run that could not check what it had to fails."""
from __future__ import annotations

import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from hypothesis.internal import charmap
from hypothesis.internal.conjecture import providers
from hypothesis.internal.intervalsets import IntervalSet
from schemathesis import Case
from schemathesis.core.result import Ok
from schemathesis.engine import events, from_schema
from schemathesis.generation import GenerationMode
from schemathesis.generation.meta import TestPhase
from schemathesis.specs.openapi.schemas import OpenApiSchema

from ..pipeline.pipeline import Options, Pipeline
from ..spec.index import SpecIndex
from ..testing import MockServer
from . import callbacks, data
from .checks import OURS, must_apply
from .credentials import PLACEHOLDER_TOKEN, Sent
from .discovery import discover
from .examples import usable_token
from .force import force, probe
from .gate import judge
from .knowledge import KEY
from .preflight import Blocked, connect, first_calls
from .results import OperationResult, RunResult, fold, response_key
from .safety import changes, read_only
from .schema import Contract, load_contract

MODES = ("positive", "negative", "all")  # Schemathesis' generation modes (`--mode`)
DEFAULT_MAX_EXAMPLES = 100  # the Kindgi run: about 20 s in-process on 2 cores, well inside the 2-minute budget
PHASES = ["examples", "coverage", "fuzzing", "stateful"]
ALL_CHECKS = ["all"]


@dataclass
class RunOptions:
    spec: Path
    fixtures: Path | None
    url: str | None = None  # None: the mock, in-process
    token: str | None = None  # bearer, OAuth 2, OpenID Connect and API keys, where each operation wants it
    basic: tuple[str, str] | None = None  # user and password, for operations that take HTTP basic
    bearer: str | None = None  # for bearer, OAuth 2 and OpenID Connect schemes, in the token's place
    api_keys: dict[str, str] = field(default_factory=dict)  # by the key's name, in the token's place
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
    allow_untested: list[str] = field(default_factory=list)  # operations (operationId or label) excused by the gate
    min_responses: float | None = None  # percent of the declared responses the run must observe
    force: bool = True  # ask a target that honours `Prefer: code=` for every declared response (see force.py)
    exclude: list[str] = field(default_factory=list)  # operations left out, by operationId or label
    read_only: bool = False  # only safe methods: no unsafe operation, no probe with an unsafe method
    on_progress: Callable[[RunResult, str, str], None] | None = None  # (result so far, phase, label) per scenario
    data: Path | None = None  # request values known to exist on the target (see data.py)
    discover: bool = True  # against a URL, read real ids from its list operations first (see discovery.py)
    stateful: bool = False  # the in-process mock infers writes from the REST shape (`mockserver serve --stateful`)
    # Schemathesis' generation mode: "positive" (data the description allows), "negative" (data it forbids: the
    # gate then expects no success and judges the credentials only) or "all"
    mode: str = "all"
    exclude_checks: list[str] = field(default_factory=list)  # Schemathesis' names, ours too
    credentials: bool = True  # False: no credential on any call, not even the in-process mock's own (`--no-auth`)
    allow_outside: tuple[Path, ...] = ()  # folders besides their own the description and fixtures may read
    callback_listen: tuple[str, int] | None = None  # the receiver's address (see callbacks.py); None: a free port
    callback_timeout: float = callbacks.DEFAULT_TIMEOUT_S  # waited for callbacks once the run's calls are done


def run(options: RunOptions, mock: MockServer | None = None) -> RunResult:
    """Raises LoadError / UnknownOperation before any call when the description or fixtures are unusable. Against
    a URL a preflight comes first (`preflight.py`): a target that does not answer, a wrong base path or refused
    credentials end the run at once, its result `blocked`.
    Without a URL the mock of the same description and fixtures answers in-process: `mock` when given (built, not
    started: the run starts and stops it), else one made here, with strict auth when the fixtures declare a usable
    token (an undeclared token is then a 401, as a real API answers). Either way the mock's own pipeline is what
    the contract reads the description and fixtures from: they are loaded once."""
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
    started = time.monotonic()
    try:
        return _run(options, mock, seed)
    except Blocked as blocked:  # before any check: the report says why first, and the run took seconds
        return RunResult(options.url or "the mock, in-process", seed, options.max_examples, {}, mode=options.mode,
                         phases=list(options.phases), blocked=str(blocked), elapsed=time.monotonic() - started)


def _run(options: RunOptions, mock: MockServer | None, seed: int) -> RunResult:
    """`run`, raising Blocked when the preflight finds the target unusable (`preflight.py`)."""
    started = time.monotonic()
    if options.url is not None:
        connect(options.url, options.request_timeout)
    server = mock if options.url is None else None
    if options.url is None and server is None:
        # strict, and the run's placeholder credential let in where the fixtures declare no token of their own, so
        # a call without it (or with another) is the 401 a real API answers, and `ignored_auth` checks something
        # (and, where the fixtures declare no token, the run's own credentials: `guests`)
        server = MockServer(options.spec, options.fixtures, Options(
            strict_auth=True, accept_tokens=(PLACEHOLDER_TOKEN,), guest_tokens=guests(options),
            stateful=options.stateful, allow_outside=options.allow_outside))
    pipeline = server.pipeline if server else None
    if pipeline is not None and pipeline.auth.strict and usable_token(pipeline.auth) is None:
        pipeline.auth.strict = False  # a mock given to run(), strict with no token: it would answer every call 401
    notes: list[str] = []

    def values(spec: SpecIndex, sent: dict[str, Sent]) -> list[tuple[str, dict[str, list[Any]]]]:
        found = [("data", data.load(options.data, spec))] if options.data else []
        if options.url is not None:
            first_calls(spec, options.url.rstrip("/"), sent, options.headers, options.request_timeout,
                        _callable(spec, options))
        if options.url is not None and options.discover:
            discovered, problems = discover(spec, options.url.rstrip("/"), sent, options.headers,
                                            options.request_timeout, _callable(spec, options),
                                            posts=not options.read_only)
            found.append(("discovered", discovered))
            notes.extend(f"discovery: {problem}" for problem in problems)
        return found

    contract = load_contract(options.spec, options.fixtures, token=options.token, basic=options.basic,
                             headers=options.headers, operations=options.operations,
                             default_token=options.url is None and options.credentials, pipeline=pipeline,
                             security_parameters=options.security_parameters, values=values,
                             bearer=options.bearer, api_keys=options.api_keys,
                             fixture_values=options.url is None, allow_outside=options.allow_outside)
    allowed = contract.labels_of(options.allow_untested)
    schema = contract.schema
    for regex in options.skip:
        schema = cast(OpenApiSchema, schema.exclude(name_regex=regex))
    if options.exclude:
        schema = cast(OpenApiSchema, schema.exclude(name=contract.labels_of(options.exclude)))
    checks, left_out = _checks(options.checks, pipeline if contract.credentials else None, options.exclude_checks,
                               remembers=pipeline is None or bool(pipeline.answers.live))
    notes += left_out
    cap = _configure(schema, options, checks, seed, sanitize=options.url is not None)
    if options.read_only:
        schema = read_only(schema)
    if cap is not None:
        cap.bound(schema)
    with _serving(server, options, schema) as (base_url, shown), callbacks.receiving(
            contract.spec if options.url is not None else None, options.callback_listen, options.callback_timeout,
            schema) as watch:
        schema.config.update(base_url=base_url)  # before anything reads the operations: they keep the URL they saw
        result = RunResult(shown, seed, options.max_examples, contract.examples, declared=len(contract.operations),
                           notes=notes, min_responses=options.min_responses, values=contract.values,
                           mode=options.mode, phases=list(options.phases))
        enabled = _enabled(checks)
        result.operations = _expected(schema, contract, enabled)
        if options.url is not None and not options.read_only:
            result.notes.append(changes(schema))
        in_process = f"http://{urlsplit(base_url).netloc}" if server else None

        def execute(part: OpenApiSchema) -> None:
            for event in from_schema(part).execute():
                fold(result, event, in_process)
                if watch is not None:
                    watch.see(event)
                if isinstance(event, events.ScenarioFinished) and options.on_progress is not None:
                    options.on_progress(result, str(event.phase.value), event.recorder.label)

        execute(schema)
        if options.force:
            result.notes.append(_force(schema, result, options, execute))
        if watch is not None:
            watch.finish(result)
    if pipeline is not None:
        result.notes += _description_gaps(result, pipeline.answers.gaps)
    result.checks += [name for name in enabled if name not in result.checks]  # never ran: "did not apply"
    result.gaps, result.excused = judge(result.operations.values(), set(allowed),
                                        expect_success=options.mode != "negative")
    result.elapsed = time.monotonic() - started
    return result


def _description_gaps(result: RunResult, gaps: dict[str, dict[int, str]]) -> list[str]:
    """The in-process mock's undeclared statuses that are the description's gap (`Answers.gaps`: a 404 for an
    unknown item, a 409 for a key that exists already, a 400 for a request that breaks the description), not the
    mock's failure: an operation whose only undeclared statuses are those has their findings set aside and each
    said once, as a note (a valid request refused still fails `positive_data_acceptance`)."""
    notes = []
    for op in result.operations.values():
        said = gaps.get(op.operation_id, {})
        undeclared = {status for status in op.statuses if response_key(status, op.declared) is None}
        if not said or not undeclared <= said.keys():
            continue
        for status in sorted(undeclared):
            finding = op.findings.pop(("status_code_conformance", f"status {status}", "not declared"), None)
            if finding is not None:
                op.failed["status_code_conformance"] -= finding.count
                notes.append(f"the description's gap, not the mock's: {said[status]} ({op.statuses[status]} "
                             f"answers of {op.label})")
    return notes


def _force(schema: OpenApiSchema, result: RunResult, options: RunOptions,
           execute: Callable[[OpenApiSchema], None]) -> str:
    """Force every declared response where the target honours `Prefer: code=`; what was done, for the report."""
    honoured_on = probe(result, options.request_timeout)
    if honoured_on is None:
        return ("responses not forced: the target does not honour `Prefer: code=` (or answered no request it "
                "could be tried on); declared responses it was not provoked into stay unobserved")
    statuses = force(schema, result, options.headers, execute)
    return f"forced with `Prefer: code=` (honoured on {honoured_on}): {statuses} statuses, each declared response once"


def _callable(spec: SpecIndex, options: RunOptions) -> set[str]:
    """The labels of the operations the run may call: chosen, not excluded nor skipped."""
    labels = {op.id: f"{op.method.upper()} {op.path}" for op in spec.operations.values()}
    chosen = {labels.get(name, name) for name in options.operations} if options.operations else set(labels.values())
    chosen -= {labels.get(name, name) for name in options.exclude}
    return {label for label in chosen if not any(re.search(regex, label) for regex in options.skip)}


def _enabled(checks: dict[str, list[str]]) -> list[str]:
    """Our checks the run has, so the report names those that never applied too."""
    included = set(checks["included"])  # "all", or the names given
    return [name for name in OURS if ("all" in included or name in included) and name not in checks["excluded"]]


def _expected(schema: OpenApiSchema, contract: Contract, enabled: list[str]) -> dict[str, OperationResult]:
    """An empty result for every operation the run calls, with what the gate must see of it: whether it
    declares a success, the credentials it sends and the checks that must apply to it. An operation that never
    gets a single call is then still judged."""
    found: dict[str, OperationResult] = {}
    for loaded in schema.get_all_operations():
        if not isinstance(loaded, Ok):
            continue  # Schemathesis reports it as an error of the run
        op = loaded.ok()
        raw = op.definition.raw
        found[op.label] = OperationResult(
            op.label, str(raw.get("operationId", "")), declared=[str(key) for key in raw.get("responses") or {}],
            must_apply=must_apply(raw.get(KEY), enabled), sent=contract.credentials.get(op.label))
    return found


def _checks(wanted: list[str], pipeline: Pipeline | None, excluded: list[str] | None = None, *,
            remembers: bool = True) -> tuple[dict[str, list[str]], list[str]]:
    """Schemathesis' included and excluded check names, and why a check was left out. `pipeline`: the in-process
    mock's, when the run sends credentials; `excluded`: the checks the options leave out; `remembers`: False for
    the in-process mock without written collections, which answers a deleted item as before."""
    left_out: list[tuple[str, str]] = []
    if pipeline is not None and not pipeline.auth.strict:
        left_out.append(("ignored_auth", "the fixtures declare no usable token, so the mock lets any well-formed "
                                         "credential in"))
    if not remembers:
        left_out.append(("use_after_free", "the mock checked remembers no write (a deleted item is answered as "
                                           "before): run with --stateful to check it"))
    left_out = [(name, why) for name, why in left_out if {"all", name} & set(wanted)]
    return ({"included": wanted, "excluded": [*(excluded or []), *(name for name, _ in left_out)]},
            [f"{name} left out: {why}" for name, why in left_out])


_NO_CONSTANTS = providers.Constants()


def _no_local_constants() -> None:
    """Hypothesis (since 6.131) also draws constants it finds in the source of every loaded module that is not
    installed in site-packages: which requests a seed makes then hung on which of those modules the process had
    imported (in the tests, on which tests ran before in the same worker). No constants but its own: the same seed
    makes the same requests in any process."""
    providers._get_local_constants = lambda: _NO_CONSTANTS
    providers.CONSTANTS_CACHE.cache.clear()  # choices worked out with whatever constants were found before


_FROM_CODEC = charmap.intervals_from_codec  # Hypothesis' own: tries every code point
# what `_FROM_CODEC` finds, for the codecs Schemathesis asks for: UTF-8 encodes all but the surrogates, ASCII the
# first 128; both decode back to the same characters
_KNOWN_CODECS = {"utf-8": ((0, 0xD7FF), (0xE000, sys.maxunicode)), "ascii": ((0, 0x7F),)}


@cache
def _intervals_from_codec(codec: str) -> tuple[IntervalSet, IntervalSet]:
    """Hypothesis' `intervals_from_codec` without trying the 1.1 million code points, for the codecs whose
    characters are known. Hypothesis tries them once per `.hypothesis` folder (the current directory's, so in
    every fresh CI checkout and every run of `make bench-contract`), and for UTF-8 that holds a million one-character
    intervals at once: some 250 MiB for a second or two at the start of the run."""
    known = _KNOWN_CODECS.get(codec)
    return (IntervalSet(known), IntervalSet()) if known is not None else _FROM_CODEC(codec)


charmap.intervals_from_codec = _intervals_from_codec  # once, as this module is imported: every run then uses it


def _configure(schema: OpenApiSchema, options: RunOptions, checks: dict[str, list[str]], seed: int, *,
               sanitize: bool) -> CoverageCap | None:
    """The options' phases and checks; the same seed and no example database make the same requests again.
    Returns the coverage cap's hook, if any."""
    schema.config.update(continue_on_failure=True, request_timeout=options.request_timeout)
    schema.config.seed = seed
    schema.config.generation.update(max_examples=options.max_examples, database="none")
    _no_local_constants()
    if options.mode != "all":
        schema.config.generation.update(modes=[GenerationMode(options.mode)])
    if not options.negative_coverage:
        schema.config.phases.coverage.generation.update(modes=[GenerationMode.POSITIVE])
    schema.config.phases.update(phases=options.phases)
    schema.config.checks.update(included_check_names=checks["included"], excluded_check_names=checks["excluded"])
    cap = CoverageCap(options.coverage_cap) if options.coverage_cap is not None else None
    if cap is not None:
        schema.hook("filter_case")(cap)
    if options.filter_failure is not None:
        schema.hook("filter_failure")(options.filter_failure)
    # a real deployment's credentials stay out of the output; the mock's fixture tokens make runnable curls
    schema.config.output.sanitization.update(enabled=sanitize)
    return cap


def guests(options: RunOptions) -> tuple[str, ...]:
    """The run's credentials (the token, `--auth-bearer`, each `--api-key` value, the basic user) that the in-process
    mock of fixtures declaring no token of their own lets in, as it lets its placeholder in: it has no callers of its
    own to tell them from. With declared tokens, only those (and the placeholder) are callers."""
    if not options.credentials:
        return ()
    given = [options.token, options.bearer, *options.api_keys.values(), options.basic[0] if options.basic else None]
    return tuple(dict.fromkeys(v for v in given if v))


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

    def bound(self, schema: OpenApiSchema) -> None:
        """Ends `schema`'s coverage generation of an operation once its cap is reached: every later case would be
        filtered out here, and generating them (building, serializing, hashing each one to drop duplicates) was
        most of a big description's capped run. The cases sent are the same, bar one thing: a capped operation no
        longer marks its path's undeclared-method probes as sent when this hook dropped them unsent, so another
        operation of the path may still send them."""
        generate = schema.iter_coverage_cases

        def capped(operation: Any, **kwargs: Any) -> Iterator[Case]:
            for case in generate(operation, **kwargs):
                yield case  # the generator's filter hooks, this one among them, see it before the next is asked
                if self.seen[operation.label] >= self.cap:
                    return

        schema.iter_coverage_cases = capped  # type: ignore[method-assign]


@contextmanager
def _serving(server: MockServer | None, options: RunOptions, schema: OpenApiSchema) -> Iterator[tuple[str, str]]:
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
