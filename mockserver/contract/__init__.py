"""Contract testing: the description that drives the mock checks a running server (or the mock itself) with
Schemathesis, fed with real ids from the fixtures and with the API's own rules as extra checks."""
from __future__ import annotations

from pathlib import Path

from .credentials import Credentials, Sent
from .report import junit, text
from .results import Finding, Gap, RunResult, fold
from .runner import DEFAULT_MAX_EXAMPLES, PHASES, CoverageCap, Options, run
from .schema import Contract, UnknownOperation, inline_operations, load_contract

__all__ = ["DEFAULT_MAX_EXAMPLES", "PHASES", "Contract", "CoverageCap", "Credentials", "Finding", "Gap", "Options",
           "RunResult", "Sent", "UnknownOperation", "check", "fold", "inline_operations", "load_contract", "run"]


def check(options: Options, junit_path: Path | None = None) -> int:
    """Run, print the report, write the JUnit file if asked: 0 when everything passed, else 1. Raises LoadError or
    UnknownOperation (usage problems, exit 2 for the CLI) before any call."""
    result = run(options)
    print(text(result), flush=True)
    if junit_path is not None:
        junit(result, junit_path)
    return 0 if result.passed else 1
