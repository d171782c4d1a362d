"""What each kind of request of issue 35's mixed load costs the server: `mockserver serve --stateful --workers 1`
on the memory store, on the pets description, loaded by wrk with MIXED's script (run.py) and its 64 connections,
one kind at a time (MIXED's table of kinds made of that kind alone; `missing` reads a pet no session has), then
with the whole mix; for each, the CPU time (user + system) the server's processes used per request answered. CPU
time, not req/s: the machine's cores are shared, and a neighbour's load changes req/s, not the work a request
takes. Each load has sessions of its own, as each of MIXED's rounds does (item reads and PATCHes go to the three
pets of the fixtures and those the load created), and a journal read's sessions first get a second of the mix.
Beside them: what wrk itself used per request (it shares the cores), and the floor, Granian's own cost: its raw
RSGI app (bench/baselines.py, one worker) answering a list page's bytes to the same 64 connections.

With `--state redis://…` the server keeps its state on that Redis, and each load also shows the Redis commands
per request answered (INFO commandstats: all, and the most called) and redis-server's own CPU per request (INFO
cpu); `--workers` gives the server more processes, `--without` adds loads of the mix less some kinds (to see
which kind, or which meeting of kinds, makes the mix cost what it does).

    .venv/bin/python bench/kinds.py --rounds 3 --port 5310
    .venv/bin/python bench/kinds.py --state redis://127.0.0.1:5701/0 --workers 2 --without journal,scenario"""
from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import tempfile
from pathlib import Path

import redis
from run import BIN, HOST, MIXED, MIXED_CONNECTIONS, ROOT, TICK, Server, ensure_wrk, free_port, process_ticks, tree
from run import request as get

PETS = ROOT / "tests" / "data" / "pets"
_MIX = re.compile(r"^local MIX = \{.*?\}$", re.M | re.S)
MISSING = 'elseif kind == "missing" then\n    return wrk.format("GET", "/pets/987654", h)\n  elseif kind == "journal"'
KINDS = {  # what a user calls it: MIXED's name of the kind
    "create": "create", "PATCH": "update", "list": "list", "item read": "item", "404 item read": "missing",
    "journal read": "journal", "scenario set/remove": "scenario",
}


def script(kind: str | None) -> str:
    """MIXED's script with `kind` alone in its table (the whole mix for None)."""
    text = MIXED.replace('elseif kind == "journal"', MISSING, 1)
    return text if kind is None else _MIX.sub(f'local MIX = {{"{kind}"}}', text, count=1)


def without(kinds: list[str]) -> str:
    """MIXED's table of kinds less `kinds`, as a Lua table's items (the others keep their shares)."""
    table = _MIX.search(MIXED)
    assert table is not None
    return ", ".join(item for item in re.findall(r'"\w+"', table.group(0)) if item.strip('"') not in kinds)


class RedisCost:
    """What Redis did for a load: its commands (INFO commandstats) and its own CPU (INFO cpu)."""

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)

    def snapshot(self) -> tuple[dict[str, int], float]:
        stats = self.client.info("commandstats")
        cpu = self.client.info("cpu")
        return ({name.removeprefix("cmdstat_"): int(row["calls"]) for name, row in stats.items()},
                float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]))

    @staticmethod
    def per_request(before: tuple[dict[str, int], float], after: tuple[dict[str, int], float],
                    answered: int) -> str:
        calls = {name: n - before[0].get(name, 0) for name, n in after[0].items()}
        calls = {name: n for name, n in calls.items() if n > 0 and name not in ("info",)}
        top = sorted(calls.items(), key=lambda item: -item[1])[:5]
        return (f"redis {sum(calls.values()) / answered:5.2f} cmd/req, {(after[1] - before[1]) / answered * 1e6:4.0f}"
                f" µs/req ({' '.join(f'{name} {n / answered:.2f}' for name, n in top)})")


