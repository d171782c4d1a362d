"""What a first page costs at `serve --workers 2` on the memory store and on Redis, beyond req/s (which a shared
machine makes noise of): the CPU time a request of the server's processes (its journal writer threads and its
workers' main threads apart) and of redis-server, and the Redis commands and bytes a request (`INFO`).

    .venv/bin/python bench/first_page_cost.py --store redis --rounds 3
    .venv/bin/python bench/first_page_cost.py --store memory --rounds 3

wrk drives the load (`-t1 -c16`, `--seconds` a round), after 3 s of warm-up; the writer threads are named by
`py-spy dump` when py-spy is installed (else their figure is left out)."""
from __future__ import annotations

import argparse
import re
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from run import BIN, HOST, ROOT, TICK, ensure_wrk, free_port, tree

FIRST_PAGE = "/v1/test-sets?limit=25"
AUTH = "Authorization: Bearer demo-token"


def ticks(stats: list[Path]) -> float:
    """Seconds of CPU (user and system) of the processes or threads whose `stat` files these are."""
    total = 0
    for stat in stats:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def writers(workers: list[int]) -> list[Path]:
    """The `stat` files of the workers' journal writer threads."""
    spy = BIN / "py-spy"
    if not spy.exists():
        return []
    found = []
    for pid in workers:
        dump = subprocess.run([str(spy), "dump", "-p", str(pid)], capture_output=True, text=True).stdout
        found += [Path(f"/proc/{pid}/task/{tid}/stat")
                  for tid in re.findall(r'Thread (\d+) \(\w+\): "mockserver-state-writer"', dump)]
    return found


def redis_info(port: int) -> tuple[dict[str, float], dict[str, int]]:
    """`INFO all` of a redis-server: its numeric fields, and the calls of each command."""
    with socket.create_connection((HOST, port)) as s:
        s.sendall(b"INFO all\r\n")
        data = b""
        while not data.startswith(b"$") or len(data.partition(b"\r\n")[2]) < int(data.partition(b"\r\n")[0][1:]):
            data += s.recv(65536)
    fields: dict[str, float] = {}
    calls: dict[str, int] = {}
    for line in data.decode().splitlines():
        name, _, value = line.partition(":")
        if name.startswith("cmdstat_"):
            calls[name[8:]] = int(value.split("calls=", 1)[1].split(",", 1)[0])
        elif re.fullmatch(r"-?\d+(\.\d+)?", value):
            fields[name] = float(value)
    return fields, calls


def wrk(port: int, seconds: int, connections: int) -> tuple[int, str]:
    """Requests answered and the p99 latency as wrk says it."""
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-H", AUTH,
                          f"http://{HOST}:{port}{FIRST_PAGE}"], capture_output=True, text=True, check=True).stdout
    answered = re.search(r"(\d+) requests in", out)
    p99 = re.search(r"99%\s+(\S+)", out)
    assert answered is not None, out
    return int(answered.group(1)), p99.group(1) if p99 else "?"


def wait_up(port: int) -> None:
    request = urllib.request.Request(f"http://{HOST}:{port}{FIRST_PAGE}", headers=dict([AUTH.split(": ")]))
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(request, timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=("memory", "redis"), default="redis")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    ensure_wrk()
    port, redis_port = free_port(), free_port()
    started: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as folder:
        try:
            state = "memory"
            if args.store == "redis":
                started.append(subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", HOST, "--save",
                                                 "", "--appendonly", "no", "--dir", folder],
                                                stdout=subprocess.DEVNULL))
                time.sleep(0.5)
                state = f"redis://{HOST}:{redis_port}/0?prefix=cost"
            server = subprocess.Popen([str(BIN / "mockserver"), "serve", "--spec", str(ROOT / "spec" / "kindgi.yaml"),
                                       "--fixtures", str(ROOT / "fixtures"), "--port", str(port), "--workers", "2",
                                       "--state", state, "--log-level", "warning"])
            started.append(server)
            wait_up(port)
            wrk(port, 3, args.connections)  # warm-up: every worker's answer cache and threads
            processes = tree(server.pid)
            every = [Path(f"/proc/{pid}/stat") for pid in processes]
            mains = [Path(f"/proc/{pid}/task/{pid}/stat") for pid in processes[1:]]
            writing = writers(processes[1:]) if args.store == "redis" else []
            for _ in range(args.rounds):
                before = [ticks(every), ticks(writing), ticks(mains)]
                redis_before = redis_info(redis_port) if args.store == "redis" else None
                answered, p99 = wrk(port, args.seconds, args.connections)
                time.sleep(0.3)  # the writers' last batch
                used = [(ticks(now) - then) * 1e6 / answered for now, then in zip((every, writing, mains), before)]
                line = (f"{args.store}: {answered} requests ({answered / args.seconds:.0f}/s, p99 {p99}): the "
                        f"server's CPU {used[0]:.0f} us a request (writer threads {used[1]:.0f}, workers' main "
                        f"threads {used[2]:.0f})")
                if redis_before is not None:
                    (fields, calls), (fields0, calls0) = redis_info(redis_port), redis_before
                    cpu = sum(fields[k] - fields0[k] for k in ("used_cpu_user", "used_cpu_sys"))
                    commands = {name: n - calls0.get(name, 0) for name, n in calls.items() if n != calls0.get(name)}
                    commands["info"] -= 1  # this script's own
                    commands = {name: n for name, n in commands.items() if n}
                    sent = fields["total_net_input_bytes"] - fields0["total_net_input_bytes"]
                    line += (f"; redis-server {cpu * 1e6 / answered:.1f} us, "
                             f"{sum(commands.values()) / answered:.3f} commands, {sent / answered:.0f} bytes sent "
                             f"to it a request; commands: {commands}")
                print(line, flush=True)
        finally:
            for process in reversed(started):
                process.terminate()
                process.wait(15)


if __name__ == "__main__":
    main()
