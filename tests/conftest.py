"""Shared fixtures: the bundled Kindgi mock, the tiny Library description written for the tests, and helpers to
write throwaway descriptions and fixtures in temp folders."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from mockserver import create_app
from mockserver.cache import DiskCache
from mockserver.spec.documents import use_parse_cache

ROOT = Path(__file__).resolve().parent.parent
KINDGI_SPEC = ROOT / "spec" / "kindgi.yaml"
KINDGI_FIXTURES = ROOT / "fixtures"
LIBRARY = Path(__file__).resolve().parent / "data" / "library"
SHARED = ROOT.parent / "shared"

# the checkout's own tests serve Kindgi when a command names no description (a user's default is ./openapi.yaml)
os.environ.setdefault("MOCKSERVER_SPEC", str(KINDGI_SPEC))
os.environ.setdefault("MOCKSERVER_FIXTURES", str(KINDGI_FIXTURES))

DEMO = {"Authorization": "Bearer demo-token"}
OTHER = {"Authorization": "Bearer other-tenant-token"}
SAMPLE_PROJECT = "2489e9ad-2ee2-8e00-8ec9-32d5f69181c0"


class ParsedInThisProcess:
    """The engine's ParseCache kept in memory: a test process parses each file once, however many mocks its tests
    build of it (most build their own of Kindgi's 780 kB of YAML, 0.2-0.4 s each to parse). Keyed, as the command
    line's cache is, by the hash of the text: an edited file is parsed again, a file with a problem is never kept.
    The newest `KEEP_BYTES` of entries are kept. Behind it, once the session starts, the command line's cache on
    disk that the commands tests start use (`_parse_cache`): what a test process parsed, they read back, and the
    other way round. (An in-process `mockserver.cli.main` installs that disk cache itself: just as good.)"""

    KEEP_BYTES = 256 * 2**20

    def __init__(self) -> None:
        self._blobs: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self.disk: DiskCache | None = None

    def get(self, key: str) -> bytes | None:
        blob = self._blobs.get(key)
        if blob is not None:
            self._blobs.move_to_end(key)
        elif self.disk is not None and (blob := self.disk.get(key)) is not None:
            self._keep(key, blob)
        return blob

    def put(self, key: str, blob: bytes) -> None:
        if self.disk is not None:
            self.disk.put(key, blob)
        self._keep(key, blob)

    def _keep(self, key: str, blob: bytes) -> None:
        if key in self._blobs:
            return
        self._blobs[key] = blob
        self._bytes += len(blob)
        while self._bytes > self.KEEP_BYTES:
            self._bytes -= len(self._blobs.popitem(last=False)[1])


PARSED = ParsedInThisProcess()
use_parse_cache(PARSED)  # at import: the apps some test modules build when they are collected use it too


@pytest.fixture(scope="session", autouse=True)
def _parse_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The commands tests start keep their parse cache (mockserver/cache.py) in the session's temp folder, never in
    the user's home: one folder for all of the session's xdist workers (the cache is written atomically for
    processes that share it), so a description one worker parsed, the others' commands read back."""
    base = tmp_path_factory.getbasetemp()
    folder = base.parent / "parse-cache" if os.environ.get("PYTEST_XDIST_WORKER") else base / "parse-cache"
    folder.mkdir(exist_ok=True)
    os.environ["MOCKSERVER_CACHE_DIR"] = str(folder)
    PARSED.disk = DiskCache(folder)


@pytest.fixture(scope="session")
def kindgi_app() -> Flask:
    return create_app(KINDGI_SPEC, KINDGI_FIXTURES)


@pytest.fixture()
def kindgi(kindgi_app: Flask) -> FlaskClient:
    return kindgi_app.test_client()


@pytest.fixture(scope="session")
def library_app() -> Flask:
    return create_app(LIBRARY / "openapi.yaml", LIBRARY / "fixtures")


@pytest.fixture()
def library(library_app: Flask) -> FlaskClient:
    return library_app.test_client()


@pytest.fixture()
def write(tmp_path: Path) -> Callable[[str, Any], Path]:
    """Write a file under a temp folder: YAML text (dedented) or any JSON-able value."""

    def _write(name: str, content: Any) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content) if isinstance(content, str) else json.dumps(content))
        return path

    return _write