def loaded(port: int, kind: str | None, seconds: int, pids: list[int], tag: str = "",
           store: RedisCost | None = None) -> tuple[float, float, str]:
    """µs of the server's CPU and of wrk's per request answered under `seconds` of wrk (MIXED's script made of
    `kind` in the sessions named by `tag`: a kind, a Lua table's items starting with a quote, or None for the
    whole mix; plain GETs of a list page for the empty kind ""), and the statuses wrk's script counted (and what
    Redis did, with `store`)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        text = script(kind) if kind is None or not kind.startswith('"') else _MIX.sub(
            f"local MIX = {{{kind}}}", script(None), count=1)
        lua.write(text if kind != "" else "")
        lua.flush()
        redis_before = store.snapshot() if store else None
        before, client = process_ticks(pids), _children_s()
        out = subprocess.run(["wrk", "-t2", f"-c{MIXED_CONNECTIONS}", f"-d{seconds}s", "-s", lua.name,
                              f"http://{HOST}:{port}/pets?limit=10", "--", tag],
                             capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
        used, client = process_ticks(pids) - before, _children_s() - client
    done = re.search(r"(\d+) requests in", out)
    statuses = re.search(r"^statuses: (.*)$", out, re.M)
    if done is None:
        raise RuntimeError(f"wrk's output not understood: {out[-300:]}")
    answered = int(done.group(1))
    shown = statuses.group(1) if statuses else ""
    if store and redis_before:
        shown += "; " + store.per_request(redis_before, store.snapshot(), answered)
    return used / TICK / answered * 1e6, client / answered * 1e6, shown


def _children_s() -> float:
    """CPU seconds this process's finished children (wrk) used."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def floor(seconds: int, page: bytes) -> float:
    """µs of Granian's CPU per request answered by its raw RSGI app (one worker) with `page`'s bytes."""
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="mockserver-kinds-"))
    (workdir / "page.json").write_bytes(page)
    command = [str(BIN / "granian"), "--interface", "rsgi", "--workers", "1", "--no-ws", "--log-level", "warning",
               "--host", HOST, "--port", str(port), "bench.baselines:rsgi_app"]
    server = Server("floor", command, port, workdir, env={"BENCH_PAYLOAD": str(workdir / "page.json")})
    try:
        server.wait_answer("/", {}, True, 40)
        return loaded(port, "", seconds, tree(server.proc.pid))[0]
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=3, help="of wrk, per kind and round")
    parser.add_argument("--port", type=int, default=0, help="the server's port (a free one by default)")
    parser.add_argument("--state", default="memory", help="the server's --state: memory, or a redis:// URL")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--without", default="", help="comma-separated sets of kinds (MIXED's names, joined by +)"
                        " to leave out of the mix, one load each: journal,scenario,journal+scenario")
    parser.add_argument("--only", default="", help="comma-separated: only these loads (their names as printed)")
    parser.add_argument("--no-floor", action="store_true", help="skip Granian's floor")
    args = parser.parse_args()
    store = RedisCost(args.state) if args.state.startswith("redis") else None
    ensure_wrk()
    port = args.port or free_port()
    command = [str(BIN / "mockserver"), "serve", "--spec", str(PETS / "openapi.yaml"), "--fixtures",
               str(PETS / "fixtures"), "--stateful", "--workers", str(args.workers), "--state", args.state,
               "--log-level", "warning", "--port", str(port)]
    server = Server("kinds", command, port, Path(tempfile.mkdtemp(prefix="mockserver-kinds-")))
    try:
        server.wait_answer("/pets", {}, True, 40)
        pids = tree(server.proc.pid)
        loaded(port, None, args.seconds, pids, "warm")
        page = get(port, "/pets?limit=10", {})[1]
        figures: dict[str, list[float]] = {}
        loads: list[tuple[str, str | None]] = [*KINDS.items(), ("whole mix", None)]
        loads += [(f"mix - {left.replace('+', ' - ')}", without(left.split("+")))
                  for left in args.without.split(",") if left]
        if args.only:
            loads = [(name, kind) for name, kind in loads if name in args.only.split(",")]
        for round_ in range(1, args.rounds + 1):
            for name, kind in loads:
                tag = re.sub(r'\W', '', name) + f"-{round_}"  # a session name: letters and digits
                if kind == "journal":
                    loaded(port, None, 1, pids, tag)
                us, client, statuses = loaded(port, kind, args.seconds, pids, tag, store)
                figures.setdefault(name, []).append(us)
                figures.setdefault("wrk itself", []).append(client)
                print(f"round {round_} {name:>20}: {us:5.0f} µs/request (wrk {client:3.0f}), statuses {statuses}",
                      flush=True)
    finally:
        server.stop()
    for round_ in range(1, 0 if args.no_floor else args.rounds + 1):
        us = floor(args.seconds, page)
        figures.setdefault("Granian's floor", []).append(us)
        print(f"round {round_} {'Granian floor':>20}: {us:5.0f} µs/request", flush=True)
    print("µs of CPU per request (user + system), over the rounds: min-max (median)")
    for name, values in figures.items():
        print(f"  {name:>20}: {min(values):.0f}-{max(values):.0f} ({statistics.median(values):.0f})")


if __name__ == "__main__":
    main()
