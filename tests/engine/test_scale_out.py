"""Scale-out, as people run it: two `mockserver serve` processes on two ports (one of them with two workers)
sharing one real Redis behave as one server: scenarios and their counts, journal, coverage, reset, sessions and
cursors. And the faults: Redis unreachable at start, lost while serving, a replica stopped."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, ROOT, SAMPLE_PROJECT, RedisServer, free_port, serving
from mockserver.web.app import create_app

pytestmark = pytest.mark.slow  # servers in other processes, or whole contract runs: `-m 'not slow'` skips them

TEST_SETS = "/v1/test-sets?limit=2"


def call(port: int, path: str, method: str = "GET", payload: Any = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json", **DEMO, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


@pytest.fixture(scope="module")
def replicas(redis_server: RedisServer) -> Iterator[tuple[int, int]]:
    """Replica A with two workers, replica B with one, both on one Redis prefix."""
    url = redis_server.url()
    with ExitStack() as stack:
        _, a = stack.enter_context(serving("--state", url, "--workers", "2", "--threads", "4", "--log-level",
                                           "warning"))
        _, b = stack.enter_context(serving("--state", url, "--log-level", "warning"))
        yield a, b


@pytest.fixture()
def fresh(replicas: tuple[int, int]) -> tuple[int, int]:
    assert call(replicas[0], "/__mock/reset", "POST")[0] == 200
    return replicas


def test_the_next_four_calls_are_the_four_503s_on_two_workers(fresh):
    a, _ = fresh
    assert call(a, "/__mock/scenarios", "POST", {"operationId": "listTestSets", "status": 503, "times": 4})[0] == 201
    assert [call(a, TEST_SETS)[0] for _ in range(12)] == [503] * 4 + [200] * 8


def test_times_is_exact_under_64_concurrent_calls_across_workers_and_replicas(fresh):
    a, b = fresh
    call(b, "/__mock/scenarios", "POST", {"id": "ten", "operationId": "listTestSets", "status": 503, "times": 10})
    with ThreadPoolExecutor(64) as pool:
        statuses = list(pool.map(lambda n: call(a if n % 2 else b, TEST_SETS)[0], range(64)))
    assert statuses.count(503) == 10 and statuses.count(200) == 54
    journal = call(a, "/__mock/requests?operationId=listTestSets")[1]["requests"]
    assert len(journal) == 64 and sorted(e["status"] for e in journal).count(503) == 10
    assert [e["id"] for e in journal] == sorted(e["id"] for e in journal)
    coverage = call(b, "/__mock/coverage")[1]
    op = next(o for o in coverage["operations"] if o["operationId"] == "listTestSets")
    assert op["calls"] == 64 and {s["status"]: s["calls"] for s in op["statuses"]}["503"] == 10
    assert "ten" not in [s["id"] for s in call(a, "/__mock/scenarios")[1]["scenarios"]]  # used up, everywhere


def test_a_scenario_set_through_one_replica_holds_on_the_next_call_to_the_other(fresh):
    a, b = fresh
    for _ in range(5):
        call(a, "/__mock/scenarios", "POST", {"id": "now", "operationId": "listTestSets", "status": 503})
        assert call(b, TEST_SETS)[0] == 503
        call(a, "/__mock/scenarios/now", "DELETE")
        assert call(b, TEST_SETS)[0] == 200


def test_a_seeded_rate_gives_one_sequence_across_replicas(fresh):
    a, b = fresh

    def run() -> list[int]:
        call(a, "/__mock/reset", "POST")
        call(a, "/__mock/scenarios", "POST", {"operationId": "listTestSets", "status": 503, "rate": 0.5, "seed": 7})
        return [call(a if n % 3 else b, TEST_SETS)[0] for n in range(30)]

    first = run()
    assert first == run() and set(first) == {200, 503}


def test_reset_through_one_replica_clears_the_other(fresh):
    a, b = fresh
    call(b, "/__mock/scenarios", "POST", {"operationId": "listTestSets", "status": 503})
    call(b, TEST_SETS, headers={"X-Mock-Session": "s1"})
    call(a, "/__mock/reset", "POST")
    assert call(b, TEST_SETS)[0] == 200
    assert [e["path"] for e in call(b, "/__mock/requests")[1]["requests"]] == ["/v1/test-sets"]
    assert call(b, "/__mock/requests?session=s1")[1]["requests"] == []


def test_sessions_are_isolated_across_replicas(fresh):
    a, b = fresh
    alice, bob = {"X-Mock-Session": "alice"}, {"X-Mock-Session": "bob"}
    call(a, "/__mock/scenarios", "POST", {"operationId": "listTestSets", "status": 503, "times": 2}, alice)
    assert [call(b, TEST_SETS, headers=alice)[0] for _ in range(3)] == [503, 503, 200]
    assert call(b, TEST_SETS, headers=bob)[0] == 200 and call(a, TEST_SETS)[0] == 200
    assert len(call(a, "/__mock/requests", headers=alice)[1]["requests"]) == 3
    assert len(call(b, "/__mock/requests?session=bob")[1]["requests"]) == 1
    assert call(a, "/__mock/coverage?session=alice")[1]["calls"] == 3


def test_a_cursor_from_one_replica_is_accepted_by_the_other(fresh):
    a, b = fresh
    first = call(a, TEST_SETS)[1]
    assert first["hasMore"]
    status, second = call(b, f"{TEST_SETS}&cursor={first['nextCursor']}")
    assert status == 200 and second["data"][0]["id"] > first["data"][-1]["id"]


def test_a_replica_that_stops_loses_none_of_its_calls(redis_server):
    url = redis_server.url()
    with serving("--state", url, "--log-level", "warning") as (_, other):
        with serving("--state", url, "--log-level", "warning") as (stopping, port):
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda _: call(port, TEST_SETS), range(40)))
            stopping.terminate()
            assert stopping.wait(timeout=15) == 0
        assert len(call(other, "/__mock/requests?operationId=listTestSets")[1]["requests"]) == 40


def test_an_unreachable_redis_at_start_is_one_line_and_exit_2():
    url = f"redis://127.0.0.1:{free_port()}/0"
    done = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", str(free_port()), "--state", url],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mockserver: --state {url}: ") and "Traceback" not in done.stderr


def test_two_workers_without_a_shared_store_are_refused():
    done = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", str(free_port()), "--workers", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--state redis://" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def until(condition: Any, seconds: float = 10) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        result = condition()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


def test_redis_lost_while_serving_is_a_503_of_the_mock_then_it_recovers(own_redis):
    with serving("--state", own_redis.url(), "--workers", "2", "--log-level", "warning") as (_, port):
        assert call(port, TEST_SETS)[0] == 200
        own_redis.stop()
        assert until(lambda: all(call(port, TEST_SETS)[0] == 503 for _ in range(4)))
        status, answer = call(port, TEST_SETS)
        assert status == 503 and answer["error"]["code"] == "mock-state-unavailable"
        control_status, control = call(port, "/__mock/requests")
        assert control_status == 503 and control["error"]["code"] == "mock-state-unavailable"
        health_status, health = call(port, "/__mock/health")
        assert health_status == 503 and health["state"]["available"] is False
        own_redis.start()
        assert until(lambda: all(call(port, TEST_SETS)[0] == 200 for _ in range(4)))
        time.sleep(1.0)  # those calls may all have reached one worker: the other retries at least every 0.5 s
        assert call(port, "/__mock/scenarios", "POST",
                    {"operationId": "listTestSets", "status": 503, "times": 1})[0] == 201
        assert [call(port, TEST_SETS)[0] for _ in range(2)] == [503, 200]


def test_health_asks_redis_itself_even_in_a_worker_that_has_served_nothing(own_redis):
    """A load balancer's probe may be the first call a worker gets: it must say the state is gone, not that all is
    well as the worker last saw it."""
    with serving("--state", own_redis.url(), "--log-level", "warning") as (_, port):
        own_redis.stop()
        status, health = call(port, "/__mock/health")
        assert status == 503 and health["state"]["available"] is False and "Redis" in health["state"]["reason"]
        own_redis.start()
        assert until(lambda: call(port, "/__mock/health")[0] == 200)


def test_slow_answers_sharing_redis_hold_no_thread(fresh):
    """A scenario's latency waits on the worker's event loop with Redis too: eight 1.5 s answers at once on the
    one-worker replica (2 threads) all end on time."""
    _, b = fresh
    began = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        ended = list(pool.map(lambda _: (call(b, f"/v1/agents/acme.slow/test-set/cases?projectId={SAMPLE_PROJECT}")[0],
                                         time.monotonic() - began), range(8)))
    assert [status for status, _ in ended] == [404] * 8  # acme.slow: 1.5 s, then agent-not-found
    assert max(took for _, took in ended) < 3, f"eight slow answers of 1.5 s ended after {sorted(ended)}"


def timed(port: int, path: str, method: str = "GET", headers: dict[str, str] | None = None
          ) -> tuple[int, Any, float, str | None]:
    """A call's status, body (JSON, else the bytes), seconds taken and Retry-After header."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     headers={"Content-Type": "application/json", **DEMO, **(headers or {})})
    began = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, body, retry = response.status, response.read(), response.headers.get("Retry-After")
    except urllib.error.HTTPError as exc:
        status, body, retry = exc.code, exc.read(), exc.headers.get("Retry-After")
    try:
        return status, json.loads(body or b"null"), time.monotonic() - began, retry
    except ValueError:
        return status, body, time.monotonic() - began, retry


