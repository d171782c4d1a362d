"""`make soak`: the mock on Granian (2 workers, the default threads; once with the memory store, once sharing a
real Redis) takes 20,000 requests on 64 concurrent keep-alive connections, mixed across operations, errors and
scenarios, then 1,280 calls at once against a `times: 300` scenario. It passes when every answer has the status
expected for its request, no connection drops, memory stays flat, and (sharing Redis) exactly 300 calls got the
scenario's answer. The phase "mixed" (issue 35) runs `make bench`'s mixed load (bench/run.py's MIXED: reads, writes,
deletes, scenario calls and journal reads over 64 sessions) for MIXED_S on the pets description served `--stateful`,
on memory and on Redis: every answer a status the mix expects, no socket error, and the RSS before and after. Then
the phase "slow uploads" (`--phase slow-uploads` runs it alone): 2,000 clients send a
request's head announcing a 1 MB body, one byte, then nothing; normal requests beside them must answer within
100 ms, and every slow one must be answered 408 (or 503 mock-busy) and closed by itself. Loopback only, bounded in
time."""
from __future__ import annotations

import argparse
import http.client
import json
import re
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from run import MIXED, MIXED_CONNECTIONS, MIXED_EXPECTED, MULTI_WORKER_ARGS, redis_server, rss_mb

from mockserver.cli import THREADS

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "2489e9ad-2ee2-8e00-8ec9-32d5f69181c0"
DEMO = {"Authorization": "Bearer demo-token"}
# (path, headers, expected status)
MIX: list[tuple[str, dict[str, str], int]] = [
    ("/v1/test-sets?limit=25", DEMO, 200),
    ("/v1/test-sets?limit=100&includeRetired=true", DEMO, 200),
    ("/v1/test-sets?kind=accuracy&name=acme.", DEMO, 200),
    (f"/v1/agents/acme.drafting/test-set/cases?projectId={PROJECT}&kind=correction&include=retired", DEMO, 200),
    ("/v1/test-sets/acme.drafting.corrections/versions/1.1.0/cases?limit=10", DEMO, 200),
    ("/v1/eval-suites/acme.drafting-accuracy/versions/1.2.0/cases", DEMO, 200),
    ("/v1/test-sets?limit=500", DEMO, 400),
    ("/v1/test-sets?scopeId=x", DEMO, 400),
    ("/v1/test-sets?cursor=forged", DEMO, 400),
    ("/v1/test-sets", {}, 401),
    ("/v1/test-sets", {"Authorization": "Bearer expired-token"}, 401),
    (f"/v1/agents/acme.nobody/test-set/cases?projectId={PROJECT}", DEMO, 404),
    ("/v1/nothing/here", DEMO, 404),
    ("/v1/test-sets", {**DEMO, "Prefer": "code=503"}, 503),
    ("/v1/test-sets/acme.flaky/versions/1.0.0/cases", DEMO, 503),
    ("/v1/test-sets", {**DEMO, "Prefer": "dynamic=true"}, 200),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid: int) -> int:
    """Resident memory of the server: Granian's main process and its workers."""
    pids = [pid] + [int(p) for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
                    .stdout.split()]
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def hammer(port: int, count: int, offset: int, statuses: Counter, unexpected: list, dropped: list,
           deadline: float) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for n in range(count):
        if time.monotonic() > deadline:
            dropped.append("time limit reached")
            return
        path, headers, expected = MIX[(offset + n) % len(MIX)]
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            response.read()
        except (OSError, http.client.HTTPException) as exc:
            dropped.append(f"{path}: {exc!r}")
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        statuses[response.status] += 1
        if response.status != expected:
            unexpected.append(f"{path}: expected {expected}, got {response.status}")
    connection.close()


SCENARIO_PATH = "/v1/test-sets/acme.soak/versions/1.0.0/cases"  # no such test set: 404 unless the scenario fires
SCENARIO_TIMES = 300
SCENARIO_CALLS = 1_280


