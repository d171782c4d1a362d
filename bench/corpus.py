"""`make corpus` (issue 8): every description of the shared corpus (../shared/corpus) served by the mock with no
fixtures and checked by Schemathesis: explicit examples, coverage and fuzzing (no stateful phase), a bounded number
of examples per operation, and the five checks a mock must pass on its own (server errors, status codes, content
types, response schemas, response headers). Prints a table, writes bench/results/corpus.json.

Each description runs in a fresh process (two at a time), so its start-up time and memory are its own: memory is
the growth of the process' peak RSS (`ru_maxrss`) across `create_app`. tests/engine/test_corpus.py runs the same
check."""
from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import re
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from schemathesis import Case, Response
from schemathesis.core.failures import Failure
from schemathesis.generation import GenerationMode
from schemathesis.openapi.checks import UndefinedStatusCode

from mockserver.contract import Finding, Options, run
from mockserver.core.spec import SpecIndex
from mockserver.testing import MockServer

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
RESULTS = ROOT / "bench" / "results" / "corpus.json"
CHECKS = ["not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance", "response_headers_conformance"]
PHASES = ["examples", "coverage", "fuzzing"]
SEED = 8  # the number: the same requests on every run, unless --seed says otherwise
REQUEST_TIMEOUT_S = 30.0
JOBS = 2
SHOWN_CHARS = 600  # of what a finding expected, got and the curl that repeats it, in corpus.json


@dataclass(frozen=True)
class Known:
    """A failure the description causes (or Schemathesis' reading of it), not the mock."""

    check: str
    title: str  # Schemathesis' title of the failure
    operations: tuple[str, ...]  # where it shows ("GET /path"); the tests' sample always holds them
    reason: str
    anywhere: bool = False  # the same cause may show on other operations too

    def explains(self, finding: Finding) -> bool:
        return ((finding.check, finding.title) == (self.check, self.title)
                and (self.anywhere or finding.operation in self.operations))


@dataclass(frozen=True)
class Description:
    name: str
    file: str  # under the corpus folder
    max_examples: int  # per operation and phase (examples, fuzzing); the coverage phase is not bounded by it
    # the coverage phase's requests per operation (its first ones; None: all of them, over 1,000 for discord's
    # command bodies) and whether it also breaks each rule on purpose: all of it for the small descriptions only
    coverage_cap: int | None = None
    negative_coverage: bool = True
    known: tuple[Known, ...] = ()
    # operations Schemathesis cannot check, by a regex of their label ("GET /path"): why
    unchecked: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return CORPUS / self.file


BIG_COVERAGE = 40  # coverage requests per operation of the four big descriptions: the run stays within minutes
OPENAI_KNOWN = (
    Known("response_schema_conformance", "Unknown discriminator value",
          ("POST /chat/completions", "GET /organization/costs"),
          "none of its 107 `discriminator`s has a `mapping`, so OpenAPI maps each value to the schema of that *name* "
          "(`ChatCompletionMessageToolCall`), while the schemas allow only values such as `function`: no body fits "
          "both, and Schemathesis checks the discriminator", anywhere=True),
    Known("status_code_conformance", "Undocumented status code",
          ("POST /skills", "POST /skills/{skill_id}/versions", "POST /images/edits"),
          "`files` (skills) and `image` (image edits: one file or an array of them) are required and may be arrays "
          "with no `minItems`; an empty array has no multipart/form-data form, so Schemathesis sends no part at all "
          "and the mock rightly answers 400 (`'image' is a required property`)"),
)
DESCRIPTIONS = [
    Description("openai-api", "openai-api.yaml", 3, BIG_COVERAGE, negative_coverage=False, known=OPENAI_KNOWN,
                unchecked={"^(POST /containers|GET /containers/{container_id})$":
                           "`ContainerResource` lists `required` entries twice; Schemathesis refuses the schema"}),
    Description("digitalocean-public-v2", "digitalocean-public-v2/specification/DigitalOcean-public.v2.yaml", 3,
                BIG_COVERAGE, negative_coverage=False, unchecked={
                    "^[A-Z]+ /v2/load_balancers": "their schemas write `properties: {$ref: 'attributes.yml#/…'}` "
                    "(6 times): a property named `$ref` whose schema is a string. Schemathesis 4.32.5 crashes on it "
                    "(AttributeError in its dependency analysis, which runs even without the stateful phase), so "
                    "with them in, no operation of the description could be checked"}),
    Description("discord-http-api", "discord-http-api.json", 4, BIG_COVERAGE, negative_coverage=False),
    Description("twilio-api-v2010", "twilio-api-v2010.json", 4, BIG_COVERAGE, negative_coverage=False),
    Description("spotify-web-api", "spotify-web-api.yaml", 10, unchecked={
        "^PUT /playlists/{playlist_id}/images$": "its body schema says `required: true` (a list is required); "
                                                "Schemathesis refuses the schema"}),
    Description("box-platform-v2025.0", "box-platform-v2025.0.json", 10),
    Description("redocly-museum", "redocly-museum.yaml", 25),
    Description("oai-petstore-expanded", "oai-petstore-expanded.yaml", 25),
    Description("oai-api-with-examples", "oai-api-with-examples.yaml", 25),
    Description("oai-callback-example", "oai-callback-example.json", 25),
    Description("oai-link-example", "oai-link-example.yaml", 25),
    Description("oai-uspto", "oai-uspto.json", 25),
    Description("oai-webhook-example", "oai-webhook-example.yaml", 25),
    Description("oai-tictactoe", "oai-tictactoe.json", 25),
]


