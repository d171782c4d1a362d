"""Shared fixtures: the bundled Kindgi mock, the tiny Library description written for the tests, and helpers to
write throwaway descriptions and fixtures in temp folders."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from mockserver import create_app

ROOT = Path(__file__).resolve().parent.parent
KINDGI_SPEC = ROOT / "spec" / "kindgi.yaml"
KINDGI_FIXTURES = ROOT / "fixtures"
LIBRARY = Path(__file__).resolve().parent / "data" / "library"
SHARED = ROOT.parent / "shared"

DEMO = {"Authorization": "Bearer demo-token"}
OTHER = {"Authorization": "Bearer other-tenant-token"}
SAMPLE_PROJECT = "2489e9ad-2ee2-8e00-8ec9-32d5f69181c0"


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
def serving(*args: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`python -m mockserver serve` on a free port, as a user starts it, once it takes connections; its stderr is a
    pipe the test may read. Stopped (killed if it must be) at the end."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mockserver", "serve", "--port", str(port), *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
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
