"""`make corpus` (issues 8, 17 and 19): every description of the shared corpus (../shared/corpus) checked by the
contract command itself, `mockserver contract --spec FILE …`, run as a user runs it (a process per description
and mode) against the mock of the description with no fixtures, in two modes:

- positive: data the description allows, with a credential for each of its security schemes (`--auth-bearer`,
  `--api-key NAME=VALUE`, `--basic USER:PASSWORD`, as its schemes want) and every check: no failure at all;
- negative: data it forbids, with no credentials (`--no-auth`): no 5xx, and no error of the mock's that breaks the
  status, media type, schema or headers it declares (its `default`, `4XX` or explicit responses).

Prints a table, writes bench/results/corpus.json; exits 1 while a run fails for a reason the description does not
explain (`KNOWN`). tests/engine/test_corpus.py runs the same commands on a sample of each description."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
RESULTS = ROOT / "bench" / "results" / "corpus.json"
SEED = 8  # the number: the same requests on every run, unless --seed says otherwise
PHASES = "examples,coverage,fuzzing"  # no stateful phase: the mock of a description without fixtures keeps no state
REQUEST_TIMEOUT_S = 30
JOBS = 2  # runs at once (2 cores)
SHOWN_CHARS = 600  # of what a finding expected, got and the curl that repeats it, in corpus.json
BIG_COVERAGE = 20  # coverage requests per operation of the four big descriptions: the run stays within minutes

# the credential the positive run gives each kind of security scheme; the in-process mock of a description
# without fixtures lets the run's credentials in
BEARER = "corpus-token"
API_KEY = "corpus-key"
BASIC = "corpus-user:corpus-password"


@dataclass(frozen=True)
class Mode:
    name: str  # the contract's --mode
    args: tuple[str, ...]  # what else the mode's command says (besides credentials)
    credentials: bool  # whether the run sends a credential for each security scheme
    what: str  # what the mode must find: for the report


MODES = (
    Mode("positive", (), True, "no failure of any check"),
    # not status_code_conformance: an undocumented 401 or 400 is what a description leaves out (most document
    # neither), while a documented one must still fit its declared body, media type and headers
    Mode("negative", ("--no-auth", "--checks", "not_a_server_error,response_schema_conformance,"
                      "content_type_conformance,response_headers_conformance"), False,
         "no 5xx; every error fits the status's declared schema, media type and headers"),
)


@dataclass(frozen=True)
class Known:
    """A failure the description causes (or Schemathesis' reading of it), not the mock."""

    check: str  # the check that fails, or "error": Schemathesis could not test the operation
    title: str  # Schemathesis' title of the failure (of an error: words its message holds)
    operations: tuple[str, ...]  # where it shows ("GET /path"); the tests' sample always holds them
    reason: str
    anywhere: bool = False  # the same cause may show on other operations too
    modes: tuple[str, ...] = ("positive", "negative")
    says: str = ""  # words the failing answer holds, where the check and title alone would say too little
    sent: str = ""  # words the request that failed holds (its curl), where the cause is in how it was sent
    always: bool = True  # False: it shows on some runs only (the tests' sample then expects no failure of it)

    def explains(self, finding: dict[str, Any], mode: str) -> bool:
        return (mode in self.modes and (finding["check"], finding["title"]) == (self.check, self.title)
                and (self.anywhere or finding["operation"] in self.operations) and self.says in finding["got"]
                and self.sent in finding.get("curl", ""))

    def explains_error(self, error: str, mode: str) -> bool:
        return (mode in self.modes and self.check == "error" and self.title in error
                and any(error.startswith(f"{operation}:") for operation in self.operations))


@dataclass(frozen=True)
class Description:
    name: str
    file: str  # under the corpus folder
    max_examples: int  # per operation and phase (examples, fuzzing); the coverage phase is bounded by coverage_cap
    coverage_cap: int | None = None  # the coverage phase's requests per operation (None: all of them)
    known: tuple[Known, ...] = ()
    # operations Schemathesis cannot check, by a regex of their label ("GET /path"): why
    unchecked: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return CORPUS / self.file

    def explanation(self, finding: dict[str, Any], mode: str) -> str | None:
        return next((known.reason for known in self.known if known.explains(finding, mode)), None)

    def error_explanation(self, error: str, mode: str) -> str | None:
        return next((known.reason for known in self.known if known.explains_error(error, mode)), None)


OPENAI_KNOWN = (
    Known("response_schema_conformance", "Unknown discriminator value",
          ("POST /chat/completions", "GET /organization/costs"),
          "none of its 107 `discriminator`s has a `mapping`, so OpenAPI maps each value to the schema of that *name* "
          "(`ChatCompletionMessageToolCall`), while the schemas allow only values such as `function`: no body fits "
          "both, and Schemathesis checks the discriminator", anywhere=True, modes=("positive",)),
    Known("status_code_conformance", "Undocumented status code",
          ("POST /skills", "POST /skills/{skill_id}/versions", "POST /images/edits"),
          "`files` (skills) and `image` (image edits: one file or an array of them) are required and may be arrays "
          "with no `minItems`; an empty array has no multipart/form-data form, so Schemathesis sends no part at all "
          "and the mock rightly answers 400 (`'image' is a required property`)", modes=("positive",)),
    Known("positive_data_acceptance", "Schema-valid request rejected",
          ("POST /skills", "POST /skills/{skill_id}/versions", "POST /images/edits"),
          "the same empty arrays: Schemathesis holds a body without the required part valid, the mock rightly "
          "refuses it (400)", modes=("positive",)),
)
DISCORD_KNOWN = (
    Known("positive_data_acceptance", "Schema-valid request rejected", ("POST /guilds/{guild_id}/scheduled-events",),
          "its times are `{type: [string, null], format: date-time}`: Schemathesis' coverage phase drops the format "
          "of a type list and sends `\"\"` as valid data; the mock checks the format (as Prism does) and answers 400 "
          "(`'' is not a 'date-time'`)", anywhere=True, modes=("positive",), says="is not a 'date-time'"),
    Known("positive_data_acceptance", "Schema-valid request rejected", ("POST /webhooks/{webhook_id}/{webhook_token}",),
          "its form body holds objects (`poll`, `allowed_mentions`: `oneOf [null, object]`; `attachments`, "
          "`components`, `embeds`: arrays of objects), and Schemathesis' HTTP client encodes a dict in a form as "
          "its keys, the field's values (`poll=question&poll=answers&…`, `attachments=id&attachments=type`): the "
          "objects are lost, and the mock rightly answers 400 (`given 6 times; it takes a single value`, `'type' is "
          "not of type 'object'`, …); a JSON body of the same operation keeps its objects and is accepted",
          modes=("positive",), sent="application/x-www-form-urlencoded", always=False),
)
DIGITALOCEAN_KNOWN = (
    Known("error", "Too many generated examples are filtered out for request body", ("POST /v2/droplets/actions",),
          "Schemathesis' health check: of its body's `oneOf` (one schema per droplet action) it cannot generate "
          "enough valid bodies, so in positive mode it gives up on the operation", modes=("positive",),
          always=False),
)
DESCRIPTIONS = [
    Description("openai-api", "openai-api.yaml", 2, BIG_COVERAGE, known=OPENAI_KNOWN,
                unchecked={"^(POST /containers|GET /containers/{container_id})$":
                           "`ContainerResource` lists `required` entries twice; Schemathesis refuses the schema"}),
    Description("digitalocean-public-v2", "digitalocean-public-v2/specification/DigitalOcean-public.v2.yaml", 2,
                BIG_COVERAGE, known=DIGITALOCEAN_KNOWN, unchecked={
                    "^[A-Z]+ /v2/load_balancers": "their schemas write `properties: {$ref: 'attributes.yml#/…'}` "
                    "(6 times): a property named `$ref` whose schema is a string. Schemathesis 4.32.5 crashes on it "
                    "(AttributeError in its dependency analysis, which runs even without the stateful phase), so "
                    "with them in, no operation of the description could be checked"}),
    Description("discord-http-api", "discord-http-api.json", 3, BIG_COVERAGE, known=DISCORD_KNOWN),
    Description("twilio-api-v2010", "twilio-api-v2010.json", 3, BIG_COVERAGE),
    Description("spotify-web-api", "spotify-web-api.yaml", 5, unchecked={
        "^PUT /playlists/{playlist_id}/images$": "its body schema says `required: true` (a list is required); "
                                                "Schemathesis refuses the schema"}),
    Description("box-platform-v2025.0", "box-platform-v2025.0.json", 8),
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
class Outline:
    """What the bench reads of a description before it runs the command: its operations and security schemes."""

    labels: list[str]  # every operation, "GET /path"
    schemes: dict[str, dict[str, Any]]  # security schemes by name, $refs followed


def outline(description: Description) -> Outline:
    from mockserver.spec.index import SpecIndex  # reading the description, as `mockserver validate` does

    spec = SpecIndex(description.path)
    return Outline(sorted(f"{op.method.upper()} {op.path}" for op in spec.operations.values()),
                   dict(spec.security_schemes))


def credentials(schemes: dict[str, dict[str, Any]]) -> list[str]:
    """The contract's options giving a credential to each security scheme the run can meet."""
    args: list[str] = []
    for scheme in schemes.values():
        kind, http = str(scheme.get("type", "")).lower(), str(scheme.get("scheme", "")).lower()
        if kind == "apikey" and scheme.get("name"):
            args += ["--api-key", f"{scheme['name']}={API_KEY}"]
        elif (kind == "http" and http == "bearer") or kind in ("oauth2", "openidconnect"):
            args += ["--auth-bearer", BEARER]
        elif kind == "http" and http == "basic":
            args += ["--basic", BASIC]
    return list(_pairs(args))


def _pairs(args: list[str]) -> list[str]:
    """Option-value pairs, each once, in order."""
    unique = dict.fromkeys(zip(args[::2], args[1::2], strict=True))
    return [part for pair in unique for part in pair]


def sample(description: Description, labels: list[str], size: int | None) -> list[str]:
    """The operations to check (all when no `size`): those with a known failure, then others spread evenly."""
    checked = [label for label in labels if not _unchecked(description, label)]
    if not size or len(checked) <= size:
        return []
    shown = [label for known in description.known for label in known.operations]
    chosen = list(dict.fromkeys([*shown, *checked[::max(1, len(checked) // size)]]))
    return chosen[:max(size, len(shown))]


def _unchecked(description: Description, label: str) -> bool:
    return any(re.search(regex, label) for regex in description.unchecked)


def command(description: Description, mode: Mode, view: Outline, report: Path, *, seed: int = SEED,
            max_examples: int | None = None, operations: list[str] | None = None,
            coverage_cap: int | None = None) -> list[str]:
    """The contract command of one description and mode, as a user types it (after `mockserver`)."""
    args = ["contract", "--spec", str(description.path), "--mode", mode.name, "--seed", str(seed),
            "--phases", PHASES, "--max-examples", str(max_examples or description.max_examples),
            "--request-timeout", str(REQUEST_TIMEOUT_S), "--report-json", str(report), *mode.args]
    caps = [cap for cap in (description.coverage_cap, coverage_cap) if cap]
    if caps:
        args += ["--coverage-cap", str(min(caps))]
    if mode.credentials:
        args += credentials(view.schemes)
    for label in view.labels:
        if _unchecked(description, label):
            args += ["--exclude-operation", label]
    if operations:
        args += ["--operation", *operations]
    return args


@dataclass
class Run:
    """One description checked in one mode."""

    name: str
    mode: str
    operations: int  # in the description
    exit: int  # the command's
    cases: int  # requests the command sent
    failures: int  # failing answers the description does not explain, plus the run's gaps and errors
    known: int  # failing answers the description explains
    verdict: str  # pass, known (only failures the description explains) or FAIL
    elapsed_s: float
    command: str  # to repeat it, from the project's root
    findings: list[dict[str, Any]] = field(default_factory=list)  # each with its `known` reason, if any
    gaps: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    checks: dict[str, dict[str, int]] = field(default_factory=dict)  # per check: passed, failed, did not apply
    problem: str = ""  # why there is no report (the command's last lines on stderr)


def judge(description: Description, mode: Mode, report: dict[str, Any] | None) -> tuple[int, int, str]:
    """Failures, known failures and the verdict of a run's JSON report (None: the command wrote none)."""
    if report is None:
        return 1, 0, "FAIL"
    errors = [bool(description.error_explanation(error, mode.name)) for error in report["errors"]]
    known = sum(f["count"] for f in report["findings"] if description.explanation(f, mode.name)) + sum(errors)
    failures = (sum(f["count"] for f in report["findings"] if not description.explanation(f, mode.name))
                + len(report["gaps"]) + errors.count(False))
    return failures, known, "FAIL" if failures else "known" if known else "pass"


def mockserver() -> list[str]:
    """The `mockserver` command of this environment."""
    script = Path(sys.executable).with_name("mockserver")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mockserver"]


def check(description: Description, mode: Mode, *, seed: int = SEED, max_examples: int | None = None,
          size: int | None = None, coverage_cap: int | None = None, view: Outline | None = None) -> Run:
    """Run the contract command on one description in one mode and read its JSON report. `size`: check only that
    many operations (those with a known failure first, the rest spread evenly); `coverage_cap`: at most that many
    coverage requests per operation."""
    view = view or outline(description)
    with tempfile.TemporaryDirectory(prefix="corpus-") as folder:
        report_path = Path(folder) / "report.json"
        args = command(description, mode, view, report_path, seed=seed, max_examples=max_examples,
                       operations=sample(description, view.labels, size), coverage_cap=coverage_cap)
        started = time.monotonic()
        done = subprocess.run([*mockserver(), *args], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"})
        elapsed = time.monotonic() - started
        report = json.loads(report_path.read_text()) if report_path.exists() else None
    failures, known, verdict = judge(description, mode, report)
    shown = " ".join(_quoted(part) for part in ["mockserver", *_without_report(args)])
    run = Run(description.name, mode.name, len(view.labels), done.returncode, 0, failures, known, verdict,
              round(elapsed, 1), shown.replace(str(ROOT.parent), ".."))
    if report is None:
        run.problem = "\n".join(done.stderr.strip().splitlines()[-10:])
        return run
    run.cases, run.gaps, run.errors, run.checks = report["requests"], report["gaps"], report["errors"], report["checks"]
    run.findings = [{**{k: v[:SHOWN_CHARS] if isinstance(v, str) else v for k, v in f.items()},
                     "known": description.explanation(f, mode.name)} for f in report["findings"]]
    return run


def _without_report(args: list[str]) -> list[str]:
    """The command as a person repeats it: without the bench's temporary --report-json file."""
    at = args.index("--report-json")
    return args[:at] + args[at + 2:]


def _quoted(part: str) -> str:
    return part if re.fullmatch(r"[\w@%+=:,./-]+", part) else "'" + part.replace("'", "'\"'\"'") + "'"


def by_name(name: str) -> Description:
    return next(d for d in DESCRIPTIONS if d.name == name)


def mode_named(name: str) -> Mode:
    return next(m for m in MODES if m.name == name)


def table(runs: list[Run]) -> str:
    """A Markdown table: one row per description and mode."""
    head = ["description", "operations", "mode", "cases", "failures", "known", "verdict", "run s"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in runs:
        cells = [r.name, r.operations, r.mode, r.cases, r.failures, r.known, r.verdict, f"{r.elapsed_s:.0f}"]
        rows.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return "\n".join(rows)


def details(runs: list[Run]) -> str:
    """Every failure, gap and error under its description and mode; a failure the description explains says so,
    and so do the operations left unchecked."""
    lines: list[str] = []
    for name in dict.fromkeys(r.name for r in runs):
        description = by_name(name)
        mine = [r for r in runs if r.name == name]
        if not description.unchecked and not any(r.findings or r.gaps or r.errors or r.problem for r in mine):
            continue
        lines.append(f"\n{name}")
        lines += [f"  not checked: {regex} — {reason}" for regex, reason in description.unchecked.items()]
        for r in mine:
            for f in r.findings:
                lines += [f"  {r.mode}: {f['check']} · {f['operation']} · {f['title']} ({f['count']}×)"
                          + (f" — the description's: {f['known']}" if f["known"] else ""),
                          *(f"    {label:<10} {_indented(f[key])}"
                            for label, key in (("expected:", "expected"), ("got:", "got"), ("reproduce:", "curl")))]
            lines += [f"  {r.mode}: untested ({g['kind']}) · {g['operation']}: {g['detail']}" for g in r.gaps]
            for e in r.errors:
                cause = description.error_explanation(e, r.mode)
                lines.append(f"  {r.mode}: error: {_indented(e[:SHOWN_CHARS])}"
                             + (f"\n    — the description's: {cause}" if cause else ""))
            if r.problem:
                lines += [f"  {r.mode}: exit {r.exit}, no report: {_indented(r.problem)}", f"    {r.command}"]
    return "\n".join(lines)


def _indented(text: str) -> str:
    return text.replace("\n", "\n               ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--max-examples", type=int, help="per operation and phase, for every description")
    parser.add_argument("--jobs", type=int, default=JOBS, help="runs at once")
    parser.add_argument("--mode", choices=[m.name for m in MODES], help="only this mode (default: both)")
    parser.add_argument("names", nargs="*", help="only these descriptions (default: all)")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"make corpus: skipped, no corpus at {CORPUS} (the shared corpus of published descriptions)")
        return 0
    unknown = [name for name in args.names if name not in {d.name for d in DESCRIPTIONS}]
    if unknown:
        parser.error(f"no description {', '.join(unknown)}; there are: {', '.join(d.name for d in DESCRIPTIONS)}")
    chosen = [d for d in DESCRIPTIONS if not args.names or d.name in args.names]
    modes = [m for m in MODES if args.mode in (None, m.name)]
    print(f"make corpus: {len(chosen)} descriptions × {len(modes)} mode(s), `mockserver contract` with seed "
          f"{args.seed}, phases {PHASES}, {args.jobs} at a time", flush=True)
    started = time.monotonic()

    def one(description: Description, mode: Mode) -> Run:
        run = check(description, mode, seed=args.seed, max_examples=args.max_examples)
        print(f"  {run.name} {run.mode}: {run.cases} cases, {run.failures} failures, {run.known} known, "
              f"{run.verdict}, {run.elapsed_s:.0f} s", flush=True)
        return run

    with ThreadPoolExecutor(args.jobs) as pool:  # each run is a process of its own
        futures = [pool.submit(one, d, m) for d in chosen for m in modes]
        runs = [future.result() for future in futures]
    elapsed = time.monotonic() - started
    print("\n" + table(runs) + "\n" + details(runs))
    failing = [f"{r.name} ({r.mode})" for r in runs if r.verdict == "FAIL"]
    for mode in modes:
        mine = [r for r in runs if r.mode == mode.name]
        print(f"\n{mode.name} ({mode.what}): {sum(r.verdict != 'FAIL' for r in mine)} of {len(mine)} descriptions "
              f"pass, {sum(r.verdict == 'known' for r in mine)} of them with failures the description causes")
    print(f"{len(failing)} run(s) with failures the description does not explain"
          f"{': ' + ', '.join(failing) if failing else ''}; {elapsed:.0f} s in all")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(_report(runs, args.seed, elapsed), indent=2, ensure_ascii=False) + "\n")
    return 1 if failing else 0


def _report(runs: list[Run], seed: int, elapsed: float) -> dict[str, Any]:
    return {"seed": seed, "phases": PHASES, "elapsed_s": round(elapsed, 1),
            "modes": {m.name: {"options": list(m.args), "credentials": m.credentials, "must find": m.what}
                      for m in MODES},
            "unchecked": {d.name: d.unchecked for d in DESCRIPTIONS if d.unchecked},
            "runs": [asdict(r) for r in runs]}


if __name__ == "__main__":
    sys.exit(main())
