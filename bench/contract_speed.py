"""Issue 34's measure (`make bench-contract`): `mockserver contract --url` beside plain `schemathesis run` on the
same target, with the same description, checks, phases, seed and budget, one worker each. Targets: Prefect's real
server (its 188-operation description; installed from PyPI into ~/.cache/mockserver/sdks/ by `bench/sdks.py`) and
the Kindgi mock (`mockserver serve`, a quick second target). Prints per target and checker: requests, seconds, ms
per request and the checker process's peak RSS; then an in-process `mockserver contract` (the mock of Prefect's
description, in the same process) with its peak RSS, and the issue's targets.

Requests are every HTTP request each checker sent, counted in its process (`bench/counted.py`): preflight,
discovery and forced responses included. Each writes a JUnit report, as in CI.

    .venv/bin/python bench/contract_speed.py                             # both targets, the default budget
    .venv/bin/python bench/contract_speed.py kindgi --max-examples 10    # the Kindgi mock only, a smaller budget"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from run import ROOT, free_port  # bench/ is on the path: the script runs from it
from sdks import BenchError, prefect_server, started

from mockserver.contract import DEFAULT_MAX_EXAMPLES, PHASES

BENCH = Path(__file__).resolve().parent
TARGETS = ["prefect", "kindgi"]
KINDGI_TOKEN = "demo-token"  # fixtures/kindgi.yaml's first caller
RUN_TIMEOUT_S = 3600.0  # a checker's whole run
PER_REQUEST_TARGET = 1.2  # `mockserver contract` within 1.2 times plain Schemathesis' time per request
RSS_TARGET_MIB = 300  # peak RSS of the in-process run of the 188-operation description


@dataclass
class Budget:
    """What both checkers are given: the same for each."""

    max_examples: int
    phases: list[str]
    seed: int


@dataclass
class Target:
    """A server to check: its base URL, the description it is checked against, and credentials as each checker
    takes them."""

    name: str
    url: str
    spec: Path
    token: str | None = None


@dataclass
class Row:
    target: str
    checker: str
    requests: int
    seconds: float  # wall time
    cpu: float  # the checker's own CPU seconds (user and system): what a shared machine's load changes least
    rss_mib: float
    error: str = ""

    @property
    def ms_per_request(self) -> float:
        return 1000 * self.seconds / self.requests if self.requests else float("nan")

    @property
    def cpu_ms_per_request(self) -> float:
        return 1000 * self.cpu / self.requests if self.requests else float("nan")


def measured(module: list[str], target: str, checker: str, folder: Path) -> Row:
    """Run a checker (`python -m MODULE ARGS…`) to its end: wall time, its peak RSS (`wait4`'s, of that process
    alone) and the requests it sent. A checker's exit 1 is its verdict on the target, not a failure of the bench."""
    with tempfile.TemporaryFile() as log:
        count = folder / "requests"
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, str(BENCH / "counted.py"), str(count), "-m", *module],
                                stdout=log, stderr=log, cwd=folder)  # Schemathesis' cache goes there too
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        seconds = time.monotonic() - start
        if not count.exists() or code not in (0, 1):
            log.seek(0)
            said = log.read().decode(errors="replace").strip().splitlines()
            return Row(target, checker, 0, seconds, 0.0, 0.0, f"exit {code}: {said[-1] if said else 'no output'}")
        return Row(target, checker, int(count.read_text()), seconds, usage.ru_utime + usage.ru_stime,
                   usage.ru_maxrss / 1024)


def mockserver(target: Target, budget: Budget, in_process: bool = False) -> Row:
    with tempfile.TemporaryDirectory() as folder:
        return _mockserver(target, budget, Path(folder), in_process)


def _mockserver(target: Target, budget: Budget, folder: Path, in_process: bool) -> Row:
    module = ["mockserver", "contract", "--spec", str(target.spec), "--seed", str(budget.seed),
              "--max-examples", str(budget.max_examples), "--phases", ",".join(budget.phases),
              "--junit", str(folder / "contract.xml")]
    if not in_process:
        module += ["--url", target.url]
    if target.token:
        module += ["--token", target.token]
    checker = "mockserver contract (in-process mock)" if in_process else "mockserver contract --url"
    return measured(module, target.name, checker, folder)


