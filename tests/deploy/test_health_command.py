"""`mockserver health`, the container's HEALTHCHECK and the Kubernetes probes: ready only while the mock can serve
from its state, alive while it answers at all, and a line that says why when not."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT, RedisServer, free_port, serving


def health(port: int, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mockserver", "health", "--url", f"http://127.0.0.1:{port}",
                           *flags], capture_output=True, text=True, cwd=ROOT, timeout=30)


def test_a_mock_that_does_not_answer_is_neither_ready_nor_alive() -> None:
    port = free_port()
    for flags in ((), ("--live",)):
        done = health(port, *flags)
        assert done.returncode == 1
        assert f"http://127.0.0.1:{port} does not answer" in done.stderr and "Connection refused" in done.stderr


def test_a_mock_whose_redis_is_away_is_alive_but_not_ready(own_redis: RedisServer) -> None:
    with serving("--spec", "spec/kindgi.yaml", "--state", own_redis.url()) as (_, port):
        assert health(port).returncode == 0
        own_redis.stop()
        ready = health(port)
        assert ready.returncode == 1
        assert "is not ready: /__mock/health answered 503" in ready.stderr and "Redis at" in ready.stderr
        live = health(port, "--live")
        assert live.returncode == 0 and live.stdout.startswith(f"live: http://127.0.0.1:{port} answers")


@pytest.mark.slow
def test_a_mock_with_a_control_token_is_ready_only_to_whoever_gives_it() -> None:
    with serving("--spec", "spec/kindgi.yaml", "--control-token", "t0ken") as (_, port):
        refused = health(port)
        assert refused.returncode == 1 and "answered 401 (give its --control-token" in refused.stderr
        ready = health(port, "--control-token", "t0ken")
        assert ready.returncode == 0 and ready.stdout.startswith("ready: Kindgi") and "state memory" in ready.stdout