@dataclass
class Outcome:
    """One description served and checked."""

    name: str
    operations: int  # as Schemathesis reads the description
    served: int  # as the mock indexed it
    checked: int  # operations Schemathesis sent at least one request to
    cases: int  # requests Schemathesis sent
    failures: dict[str, int]  # by check, only the checks that failed
    invalid_rejected: int  # invalid requests answered with a 4xx the description does not document: not failures
    errors: list[str]  # Schemathesis could not test something (not a failure of a check)
    startup_s: float  # create_app: reading, indexing and compiling the description
    memory_mib: float  # growth of ru_maxrss across create_app (meaningful in a fresh process only)
    elapsed_s: float  # the whole check, start-up included
    max_examples: int
    findings: list[Finding] = field(default_factory=list)

    def unexplained(self, description: Description) -> list[Finding]:
        """The failures the description does not explain: the mock's."""
        return [f for f in self.findings if not any(known.explains(f) for known in description.known)]


def keep_failure(context: Any, failure: Failure, case: Case, response: Response) -> bool:
    """Schemathesis `filter_failure` hook: keep every failure but an undocumented 4xx that answers a request made
    invalid on purpose (negative data). Rejecting it is right; which 4xx says so is the description's to document,
    and most document none. Dropped failures are counted (`invalid_rejected`), not hidden."""
    return not (isinstance(failure, UndefinedStatusCode) and 400 <= response.status_code < 500
                and case.meta is not None and case.meta.generation.mode is GenerationMode.NEGATIVE)


def check(description: Description, max_examples: int | None = None, seed: int = SEED,
          sample: int | None = None) -> Outcome:
    """Serve the description on a free port, run the contract against it with the corpus' phases and checks, and
    say what it found. `sample`: check only that many operations: those with a known failure, then others spread
    evenly over the description."""
    max_examples = max_examples or description.max_examples
    started = time.monotonic()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    server = MockServer(description.path, None)
    startup = time.monotonic() - started
    memory = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    spec = server.pipeline.spec
    # every call carries credentials (no security parameters of Schemathesis' own): without them a request is a
    # 401, which most descriptions leave undocumented
    options = Options(description.path, None, max_examples=max_examples, seed=seed,
                      operations=_sample(description, spec, sample), skip=list(description.unchecked), phases=PHASES,
                      checks=CHECKS, coverage_cap=description.coverage_cap,
                      negative_coverage=description.negative_coverage, security_parameters=False,
                      request_timeout=REQUEST_TIMEOUT_S, filter_failure=keep_failure,
                      force=False)  # the figures stay those of Schemathesis' own phases (no `Prefer: code=` pass)
    result = run(options, mock=server)
    return Outcome(description.name, result.declared, len(spec.operations), len(result.operations), result.requests,
                   dict(result.failures()), result.filtered, result.errors, round(startup, 2), round(memory, 1),
                   round(time.monotonic() - started, 1), max_examples, result.findings())