def schemathesis(target: Target, budget: Budget) -> Row:
    with tempfile.TemporaryDirectory() as folder:
        module = ["schemathesis.cli", "run", str(target.spec), "--url", target.url, "--checks", "all",
                  "--seed", str(budget.seed), "--max-examples", str(budget.max_examples),
                  "--phases", ",".join(budget.phases), "--continue-on-failure", "--workers", "1",
                  "--generation-database", "none", "--no-color", "--report", "junit",
                  "--report-junit-path", f"{folder}/junit.xml"]
        if target.token:
            module += ["--header", f"Authorization: Bearer {target.token}"]
        return measured(module, target.name, "schemathesis run", Path(folder))


def side_by_side(target: Target, budget: Budget) -> list[Row]:
    return [schemathesis(target, budget), mockserver(target, budget)]


@contextmanager
def kindgi_mock() -> Iterator[Target]:
    """The Kindgi mock served as `make run` serves it, with strict auth (a real API refuses unknown tokens)."""
    port = free_port()
    spec = ROOT / "spec" / "kindgi.yaml"
    command = [sys.executable, "-m", "mockserver", "serve", "--spec", str(spec), "--fixtures", str(ROOT / "fixtures"),
               "--strict-auth", "--port", str(port)]
    with started(command, port):
        yield Target("Kindgi mock", f"http://127.0.0.1:{port}", spec, KINDGI_TOKEN)


def table(rows: list[Row]) -> str:
    """A Markdown table, to quote in docs/PERFORMANCE.md."""
    lines = ["| target | checker | requests | seconds | ms per request | CPU s | CPU ms per request | peak RSS MiB |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        lines.append(f"| {row.target} | {row.checker} | not measured: {row.error} | - | - | - | - | - |" if row.error
                     else f"| {row.target} | {row.checker} | {row.requests:,} | {row.seconds:.1f} | "
                     f"{row.ms_per_request:.2f} | {row.cpu:.1f} | {row.cpu_ms_per_request:.2f} | {row.rss_mib:.0f} |")
    return "\n".join(lines)


def verdicts(rows: list[Row]) -> list[str]:
    """The issue's targets, row against row."""
    lines = []
    for target in dict.fromkeys(row.target for row in rows):
        plain = next((r for r in rows if r.target == target and r.checker == "schemathesis run" and not r.error), None)
        ours = next((r for r in rows if r.target == target and r.checker.endswith("--url") and not r.error), None)
        if plain and ours:
            for what, ratio in (("time", ours.ms_per_request / plain.ms_per_request),
                                ("CPU time", ours.cpu_ms_per_request / plain.cpu_ms_per_request)):
                lines.append(f"{target}: {ratio:.2f}× plain Schemathesis' {what} per request ("
                             f"{'within' if ratio <= PER_REQUEST_TARGET else 'over'} the {PER_REQUEST_TARGET}× target)")
    for row in rows:
        if "in-process" in row.checker and not row.error:
            lines.append(f"{row.target}, in-process: peak RSS {row.rss_mib:.0f} MiB "
                         f"({'under' if row.rss_mib < RSS_TARGET_MIB else 'over'} the {RSS_TARGET_MIB} MiB target)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help=f"of {', '.join(TARGETS)} (default: both)")
    parser.add_argument("--max-examples", type=int, default=DEFAULT_MAX_EXAMPLES,
                        help="per operation and phase, for both checkers (default %(default)s)")
    parser.add_argument("--phases", default=",".join(PHASES), help="Schemathesis' phases (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="the same for both checkers (default %(default)s)")
    parser.add_argument("--no-in-process", action="store_true",
                        help="leave out the in-process run of Prefect's description")
    args = parser.parse_args()
    unknown = sorted(set(args.targets) - set(TARGETS))
    if unknown:
        parser.error(f"no target named {', '.join(unknown)}: there are {', '.join(TARGETS)}")
    budget = Budget(args.max_examples, args.phases.split(","), args.seed)
    wanted = args.targets or TARGETS
    print(f"budget: --max-examples {budget.max_examples}, phases {','.join(budget.phases)}, seed {budget.seed}, "
          "every check, one worker", flush=True)
    rows: list[Row] = []
    if "prefect" in wanted:
        try:
            with tempfile.TemporaryDirectory() as home:
                with prefect_server(Path(home)) as server:
                    prefect = Target("Prefect server (188 operations)", server.url, server.spec)
                    rows += side_by_side(prefect, budget)
                if not args.no_in_process:
                    rows.append(mockserver(prefect, budget, in_process=True))
        except BenchError as error:
            rows.append(Row("Prefect server", "-", 0, 0.0, 0.0, 0.0, str(error)))
    if "kindgi" in wanted:
        with kindgi_mock() as target:
            rows += side_by_side(target, budget)
    print(table(rows))
    print("\n".join(verdicts(rows)))
    return 1 if any(row.error for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
