"""The commands as a person runs them: `mockserver validate` and `mockserver serve` on a free port."""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
import yaml

from conftest import KINDGI_SPEC, LIBRARY, ROOT, free_port, serving


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mockserver", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)


def test_validate_says_all_is_well():
    result = run("validate")
    assert result.returncode == 0, result.stderr
    assert "All is well" in result.stdout


def test_the_conventional_description_and_fixtures_of_the_working_folder(tmp_path):
    """No --spec, no MOCKSERVER_SPEC: ./openapi.yaml (or .yml, .json) and ./fixtures/ when present, anywhere."""
    import os
    import shutil

    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSERVER_")}
    command = [sys.executable, "-m", "mockserver", "validate"]
    nothing = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert nothing.returncode == 2 and nothing.stderr.splitlines() == [
        f"mockserver: no description to serve: give --spec FILE (or MOCKSERVER_SPEC), or put openapi.yaml, "
        f"openapi.yml or openapi.json in {tmp_path}"]
    shutil.copy(LIBRARY / "openapi.yaml", tmp_path / "openapi.yaml")
    alone = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert alone.returncode == 0 and "openapi.yaml: 6 operations; no fixtures. All is well." in alone.stdout
    shutil.copytree(LIBRARY / "fixtures", tmp_path / "fixtures")
    both = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert both.returncode == 0 and "fixtures: 1 files, 1 collections, 5 items" in both.stdout, both.stdout


def test_validate_lists_every_problem(write, tmp_path):
    write("fx/a.yaml", "collections:\n  books:\n    items:\n      - {isbn: '1', title: T, year: 1, author: {name: A}}\n"
                       "operations:\n  getBook:\n"
                       "    item: {from: books, where: [{field: isbn, equals: {path: isbn}}]}\n"
                       "  nope: {}\n")
    result = run("validate", "--spec", str(LIBRARY / "openapi.yaml"), "--fixtures", str(tmp_path / "fx"))
    assert result.returncode == 1
    assert "2 problem(s)" in result.stderr
    assert "a.yaml:4: /collections/books/items/0/isbn" in result.stderr
    assert "no operation 'nope'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_serve_refuses_a_bad_description_with_exit_2(write):
    result = run("serve", "--spec", str(write("bad.yaml", "swagger: '2.0'\ninfo: {title: x}\n")))
    assert result.returncode == 2
    assert "Swagger 2.0 is not supported" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("flag, value, says", [
    ("--body-timeout", "0", "'0' is not a number of seconds above 0"),
    ("--body-timeout", "soon", "'soon' is not a number of seconds above 0"),
    ("--backpressure", "0", "'0' is not a whole number from 1"),
])
def test_serve_refuses_a_limit_that_cannot_work(flag, value, says):
    """A body timeout of 0 would answer every body 408, a cap of 0 every body 503: refused before anything starts."""
    result = run("serve", flag, value)
    assert result.returncode == 2 and f"argument {flag}: {says}" in result.stderr


@pytest.mark.slow
def test_serve_answers_on_its_port_and_says_where():
    with serving() as (proc, port):
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/test-sets?limit=1",
                                         headers={"Authorization": "Bearer demo-token"})
        with urllib.request.urlopen(request, timeout=10) as response:
            page = json.loads(response.read())
            assert response.headers["X-Request-Id"]
        assert proc.stderr is not None
        first = proc.stderr.readline()
    assert len(page["data"]) == 1 and page["hasMore"] is True
    origin = f"http://127.0.0.1:{port}"
    info = yaml.safe_load(KINDGI_SPEC.read_text())["info"]  # the line names the API, then the file
    assert first.startswith(f'mockserver: serving "{info["title"]}" {info["version"]} ({KINDGI_SPEC}) on {origin}')
    assert f"dashboard {origin}/__mock/" in first and f"docs {origin}/__mock/docs" in first
    assert f"description {origin}/__mock/description" in first


def _health(port: int, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/__mock/health", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.slow
def test_serve_on_the_network_needs_a_control_token_or_open_control():
    """`--host 0.0.0.0` alone would hand the journal and reset to anyone on the network: refused with one line
    naming both ways out; `--open-control` starts with a warning line; a control token starts."""
    env = {k: v for k, v in os.environ.items() if k != "MOCKSERVER_CONTROL_TOKEN"}
    command = [sys.executable, "-m", "mockserver", "serve", "--host", "0.0.0.0", "--port", str(free_port())]
    refused = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert refused.returncode == 2 and refused.stderr.splitlines() == [
        "mockserver: --host 0.0.0.0 would open the control API (the journal, scenarios, reset) to the network "
        "without a token: give --control-token TOKEN (or MOCKSERVER_CONTROL_TOKEN), or say --open-control if that "
        "is what you want"]
    star = subprocess.run([*command[:5], "127.0.0.1", *command[6:], "--control-origin", "*"], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=60)
    assert star.returncode == 2 and "--control-origin '*' lets every web page use the control API" in star.stderr
    with serving("--host", "0.0.0.0", "--open-control") as (proc, port):
        assert _health(port) == 200
        assert proc.stderr is not None
        warning = proc.stderr.readline()
    assert warning.startswith(f"mockserver: warning: --open-control: anyone who can reach 0.0.0.0:{port} can read "
                              f"the journal and change the mock")
    with serving("--host", "0.0.0.0", env={"MOCKSERVER_CONTROL_TOKEN": "s3cret"}) as (proc, port):
        assert _health(port) == 401 and _health(port, {"X-Mock-Control-Token": "s3cret"}) == 200
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("mockserver: serving ")  # no warning


def _page(port: int, cursor: str | None = None) -> tuple[int, dict]:
    url = f"http://127.0.0.1:{port}/v1/test-sets?limit=2" + (f"&cursor={cursor}" if cursor else "")
    request = urllib.request.Request(url, headers={"Authorization": "Bearer demo-token"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.slow
def test_cursors_survive_a_restart_and_an_earlier_runs_cursor_says_so(tmp_path):
    """The memory store's cursor secret is kept in the user's state folder: "load more" works after a restart; a
    cursor sealed with another secret (another state folder: an earlier run elsewhere) is refused as expired."""
    kept = {"XDG_STATE_HOME": str(tmp_path / "state")}
    with serving("--log-level", "warning", env=kept) as (_, port):
        cursor = _page(port)[1]["nextCursor"]
    with serving("--log-level", "warning", env=kept) as (_, port):
        status, answer = _page(port, cursor)
        assert status == 200 and answer["data"]
    with serving("--log-level", "warning", env={"XDG_STATE_HOME": str(tmp_path / "elsewhere")}) as (_, port):
        status, answer = _page(port, cursor)
    assert status == 400 and answer["error"]["details"]["reason"] == "expired"
    assert "earlier run" in answer["error"]["message"]
    assert oct((tmp_path / "state/mockserver/cursor-secret").stat().st_mode & 0o777) == "0o600"


@pytest.mark.slow
def test_a_port_in_use_is_one_line_and_exit_1_at_once():
    import socket
    import time

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", str(port)], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and time.monotonic() - started < 10
    assert done.stderr.splitlines() == [f"mockserver: port {port} on 127.0.0.1 is already in use (another "
                                        f"mockserver?): stop it, or choose another port with --port (make run PORT=…)"]
