"""`make bench`: the mock on Granian side by side with a bare Flask app and a raw WSGI callable (on Granian and on
gunicorn), the mock as it served on gunicorn before issue 15, and Prism 5.16 (issues 6 and 15).

Loopback only, every load bounded in time: each server is started on a free port, waited for, warmed, measured
with `wrk -t2 -c16 -d5s --latency` ROUNDS times per row (the row's figures are the rounds' medians, every round
is kept), then stopped; the slow-client row times normal requests while
STALLED connections sit on half a request. Start-up time and peak memory follow for the Kindgi description and
the largest corpus descriptions (../shared/corpus, when present). Prints both tables and issue 15's targets, and
writes everything to bench/results/<UTC timestamp>.json and bench/results/latest.json."""
from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from mockserver.cli import THREADS

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
RESULTS = ROOT / "bench" / "results"
CORPUS = ROOT.parent / "shared" / "corpus"
CORPUS_FILES = ["openai-api.yaml", "digitalocean-public-v2/specification/DigitalOcean-public.v2.yaml",
                "twilio-api-v2010.json", "discord-http-api.json"]  # the largest; openai is the 3 MB one
PRISM_VERSION = "5.16.0"
PRISM_DIR = Path(tempfile.gettempdir()) / "mockserver-bench-prism"
PRISM_BIN = PRISM_DIR / "node_modules" / ".bin" / "prism"
HOST = "127.0.0.1"
WARM_S = 1
LOAD_S = 5
# wrk rounds per row: one 5 s round's p99 is set by whatever else the VM did in those 5 s (the raw RSGI and bare
# Flask ceilings went over 10 ms in single rounds of earlier runs too), so a row is the median of three rounds
# and the worst round is printed beside it
ROUNDS = 3
STARTUP_TIMEOUT_S = 40.0
KINDGI_STARTS = 3
SETTLE_S = 1.0
TICK = os.sysconf("SC_CLK_TCK")
BUSY_WARNING = 0.2  # cores used by other processes during a load, above which its figures are flagged
AUTH = {"Authorization": "Bearer demo-token"}
FIRST_PAGE = "/v1/test-sets?limit=25"
PROJECT = "2489e9ad-2ee2-8e00-8ec9-32d5f69181c0"
# what every `mockserver serve` with more than one worker is given besides --workers: the rows that compare the
# server with the rows of earlier runs keep the memory store (each worker its own); the Redis rows are their own
MULTI_WORKER_ARGS: list[str] = ["--state", "memory"]
MOCK_FLAGS = ["--workers", "2", *MULTI_WORKER_ARGS]  # the mock's rows: 2 workers (the default threads)
Command = Callable[[int], list[str]]  # the command line of a server, given its port
# the baselines on Granian take the mock's worker settings (WSGI: its threads; RSGI: the mock's own interface)
GRANIAN_FLAGS = ["--interface", "wsgi", "--workers", "2", "--blocking-threads", str(THREADS), "--no-ws",
                 "--log-level", "warning"]
GRANIAN_RSGI_FLAGS = ["--interface", "rsgi", "--workers", "2", "--no-ws", "--log-level", "warning"]
# bare Flask and raw WSGI on stock gunicorn gthread, 2 x 4 (its usual threads): what a Python developer would hand-write
GUNICORN_FLAGS = ["-w", "2", "--threads", "4", "-k", "gthread", "--preload", "--keep-alive", "5"]
# the last commit serving on gunicorn: its default (1 worker x 8 threads) is "today's default" of issue 15
GUNICORN_COMMIT = "61d26db"
STALLED = 200  # connections holding half a request line during the slow-client row
GROWTH_AT = (100, 10_000, 100_000)  # pets one session holds when a window of creates is timed (issue 35)
GROWTH_WINDOW = 200  # creates timed one after the other at each size
GROWTH_FILLERS = 4  # connections that fill the collection between two windows
GROWTH_SESSION = {"X-Mock-Session": "growth", "Content-Type": "application/json"}
STALLED_PROBES = 50  # normal requests timed meanwhile, each on a new connection


def log(message: str) -> None:
    """Progress on stderr, so stdout holds only the tables."""
    print(message, file=sys.stderr, flush=True)


@dataclass
class Row:
    """One wrk measurement."""

    name: str
    server: str
    path: str
    headers: dict[str, str]
    expected: int
    status: int | None = None
    body_bytes: int | None = None
    rps: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    p99_worst_ms: float | None = None  # the worst round's p99
    rounds: list[dict[str, float]] = field(default_factory=list)  # each round's req/s, p50 and p99
    requests: int | None = None
    non_2xx: int = 0
    socket_errors: int = 0
    other_cpu: float | None = None
    vs_flask: float | None = None
    vs_prism_warn: float | None = None
    note: str = ""
    script: str | None = None  # a wrk Lua script (requests other than one GET), written to a file for wrk
    connections: int = 16  # wrk's -c
    statuses: dict[str, int] = field(default_factory=dict)  # what a script counted (MIXED), over every round
    rss_mb: list[float] = field(default_factory=list)  # the server tree's RSS before and after the rounds, if taken


@dataclass
class Startup:
    """Process start to first answer, and peak memory of the process tree a second later."""

    name: str
    command: list[str]
    seconds: float | None = None
    runs: list[float] = field(default_factory=list)
    master_mb: float | None = None
    tree_mb: float | None = None
    processes: int | None = None
    other_cpu: float | None = None
    error: str = ""


class ServerError(RuntimeError):
    """A server exited or stayed silent before answering."""


class Server:
    """A server process in a process group of its own (not a session of its own), its output in a log file; `stop`
    ends the whole process group.

    Not a session: with the kernel's autogroup scheduling (`/proc/sys/kernel/sched_autogroup_enabled`, on by
    default on most Linux desktops and on this VM) every session is scheduled as one group, so a server in a
    session of its own and wrk in the bench's take turns as two groups on the 2 cores, and the server's threads
    wait out the other group's slices. Side by side on this machine (`serve --workers 2`, first page, 5 s
    rounds, alternating): in the bench's session p99 3.1-5.3 ms in 15 rounds of 15; under `setsid` 3.8-43 ms, 9 of
    15 rounds over 10 ms, at about the same req/s. Until commit 73e49b3 the bench gave each server a session of its
    own: that is where its p99 stalls came from."""

    def __init__(self, name: str, command: list[str], port: int, workdir: Path,
                 env: dict[str, str] | None = None, cwd: Path = ROOT) -> None:
        self.name = name
        self.port = port
        self.log_path = workdir / f"{re.sub(r'[^A-Za-z0-9]+', '-', name).strip('-')}.log"
        self._log = self.log_path.open("wb")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(command, cwd=cwd, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, process_group=0)

    def wait_answer(self, path: str, headers: dict[str, str], want_200: bool, timeout: float) -> float:
        """Seconds from process start to the first response (a 200 when `want_200`), polling every 10 ms."""
        deadline = self.started + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(self.first_line() or f"exited with status {self.proc.returncode}")
            try:
                status, _ = request(self.port, path, headers, timeout=max(0.1, deadline - time.monotonic()))
                if status == 200 or not want_200:
                    return time.monotonic() - self.started
            except OSError:
                pass
            time.sleep(0.01)
        raise ServerError(f"no {'200' if want_200 else 'answer'} within {timeout:.0f} s")

    def first_line(self) -> str:
        """The error's first line in what the server wrote (the exception of a traceback, the first problem of a
        list of problems), else its last line."""
        lines = [ln.strip() for ln in self.log_path.read_text(errors="replace").splitlines() if ln.strip()]
        for i, line in enumerate(lines):
            if line.startswith("Traceback"):
                return lines[-1]
            if re.search(r"error|problem|exception|fail", line, re.I):
                return line + (" | " + lines[i + 1] if "problem(s)" in line and i + 1 < len(lines) else "")
        return lines[-1] if lines else ""

    def memory(self) -> tuple[float, float, int]:
        """Peak RSS (VmHWM) of the main process and summed over its process tree, in MB, and the tree's size."""
        pids = tree(self.proc.pid)
        peaks = {pid: vm_hwm_kb(pid) for pid in pids}
        return round(peaks.get(self.proc.pid, 0) / 1024, 1), round(sum(peaks.values()) / 1024, 1), len(pids)

    def stop(self) -> None:
        """SIGTERM and wait; SIGKILL whatever is left of the process group."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                log(f"  {self.name}: no exit 15 s after SIGTERM, killing")
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._log.close()


def request(port: int, path: str, headers: dict[str, str], timeout: float = 5.0) -> tuple[int, bytes]:
    """One GET on loopback: status and body, whatever the status."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def tree(pid: int) -> list[int]:
    """The process and all its descendants (from /proc/<pid>/task/*/children)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for children in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                pending.extend(int(c) for c in children.read_text().split())
            except OSError:
                continue
    return found


def busy_ticks() -> int:
    """Clock ticks all CPUs spent running something (user, nice, system, steal) since boot."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[0] + fields[1] + fields[2] + fields[7]