@contextmanager
def frozen(server: RedisServer) -> Iterator[None]:
    """Redis stopped (SIGSTOP): its port still takes connections, nothing is answered; SIGCONT at the end."""
    assert server.pid is not None
    os.kill(server.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server.pid, signal.SIGCONT)


def test_a_frozen_redis_holds_no_call_longer_than_the_timeout_and_all_recovers(own_redis):
    """Redis frozen: a 404 that needs no state does not wait, not even on a worker that has served nothing yet or
    beside a call that waits on Redis; a call that needs Redis (a scenario's count) and the health check answer
    503 within the timeout (1 s); after SIGCONT everything answers as before, and no call is journaled twice."""
    with serving("--state", own_redis.url(), "--workers", "2", "--log-level", "warning") as (_, port):
        assert call(port, "/__mock/scenarios", "POST", {"operationId": "listTestSets", "status": 401,
                                                        "times": 1000})[0] == 201
        with frozen(own_redis), ThreadPoolExecutor(6) as pool:
            fresh = list(pool.map(lambda _: timed(port, "/nope"), range(6)))  # both workers, one never called
            assert all(status == 404 for status, *_ in fresh) and max(took for *_, took, _ in fresh) < 0.5, fresh
            waiting = [pool.submit(timed, port, TEST_SETS) for _ in range(2)]  # one per worker, most likely
            time.sleep(0.1)
            beside = timed(port, "/nope")
            assert beside[0] == 404 and beside[2] < 0.5, beside  # 1 s (the timeout) before, 10 s before that
            for status, answer, took, retry in (w.result() for w in waiting):
                assert status == 503 and answer["error"]["code"] == "mock-state-unavailable" and retry == "1"
                assert took < 1.5
            status, answer, took, retry = timed(port, TEST_SETS)
            assert status == 503 and answer["error"]["code"] == "mock-state-unavailable" and took < 1.5
            status, health, took, _ = timed(port, "/__mock/health")
            assert status == 503 and health["state"]["available"] is False and took < 1.5, (health, took)
            assert "Timeout" in health["state"]["reason"] and "Redis at" in health["state"]["reason"]
            time.sleep(1.0)  # every worker's listener has found Redis away by now: health asks it no more
            healths = [timed(port, "/__mock/health") for _ in range(4)]
            assert all(status == 503 and took < 0.5 for status, _, took, _ in healths), healths
            assert timed(port, "/nope")[2] < 0.5
        assert until(lambda: all(call(port, TEST_SETS)[0] == 401 for _ in range(4)), 5)
        assert until(lambda: call(port, "/__mock/health")[0] == 200, 5)
        assert until(lambda: len(call(port, "/__mock/requests?path=/nope")[1]["requests"]) == 8, 5)
        time.sleep(1)  # a batch sent again after a timeout is written once
        assert len(call(port, "/__mock/requests?path=/nope")[1]["requests"]) == 8
        # both listeners subscribed again: a change through one worker holds on both from the next call
        assert call(port, "/__mock/scenarios", "DELETE")[0] == 200
        assert [call(port, TEST_SETS)[0] for _ in range(6)] == [200] * 6


