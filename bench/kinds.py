"""What each kind of request of issue 35's mixed load costs the server: `mockserver serve --stateful --workers 1`
on the memory store, on the pets description, loaded by wrk with MIXED's script (run.py) and its 64 connections,
one kind at a time (MIXED's table of kinds made of that kind alone; `missing` reads a pet no session has), then
with the whole mix; for each, the CPU time (user + system) the server's processes used per request answered. CPU
time, not req/s: the machine's cores are shared, and a neighbour's load changes req/s, not the work a request
takes. The sessions are the same in every load (one tag), so item reads and PATCHes find the pets creates made.

    .venv/bin/python bench/kinds.py --rounds 3 --port 5310"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

from run import BIN, HOST, MIXED, MIXED_CONNECTIONS, ROOT, TICK, Server, ensure_wrk, free_port, process_ticks, tree

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


def loaded(port: int, kind: str | None, seconds: int, pids: list[int]) -> tuple[float, str]:
    """µs of the server's CPU per request answered under `seconds` of wrk, and the statuses wrk's script counted."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        lua.write(script(kind))
        lua.flush()
        before = process_ticks(pids)
        out = subprocess.run(["wrk", "-t2", f"-c{MIXED_CONNECTIONS}", f"-d{seconds}s", "-s", lua.name,
                              f"http://{HOST}:{port}/pets", "--", "kinds"],
                             capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
        used = process_ticks(pids) - before
    done = re.search(r"(\d+) requests in", out)
    statuses = re.search(r"^statuses: (.*)$", out, re.M)
    if done is None or statuses is None:
        raise RuntimeError(f"wrk's output not understood: {out[-300:]}")
    return used / TICK / int(done.group(1)) * 1e6, statuses.group(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=3, help="of wrk, per kind and round")
    parser.add_argument("--port", type=int, default=0, help="the server's port (a free one by default)")
    args = parser.parse_args()
    ensure_wrk()
    port = args.port or free_port()
    command = [str(BIN / "mockserver"), "serve", "--spec", str(PETS / "openapi.yaml"), "--fixtures",
               str(PETS / "fixtures"), "--stateful", "--workers", "1", "--state", "memory", "--log-level",
               "warning", "--port", str(port)]
    server = Server("kinds", command, port, Path(tempfile.mkdtemp(prefix="mockserver-kinds-")))
    try:
        server.wait_answer("/pets", {}, True, 40)
        pids = tree(server.proc.pid)
        loaded(port, None, args.seconds, pids)  # warm: every session has pets and a journal
        figures: dict[str, list[float]] = {}
        for round_ in range(1, args.rounds + 1):
            for name, kind in [*KINDS.items(), ("whole mix", None)]:
                us, statuses = loaded(port, kind, args.seconds, pids)
                figures.setdefault(name, []).append(us)
                print(f"round {round_} {name:>20}: {us:5.0f} µs/request, statuses {statuses}", flush=True)
        print("µs of the server's CPU per request (user + system), over the rounds: min-max (median)")
        for name, values in figures.items():
            print(f"  {name:>20}: {min(values):.0f}-{max(values):.0f} ({statistics.median(values):.0f})")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