def _sample(description: Description, spec: SpecIndex, sample: int | None) -> list[str]:
    """The operations to check (all when no `sample`), by operationId: those with a known failure first."""
    if not sample:
        return []
    ids = {f"{op.method} {op.path}": op.id for op in spec.operations.values()}
    labels = sorted(label for label in ids if not any(re.search(regex, label) for regex in description.unchecked))
    shown = [label for known in description.known for label in known.operations]
    chosen = list(dict.fromkeys([*shown, *labels[::max(1, len(labels) // sample)]]))
    return [ids.get(label, label) for label in chosen[:max(sample, len(shown))]]


def by_name(name: str) -> Description:
    return next(d for d in DESCRIPTIONS if d.name == name)


def _check_in_worker(name: str, max_examples: int | None, seed: int) -> Outcome:
    """In a worker process: one description by name, without a log line per request or per violation."""
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    logging.getLogger("mockserver").setLevel(logging.CRITICAL)  # each contract violation is a finding already
    return check(by_name(name), max_examples, seed)


def table(outcomes: list[Outcome]) -> str:
    """A Markdown table: one row per description, failures by check."""
    short = [name.removesuffix("_conformance") for name in CHECKS]
    head = ["description", "operations", "served", "checked", "cases", *short, "invalid → undocumented 4xx",
            "errors", "start-up s", "memory MiB", "run s"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for o in outcomes:
        cells = [o.name, o.operations, o.served, o.checked, o.cases, *(o.failures.get(name, 0) for name in CHECKS),
                 o.invalid_rejected, len(o.errors), f"{o.startup_s:.2f}", f"{o.memory_mib:.1f}", f"{o.elapsed_s:.0f}"]
        rows.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return "\n".join(rows)


def details(outcomes: list[Outcome]) -> str:
    """Every failure and error, under its description; a failure the description explains says so, and so do the
    operations left unchecked."""
    lines = []
    for o in outcomes:
        description = by_name(o.name)
        if o.findings or o.errors or description.unchecked:
            lines.append(f"\n{o.name}")
        lines += [f"  not checked: {regex} — {reason}" for regex, reason in description.unchecked.items()]
        for f in o.findings:
            cause = next((known.reason for known in description.known if known.explains(f)), None)
            lines += [f"  {f.check} · {f.operation} · {f.title} ({f.count}×)"
                      + (f" — the description's: {cause}" if cause else ""),
                      *(f"    {name:<10} {_indented(text[:SHOWN_CHARS])}"
                        for name, text in (("expected:", f.expected), ("got:", f.got), ("reproduce:", f.curl)))]
        lines += [f"  error: {_indented(error[:SHOWN_CHARS])}" for error in o.errors]
    return "\n".join(lines)


def _indented(text: str) -> str:
    return text.replace("\n", "\n               ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--max-examples", type=int, help="per operation and phase, for every description")
    parser.add_argument("--jobs", type=int, default=JOBS, help="descriptions checked at once")
    parser.add_argument("names", nargs="*", help="only these descriptions (default: all)")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"make corpus: skipped, no corpus at {CORPUS} (the shared corpus of published descriptions)")
        return 0
    chosen = [d for d in DESCRIPTIONS if not args.names or d.name in args.names]
    print(f"make corpus: {len(chosen)} descriptions, seed {args.seed}, phases {'+'.join(PHASES)}, "
          f"{args.jobs} at a time", flush=True)
    started = time.monotonic()
    context = multiprocessing.get_context("spawn")  # a fresh process each: its own start-up and memory
    with ProcessPoolExecutor(args.jobs, mp_context=context, max_tasks_per_child=1) as pool:
        futures = [pool.submit(_check_in_worker, d.name, args.max_examples, args.seed) for d in chosen]
        outcomes = []
        for future in futures:
            outcomes.append(future.result())
            o = outcomes[-1]
            print(f"  {o.name}: {o.cases} cases, {sum(o.failures.values())} failures, {o.elapsed_s:.0f} s", flush=True)
    elapsed = time.monotonic() - started
    print("\n" + table(outcomes) + details(outcomes))
    unexplained = [o.name for o in outcomes if o.unexplained(by_name(o.name)) or o.errors]
    print(f"\n{sum(not o.findings for o in outcomes)}/{len(outcomes)} descriptions without a failure; "
          f"{len(unexplained)} with failures (or errors) the description does not explain"
          f"{': ' + ', '.join(unexplained) if unexplained else ''}; {elapsed:.0f} s in all")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(_report(outcomes, args.seed, elapsed), indent=2, ensure_ascii=False) + "\n")
    return 1 if unexplained else 0


def _report(outcomes: list[Outcome], seed: int, elapsed: float) -> dict[str, Any]:
    return {"seed": seed, "phases": PHASES, "checks": CHECKS, "elapsed_s": round(elapsed, 1),
            "memory": "growth of ru_maxrss across create_app, each description in a fresh process",
            "descriptions": [{**asdict(o), "findings": [{k: v[:SHOWN_CHARS] if isinstance(v, str) else v
                                                          for k, v in asdict(f).items()} for f in o.findings]}
                             for o in outcomes]}


if __name__ == "__main__":
    sys.exit(main())
