"""`make bench`'s own rules (bench/run.py), the ones its figures rest on: a server runs in the bench's session
(with autogroup scheduling a session of its own made the server and wrk take turns as two groups: issue 15's p99
stalls), and a row is the median of its wrk rounds with the worst round kept. No load is run here."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
assert _spec is not None and _spec.loader is not None
bench = sys.modules["bench_run"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

WRK = """Running 5s test @ http://127.0.0.1:1/v1/test-sets?limit=25
  2 threads and 16 connections
  Latency Distribution
     50%    {p50}
     75%    1.50ms
     90%    2.00ms
     99%    {p99}
  {requests} requests in 5.00s, 900.00MB read
{extra}Requests/sec:  {rps}
Transfer/sec:    180.00MB
"""


def test_a_server_runs_in_the_benchs_session_in_a_process_group_of_its_own(tmp_path: Path) -> None:
    server = bench.Server("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], 0, tmp_path)
    try:
        assert os.getsid(server.proc.pid) == os.getsid(0)  # one autogroup with wrk, which the bench runs
        assert os.getpgid(server.proc.pid) == server.proc.pid  # stop() ends the group
    finally:
        server.stop()
    assert server.proc.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(server.proc.pid, 0)


def test_a_row_is_the_median_of_its_rounds_and_keeps_the_worst(monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = iter([
        WRK.format(p50="1.00ms", p99="4.00ms", requests=50000, extra="", rps="10000.00"),  # the warm-up
        WRK.format(p50="1.10ms", p99="3.00ms", requests=60000, extra="", rps="12000.00"),
        WRK.format(p50="0.90ms", p99="43.77ms", requests=55000, extra="  Non-2xx or 3xx responses: 7\n",
                   rps="11000.00"),
        WRK.format(p50="1.00ms", p99="5.00ms", requests=65000, extra="", rps="13000.00"),
    ])
    monkeypatch.setattr(bench, "request", lambda *args, **kwargs: (200, b"{}"))
    monkeypatch.setattr(bench, "wrk", lambda port, row, seconds: next(rounds))
    server: Any = SimpleNamespace(port=1, proc=SimpleNamespace(pid=os.getpid()))
    row = bench.measure(server, bench.Row("first page", "mock", "/v1/test-sets?limit=25", {}, 200))

    assert [r["p99_ms"] for r in row.rounds] == [3.0, 43.77, 5.0]  # the warm-up is not a round
    assert (row.rps, row.p50_ms, row.p99_ms, row.p99_worst_ms) == (12000.0, 1.0, 5.0, 43.77)
    assert (row.requests, row.non_2xx) == (180000, 7)
    assert "7 non-2xx answers under load" in row.note
    assert bench.spikes([row], "mock rounds") == "1 of 3 mock rounds >= 10 ms"