def test_the_state_timeout_bounds_health_in_process_and_a_frozen_redis_at_start(own_redis):
    """`state_timeout` (`--state-timeout`) is the wait: health on a frozen Redis answers 503 after it, not after
    redis-py's own 5 s; `serve` on a frozen Redis exits 2 with one line within it; a timeout of 0 is refused."""
    app = create_app(KINDGI_SPEC, KINDGI_FIXTURES, state=own_redis.url(), state_timeout=0.3)
    client = app.test_client()
    assert client.get("/__mock/health").status_code == 200
    with frozen(own_redis):
        began = time.monotonic()
        answer = client.get("/__mock/health")
        assert answer.status_code == 503 and time.monotonic() - began < 0.6
        assert "Timeout" in answer.get_json()["state"]["reason"]
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", str(free_port()), "--state",
                               own_redis.url(), "--state-timeout", "0.5"], cwd=ROOT, capture_output=True, text=True,
                              timeout=60)
        took = time.monotonic() - began
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Timeout" in lines[0] and "Traceback" not in done.stderr
    assert took < 5, f"serve on a frozen Redis gave up after {took:.1f} s"
    done = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--state-timeout", "0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--state-timeout: '0' is not a number of seconds above 0" in done.stderr


FLAKY = "/v1/test-sets/acme.flaky/versions/1.0.0/cases"  # a fixtures' scenario: each firing counted in Redis