def process_ticks(pids: list[int]) -> int:
    """Clock ticks (user + system) the processes have used."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total


def own_ticks() -> float:
    """Clock ticks this process has used."""
    times = os.times()
    return (times.user + times.system) * TICK


def children_ticks() -> float:
    """Clock ticks used by this process's finished children (wrk)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * TICK


def other_cpu(seconds: float) -> float:
    """Cores busy over a short idle sample, before anything is started."""
    before = busy_ticks()
    time.sleep(seconds)
    return round((busy_ticks() - before) / TICK / seconds, 2)


def status_kb(pid: int, field: str) -> int:
    """A memory figure of /proc/PID/status (`VmRSS` now, `VmHWM` its peak), in kB (0 when the process is gone)."""
    try:
        match = re.search(rf"^{field}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:
        return 0
    return int(match.group(1)) if match else 0


def vm_hwm_kb(pid: int) -> int:
    return status_kb(pid, "VmHWM")


def vm_rss_kb(pid: int) -> int:
    return status_kb(pid, "VmRSS")


def rss_mb(pid: int) -> float:
    """The resident set of a process tree now (VmRSS summed), in MB."""
    return round(sum(vm_rss_kb(each) for each in tree(pid)) / 1024, 1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def run(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def ensure_wrk() -> str:
    """wrk from Debian packages, installed when missing (apt-get update only when the first try fails)."""
    if shutil.which("wrk") is None:
        if shutil.which("apt-get") is None:
            sys.exit("bench: wrk is missing and apt-get is not available: install wrk")
        log("wrk is missing: apt-get install -y wrk")
        os.environ.setdefault("DEBIAN_FRONTEND", "noninteractive")
        if run(["apt-get", "install", "-y", "wrk"], 300).returncode != 0:
            run(["apt-get", "update"], 300)
            done = run(["apt-get", "install", "-y", "wrk"], 300)
            if done.returncode != 0:
                sys.exit("bench: could not install wrk: " + (done.stderr.strip().splitlines() or ["?"])[-1])
    return run(["wrk", "-v"], 10).stdout.splitlines()[0].strip()


def ensure_prism() -> str:
    """'' when Prism 5.16 is ready in the scratch folder, else why it is skipped."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        return "npm or node is not installed"
    package = PRISM_DIR / "node_modules" / "@stoplight" / "prism-cli" / "package.json"
    if package.exists() and json.loads(package.read_text()).get("version") == PRISM_VERSION:
        return ""
    log(f"installing @stoplight/prism-cli@{PRISM_VERSION} in {PRISM_DIR}")
    PRISM_DIR.mkdir(parents=True, exist_ok=True)
    if not (PRISM_DIR / "package.json").exists():
        (PRISM_DIR / "package.json").write_text('{"name": "mockserver-bench-prism", "private": true}\n')
    try:
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", f"@stoplight/prism-cli@{PRISM_VERSION}"],
                              cwd=PRISM_DIR, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "npm install took over 300 s"
    if done.returncode != 0 or not PRISM_BIN.exists():
        return "npm install failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    return ""


def seconds_to_ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4, "h": 3.6e6}[unit]


def wrk(port: int, row: Row, seconds: int) -> str:
    """wrk -t2 -c<row's connections> with the row's headers; returns its output. A script is given a tag of its
    own (MIXED names its sessions by it: each round starts with fresh ones)."""
    command = ["wrk", "-t2", f"-c{row.connections}", f"-d{seconds}s", "--latency"]
    for name, value in row.headers.items():
        command += ["-H", f"{name}: {value}"]
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        tag = []
        if row.script:
            script.write(row.script)
            script.flush()
            command += ["-s", script.name]
            tag = ["--", f"{time.monotonic_ns():x}"]
        return run(command + [f"http://{HOST}:{port}{row.path}", *tag], seconds + 60).stdout


def measure(server: Server, row: Row) -> Row:
    """Probe the row once (status, size), warm it, then load it ROUNDS times and parse wrk's figures: the row's
    req/s, p50 and p99 are the medians of the rounds. The CPU other processes (neither the server nor wrk) used
    meanwhile tells whether the figures were disturbed."""
    try:
        row.status, body = request(server.port, row.path, row.headers)
    except OSError as exc:
        row.note = f"no answer: {exc}"
        return row
    row.body_bytes = len(body)
    if row.status != row.expected:
        row.note = f"expected {row.expected}, got {row.status}: {body[:120]!r}"
    row.rss_mb = [rss_mb(server.proc.pid)]
    wrk(server.port, row, WARM_S)
    pids = tree(server.proc.pid)
    started, busy, own, children = time.monotonic(), busy_ticks(), process_ticks(pids), children_ticks()
    outs = [wrk(server.port, row, LOAD_S) for _ in range(ROUNDS)]
    others = busy_ticks() - busy - (process_ticks(pids) - own) - (children_ticks() - children)
    row.other_cpu = round(max(0.0, others / TICK / (time.monotonic() - started)), 2)
    row.requests = row.non_2xx = row.socket_errors = 0
    for out in outs:
        rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
        p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M)
        p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M)
        done = re.search(r"(\d+) requests in", out)
        if not (rps and p50 and p99 and done):
            row.note = (row.note + "; " if row.note else "") + "wrk output not understood: " + out[-200:]
            return row
        row.rounds.append({"rps": float(rps.group(1)), "p50_ms": seconds_to_ms(p50.group(1)),
                           "p99_ms": seconds_to_ms(p99.group(1))})
        row.requests += int(done.group(1))
        non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        row.non_2xx += int(non_2xx.group(1)) if non_2xx else 0
        errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
        row.socket_errors += sum(int(n) for n in errors.groups()) if errors else 0
        counted = re.search(r"^statuses: (.*)$", out, re.M)  # a script's own count (MIXED)
        for status, n in re.findall(r"(\S+)=(\d+)", counted.group(1) if counted else ""):
            row.statuses[status] = row.statuses.get(status, 0) + int(n)
    row.rps, row.p50_ms, row.p99_ms = (statistics.median(r[key] for r in row.rounds)
                                       for key in ("rps", "p50_ms", "p99_ms"))
    row.p99_worst_ms = max(r["p99_ms"] for r in row.rounds)
    row.rss_mb.append(rss_mb(server.proc.pid))
    if row.expected == 200 and row.non_2xx and not row.statuses:
        row.note = (row.note + "; " if row.note else "") + f"{row.non_2xx} non-2xx answers under load"
    log(f"  {row.name}: {row.rps:,.0f} req/s, p50 {row.p50_ms:.2f} ms, p99 {row.p99_ms:.2f} ms (rounds: "
        + ", ".join(f"{r['rps']:,.0f} req/s p99 {r['p99_ms']:.2f}" for r in row.rounds)
        + f"), other processes {row.other_cpu} cores")
    return row


class Bench:
    """Starts and always stops every server; collects rows and start-ups."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.live: list[Server] = []
        self.rows: list[Row] = []
        self.startups: list[Startup] = []
        self.prism_skipped = ""
        self.corpus_note = ""
        self.after_load: dict[str, float] = {}
        self.growth_rss: dict[str, float] = {}  # store -> MB of RSS (the server's, and Redis's) per 10,000 pets

    def start(self, name: str, command: list[str], port: int, env: dict[str, str] | None = None,
              cwd: Path = ROOT) -> Server:
        server = Server(name, command, port, self.workdir, env, cwd)
        self.live.append(server)
        return server

    def stop(self, server: Server) -> None:
        self.live.remove(server)
        server.stop()

    def finish(self, server: Server) -> None:
        """Stop a loaded server, noting the peak RSS of its tree after the loads."""
        if server.proc.poll() is None:
            self.after_load[server.name] = round(server.memory()[1])
        self.stop(server)

    def stop_all(self) -> None:
        for server in list(self.live):
            self.stop(server)

    def load(self, name: str, make: Command, rows: list[Row], env: dict[str, str] | None = None,
             cwd: Path = ROOT, setup: Callable[[int], None] | None = None) -> None:
        """Start a server, wait for its first answer to the first page, `setup` it (given its port), measure every
        row, stop it."""
        port = free_port()
        command = make(port)
        log(f"{name}: {' '.join(command)}")
        server = self.start(name, command, port, env, cwd)
        try:
            server.wait_answer(FIRST_PAGE, AUTH, want_200=False, timeout=60)
            if setup is not None:
                setup(port)
            for row in rows:
                self.rows.append(measure(server, row))
        except ServerError as exc:
            for row in rows:
                row.note = f"server did not start: {exc}"
                self.rows.append(row)
        finally:
            self.finish(server)

    def load_mock(self) -> None:
        """Every mock row at --log-level warning, then the first page at the default info; keeps the first page's
        body for the baselines."""
        port = free_port()
        command = mock_command("--log-level", "warning")(port)
        log(f"mock: {' '.join(command)}")
        server = self.start("mock --log-level warning", command, port)
        try:
            server.wait_answer(FIRST_PAGE, AUTH, want_200=True, timeout=60)
            (self.workdir / "first-page.json").write_bytes(request(port, FIRST_PAGE, AUTH)[1])
            deep, hops = deep_page(port)
            rows = [
                Row("mock first page (limit 25)", "mock", FIRST_PAGE, AUTH, 200),
                Row("mock page of 100", "mock", "/v1/test-sets?limit=100", AUTH, 200),
                Row(f"mock deep page (page {hops + 1} of 25, cursor)", "mock", deep, AUTH, 200),
                Row("mock agent cases, filters", "mock", f"/v1/agents/acme.drafting/test-set/cases?projectId="
                    f"{PROJECT}&kind=correction&include=retired", AUTH, 200),
                Row("mock 400 (limit=500)", "mock", "/v1/test-sets?limit=500", AUTH, 400),
                Row("mock 401 (no Authorization)", "mock", "/v1/test-sets", {}, 401),
                Row("mock Prefer: code=503", "mock", "/v1/test-sets", {**AUTH, "Prefer": "code=503"}, 503),
                Row("mock Prefer: dynamic=true", "mock", "/v1/test-sets", {**AUTH, "Prefer": "dynamic=true"}, 200),
            ]
            for row in rows:
                self.rows.append(measure(server, row))
        finally:
            self.finish(server)
        self.load("mock --log-level info", mock_command(),
                  [Row("mock first page, --log-level info", "mock-info", FIRST_PAGE, AUTH, 200)])
        self.load("mock --metrics", mock_command("--log-level", "warning", "--metrics"),  # its cost: < 5 %
                  [Row("mock first page, --metrics", "mock-metrics", FIRST_PAGE, AUTH, 200)])

    def load_default(self) -> None:
        self.load("mock default", default_command("--log-level", "warning"),
                  [Row("mock default (1 process), first page", "mock-default", FIRST_PAGE, AUTH, 200)])

    def load_redis(self) -> None:
        """The state-store issue's rows: the mock at 2 workers sharing a real Redis on loopback (first page: no
        scenario matches, so no round trip for scenarios; the journal is written in batches), and a call that a
        scenario answers (one round trip to count it)."""
        label = "mock --workers 2, Redis store, first page"
        if shutil.which("redis-server") is None:
            self.rows.append(Row(label, "mock-redis", FIRST_PAGE, AUTH, 200, note="redis-server is not installed"))
            return
        with redis_server(self.workdir) as (port, _):
            state = ["--state", f"redis://{HOST}:{port}/0?prefix=bench"]
            command = default_command("--workers", "2", *state, "--log-level", "warning")
            scenario = {"operationId": "listTestSetVersionCases", "pathParams": {"testSetId": "acme.bench"},
                        "status": 503}
            self.load("mock --workers 2 --state redis", command, [
                Row(label, "mock-redis", FIRST_PAGE, AUTH, 200),
                Row("mock --workers 2, Redis store, a scenario's 503", "mock-redis",
                    "/v1/test-sets/acme.bench/versions/1.0.0/cases", AUTH, 503)],
                setup=lambda server_port: set_scenario(server_port, scenario))

    def load_mixed(self) -> None:
        """Issue 35's mixed load (MIXED, 64 connections) on the pets description served `--stateful` at
        --workers 2: on the memory store (each worker keeps its own, so a session's pets are those of the worker
        a connection reached) and sharing a real Redis. The note gives the statuses and the server's RSS before
        and after the rounds."""
        pets = ROOT / "tests" / "data" / "pets"
        serve = ["--spec", str(pets / "openapi.yaml"), "--fixtures", str(pets / "fixtures"), "--stateful",
                 "--workers", "2", "--log-level", "warning"]
        stores = [("memory", ["--state", "memory"])]
        if shutil.which("redis-server") is None:
            self.rows.append(Row("mixed load, Redis store", "mixed-redis", "/pets", {}, 200,
                                 note="redis-server is not installed"))
        else:
            stores.append(("Redis", []))  # its URL once its server is up
        for store, state in stores:
            row = Row(f"mixed load, {store} store (64 sessions)", f"mixed-{store.lower()}", "/pets", {}, 200,
                      script=MIXED, connections=MIXED_CONNECTIONS)
            with contextlib.ExitStack() as stack:
                if not state:
                    port, _ = stack.enter_context(redis_server(self.workdir))
                    state = ["--state", f"redis://{HOST}:{port}/0?prefix=mixed"]
                self.load(f"mixed, {store}", default_command(*serve, *state), [row])
            unexpected = sorted(set(row.statuses) - MIXED_EXPECTED)
            row.note = ("statuses " + " ".join(f"{k}:{v}" for k, v in sorted(row.statuses.items()))
                        + (f" (UNEXPECTED {', '.join(unexpected)})" if unexpected else "")
                        + (f"; RSS {row.rss_mb[0]:.0f} -> {row.rss_mb[-1]:.0f} MB" if len(row.rss_mb) == 2 else "")
                        + (f"; {row.note}" if row.note else ""))

    def load_stateful(self) -> None:
        """Issue 20's rows, on the small pets description of the tests (one process, the memory store): its list of
        203 pets served from fixtures that declare no writes, the same list made by 200 creates (a written
        collection), and creates and reads in turn."""
        pets = ROOT / "tests" / "data" / "pets"
        stateless = self.workdir / "pets-stateless"
        stateless.mkdir()
        document = yaml.safe_load((pets / "fixtures" / "pets.yaml").read_text())
        document["operations"] = {op: config for op, config in document["operations"].items()
                                  if not {"create", "update", "replace", "delete"} & config.keys()}
        document["collections"]["pets"]["items"] += [  # as many as the stateful server holds after its creates
            {"id": 4 + n, "name": f"pet-{n:03d}", "kind": "dog", "createdAt": "2026-01-01T00:00:00Z"}
            for n in range(200)]
        (stateless / "pets.yaml").write_text(yaml.safe_dump(document))
        spec = ["--spec", str(pets / "openapi.yaml"), "--log-level", "warning"]
        self.load("pets, stateless", default_command(*spec, "--fixtures", str(stateless)),
                  [Row("pets list (203 in fixtures, no writes)", "pets-stateless", "/pets", {}, 200)])
        self.load("pets, stateful", default_command(*spec, "--fixtures", str(pets / "fixtures")), [
            Row("pets list (3 in fixtures + 200 created)", "pets-stateful", "/pets", {}, 200),
            Row("pets create then list, in turn", "pets-stateful-writes", "/pets", {}, 200, script=CREATE_THEN_READ)],
            setup=lambda port: [post_json(port, "/pets", {"name": f"pet-{n:03d}", "kind": "dog"})
                                for n in range(200)])

    def load_growth(self) -> None:
        """Issue 35's growth table: one session of the pets description creates pets one after the other, timed
        at GROWTH_AT items (a window of GROWTH_WINDOW creates each; filled by GROWTH_FILLERS connections between
        the windows), on the memory store and on a real Redis (one process each), with the server's RSS at each
        size: a write should cost the same at 100,000 items as at 100."""
        pets = ROOT / "tests" / "data" / "pets"
        flags = ["--spec", str(pets / "openapi.yaml"), "--fixtures", str(pets / "fixtures"), "--log-level",
                 "warning", "--max-items", str(max(GROWTH_AT) + GROWTH_WINDOW)]
        self._growth("memory", default_command(*flags), None)
        if shutil.which("redis-server") is None:
            self.rows.append(Row("growth, Redis store", "growth-redis", "/pets", GROWTH_SESSION, 201,
                                 note="redis-server is not installed"))
            return
        with redis_server(self.workdir) as (port, redis):
            self._growth("redis", default_command(*flags, "--state", f"redis://{HOST}:{port}/0?prefix=growth"),
                         redis.pid)

    def _growth(self, store: str, make: Command, redis_pid: int | None) -> None:
        port = free_port()
        command = make(port)
        log(f"growth, {store}: {' '.join(command)}")
        server = self.start(f"growth, {store}", command, port)
        held, rss = 3, {}  # the pets of the fixtures; RSS in MB at each size: the server's tree's, redis-server's
        try:
            server.wait_answer("/pets", {}, want_200=True, timeout=60)
            for at in GROWTH_AT:
                fill(port, at - held)
                rss[at] = [rss_mb(server.proc.pid),
                           vm_rss_kb(redis_pid) / 1024 if redis_pid else 0.0]
                log(f"  {at:,} pets: RSS {rss[at][0]:.0f} MB" + (f", redis-server {rss[at][1]:.0f} MB"
                                                                 if redis_pid else ""))
                pids = tree(server.proc.pid) + ([redis_pid] if redis_pid else [])
                started, busy, own, mine = time.monotonic(), busy_ticks(), process_ticks(pids), own_ticks()
                taken = timed_creates(port, GROWTH_WINDOW)
                others = busy_ticks() - busy - (process_ticks(pids) - own) - (own_ticks() - mine)
                held = at + GROWTH_WINDOW
                self.rows.append(Row(
                    f"create at {at:,} pets, one session, {store} store", f"growth-{store}", "/pets",
                    GROWTH_SESSION, 201, status=201, requests=len(taken), p50_ms=round(statistics.median(taken), 2),
                    p99_ms=round(statistics.quantiles(taken, n=100)[98], 2),
                    other_cpu=round(max(0.0, others / TICK / (time.monotonic() - started)), 2),
                    note=f"RSS {rss[at][0]:.0f} MB" + (f" + redis-server {rss[at][1]:.0f} MB" if redis_pid else "")))
            low, high = GROWTH_AT[0], GROWTH_AT[1]
            self.growth_rss[store] = round((sum(rss[high]) - sum(rss[low])) * 10_000 / (high - low), 1)
        except ServerError as exc:
            self.rows.append(Row(f"growth, {store} store", f"growth-{store}", "/pets", GROWTH_SESSION, 201,
                                 note=f"server did not start: {exc}"))
        finally:
            self.finish(server)

    def load_gunicorn_mock(self) -> None:
        """The mock as it served before issue 15 (gunicorn, its default 1 worker x 8 threads), from git."""
        old = self.workdir / "gunicorn-mock"
        old.mkdir()
        archive = subprocess.run(["git", "archive", GUNICORN_COMMIT], cwd=ROOT, capture_output=True, timeout=60)
        label = f"mock on gunicorn ({GUNICORN_COMMIT}, its default), first page"
        if archive.returncode != 0:
            self.rows.append(Row(label, "mock-gunicorn", FIRST_PAGE, AUTH, 200, note="git archive failed: "
                                 + archive.stderr.decode(errors="replace").strip()[-100:]))
            return
        (self.workdir / "gunicorn-mock.tar").write_bytes(archive.stdout)
        with tarfile.open(self.workdir / "gunicorn-mock.tar") as tar:
            tar.extractall(old, filter="data")
        self.load("mock on gunicorn", lambda port: [str(BIN / "python"), "-m", "mockserver", "serve", "--port",
                                                    str(port), "--log-level", "warning"],
                  [Row(label, "mock-gunicorn", FIRST_PAGE, AUTH, 200)], {"PYTHONPATH": str(old)}, old)

    def load_baseline(self, app: str, label: str, on_granian: bool) -> None:
        """A baseline on Granian (the mock's worker settings) or gunicorn answering the mock's first page (written
        by load_mock) from memory."""
        env = {"BENCH_PAYLOAD": str(self.workdir / "first-page.json"), "PYTHONPATH": str(ROOT)}
        make = granian_command(app) if on_granian else gunicorn_command(app)
        server = f"{app}-{'granian' if on_granian else 'gunicorn'}"
        self.load(label, make, [Row(label, server, FIRST_PAGE, AUTH, 200)], env)

    def slow_clients(self) -> None:
        """The default mock with STALLED connections each holding half a request line: how long a normal request
        (a new connection each) takes meanwhile."""
        label = f"mock default, {STALLED} stalled connections: a normal request"
        row = Row(label, "mock-slow-clients", FIRST_PAGE, AUTH, 200)
        self.rows.append(row)
        port = free_port()
        server = self.start("mock slow clients", default_command("--log-level", "warning")(port), port)
        stalled: list[socket.socket] = []
        try:
            server.wait_answer(FIRST_PAGE, AUTH, want_200=True, timeout=60)
            for _ in range(STALLED):
                sock = socket.create_connection((HOST, port), timeout=5)
                sock.sendall(b"GET /v1/test-sets HTTP/1.1\r\nHost: x\r\n")
                stalled.append(sock)
            times, statuses = [], set()
            for _ in range(STALLED_PROBES):
                started = time.perf_counter()
                status, body = request(port, FIRST_PAGE, AUTH, timeout=30)
                times.append((time.perf_counter() - started) * 1000)
                statuses.add(status)
                row.body_bytes = len(body)
            times.sort()
            row.status, row.requests = (statuses.pop() if len(statuses) == 1 else None), len(times)
            row.p50_ms, row.p99_ms = round(times[len(times) // 2], 2), round(times[-1], 2)
            row.note = f"p99: the slowest of {len(times)}" + ("" if row.status == 200 else f"; statuses {statuses}")
            log(f"  {label}: p50 {row.p50_ms:.2f} ms, slowest {row.p99_ms:.2f} ms")
        except (OSError, ServerError) as exc:
            row.note = f"failed: {exc}"
        finally:
            for sock in stalled:
                sock.close()
            self.finish(server)

    def load_prism(self) -> None:
        spec = str(ROOT / "spec" / "kindgi.yaml")
        for extra, label in ((["-v", "warn"], "-v warn"), ([], "default logging")):
            self.load(f"Prism {label}", prism_command(spec, *extra),
                      [Row(f"Prism 5.16 {label}, first page", f"prism {label}", FIRST_PAGE, AUTH, 200)])

    def startup(self, name: str, make: Command, path: str, headers: dict[str, str], want_200: bool,
                runs: int = 1, env: dict[str, str] | None = None) -> None:
        """Start the server `runs` times; the median start-up and the memory of the last run."""
        log(f"start-up {name}")
        result = Startup(name, [])
        for _ in range(runs):
            port = free_port()
            result.command = make(port)
            busy, own = busy_ticks(), own_ticks()
            server = self.start(name, result.command, port, env)
            try:
                seconds = server.wait_answer(path, headers, want_200, STARTUP_TIMEOUT_S)
                others = busy_ticks() - busy - process_ticks(tree(server.proc.pid)) - (own_ticks() - own)
                result.other_cpu = max(result.other_cpu or 0.0, round(max(0.0, others / TICK / seconds), 2))
                result.runs.append(round(seconds, 3))
                time.sleep(SETTLE_S)  # every worker up
                result.master_mb, result.tree_mb, result.processes = server.memory()
            except ServerError as exc:
                result.error = f"{exc} (after {time.monotonic() - server.started:.1f} s)"
                break
            finally:
                self.stop(server)
        if result.runs and not result.error:
            result.seconds = statistics.median(result.runs)
        self.startups.append(result)

    def startups_all(self) -> None:
        spec = str(ROOT / "spec" / "kindgi.yaml")
        warning = ["--log-level", "warning"]
        self.startup("Kindgi mock", default_command(*warning), FIRST_PAGE, AUTH, True, KINDGI_STARTS)
        self.startup("Kindgi mock, no parse cache", default_command(*warning), FIRST_PAGE, AUTH, True,
                     KINDGI_STARTS, {"MOCKSERVER_CACHE_DIR": "off"})  # what a first start on a machine costs
        self.startup("Kindgi mock --workers 2", mock_command(*warning), FIRST_PAGE, AUTH, True)
        if not self.prism_skipped:
            self.startup("Kindgi Prism -v warn", prism_command(spec, "-v", "warn"), FIRST_PAGE, AUTH, True)
        if not CORPUS.is_dir():
            self.corpus_note = f"corpus rows skipped: {CORPUS} is absent"
            log(self.corpus_note)
            return
        for relative in CORPUS_FILES:
            path = CORPUS / relative
            if not path.exists():
                self.corpus_note += f"{relative} is absent; "
                continue
            short = relative.split("/")[0]
            self.startup(f"{short} mock", default_command("--spec", str(path), *warning), "/", {}, False)
            if not self.prism_skipped:
                self.startup(f"{short} Prism -v warn", prism_command(str(path), "-v", "warn"), "/", {}, False)


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """A private redis-server on a free loopback port, without persistence (its files in `folder`): its port and
    its process (for its RSS, or to freeze it); stopped at the end, even when frozen."""
    port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no",
                              "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        yield port, redis
    finally:
        redis.send_signal(signal.SIGCONT)  # a stopped process takes no SIGTERM
        redis.terminate()
        redis.wait(timeout=10)


def default_command(*extra: str) -> Command:
    """`mockserver serve` of Kindgi, unless `extra` names another description."""
    kindgi = [] if "--spec" in extra else ["--spec", str(ROOT / "spec" / "kindgi.yaml"), "--fixtures",
                                           str(ROOT / "fixtures")]
    return lambda port: [str(BIN / "mockserver"), "serve", *kindgi, "--port", str(port), *extra]


def mock_command(*extra: str) -> Command:
    return default_command(*MOCK_FLAGS, *extra)


def granian_command(app: str) -> Command:
    flags = GRANIAN_RSGI_FLAGS if app == "rsgi_app" else GRANIAN_FLAGS
    return lambda port: [str(BIN / "granian"), *flags, "--host", HOST, "--port", str(port), f"bench.baselines:{app}"]


def gunicorn_command(app: str) -> Command:
    return lambda port: [str(BIN / "gunicorn"), *GUNICORN_FLAGS, "-b", f"{HOST}:{port}", f"bench.baselines:{app}"]


def prism_command(spec: str, *extra: str) -> Command:
    return lambda port: [str(PRISM_BIN), "mock", "-h", HOST, "-p", str(port), *extra, spec]


# wrk: every other request creates a pet, the one after reads the list
CREATE_THEN_READ = """
local n = 0
request = function()
  n = n + 1
  if n % 2 == 1 then
    return wrk.format("POST", "/pets", {["Content-Type"] = "application/json"}, '{"name":"wrk","kind":"cat"}')
  end
  return wrk.format("GET", "/pets")
end
"""


# issue 35's mixed load on the pets description: each wrk thread keeps MIXED_SESSIONS sessions of its own (named by
# the thread and the round's tag, so every round starts with fresh ones) and the ids each session holds (the
# fixtures' 1-3, then one per create: a session numbers its pets 4, 5, ...); each request draws a session and a
# kind from the fixed mix: 60 % reads (half the list, half an item), 25 % writes (10 % creates, 15 % PATCHes),
# 5 % deletes, 5 % scenario calls (a session's `times: 1` scenario on getPet set, then removed, in turn), 5 %
# journal reads. It counts the statuses it is answered and prints them for `measure`.
MIXED_SESSIONS = 32  # per wrk thread: 64 sessions on wrk's two threads
MIXED_CONNECTIONS = 64
MIXED = """
local SESSIONS = @SESSIONS@
local MIX = {"list", "list", "list", "list", "list", "list", "item", "item", "item", "item", "item", "item",
             "create", "create", "update", "update", "update", "delete", "scenario", "journal"}
local threads = {}
local sessions = {}
statuses = {}

function setup(thread)
  thread:set("thread", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(thread * 7919 + 17)
  for s = 1, SESSIONS do
    sessions[s] = {name = string.format("mix-%s-%d-%d", args[1] or "", thread, s), pool = {1, 2, 3}, next = 4,
                   scenario = false}
  end
end

function request()
  local s = sessions[math.random(SESSIONS)]
  local kind = MIX[math.random(#MIX)]
  local h = {["X-Mock-Session"] = s.name}
  if kind == "create" or #s.pool == 0 then
    h["Content-Type"] = "application/json"
    s.pool[#s.pool + 1] = s.next
    s.next = s.next + 1
    return wrk.format("POST", "/pets", h, '{"name":"mixed","kind":"cat"}')
  elseif kind == "list" then
    return wrk.format("GET", "/pets?limit=10", h)
  elseif kind == "journal" then
    return wrk.format("GET", "/__mock/requests?limit=10", h)
  elseif kind == "scenario" then
    s.scenario = not s.scenario
    if not s.scenario then
      return wrk.format("DELETE", "/__mock/scenarios/mix", h)
    end
    h["Content-Type"] = "application/json"
    return wrk.format("POST", "/__mock/scenarios", h, '{"id":"mix","operationId":"getPet","status":404,"times":1}')
  end
  local at = math.random(#s.pool)
  local id = s.pool[at]
  if kind == "item" then
    return wrk.format("GET", "/pets/" .. id, h)
  elseif kind == "update" then
    h["Content-Type"] = "application/merge-patch+json"
    return wrk.format("PATCH", "/pets/" .. id, h, '{"tag":"mixed"}')
  end
  s.pool[at] = s.pool[#s.pool]
  s.pool[#s.pool] = nil
  return wrk.format("DELETE", "/pets/" .. id, h)
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total, out = {}, {}
  for _, t in ipairs(threads) do
    for status, n in pairs(t:get("statuses")) do
      total[status] = (total[status] or 0) + n
    end
  end
  for status, n in pairs(total) do
    out[#out + 1] = status .. "=" .. n
  end
  table.sort(out)
  io.write("statuses: " .. table.concat(out, " ") .. "\\n")
end
""".replace("@SESSIONS@", str(MIXED_SESSIONS))
MIXED_EXPECTED = frozenset({"200", "201", "204", "404", "409"})  # 404: a deleted pet, a scenario spent; 409: set


def post_json(port: int, path: str, payload: Any) -> int:
    connection = http.client.HTTPConnection(HOST, port, timeout=10)
    connection.request("POST", path, json.dumps(payload), {"Content-Type": "application/json"})
    status = connection.getresponse().status
    connection.close()
    return status


def fill(port: int, creates: int) -> None:
    """`creates` pets created in the growth session, over GROWTH_FILLERS connections at once."""
    def create(n: int) -> None:
        connection = http.client.HTTPConnection(HOST, port, timeout=30)
        for _ in range(n):
            connection.request("POST", "/pets", b'{"name":"grown","kind":"dog"}', GROWTH_SESSION)
            response = connection.getresponse()
            response.read()
            if response.status != 201:
                raise ServerError(f"a create was answered {response.status}")
        connection.close()

    with ThreadPoolExecutor(GROWTH_FILLERS) as pool:
        shares = [creates // GROWTH_FILLERS + (i < creates % GROWTH_FILLERS) for i in range(GROWTH_FILLERS)]
        list(pool.map(create, shares))


def timed_creates(port: int, creates: int) -> list[float]:
    """Milliseconds each of `creates` pets took to create, one after the other on one connection."""
    connection = http.client.HTTPConnection(HOST, port, timeout=30)
    taken = []
    for _ in range(creates):
        began = time.perf_counter()
        connection.request("POST", "/pets", b'{"name":"timed","kind":"cat"}', GROWTH_SESSION)
        response = connection.getresponse()
        response.read()
        taken.append((time.perf_counter() - began) * 1000)
        if response.status != 201:
            raise ServerError(f"a create was answered {response.status}")
    connection.close()
    return taken


def set_scenario(port: int, scenario: dict[str, Any]) -> None:
    connection = http.client.HTTPConnection(HOST, port, timeout=10)
    connection.request("POST", "/__mock/scenarios", json.dumps(scenario), {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 201:
        raise ServerError(f"the scenario was refused: {response.status} {response.read()[:200]!r}")
    connection.close()


def deep_page(port: int, hops: int = 3) -> tuple[str, int]:
    """The URL of page hops+1 of limit=25, walked by nextCursor, and how many hops were made."""
    path = FIRST_PAGE
    for hop in range(hops):
        status, body = request(port, path, AUTH)
        cursor = json.loads(body).get("nextCursor") if status == 200 else None
        if not cursor:
            return path, hop
        path = f"{FIRST_PAGE}&cursor={urllib.parse.quote(cursor, safe='')}"
    return path, hops


def best(rows: list[Row], server: str, path: str = FIRST_PAGE) -> Row | None:
    """A server's row for a path (the better one, where a server was loaded more than once)."""
    return max((r for r in rows if r.server == server and r.path == path and r.rps), key=lambda r: r.rps or 0,
               default=None)


def add_ratios(rows: list[Row]) -> None:
    """Ratios (of the rounds' medians) to bare Flask on Granian for every row; to Prism -v warn for the rows
    serving the same first page."""
    flask, prism = best(rows, "flask_app-granian"), best(rows, "prism -v warn")
    for row in rows:
        if row.rps and flask and flask.rps:
            row.vs_flask = round(row.rps / flask.rps, 2)
        if row.rps and prism and prism.rps and row.path == FIRST_PAGE and row.server != "prism -v warn":
            row.vs_prism_warn = round(row.rps / prism.rps, 2)


def spikes(rows: list[Row], what: str) -> str:
    """How many of the rows' rounds had a p99 of 10 ms or more."""
    rounds = [r["p99_ms"] for row in rows for r in row.rounds]
    return f"{sum(p99 >= 10 for p99 in rounds)} of {len(rounds)} {what} >= 10 ms"


def ceilings(rows: list[Row]) -> list[Row]:
    """The rows on Granian that run no mock: bare Flask, raw WSGI and raw RSGI answering the same bytes."""
    return [r for r in rows if r.server in ("flask_app-granian", "wsgi_app-granian", "rsgi_app-granian")]


def targets(rows: list[Row], startups: list[Startup], growth_rss: dict[str, float] | None = None
            ) -> list[dict[str, str]]:
    """Issues 14 and 15's targets: each met, MISSED or not measured, with the figures; "(disturbed)" when other
    processes
    took more than BUSY_WARNING cores during a figure it rests on."""
    out: list[dict[str, str]] = []

    def verdict(name: str, ok: bool | None, detail: str, basis: list[Any]) -> None:
        result = {True: "met", False: "MISSED", None: "not measured"}[ok]
        if ok is not None and max((b.other_cpu or 0.0 for b in basis), default=0.0) > BUSY_WARNING:
            result += " (disturbed)"
        out.append({"target": name, "result": result, "detail": detail})

    def ratio(name: str, row: Row | None, reference: Row | None, at_least: float) -> None:
        if row is None or reference is None or not row.rps or not reference.rps:
            verdict(name, None, "no figure", [])
        else:
            verdict(name, row.rps >= at_least * reference.rps,
                    f"{row.rps / reference.rps:.2f}x ({row.rps:,.0f} vs {reference.rps:,.0f} req/s)", [row, reference])

    default, first = best(rows, "mock-default"), best(rows, "mock")
    ratio("default (1 process) first page >= 2x the gunicorn default", default, best(rows, "mock-gunicorn"), 2)
    ratio("default (1 process) first page > Prism -v warn", default, best(rows, "prism -v warn"), 1.0001)
    flask = best(rows, "flask_app-granian")
    ratio("--workers 2 first page >= 0.8x bare Flask on Granian", first, flask, 0.8)
    ratio("--workers 2 first page >= 1.5x bare Flask on gunicorn 2x4", first, best(rows, "flask_app-gunicorn"), 1.5)
    ratio("--workers 2 first page >= 4x Prism -v warn", first, best(rows, "prism -v warn"), 4)
    mock = [r for r in rows if r.server == "mock" and r.rps is not None]
    others = [r for r in mock if r.path != FIRST_PAGE and r.vs_flask is not None]
    low = [f"{r.name}: {r.vs_flask}x" for r in others if (r.vs_flask or 0) < 0.6]
    verdict("every other --workers 2 row >= 0.6x bare Flask on Granian", not low if others else None,
            "; ".join(low) or (f"lowest {min(r.vs_flask or 0 for r in others)}x" if others else "no figure"),
            [*others, *([flask] if flask else [])])
    slow = [f"{r.name}: {r.p99_ms} ms" for r in mock if r.p99_ms is not None and r.p99_ms >= 10]
    verdict(f"p99 < 10 ms at 16 connections (--workers 2 rows, median of {ROUNDS} rounds)", not slow if mock else None,
            "; ".join(slow) or (f"highest {max(r.p99_ms or 0 for r in mock):.2f} ms; "
                                + spikes(mock, "mock rounds") + "; " + spikes(ceilings(rows), "ceiling rounds")
                                if mock else "no figure"), mock)
    redis = best(rows, "mock-redis")
    name = "Redis: --workers 2 first page >= 1.5x the default (1 process, memory), p99 < 5 ms"
    if redis is None or default is None or not redis.rps or not default.rps or redis.p99_ms is None:
        verdict(name, None, "no figure", [])
    else:
        verdict(name, redis.rps >= 1.5 * default.rps and redis.p99_ms < 5,
                f"{redis.rps / default.rps:.2f}x ({redis.rps:,.0f} vs {default.rps:,.0f} req/s), p99 "
                f"{redis.p99_ms:.2f} ms", [redis, default])
    for server, floor in (("mixed-memory", 8000), ("mixed-redis", 5000)):
        mixed = best(rows, server, "/pets")
        name = f"{server}: >= {floor:,} req/s, p99 < 20 ms (--workers 2, 64 connections)"
        if mixed is None or not mixed.rps or mixed.p99_ms is None:
            verdict(name, None, mixed.note[:100] if mixed else "no figure", [])
        else:
            verdict(name, mixed.rps >= floor and mixed.p99_ms < 20,
                    f"{mixed.rps:,.0f} req/s, p99 {mixed.p99_ms:.2f} ms", [mixed])
    ratio("stateful: a written collection's list >= 0.8x the same list without writes",
          best(rows, "pets-stateful", "/pets"), best(rows, "pets-stateless", "/pets"), 0.8)
    for store in ("memory", "redis"):
        low, high = (next((r for r in rows if r.server == f"growth-{store}" and r.p50_ms
                           and r.name.startswith(f"create at {at:,} ")), None) for at in (GROWTH_AT[0], GROWTH_AT[-1]))
        name = f"create p50 at {GROWTH_AT[-1]:,} pets <= 1.5x at {GROWTH_AT[0]:,} ({store} store)"
        if low is None or high is None or not low.p50_ms or not high.p50_ms:
            verdict(name, None, "no figure", [])
        else:
            verdict(name, high.p50_ms <= 1.5 * low.p50_ms,
                    f"{high.p50_ms / low.p50_ms:.2f}x ({high.p50_ms} vs {low.p50_ms} ms)", [low, high])
    for store, mb in (growth_rss or {}).items():
        verdict(f"RSS per 10,000 stored pets < 50 MB ({store} store)", mb < 50, f"{mb} MB", [])
    stalled = next((r for r in rows if r.server == "mock-slow-clients"), None)
    if stalled is None or stalled.p99_ms is None:
        verdict(f"a normal request < 50 ms with {STALLED} stalled connections", None,
                stalled.note if stalled else "no figure", [])
    else:
        verdict(f"a normal request < 50 ms with {STALLED} stalled connections",
                stalled.status == 200 and stalled.p99_ms < 50,
                f"slowest of {stalled.requests}: {stalled.p99_ms} ms (median {stalled.p50_ms} ms)", [])
    kindgi = next((s for s in startups if s.name == "Kindgi mock"), None)
    if kindgi is None:
        verdict("Kindgi start-up < 1 s", None, "no figure", [])
    else:
        verdict("Kindgi start-up < 1 s", kindgi.seconds is not None and kindgi.seconds < 1,
                kindgi.error or f"{kindgi.seconds} s (median of {kindgi.runs})", [kindgi])
    name = "3 MB description start-up faster than Prism's"
    big_mock = next((s for s in startups if s.name == "openai-api.yaml mock"), None)
    big_prism = next((s for s in startups if s.name == "openai-api.yaml Prism -v warn"), None)
    mock_s, prism_s = big_mock.seconds if big_mock else None, big_prism.seconds if big_prism else None
    if big_mock is not None and mock_s is None:
        verdict(name, False, f"the mock did not start: {big_mock.error.split(' | ')[0]}", [])
    elif big_mock is None or big_prism is None or mock_s is None or prism_s is None:
        verdict(name, None, f"Prism: {big_prism.error}" if big_prism else "corpus or Prism unavailable", [])
    else:
        verdict(name, mock_s < prism_s, f"mock {mock_s} s vs Prism {prism_s} s", [big_mock, big_prism])
    return out


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(headers: list[str], lines: Iterator[list[str]]) -> str:
    rows = [headers, *lines]
    widths = [max(len(r[i]) for r in rows) for i in range(len(headers))]
    text = ["  ".join(c.ljust(w) if i in (0, len(headers) - 1) else c.rjust(w)
                      for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in rows]
    return "\n".join([text[0], "-" * max(len(t) for t in text), *text[1:]])


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine(wrk_version: str) -> dict[str, Any]:
    cpu = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
    commit = run(["git", "rev-parse", "HEAD"], 10).stdout.strip()
    dirty = bool(run(["git", "status", "--porcelain", "--untracked-files=no"], 10).stdout.strip())
    node = run(["node", "--version"], 10).stdout.strip() if shutil.which("node") else None
    return {"nproc": os.cpu_count(), "cpu": cpu.group(1) if cpu else platform.processor(),
            "python": platform.python_version(), "platform": platform.platform(), "wrk": wrk_version,
            "node": node, "git_commit": commit, "git_dirty": dirty, "loadavg_at_start": loadavg()}


def print_report(bench: Bench, info: dict[str, Any], goals: list[dict[str, str]]) -> None:
    """Both tables, the memory after the loads, a warning when other processes took CPU, and the targets."""
    print(f"\nThroughput: wrk -t2 -c16 -d{LOAD_S}s --latency after {WARM_S} s of warm-up, {info['nproc']} cores, "
          f"{info['date']}, {info['git_commit'][:10]}{' (dirty)' if info['git_dirty'] else ''}; mock rows: "
          f"`serve {' '.join(MOCK_FLAGS)}` unless said; each row is the median of {ROUNDS} rounds (p99 worst: its "
          f"worst round); x Flask: to bare Flask on Granian (2 workers x {THREADS} threads)\n")
    print(table(["row", "req/s", "p50 ms", "p99 ms", "p99 worst", "x Flask", "x Prism warn", "other CPU", "note"], (
        [r.name, fmt(r.rps, ",.0f"), fmt(r.p50_ms, ".2f"), fmt(r.p99_ms, ".2f"), fmt(r.p99_worst_ms, ".2f"),
         fmt(r.vs_flask, ".2f"),
         fmt(r.vs_prism_warn, ".2f"), fmt(r.other_cpu, ".2f"), f"{r.status} {r.body_bytes} B" + (
             f"; {r.note[:100]}" if r.note else "")] for r in bench.rows)))
    print(f"\nStart-up (process start to first answer: a 200 on the first page for Kindgi, any status to GET / for "
          f"the corpus) and peak RSS (VmHWM) {SETTLE_S:.0f} s later\n")
    print(table(["description / server", "start-up s", "main MB", "tree MB", "procs", "other CPU", "note"], (
        [s.name, fmt(s.seconds, ".2f"), fmt(s.master_mb, ".0f"), fmt(s.tree_mb, ".0f"), fmt(s.processes, "d"),
         fmt(s.other_cpu, ".2f"),
         (s.error[:110] if s.error else (f"runs {s.runs}" if len(s.runs) > 1 else ""))]
        for s in bench.startups)))
    if bench.after_load:
        print("\npeak RSS of the process tree after the loads (MB): "
              + ", ".join(f"{name} {mb:.0f}" for name, mb in bench.after_load.items()))
    if bench.prism_skipped:
        print(f"Prism: skipped ({bench.prism_skipped})")
    if bench.corpus_note:
        print(f"note: {bench.corpus_note}")
    busiest = max([r.other_cpu or 0.0 for r in bench.rows] + [s.other_cpu or 0.0 for s in bench.startups])
    if max(busiest, info["other_cpu_before"]) > BUSY_WARNING:
        print(f"\nwarning: other processes kept {info['other_cpu_before']} cores busy just before the bench and up to "
              f"{busiest} cores during a load or a start-up (column 'other CPU'): those figures are disturbed; run "
              f"again on a quiet machine")
    print("\nTargets (issues 14 and 15)\n")
    print(table(["target", "result", "detail"], ([g["target"], g["result"], g["detail"][:160]] for g in goals)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", type=lambda text: text.split(","), default=list(GROUPS), metavar="GROUP[,GROUP]",
                        help="run only these groups of rows, then write bench/results/<time>.json alone (not "
                             f"latest.json): {', '.join(GROUPS)} (the baselines serve the mock group's first page)")
    args = parser.parse_args()
    unknown = set(args.only) - set(GROUPS)
    if unknown:
        parser.error(f"--only {','.join(sorted(unknown))}: the groups are {', '.join(GROUPS)}")
    chosen = [group for group in GROUPS if group in args.only or group == "mock" and "baselines" in args.only]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops the servers
    began = datetime.now(UTC)
    wrk_version = ensure_wrk()
    info = machine(wrk_version)
    info["other_cpu_before"] = other_cpu(1.0)
    with tempfile.TemporaryDirectory(prefix="mockserver-bench-") as tmp:
        # the servers' parse cache (mockserver/cache.py) starts empty in the bench's own folder: the first
        # start-up is cold, the later ones read it, as a user's restarts do
        os.environ["MOCKSERVER_CACHE_DIR"] = str(Path(tmp) / "parse-cache")
        bench = Bench(Path(tmp))
        try:
            bench.prism_skipped = ensure_prism() if "prism" in chosen or "startup" in chosen else "not chosen"
            for group in chosen:
                if group == "prism" and bench.prism_skipped:
                    log(f"Prism: skipped ({bench.prism_skipped})")
                    continue
                try:
                    GROUPS[group](bench)
                except ServerError as exc:
                    sys.exit(f"bench: the mock did not start: {exc}")
        finally:
            bench.stop_all()
    add_ratios(bench.rows)
    goals = targets(bench.rows, bench.startups, bench.growth_rss)
    info["loadavg_at_end"] = loadavg()
    info["date"] = began.isoformat(timespec="seconds")
    info["duration_s"] = round((datetime.now(UTC) - began).total_seconds(), 1)

    print_report(bench, info, goals)

    result = {"machine": info, "settings": {"wrk": f"-t2 -c16 -d{LOAD_S}s --latency", "warm_s": WARM_S,
                                            "rounds": ROUNDS, "mock": MOCK_FLAGS, "granian": GRANIAN_FLAGS,
                                            "granian_rsgi": GRANIAN_RSGI_FLAGS,
                                            "gunicorn": GUNICORN_FLAGS, "gunicorn_mock_commit": GUNICORN_COMMIT,
                                            "stalled": STALLED,
                                            "startup_timeout_s": STARTUP_TIMEOUT_S},
              "groups": chosen, "prism": {"version": PRISM_VERSION, "skipped": bench.prism_skipped or None},
              "corpus_note": bench.corpus_note or None,
              "load": [asdict(r) for r in bench.rows], "startup": [asdict(s) for s in bench.startups],
              "peak_rss_after_load_mb": bench.after_load, "growth_rss_per_10000_pets_mb": bench.growth_rss,
              "targets": goals}
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2) + "\n"
    partial = "" if len(chosen) == len(GROUPS) else "-" + "-".join(chosen)
    stamped = RESULTS / f"{began.strftime('%Y%m%dT%H%M%SZ')}{partial}.json"
    stamped.write_text(text)
    if len(chosen) == len(GROUPS):
        (RESULTS / "latest.json").write_text(text)
    print(f"\nwritten: {stamped.relative_to(ROOT)}" + (" and bench/results/latest.json" if len(chosen) == len(GROUPS)
                                                      else f" (only {', '.join(chosen)})")
          + f" ({info['duration_s']} s)")
    return 0


def _baselines(bench: Bench) -> None:
    bench.load_baseline("flask_app", "bare Flask on Granian (same payload)", True)
    bench.load_baseline("wsgi_app", "raw WSGI on Granian (same payload)", True)
    bench.load_baseline("rsgi_app", "raw RSGI on Granian (same payload)", True)
    bench.load_baseline("flask_app", "bare Flask on gunicorn 2x4 (same payload)", False)
    bench.load_baseline("wsgi_app", "raw WSGI on gunicorn 2x4 (same payload)", False)


# the groups of rows, in the order a whole run measures them (`--only` picks some)
GROUPS: dict[str, Callable[[Bench], None]] = {
    "mock": Bench.load_mock, "default": Bench.load_default, "redis": Bench.load_redis,
    "stateful": Bench.load_stateful, "growth": Bench.load_growth, "mixed": Bench.load_mixed,
    "gunicorn": Bench.load_gunicorn_mock,
    "baselines": _baselines, "prism": Bench.load_prism, "slow-clients": Bench.slow_clients,
    "startup": Bench.startups_all,
}


if __name__ == "__main__":
    sys.exit(main())
