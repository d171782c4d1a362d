"""CPU time per request by kind (create, PATCH, list read) of a stateful mock: one `mockserver serve` of the pets
description of the tests, `--stateful`, one process, on loopback; N requests of one kind in a row on one
connection, the server tree's CPU (user + system, from /proc) read before and after. CPU time, not req/s: it
holds on a machine others share (docs/PERFORMANCE.md, "What a write's checks cost").

    .venv/bin/python bench/writes.py --port 5510 --rounds 5 --requests 2000 [--state redis://127.0.0.1:6390/0]
"""
from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import time
from pathlib import Path

from run import HOST, ROOT, TICK, process_ticks, tree

PETS = ROOT / "tests" / "data" / "pets"


def tree_cpu(pid: int) -> float:
    """Seconds of CPU the process and its children (Granian's workers) have used."""
    return process_ticks(tree(pid)) / TICK


def call(connection: http.client.HTTPConnection, method: str, path: str, body: object, session: str,
         expected: int) -> bytes:
    headers = {"X-Mock-Session": session}
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/merge-patch+json" if method == "PATCH" else "application/json"
    connection.request(method, path, payload, headers)
    response = connection.getresponse()
    data = response.read()
    if response.status != expected:
        raise RuntimeError(f"{method} {path}: {response.status} {data[:200]!r}")
    return data


def wait(port: int) -> None:
    for _ in range(300):
        try:
            connection = http.client.HTTPConnection(HOST, port, timeout=2)
            connection.request("GET", "/pets")
            connection.getresponse().read()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the server did not answer")


def round_(pid: int, port: int, n: int, tag: str, kinds: list[str]) -> dict[str, float]:
    """µs of server CPU per create, per PATCH and per list read (those of `kinds`), in a session of its own."""
    connection = http.client.HTTPConnection(HOST, port, timeout=30)
    session = f"writes-{tag}"
    figures: dict[str, float] = {}
    ids: list[int] = []
    steps = [("create", lambda i: ids.append(json.loads(call(connection, "POST", "/pets",
                                                             {"name": f"p{i}", "kind": "cat"}, session, 201))["id"])),
             ("patch", lambda i: call(connection, "PATCH", f"/pets/{ids[i % len(ids)]}", {"tag": f"t{i}"}, session,
                                      200)),
             ("list", lambda i: call(connection, "GET", "/pets?limit=10", None, session, 200))]
    for kind, step in [(kind, step) for kind, step in steps if kind in kinds]:
        for i in range(20):  # warm
            step(i)
        before = tree_cpu(pid)
        for i in range(n):
            step(i)
        figures[kind] = (tree_cpu(pid) - before) / n * 1e6
    connection.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=5510)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--state", default=None, help="a redis:// URL (default: the memory store)")
    parser.add_argument("--description", type=Path, default=PETS,
                        help="a folder with openapi.yaml and fixtures/: the pets of the tests, another item schema")
    parser.add_argument("--kinds", default="create,patch,list", help="which requests, comma-separated")
    args = parser.parse_args()
    command = [str(Path(sys.executable).parent / "mockserver"), "serve", "--spec",
               str(args.description / "openapi.yaml"), "--fixtures", str(args.description / "fixtures"), "--stateful",
               "--port", str(args.port), "--log-level", "warning", "--max-items", str(args.requests * 2 + 100)]
    if args.state:
        command += ["--state", args.state]
    server = subprocess.Popen(command, cwd=ROOT)
    try:
        wait(args.port)
        rounds = [round_(server.pid, args.port, args.requests, f"{time.monotonic_ns():x}-{r}", args.kinds.split(","))
                  for r in range(args.rounds)]
    finally:
        server.terminate()
        server.wait(10)
    for kind in rounds[0]:
        values = sorted(r[kind] for r in rounds)
        print(f"{kind:7} µs CPU per request: {values[0]:.0f}-{values[-1]:.0f} (median {values[len(values) // 2]:.0f})"
              f"  rounds: {' '.join(f'{v:.0f}' for v in values)}")


if __name__ == "__main__":
    main()
