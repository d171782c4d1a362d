"""The control API waits on its own threads (issue 35): on Redis a journal read waits until every process sharing
the state has written what it holds, which takes up to 2 s when one of them does not answer; the answers that make
a round trip to Redis beside it are not held up by that wait."""
from __future__ import annotations

import http.client
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest

from conftest import ROOT, serving

PETS = ["--spec", str(ROOT / "tests/data/pets/openapi.yaml"), "--fixtures", str(ROOT / "tests/data/pets/fixtures"),
        "--log-level", "warning"]


def timed(port: int, path: str) -> tuple[int, float]:
    """A GET on a connection of its own: its status and how long it took."""
    began = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path)
    status = connection.getresponse().status
    connection.close()
    return status, time.monotonic() - began


@contextmanager
def beside_a_stopped_replica(own_redis: Any) -> Iterator[int]:
    """The port of a mock at `--threads 1` sharing Redis with a replica that is stopped (SIGSTOP) until the end:
    each journal read there waits up to 2 s for the replica to write what it holds."""
    url = own_redis.url("threads")
    with serving(*PETS, "--state", url, "--threads", "1") as (_, port), \
            serving(*PETS, "--state", url) as (other, other_port):
        for each in (port, other_port):  # each process listens to the others from its first call on
            assert timed(each, "/pets")[0] == 200
        stopped = [other.pid, *map(int, subprocess.run(["pgrep", "-P", str(other.pid)], capture_output=True,
                                                       text=True).stdout.split())]
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        try:
            yield port
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)


@pytest.mark.slow
def test_a_journal_read_waiting_for_a_stopped_replica_holds_up_no_answer(own_redis):
    with beside_a_stopped_replica(own_redis) as port, ThreadPoolExecutor(2) as pool:
        journal = pool.submit(timed, port, "/__mock/requests")
        time.sleep(0.2)  # the journal read is waiting for the stopped replica
        answers = [timed(port, "/pets") for _ in range(3)]  # each reads the pets' version in Redis
        status, waited = journal.result()
    assert status == 200 and waited > 1.5  # it did wait for the stopped replica
    assert all(status == 200 for status, _ in answers) and max(took for _, took in answers) < 0.5, answers


@pytest.mark.slow
def test_control_calls_waiting_for_a_stopped_replica_hold_up_no_other_control_call(own_redis):
    """Many sessions reading journals or changing scenarios at once (each waits for every process) do not queue
    behind each other: at `--threads 1` the control API has four threads, so three waiting leave one answering."""
    with beside_a_stopped_replica(own_redis) as port, ThreadPoolExecutor(3) as pool:
        journals = [pool.submit(timed, port, f"/__mock/requests?session=s{n}") for n in range(3)]
        time.sleep(0.2)  # the three journal reads are waiting for the stopped replica
        status, took = timed(port, "/__mock/scenarios")
        waited = [journal.result() for journal in journals]
    assert all(code == 200 and wait > 1.5 for code, wait in waited), waited  # they did wait
    assert status == 200 and took < 0.5, took