def test_a_frozen_redis_before_the_first_call_holds_no_call_that_needs_no_state(own_redis):
    """A worker that has served nothing when Redis freezes: its first calls that need no state (a 404, a CORS
    preflight, the dashboard) answer at once, not after waiting for its listener; one that needs Redis is a 503
    within the timeout; after SIGCONT, the same call is the scenario's answer again."""
    with serving("--state", own_redis.url(), "--log-level", "warning") as (_, port):
        with frozen(own_redis):
            for _ in range(3):
                status, _, took, _ = timed(port, "/nope")
                assert status == 404 and took < 0.5, took  # 2 s before: the first call waited for the listener
            preflight = timed(port, TEST_SETS, "OPTIONS", {"Origin": "http://app.example",
                                                           "Access-Control-Request-Method": "GET"})
            assert preflight[0] == 204 and preflight[2] < 0.5
            page = timed(port, "/__mock/")
            assert page[0] == 200 and page[2] < 0.5
            status, answer, took, retry = timed(port, FLAKY)
            assert status == 503 and answer["error"]["code"] == "mock-state-unavailable" and retry == "1"
            assert took < 1.5, took
        assert until(lambda: timed(port, FLAKY)[1].get("error", {}).get("code") == "database-busy", 5)


def test_a_replica_stopped_while_redis_is_frozen_says_how_many_calls_it_could_not_journal(own_redis):
    """The journal entries still queued when a replica stops are written if Redis answers within 5 s; a frozen
    Redis does not, and the log says how many were lost instead of losing them without a word."""
    with serving("--state", own_redis.url(), "--log-level", "warning") as (server, port):
        with frozen(own_redis):
            assert [timed(port, "/nope")[0] for _ in range(5)] == [404] * 5
            server.terminate()
            assert server.wait(timeout=30) == 0
        assert server.stderr is not None
        lost = [line for line in server.stderr.read().splitlines() if "journal entries not written" in line]
    assert len(lost) == 1 and "did not answer before this process ended: 5 journal entries" in lost[0], lost