def exact_times(port: int, connections: int) -> dict[str, Any]:
    """A `times: 300` scenario hit 1,280 times at once over every connection: exactly 300 answers are its 503."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/__mock/scenarios", method="POST", data=json.dumps(
        {"operationId": "listTestSetVersionCases", "pathParams": {"testSetId": "acme.soak"}, "status": 503,
         "times": SCENARIO_TIMES}).encode(), headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()
    seen: Counter = Counter()

    def calls(count: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for _ in range(count):
            connection.request("GET", SCENARIO_PATH, headers=DEMO)
            response = connection.getresponse()
            response.read()
            seen[response.status] += 1
        connection.close()

    threads = [threading.Thread(target=calls, args=(SCENARIO_CALLS // connections,)) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"scenario_times": SCENARIO_TIMES, "calls": sum(seen.values()), "statuses": dict(sorted(seen.items())),
            "exact": seen[503] == SCENARIO_TIMES and seen[404] == sum(seen.values()) - SCENARIO_TIMES}


def soak(args: argparse.Namespace, state: list[str]) -> bool:
    port = free_port()
    server = subprocess.Popen([str(ROOT / ".venv/bin/mockserver"), "serve", "--spec", str(ROOT / "spec/kindgi.yaml"),
                               "--fixtures", str(ROOT / "fixtures"), "--port", str(port), "--workers",
                               str(args.workers), *(state if args.workers > 1 else []), "--threads",
                               str(args.threads), "--log-level", "warning"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until_listening(port)
        warm: Counter = Counter()
        # warm-up: every worker's journal (1,000 entries) and caches fill up, so what follows shows any leak
        warmers = [threading.Thread(target=hammer, args=(port, 500, i, warm, [], [], time.monotonic() + 60))
                   for i in range(8)]
        for t in warmers:
            t.start()
        for t in warmers:
            t.join()
        rss = [rss_kib(server.pid)]
        statuses: Counter = Counter()
        unexpected: list[str] = []
        dropped: list[str] = []
        deadline = time.monotonic() + args.max_seconds
        started = time.monotonic()
        for half in (args.requests // 2, args.requests - args.requests // 2):  # two rounds: memory must plateau
            per, extra = divmod(half, args.connections)
            threads = [threading.Thread(target=hammer, args=(port, per + (i < extra), i * 7, statuses, unexpected,
                                                             dropped, deadline)) for i in range(args.connections)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            rss.append(rss_kib(server.pid))
        elapsed = time.monotonic() - started
        times = exact_times(port, args.connections)
    finally:
        server.send_signal(signal.SIGTERM)
        exit_code = server.wait(timeout=30)
    done = sum(statuses.values())
    result = {
        "state": " ".join(state) or "memory", "requests": done, "connections": args.connections,
        "workers": args.workers, "threads": args.threads, "seconds": round(elapsed, 1),
        "req_per_s": round(done / elapsed), "statuses": dict(sorted(statuses.items())),
        "unexpected": len(unexpected), "dropped": len(dropped), "rss_kib_after_warmup": rss[0],
        "rss_kib_after_round_1": rss[1], "rss_kib_after_round_2": rss[2], "server_exit_code": exit_code,
        "times_scenario": times,
    }
    print(json.dumps(result, indent=2))
    for line in (unexpected + dropped)[:10]:
        print("  ", line, file=sys.stderr)
    # memory flat: the second round grows it by less than 5 %; exact counts only where the workers share a store
    return (not unexpected and not dropped and done == args.requests and exit_code == 0
            and rss[2] - rss[1] < rss[1] // 20 and (times["exact"] or "redis" not in " ".join(state)))


SLOW_UPLOADS = 2000
SLOW_BODY_TIMEOUT_S = 2
SLOW_UPLOAD = (b"POST /v1/test-sets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: 1000000\r\n\r\n{")


def slow_uploads(args: argparse.Namespace) -> bool:
    """2,000 uploads that stall after one byte of their body (they used to fill Granian's connection slots and stop
    every other request): normal requests beside them answer within 100 ms, and the mock answers each slow one
    408 after --body-timeout (or 503 mock-busy past --backpressure) and closes it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    port = free_port()
    server = subprocess.Popen([str(ROOT / ".venv/bin/mockserver"), "serve", "--spec", str(ROOT / "spec/kindgi.yaml"),
                               "--fixtures", str(ROOT / "fixtures"), "--port", str(port), "--workers",
                               str(args.workers), *(MULTI_WORKER_ARGS if args.workers > 1 else []),
                               "--body-timeout", str(SLOW_BODY_TIMEOUT_S), "--log-level", "warning"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    socks: list[socket.socket] = []
    try:
        wait_until_listening(port)
        rss = [rss_kib(server.pid)]
        started = time.monotonic()
        for _ in range(SLOW_UPLOADS):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(SLOW_UPLOAD)
            sock.setblocking(False)
            socks.append(sock)
        opened = time.monotonic() - started
        time.sleep(0.5)  # every head taken in
        rss.append(rss_kib(server.pid))
        took, statuses = [], Counter()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for n in range(200):
            path, headers, _ = MIX[n % 6]  # the reads that answer 200
            began = time.monotonic()
            try:
                connection.request("GET", path, headers=headers)
                response = connection.getresponse()
                response.read()
                statuses[response.status] += 1
            except OSError as exc:
                statuses[type(exc).__name__] += 1
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            took.append((time.monotonic() - began) * 1000)
        answered = _closed_by_server(socks, time.monotonic() + SLOW_BODY_TIMEOUT_S + 10)
        ended = time.monotonic() - started
        rss.append(rss_kib(server.pid))
    finally:
        for sock in socks:
            sock.close()
        server.send_signal(signal.SIGTERM)
        exit_code = server.wait(timeout=30)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    took.sort()
    result = {
        "phase": "slow uploads", "slow_uploads": SLOW_UPLOADS, "workers": args.workers,
        "body_timeout_s": SLOW_BODY_TIMEOUT_S, "seconds_to_open": round(opened, 2),
        "normal_requests": len(took), "normal_statuses": dict(statuses),
        "normal_ms_p50": round(took[len(took) // 2], 1), "normal_ms_p99": round(took[len(took) * 99 // 100], 1),
        "normal_ms_max": round(took[-1], 1), "slow_answered": dict(sorted(answered.items())),
        "seconds_until_all_closed": round(ended, 1), "rss_kib_before_open_after": rss, "server_exit_code": exit_code,
    }
    print(json.dumps(result, indent=2))
    return (statuses == Counter({200: len(took)}) and took[len(took) * 99 // 100] < 100
            and sum(answered.values()) == SLOW_UPLOADS and set(answered) <= {"408", "503"} and exit_code == 0)


def _closed_by_server(socks: list[socket.socket], deadline: float) -> Counter:
    """Each socket read until the server closes it, by the status it was answered ("none": closed unanswered;
    "open": still open at `deadline`)."""
    chosen = selectors.DefaultSelector()
    heads: dict[socket.socket, bytes] = {}
    for sock in socks:
        chosen.register(sock, selectors.EVENT_READ)
    seen: Counter = Counter()
    left = len(socks)
    while left and time.monotonic() < deadline:
        for key, _ in chosen.select(0.2):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if chunk:
                heads[sock] = heads.get(sock, b"") + chunk
                continue
            chosen.unregister(sock)
            left -= 1
            seen[heads[sock][9:12].decode() if sock in heads else "none"] += 1
    seen["open"] += left
    chosen.close()
    return +seen


FLAKY_PATH = "/v1/test-sets/acme.flaky/versions/1.0.0/cases"  # a fixtures' scenario: every firing counted in Redis
FREEZE_S = 6.0  # how long the frozen Redis phase keeps Redis stopped


def frozen_redis() -> dict[str, Any]:
    """Redis frozen (SIGSTOP) for FREEZE_S under calls, then continued (SIGCONT), with a mock of two workers
    sharing it: calls that need no state (404s) keep answering at once; calls that need Redis (a fixtures' scenario,
    counted there) answer 503 mock-state-unavailable within the timeout, then the scenario's own 503 again."""
    with tempfile.TemporaryDirectory() as folder, redis_server(Path(folder)) as (redis_port, redis):
        port = free_port()
        server = subprocess.Popen([str(ROOT / ".venv/bin/mockserver"), "serve", "--spec",
                                   str(ROOT / "spec/kindgi.yaml"), "--fixtures", str(ROOT / "fixtures"), "--port",
                                   str(port), "--workers", "2", "--state",
                                   f"redis://127.0.0.1:{redis_port}/0?prefix=frozen", "--log-level", "error"],
                                  cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stop = threading.Event()
        calls: list[tuple[str, float, float, int, str]] = []  # path, began, seconds, status, error code

        def poll(path: str) -> None:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            while not stop.is_set():
                began = time.monotonic()
                connection.request("GET", path, headers=DEMO)
                response = connection.getresponse()
                body = response.read()
                code = json.loads(body).get("error", {}).get("code", "") if body.startswith(b"{") else ""
                calls.append((path, began, time.monotonic() - began, response.status, code))
                time.sleep(0.01)
            connection.close()

        try:
            wait_until_listening(port)
            pollers = [threading.Thread(target=poll, args=(path,)) for path in ["/nope"] * 4 + [FLAKY_PATH] * 2]
            for t in pollers:
                t.start()
            time.sleep(1.0)
            frozen_at = time.monotonic()
            redis.send_signal(signal.SIGSTOP)
            time.sleep(FREEZE_S)
            continued_at = time.monotonic()
            redis.send_signal(signal.SIGCONT)
            time.sleep(5.0)
            stop.set()
            for t in pollers:
                t.join()
        finally:
            server.send_signal(signal.SIGTERM)
            exit_code = server.wait(timeout=30)
    stateless = [c for c in calls if c[0] == "/nope"]
    stateful = [c for c in calls if c[0] == FLAKY_PATH]
    worst = max((took for _, began, took, _, _ in stateless if began + took >= frozen_at and began < continued_at),
                default=0.0)
    # the same calls in the second before the freeze: what the machine's own noise makes of them
    before = max((took for _, began, took, _, _ in stateless if began + took < frozen_at), default=0.0)
    first_503 = min((began + took for _, began, took, _, code in stateful
                     if code == "mock-state-unavailable" and began >= frozen_at), default=float("inf")) - frozen_at
    last_away = max((began + took for _, began, took, _, code in stateful if code == "mock-state-unavailable"),
                    default=continued_at)
    unexpected = ([c for c in stateless if c[3] != 404]
                  + [c for c in stateful if c[3] != 503 or c[4] not in ("database-busy", "mock-state-unavailable")])
    result = {"phase": "frozen Redis", "frozen_s": FREEZE_S, "calls": len(calls),
              "stateless_calls_while_frozen": sum(1 for c in stateless if frozen_at <= c[1] < continued_at),
              "worst_stateless_ms_while_frozen": round(worst * 1000, 1),
              "worst_stateless_ms_before_freeze": round(before * 1000, 1),
              "first_state_unavailable_503_after_s": round(first_503, 2) if first_503 < FREEZE_S else None,
              "recovered_after_sigcont_s": round(max(last_away - continued_at, 0.0), 2),
              "unexpected": len(unexpected), "server_exit_code": exit_code}
    print(json.dumps(result, indent=2))
    # a stateless call never waits on Redis: the calls that do wait in the worker's threads, not on its loop
    result["ok"] = (worst < 0.2 and first_503 < 2.0 and last_away - continued_at < 5.0 and not unexpected
                    and exit_code == 0)
    return result


MIXED_S = 20


def mixed(state: list[str]) -> dict[str, Any]:
    """The mixed load for MIXED_S on `--workers 2` with `state`: its statuses, figures and RSS before and after."""
    pets = ROOT / "tests" / "data" / "pets"
    port = free_port()
    server = subprocess.Popen([str(ROOT / ".venv/bin/mockserver"), "serve", "--spec", str(pets / "openapi.yaml"),
                               "--fixtures", str(pets / "fixtures"), "--stateful", "--port", str(port), "--workers",
                               "2", *state, "--log-level", "warning"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(MIXED)
        script.flush()
        try:
            wait_until_listening(port)
            before = rss_mb(server.pid)
            out = subprocess.run(["wrk", "-t2", f"-c{MIXED_CONNECTIONS}", f"-d{MIXED_S}s", "--latency", "-s",
                                  script.name, f"http://127.0.0.1:{port}/pets", "--", "soak"],
                                 capture_output=True, text=True, timeout=MIXED_S + 60).stdout
            after = rss_mb(server.pid)
        finally:
            server.send_signal(signal.SIGTERM)
            exit_code = server.wait(timeout=30)
    counted = re.search(r"^statuses: (.*)$", out, re.M)
    statuses = {k: int(v) for k, v in re.findall(r"(\S+)=(\d+)", counted.group(1) if counted else "")}
    errors = re.search(r"Socket errors: (.*)$", out, re.M)
    result = {"phase": "mixed", "state": " ".join(state), "seconds": MIXED_S, "connections": MIXED_CONNECTIONS,
              "req_per_s": _figure(r"Requests/sec:\s+(\S+)", out), "p50": _figure(r"^\s+50%\s+(\S+)", out),
              "p99": _figure(r"^\s+99%\s+(\S+)", out), "statuses": statuses,
              "socket_errors": errors.group(1) if errors else None, "rss_mb_before_after": [before, after],
              "server_exit_code": exit_code}
    print(json.dumps(result, indent=2))
    result["ok"] = bool(statuses) and set(statuses) <= MIXED_EXPECTED and errors is None and exit_code == 0
    return result


def _figure(pattern: str, out: str) -> str | None:
    """One figure of wrk's output, as wrk prints it."""
    found = re.search(pattern, out, re.M)
    return found.group(1) if found else None


def wait_until_listening(port: int) -> None:
    """Until the server on `port` takes connections (30 s at most: a server that never does shows in the phase)."""
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument("--max-seconds", type=float, default=180)
    parser.add_argument("--phase", choices=["all", "load", "mixed", "slow-uploads", "frozen-redis"], default="all",
                        help="run one phase alone: the load rounds (memory, then Redis), the mixed load (memory, "
                             "then Redis), the slow uploads or the frozen Redis")
    args = parser.parse_args()
    redis_missing = shutil.which("redis-server") is None
    ok = True
    if args.phase in ("all", "load"):
        ok = soak(args, MULTI_WORKER_ARGS)
        if redis_missing:
            print("soak: the Redis round is skipped: redis-server is not installed (make test installs it)")
        else:
            with tempfile.TemporaryDirectory() as folder, redis_server(Path(folder)) as (redis_port, _):
                ok = soak(args, ["--state", f"redis://127.0.0.1:{redis_port}/0?prefix=soak"]) and ok
    if args.phase in ("all", "mixed") and shutil.which("wrk") is None:
        print("soak: the mixed phase is skipped: wrk is not installed (make bench installs it)")
    elif args.phase in ("all", "mixed"):
        ok = mixed(MULTI_WORKER_ARGS)["ok"] and ok
        if not redis_missing:
            with tempfile.TemporaryDirectory() as folder, redis_server(Path(folder)) as (redis_port, _):
                ok = mixed(["--state", f"redis://127.0.0.1:{redis_port}/0?prefix=soak-mixed"])["ok"] and ok
    if args.phase in ("all", "slow-uploads"):
        ok = slow_uploads(args) and ok
    if args.phase in ("all", "frozen-redis"):
        if redis_missing:
            print("soak: the frozen Redis phase is skipped: redis-server is not installed (make test installs it)")
        else:
            ok = frozen_redis()["ok"] and ok
    print("soak:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