def body(response: Any) -> Any:
    return json.loads(response.data)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(*args: str, env: dict[str, str] | None = None,
            command: str = "serve") -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`python -m mockserver serve` (or another `command`) on a free port, as a user starts it, once it takes
    connections; its stderr is a pipe the test may read; `env` adds to the environment. Stopped (killed if it must
    be) at the end."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mockserver", command, "--port", str(port), *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env} if env else None,
                            start_new_session=True)  # its own process group: its workers are stopped with it
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with suppress(ProcessLookupError):  # a worker left behind (its server killed, or stopped by a test)
            os.killpg(proc.pid, signal.SIGKILL)


class RedisServer:
    """A real `redis-server` on a free port, no persistence, in a temp folder; stop() and start() again to play a
    lost Redis."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        self._proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--dir", str(self.folder)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            assert self._proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    @property
    def pid(self) -> int | None:
        """The server's process, to stop (SIGSTOP) and continue (SIGCONT) as a frozen Redis."""
        return self._proc.pid if self._proc is not None else None

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(timeout=10)

    def url(self, prefix: str | None = None) -> str:
        """A URL of this server with a key prefix of its own: tests sharing the server never see each other."""
        return f"redis://127.0.0.1:{self.port}/0?prefix={prefix or 't-' + uuid.uuid4().hex[:12]}"


def _redis_server(folder: Path) -> RedisServer:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed: `make test` installs Debian's redis-server (apt-get)")
    return RedisServer(folder).start()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One Redis per test process; each test takes its own prefix (`redis_url`)."""
    server = _redis_server(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture()
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url()


@pytest.fixture()
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of the test's own, to stop and start."""
    server = _redis_server(tmp_path)
    yield server
    server.stop()


# Tests say what they need: `-m "not slow and not browser"` is the quick loop, so a test that starts a server process
# or a browser must carry its marker. A test using a fixture that starts one gets `slow` here; a test starting one
# without its marker fails, naming the command (the guard below), rather than slowing the quick loop unseen.
PROCESS_FIXTURES = frozenset({"redis_server", "redis_url", "own_redis"})
SERVER_COMMANDS = frozenset({"serve", "proxy", "record"})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if PROCESS_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def needed_marker(args: Any) -> str | None:
    """The marker a test starting this command must carry: `slow` for a mock server, Redis or Granian, `browser`
    for Playwright's driver or Chromium, else None."""
    argv = [os.fspath(a) for a in args] if isinstance(args, (list, tuple)) else [os.fspath(args)]
    names = [Path(a).name for a in argv]
    if any("playwright" in a or "chrom" in n for a, n in zip(argv, names)):
        return "browser"
    if "redis-server" in names or "granian" in names:
        return "slow"
    if "mockserver" in argv and SERVER_COMMANDS.intersection(argv[argv.index("mockserver") + 1:][:1]):
        return "slow"
    return None


@contextmanager
def processes_need_markers(item: pytest.Item) -> Iterator[None]:
    """`subprocess.Popen` (behind `subprocess.run` and asyncio's subprocesses too) refusing a command whose marker
    the test lacks."""
    marked = {m.name for m in item.iter_markers()}
    if {"slow", "browser"} <= marked:
        yield
        return
    unguarded = subprocess.Popen

    class Guarded(unguarded):  # type: ignore[valid-type,misc]
        def __new__(cls, args: Any, *rest: Any, **kwargs: Any) -> Guarded:  # before a process (or __del__) exists
            marker = needed_marker(args)
            if marker is not None and marker not in marked:
                pytest.fail(f"{item.nodeid} starts {args!r} without @pytest.mark.{marker}: mark it, so that the "
                            f"quick loop (-m 'not slow and not browser') leaves it out", pytrace=False)
            return super().__new__(cls)

    subprocess.Popen = Guarded  # type: ignore[misc]
    try:
        yield
    finally:
        subprocess.Popen = unguarded  # type: ignore[misc]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with processes_need_markers(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with processes_need_markers(item):
        yield