def beside_a_frozen_redis(redis: RedisServer, port: int, paths: tuple[str, ...]
                          ) -> tuple[list[tuple[int, Any, float, str | None]], list[tuple[int, Any]]]:
    """Redis frozen for 2.5 s while one client per path keeps calling it: the 404s of `/nope` called meanwhile,
    and what the calls to `paths` that began and ended during the freeze answered (status, body)."""
    stop = threading.Event()
    waiting: list[tuple[float, int, Any, float]] = []  # began, status, body, seconds

    def keep_calling(path: str) -> None:
        while not stop.is_set():
            began = time.monotonic()
            status, answer, took, _ = timed(port, path)
            waiting.append((began, status, answer, took))

    with ThreadPoolExecutor(len(paths)) as pool:
        callers = [pool.submit(keep_calling, path) for path in paths]
        time.sleep(0.3)
        with frozen(redis):
            frozen_at = time.monotonic()
            nope = []
            while time.monotonic() < frozen_at + 2.5:
                nope.append(timed(port, "/nope"))
                time.sleep(0.02)
            continued_at = time.monotonic()
        stop.set()
        for caller in callers:
            caller.result()
    return nope, [(status, answer) for began, status, answer, took in waiting
                  if began > frozen_at and began + took < continued_at]


def assert_no_404_waited_and_the_others_were_503(nope: list[tuple[int, Any, float, str | None]],
                                                  while_frozen: list[tuple[int, Any]]) -> None:
    assert all(status == 404 for status, *_ in nope), nope
    # behind Redis a 404 would wait out the 1 s state timeout; half of it leaves room for a busy CI machine's
    # scheduling (one 404 of a clean-clone run took 0.28 s beside the other test worker)
    assert max(took for *_, took, _ in nope) < 0.5, sorted(took for *_, took, _ in nope)[-5:]
    assert while_frozen and all(status == 503 and answer["error"]["code"] == "mock-state-unavailable"
                                for status, answer in while_frozen), while_frozen


def test_a_call_that_needs_no_state_never_waits_behind_scenario_calls_waiting_on_a_frozen_redis(own_redis):
    """One worker, Redis frozen while two clients keep calling what a scenario counts in Redis (the fixtures' own
    on FLAKY, one set at run time on TEST_SETS): a 404 answers within 500 ms every time (before, it waited up to
    the timeout, 1 s, behind them on the worker's event loop); those calls answer 503 mock-state-unavailable;
    after SIGCONT every call answers as before."""
    with serving("--state", own_redis.url(), "--workers", "1", "--log-level", "warning") as (_, port):
        assert call(port, "/__mock/scenarios", "POST", {"operationId": "listTestSets", "status": 401,
                                                        "times": 100_000})[0] == 201
        assert_no_404_waited_and_the_others_were_503(*beside_a_frozen_redis(own_redis, port, (FLAKY, TEST_SETS)))
        assert until(lambda: timed(port, FLAKY)[1].get("error", {}).get("code") == "database-busy", 5)
        assert until(lambda: timed(port, TEST_SETS)[0] == 401, 5)
        assert timed(port, "/nope")[0] == 404


def test_a_call_that_needs_no_state_never_waits_behind_reads_of_a_written_collection_on_a_frozen_redis(own_redis):
    """The same beside calls that read a collection written at run time (the pets' list and an item: each asks
    Redis for the rows' version)."""
    pets = ROOT / "tests" / "data" / "pets"
    with serving("--spec", str(pets / "openapi.yaml"), "--fixtures", str(pets / "fixtures"), "--state",
                 own_redis.url(), "--workers", "1", "--log-level", "warning") as (_, port):
        assert call(port, "/pets", "POST", {"name": "Rex", "kind": "dog"})[0] == 201
        assert_no_404_waited_and_the_others_were_503(*beside_a_frozen_redis(own_redis, port, ("/pets", "/pets/1")))
        assert until(lambda: timed(port, "/pets")[0] == 200, 5)
        assert "Rex" in [pet["name"] for pet in timed(port, "/pets?kind=dog&limit=100")[1]["data"]]


