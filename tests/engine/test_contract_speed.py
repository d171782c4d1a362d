"""Issue 34 item 7: a run as fast per request as plain Schemathesis, and an in-process run of a big description in
under 300 MiB. The measure itself is `make bench-contract` (bench/contract_speed.py), not a timed test; what is
tested here is the causes found: the JUnit file rewritten after every operation and phase of a big run, and
Hypothesis trying every code point for the characters UTF-8 encodes."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import ROOT
from mockserver.contract import PartialJUnit, RunResult
from mockserver.contract.results import OperationResult

NOTES = ROOT / "tests" / "data" / "contract"


def operation(label: str) -> OperationResult:
    return OperationResult(label, label.split("/")[-1], declared=["200"], statuses=Counter({200: 3}), checked=3)


def written(path: Path) -> set[str]:
    """The operations the JUnit file holds."""
    return {case.get("classname", "") for case in ET.parse(path).getroot().iter("testcase")}


def clock(*times: float) -> Callable[[], float]:
    """The times a run's clock reads, in turn."""
    ticks: Iterator[float] = iter(times)
    return lambda: next(ticks)


def test_a_slow_partial_junit_file_is_rewritten_in_a_tenth_of_the_run_at_most(tmp_path: Path):
    """A rewrite that took 0.3 s is not done again before 3 s have passed; then a quick one waits no longer
    than ten times its own length. The file is complete at every moment: the last rewrite's operations."""
    report = tmp_path / "contract.xml"
    result = RunResult("http://127.0.0.1:1", 1, 10, {}, operations={"GET /a": operation("GET /a")})
    # each write reads the clock once before, and once after a rewrite: 0 → 0.3, skipped at 1.0 and 2.9,
    # 3.0 → 3.001, skipped at 3.005, 3.02 → 3.021
    partial = PartialJUnit(report, clock(0.0, 0.3, 1.0, 2.9, 3.0, 3.001, 3.005, 3.02, 3.021))
    partial.write(result)
    assert written(report) == {"GET /a"}
    for label, expected in [("GET /b", {"GET /a"}), ("GET /c", {"GET /a"}), ("GET /d", {"GET /a", "GET /b",
                            "GET /c", "GET /d"}), ("GET /e", {"GET /a", "GET /b", "GET /c", "GET /d"}),
                            ("GET /f", {"GET /a", "GET /b", "GET /c", "GET /d", "GET /e", "GET /f"})]:
        result.operations[label] = operation(label)
        partial.write(result)
        assert written(report) == expected, label
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["complete"] == "false"


@pytest.mark.slow
def test_a_run_in_a_fresh_folder_does_not_try_every_code_point(tmp_path: Path):
    """Hypothesis works out the characters a codec encodes by trying all 1.1 million code points, and keeps the
    table in the current folder's `.hypothesis`: a run in a fresh folder (a CI checkout) used to build it for
    UTF-8, some 250 MiB at once at the start of an in-process run of Prefect's description. The run still passes,
    and leaves no codec table behind: it was never built."""
    env = {name: value for name, value in os.environ.items() if name != "HYPOTHESIS_STORAGE_DIRECTORY"}
    done = subprocess.run([sys.executable, "-m", "mockserver", "contract", "--spec", str(NOTES / "notes.yaml"),
                           "--fixtures", str(NOTES / "fixtures"), "--phases", "examples,fuzzing", "--max-examples",
                           "2", "--seed", "1", "--no-force"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASSED" in done.stdout
    tables = sorted(path.name for path in (tmp_path / ".hypothesis").rglob("codec-*"))
    assert tables == [], tables
