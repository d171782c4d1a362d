"""`make soak`: the mock on Granian (2 workers, the default threads) takes 20,000 requests on 64 concurrent
keep-alive connections, mixed across operations, errors and scenarios. It passes when every answer has the
status expected for its request, no connection drops, and memory stays flat. Loopback only, bounded in time."""
from __future__ import annotations

import argparse
import http.client
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from mockserver.cli import THREADS
from run import MULTI_WORKER_ARGS

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument("--max-seconds", type=float, default=180)
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen([str(ROOT / ".venv/bin/mockserver"), "serve", "--port", str(port), "--workers",
                               str(args.workers), *(MULTI_WORKER_ARGS if args.workers > 1 else []), "--threads",
                               str(args.threads), "--log-level", "warning"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
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
    finally:
        server.send_signal(signal.SIGTERM)
        exit_code = server.wait(timeout=30)
    done = sum(statuses.values())
    result = {
        "requests": done, "connections": args.connections, "workers": args.workers, "threads": args.threads,
        "seconds": round(elapsed, 1), "req_per_s": round(done / elapsed), "statuses": dict(sorted(statuses.items())),
        "unexpected": len(unexpected), "dropped": len(dropped), "rss_kib_after_warmup": rss[0],
        "rss_kib_after_round_1": rss[1], "rss_kib_after_round_2": rss[2], "server_exit_code": exit_code,
    }
    print(json.dumps(result, indent=2))
    for line in (unexpected + dropped)[:10]:
        print("  ", line, file=sys.stderr)
    ok = (not unexpected and not dropped and done == args.requests and exit_code == 0
          and rss[2] - rss[1] < rss[1] // 20)  # flat: the second round grows memory by less than 5 %
    print("soak:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