def test_a_404_does_not_wait_behind_a_worker_s_first_call_to_an_operation_while_redis_is_frozen(own_redis):
    """A worker's first call to any operation waits (at most the timeout) until the worker knows whether Redis
    answers, even one no scenario names: with Redis frozen before it, a 404 beside it still answers at once (it
    waited about a second behind it before), and that call is the 503."""
    with serving("--state", own_redis.url(), "--workers", "1", "--log-level", "warning") as (_, port):
        with frozen(own_redis), ThreadPoolExecutor(1) as pool:
            first = pool.submit(timed, port, TEST_SETS)
            time.sleep(0.1)
            nope = [timed(port, "/nope") for _ in range(5)]
            status, answer, took, retry = first.result()
        assert all(status == 404 for status, *_ in nope) and max(took for *_, took, _ in nope) < 0.2, nope
        assert status == 503 and answer["error"]["code"] == "mock-state-unavailable" and retry == "1", answer
        assert took < 2.0
        assert until(lambda: timed(port, TEST_SETS)[0] == 200, 5)


def test_after_two_is_the_third_call_across_workers_and_replicas(fresh):
    """`after: 2` counted in Redis: the third call fails wherever it lands (A's two workers, or B); a named state
    moved on one replica is read on the other."""
    a, b = fresh
    cases = "/v1/test-sets/acme.drafting.corrections/versions/1.1.0/cases"
    assert call(a, "/__mock/scenarios", "POST", [
        {"operationId": "listTestSets", "status": 503, "after": 2, "times": 1},
        {"operationId": "listTestSetVersionCases", "status": 503, "state": "db", "requiredState": "down"},
        {"operationId": "listAgentTestSetCases", "state": "db", "newState": "down"}])[0] == 201
    assert [call(port, TEST_SETS)[0] for port in (a, b, a, b, a)] == [200, 200, 503, 200, 200]
    assert call(a, cases)[0] == 200
    assert call(b, f"/v1/agents/acme.drafting/test-set/cases?projectId={SAMPLE_PROJECT}")[0] == 200
    assert [call(port, cases)[0] for port in (a, b)] == [503, 503]
    shown = call(a, "/__mock/scenarios")[1]["scenarios"]
    assert [s.get("currentState") for s in shown if "state" in s] == ["down", "down"]


PETS = ROOT / "tests" / "data" / "pets"


def test_a_replica_killed_in_the_middle_of_writes_loses_none_it_answered_and_no_id_is_given_twice(redis_server):
    """Two stateful replicas create pets in one session at once, and one is killed (-9, its workers too) in the
    middle: every create either replica answered 201 is listed once by the survivor, under the id it answered, and
    no id is held by two pets; the survivor goes on creating."""
    url, session = redis_server.url(), {"X-Mock-Session": "farm"}
    pets = ("--spec", str(PETS / "openapi.yaml"), "--fixtures", str(PETS / "fixtures"), "--state", url,
            "--log-level", "warning")

    def create(port: int, n: int) -> tuple[int, str] | None:
        try:
            status, pet = call(port, "/pets", "POST", {"name": f"P{n:02}"}, session)
        except OSError:  # the killed replica: the write may or may not have landed, but nobody was told it did
            return None
        assert status == 201, pet
        return int(pet["id"]), pet["name"]

    with serving(*pets) as (_, survivor), serving(*pets, "--workers", "2") as (killed, victim):
        with ThreadPoolExecutor(8) as pool:
            answered = list(pool.map(lambda n: create((survivor, victim)[n % 2], n), range(30)))
            later = [pool.submit(create, (survivor, victim)[n % 2], n) for n in range(30, 80)]
            time.sleep(0.05)
            os.killpg(killed.pid, signal.SIGKILL)
            answered += [done.result() for done in later]
        status, listed = call(survivor, "/pets?limit=100", headers=session)
        assert status == 200
        held = [(pet["id"], pet["name"]) for pet in listed["data"]]
        assert len({pet_id for pet_id, _ in held}) == len(held), "an id given twice"
        assert len({name for _, name in held}) == len(held), "a create kept twice"
        assert {pet for pet in answered if pet is not None} <= set(held)
        assert create(survivor, 99) not in held


