"""Contract testing: the description that drives the mock checks a running server (or the mock itself) with
Schemathesis, fed with real ids from the fixtures and with the API's own rules as extra checks."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from .callbacks import CallbackError
from .credentials import Credentials, Sent
from .data import DataError
from .report import as_json, junit, text, write_json
from .results import Finding, Gap, RunResult, fold
from .runner import DEFAULT_MAX_EXAMPLES, MODES, PHASES, CoverageCap, RunOptions, run
from .schema import Contract, UnknownOperation, UnusedCredential, inline_operations, load_contract

__all__ = ["DEFAULT_MAX_EXAMPLES", "MODES", "PHASES", "CallbackError", "Contract", "CoverageCap", "Credentials",
           "DataError", "Finding", "Gap", "PartialJUnit", "RunOptions", "RunResult", "Sent", "UnknownOperation",
           "UnusedCredential", "as_json", "check", "fold",
           "inline_operations", "load_contract", "run"]


PARTIAL_SHARE = 0.1  # of a run's time, at most, spent rewriting its partial JUnit file


class PartialJUnit:
    """The JUnit file rewritten as a run goes, so a run killed by its CI timeout leaves a partial report, in at
    most a tenth of the run's time: after a rewrite that took T, the next waits until 10 T have passed. A small
    report (milliseconds) is still rewritten after every operation and phase; one of 188 operations takes 0.3 s
    to write, and a full run has some 750 operations and phases: rewritten after each, that was minutes of the
    run (issue 34)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path, self.clock = path, clock
        self.due = 0.0  # the clock's time of the next rewrite

    def write(self, result: RunResult) -> None:
        started = self.clock()
        if started < self.due:
            return
        junit(result, self.path, complete=False)
        self.due = started + (self.clock() - started) / PARTIAL_SHARE


def check(options: RunOptions, junit_path: Path | None = None, progress: TextIO | None = None,
          json_path: Path | None = None) -> int:
    """Run, print the report, write the JUnit file and the JSON report (`as_json`) if asked: 0 when everything
    passed, else 1. Raises LoadError, UnknownOperation or UnusedCredential (usage problems, exit 2 for the CLI)
    before any call. As it goes, a line per operation and phase on `progress`, and the JUnit file rewritten
    (`PartialJUnit`), so a run killed by a CI timeout leaves a partial report."""

    shown = progress or sys.stderr  # the stream of the moment (not the one when this module was imported)
    partial = PartialJUnit(junit_path) if junit_path is not None else None

    def step(result: RunResult, phase: str, label: str) -> None:
        op = result.operations.get(label)
        if op is not None:
            failures = sum(op.failed.values())
            print(f"mockserver contract: {phase:<9} {label} · {sum(op.statuses.values())} answers, "
                  f"{failures} failure(s)", file=shown, flush=True)
        if partial is not None:
            partial.write(result)

    result = run(replace(options, on_progress=options.on_progress or step))
    print(text(result), flush=True)
    if junit_path is not None:
        junit(result, junit_path)
    if json_path is not None:
        write_json(result, json_path)
    return 0 if result.passed else 1
