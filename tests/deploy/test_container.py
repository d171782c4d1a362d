"""The container image, as far as a machine without a container engine can check it: the Dockerfile's own steps
(its COPY lines, its `pip install`, its ENV, its entry point and its HEALTHCHECK) run as written in a fresh
virtual environment, and the result serves the Kindgi mock and reports itself healthy."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from conftest import ROOT, free_port

IMAGE_PORT = "4010"  # the port the Dockerfile's CMD and HEALTHCHECK name; the test serves on a free one instead
SYSTEM_STEPS = ("useradd ", "mkdir -p /data", "chown ")  # RUN steps that make the image's user and volume: root's


def _instructions() -> list[tuple[str, str]]:
    parser = DockerfileParser(path=str(ROOT / "Dockerfile"))
    return [(item["instruction"], item["value"]) for item in parser.structure if item["instruction"] != "COMMENT"]


def _json_list(value: str) -> list[str]:
    return list(json.loads(value))  # the exec form: ["mockserver", "serve"]


@pytest.mark.slow
def test_the_dockerfiles_steps_install_the_mock_that_then_serves_kindgi_and_is_healthy(tmp_path: Path) -> None:
    app, venv, port = tmp_path / "app", tmp_path / "venv", str(free_port())
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path),
           "MOCKSERVER_CONTROL_TOKEN": "container-token"}
    env.pop("VIRTUAL_ENV", None)
    entrypoint: list[str] = []
    command: list[str] = []
    health: list[str] = []
    for instruction, value in _instructions():
        if instruction == "FROM":
            assert value.startswith("python:3.11"), value  # the Python the project supports
        elif instruction == "ENV":
            env.update(dict(pair.split("=", 1) for pair in shlex.split(value)))
        elif instruction == "WORKDIR":
            app.mkdir(parents=True, exist_ok=True)
        elif instruction == "COPY":
            *sources, target = value.split()
            for source in sources:  # Docker's rules: a folder's contents into the target; files into a target/
                if (ROOT / source).is_dir():
                    shutil.copytree(ROOT / source, app / target, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy(ROOT / source, app / target / source if target.endswith("/") else app / target)
        elif instruction == "RUN":
            for step in (s.strip() for s in value.split("&&")):
                if step.startswith(SYSTEM_STEPS):
                    continue
                assert step.startswith("pip "), f"a RUN step this test does not know how to run: {step}"
                done = subprocess.run(step, shell=True, cwd=app, env=env, capture_output=True, text=True,
                                      timeout=300)
                assert done.returncode == 0, done.stdout + done.stderr
        elif instruction == "ENTRYPOINT":
            entrypoint = _json_list(value)
        elif instruction == "CMD":
            command = [port if arg == IMAGE_PORT else arg for arg in _json_list(value)]
        elif instruction == "HEALTHCHECK":
            health = [arg.replace(f":{IMAGE_PORT}", f":{port}") for arg in _json_list(value.split("CMD", 1)[1])]
    assert entrypoint[:1] == ["mockserver"] and health[:2] == ["mockserver", "health"], (entrypoint, health)
    # the installed command, not the checkout's: the venv has no editable link back to ROOT
    assert (venv / "bin" / "mockserver").exists()
    server = subprocess.Popen(entrypoint + command, cwd=app, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while (probe := subprocess.run(health, cwd=app, env=env, capture_output=True, text=True)).returncode:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            assert time.monotonic() < deadline, probe.stdout + probe.stderr
            time.sleep(0.2)
        assert probe.stdout.startswith("ready: Kindgi"), probe.stdout
        call = urllib.request.Request(f"http://127.0.0.1:{port}/v1/test-sets?limit=1",
                                      headers={"Authorization": "Bearer demo-token"})
        with urllib.request.urlopen(call, timeout=10) as answer:
            assert answer.status == 200
        unauthorised = subprocess.run(health, cwd=app, capture_output=True, text=True,
                                      env={k: v for k, v in env.items() if k != "MOCKSERVER_CONTROL_TOKEN"})
        assert unauthorised.returncode == 1 and "MOCKSERVER_CONTROL_TOKEN" in unauthorised.stderr
    finally:
        server.terminate()
        server.wait(timeout=15)


def test_the_image_runs_as_a_user_of_its_own_and_leaves_out_what_it_does_not_serve() -> None:
    steps = _instructions()
    users = [value for instruction, value in steps if instruction == "USER"]
    assert users and users[-1] not in ("root", "0")
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignored[1:2] == ["*"] or "*" in ignored  # everything is left out but what the COPY lines name
    copied = {source for instruction, value in steps if instruction == "COPY" for source in value.split()[:-1]}
    for source in copied:
        assert f"!{source}" in ignored or f"!{source}/" in ignored, source