def test_writes_while_redis_restarts_are_503s_of_the_mock_then_they_land_again_with_no_id_twice(own_redis):
    """A Redis without persistence restarts under a stateful mock: the writes meanwhile are the mock's 503 (never a
    500, never acknowledged and lost), and afterwards creates land again on the collection as the fixtures give
    it, each under an id of its own."""
    pets = ("--spec", str(PETS / "openapi.yaml"), "--fixtures", str(PETS / "fixtures"), "--state", own_redis.url(),
            "--workers", "2", "--log-level", "warning")
    with serving(*pets) as (_, port):
        assert all(call(port, "/pets", "POST", {"name": f"A{n}"})[0] == 201 for n in range(4))
        own_redis.stop()
        status, answer = call(port, "/pets", "POST", {"name": "lost"})
        assert status == 503 and answer["error"]["code"] == "mock-state-unavailable"
        own_redis.start()
        assert until(lambda: all(call(port, "/pets", "POST", {"name": "B"})[0] == 201 for _ in range(2)))
        with ThreadPoolExecutor(8) as pool:
            created = list(pool.map(lambda n: call(port, "/pets", "POST", {"name": f"C{n}"}), range(20)))
        assert [status for status, _ in created] == [201] * 20
        listed = call(port, "/pets?limit=100")[1]["data"]
        assert len({pet["id"] for pet in listed}) == len(listed)
        assert {f"C{n}" for n in range(20)} <= {pet["name"] for pet in listed}
        assert not {"lost", "A0"} & {pet["name"] for pet in listed}


FIRST_PAGE = "/v1/test-sets?limit=25"  # the bench's first page: a 15.8 kB answer, kept in Redis by its digest
QUOTED = re.compile(rb'"((?:[^"\\]|\\.)*)"')  # one argument of a command as MONITOR shows it


@contextmanager
def monitor(port: int) -> Iterator[list[tuple[bool, list[bytes]]]]:
    """Every command Redis runs meanwhile, whether a script ran it (`[0 lua]`), and its arguments, from MONITOR on a
    plain socket: redis-py joins the arguments with spaces, and an entry holds spaces."""
    seen: list[tuple[bool, list[bytes]]] = []
    stop = f"stop-{os.getpid()}-{time.monotonic_ns()}".encode()
    with socket.create_connection(("127.0.0.1", port)) as watching, watching.makefile("rb") as lines:
        watching.sendall(b"MONITOR\r\n")
        assert lines.readline() == b"+OK\r\n"

        def watch() -> None:
            while (line := lines.readline()) and stop not in line:
                seen.append((b" lua] " in line.split(b'"', 1)[0], QUOTED.findall(line)))

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            yield seen
        finally:
            with socket.create_connection(("127.0.0.1", port)) as other:
                other.sendall(b"ECHO " + stop + b"\r\n")
                other.recv(64)
            watcher.join(10)


def test_a_first_page_is_one_argument_of_its_worker_s_batch_to_redis(fresh, redis_server):
    """200 first pages on two workers sharing Redis make no round trip of their own: Redis sees (MONITOR) only the
    workers' journal writers, a script call a batch, each page's entry one argument of it, and what a batch's pages
    share (their call, the digest of their answer) sent once a batch, not once a page (5 arguments a page before).
    The journal shows every page with its answer whole."""
    a, _ = fresh
    status, page = call(a, FIRST_PAGE)
    assert status == 200 and len(page["data"]) == 25
    with ThreadPoolExecutor(8) as pool:  # each worker's first calls: its threads start, Redis takes the answer
        list(pool.map(lambda _: call(a, FIRST_PAGE), range(8)))
    assert len(call(a, "/__mock/requests")[1]["requests"]) == 9  # written, every worker asked
    with monitor(redis_server.port) as seen:
        with ThreadPoolExecutor(8) as pool:
            assert {s for s, _ in pool.map(lambda _: call(a, FIRST_PAGE), range(200))} == {200}
        time.sleep(0.5)  # the writers' last batch (each waits 20 ms for more)
    # the listeners' own aside: their ping twice a second, their sweep of idle sessions now and then
    sent = [c for scripted, c in seen if not scripted and c[0].upper() not in (b"PING", b"ZRANGEBYSCORE")]
    batches = [c[3:] for c in sent if c[0].upper() == b"EVALSHA" and c[2] == b"0" and len(c) > 10]
    assert sent and len(batches) == len(sent), [c[:2] for c in sent]  # nothing but the writers' script calls
    per_batch = [len(argv) - 7 - 2 * int(argv[6]) for argv in batches]  # past the batch's head and long bodies
    assert sum(per_batch) <= 200 + 5 * len(batches), (per_batch, len(batches))
    assert sum(1 for _, c in seen if c[0].upper() == b"XADD") == 200
    journal = call(a, "/__mock/requests?limit=200")[1]["requests"]
    assert len(journal) == 200 and all(json.loads(e["responseBody"]) == page for e in journal)


