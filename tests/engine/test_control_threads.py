"""The control API waits on its own threads (issue 35): on Redis a journal read waits until every process sharing
the state has written what it holds, which takes up to 2 s when one of them does not answer; the answers that make
a round trip to Redis beside it are not held up by that wait."""
from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
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


def threads_of_workers(pid: int) -> list[int]:
    """How many threads each worker of the server `pid` runs (a control call in a thread starts one the first time)."""
    workers = [int(child) for task in Path(f"/proc/{pid}/task").glob("*/children")
               for child in task.read_text().split()]
    return [int(next(line.split()[1] for line in Path(f"/proc/{worker}/status").read_text().splitlines()
                     if line.startswith("Threads:"))) for worker in workers]


def settled_threads_of_workers(pid: int) -> list[int]:
    """`threads_of_workers` once a worker still starting (on a busy machine) has started its own threads: the same
    count twice, half a second apart."""
    deadline, counted = time.monotonic() + 10, threads_of_workers(pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        again = threads_of_workers(pid)
        if again == counted:
            break
        counted = again
    return counted


@pytest.mark.slow
def test_on_the_memory_store_journal_reads_and_scenarios_are_answered_without_a_thread():
    """On a store of each worker's own they wait on nothing: answered on the worker's loop, as they were answered
    in a thread (a scenario set, in force, removed; the journal of the worker a connection reaches)."""
    with serving(*PETS, "--stateful", "--workers", "2", "--state", "memory") as (proc, port):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

        def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
            connection.request(method, path, json.dumps(body) if body is not None else None,
                               {"Content-Type": "application/json", "X-Mock-Session": "loop"})
            response = connection.getresponse()
            return response.status, json.loads(response.read() or b"null")

        assert call("POST", "/pets", {"name": "Rex", "kind": "dog"})[0] == 201
        before = settled_threads_of_workers(proc.pid)
        assert call("POST", "/__mock/scenarios", {"id": "gone", "operationId": "getPet", "status": 404})[0] == 201
        assert call("GET", "/__mock/scenarios")[1]["scenarios"][0]["id"] == "gone"
        assert call("GET", "/pets/1")[0] == 404
        assert call("DELETE", "/__mock/scenarios/gone") == (200, {"removed": 1})
        assert call("DELETE", "/__mock/scenarios/gone")[0] == 404
        assert call("GET", "/pets/1")[0] == 200
        status, journal = call("GET", "/__mock/requests?limit=3")
        assert status == 200
        assert [(e["method"], e["path"], e["status"]) for e in journal["requests"]] == [
            ("POST", "/pets", 201), ("GET", "/pets/1", 404), ("GET", "/pets/1", 200)]
        assert threads_of_workers(proc.pid) == before  # no control thread started in either worker
        connection.close()
