"""Issue 34 item 7: a run as fast per request as plain Schemathesis. The measure itself is `make bench-contract`
(bench/contract_speed.py), not a timed test; what is tested here is the cause found: the JUnit file rewritten
after every operation and phase of a big run."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from mockserver.contract import PartialJUnit, RunResult
from mockserver.contract.results import OperationResult


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