def commands(port: int) -> dict[str, int]:
    """How many of each command Redis ran so far (INFO commandstats), scripts' own commands included."""
    with socket.create_connection(("127.0.0.1", port)) as s, s.makefile("rb") as lines:
        s.sendall(b"INFO commandstats\r\n")
        size = int(lines.readline()[1:])
        text = lines.read(size + 2).decode()
    return {m[1]: int(m[2]) for m in re.finditer(r"^cmdstat_(\w+):calls=(\d+)", text, re.M)}


SCENARIO = {"id": "mix", "operationId": "getPet", "status": 404, "times": 1}


def test_scenarios_set_together_in_one_worker_are_one_transaction_each_and_all_held(own_redis):
    """48 sessions setting a scenario at once through one worker's 16 threads: each change of the shared book is
    one WATCH ... EXEC (the threads made each other's fail before, each reading the whole book again: some 5 tries
    a change), and every scenario is there, each firing once on its session's next read."""
    with serving("--spec", str(PETS / "openapi.yaml"), "--fixtures", str(PETS / "fixtures"), "--stateful",
                 "--state", own_redis.url(), "--threads", "16", "--log-level", "warning") as (_, port):
        assert call(port, "/pets/1")[0] == 200  # the worker's threads started, its listener subscribed
        before = commands(own_redis.port)
        with ThreadPoolExecutor(48) as pool:
            answers = list(pool.map(lambda n: call(port, "/__mock/scenarios", "POST", SCENARIO,
                                                   {"X-Mock-Session": f"s{n}"})[0], range(48)))
        after = commands(own_redis.port)
        assert answers == [201] * 48
        assert after.get("watch", 0) - before.get("watch", 0) == 48
        assert after.get("exec", 0) - before.get("exec", 0) == 48
        assert [call(port, "/pets/1", headers={"X-Mock-Session": f"s{n}"})[0] for n in range(48)] == [404] * 48
        assert [call(port, "/pets/1", headers={"X-Mock-Session": f"s{n}"})[0] for n in range(48)] == [200] * 48


def test_removing_a_scenario_scans_the_counters_in_one_round_trip(own_redis):
    """With 600 sessions' scenarios counted (past the 512 fields Redis keeps a hash compact to, and scans at once),
    removing one that has not fired yet looks through the counters hash in one HSCAN (some 60 before: Redis's 10
    fields a call), and removes it: its session's next read is the pet."""
    with serving("--spec", str(PETS / "openapi.yaml"), "--fixtures", str(PETS / "fixtures"), "--stateful",
                 "--state", own_redis.url(), "--log-level", "warning") as (_, port):
        with ThreadPoolExecutor(8) as pool:
            def counted(n: int) -> tuple[int, int]:
                session = {"X-Mock-Session": f"c{n}"}
                return (call(port, "/__mock/scenarios", "POST", SCENARIO, session)[0],
                        call(port, "/pets/1", headers=session)[0])
            assert set(pool.map(counted, range(600))) == {(201, 404)}
        kept = {"X-Mock-Session": "kept"}
        assert call(port, "/__mock/scenarios", "POST", {**SCENARIO, "times": 2}, kept)[0] == 201
        before = commands(own_redis.port)
        assert call(port, "/__mock/scenarios/mix", "DELETE", headers=kept) == (200, {"removed": 1})
        after = commands(own_redis.port)
        assert after.get("hscan", 0) - before.get("hscan", 0) == 1
        assert call(port, "/pets/1", headers=kept)[0] == 200
