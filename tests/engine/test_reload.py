"""`--watch`: a changed file is reloaded whole or not at all; requests in flight never fail."""
import json
import logging
import shutil
import threading
import time
import urllib.request

import pytest

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, body, serving
from mockserver import create_app
from mockserver.pipeline.pipeline import Pipeline
from mockserver.web import reload
from mockserver.web.app import MOCK_KEY
from mockserver.web.reload import Reloader


@pytest.fixture()
def copy(tmp_path):
    shutil.copy(KINDGI_SPEC, tmp_path / "kindgi.yaml")
    shutil.copytree(KINDGI_FIXTURES, tmp_path / "fixtures")
    return tmp_path


def reloader(app):
    """The app's watcher, its background polling stopped: the test says when to look (no race with it)."""
    app.test_client().get("/__mock/health")  # the watcher starts with the first request
    watcher = app.extensions[MOCK_KEY].reloader
    watcher.stop()
    return watcher


def test_the_watcher_polls_by_itself(copy):
    app = create_app(copy / "kindgi.yaml", copy / "fixtures", watch=True)
    client = app.test_client()
    client.get("/__mock/health")
    touch_edit(copy / "fixtures/kindgi.yaml", "No agent {{path.agentId}}.", "Agent {{path.agentId}} is unknown.")
    deadline = time.monotonic() + 10
    url = "/v1/agents/acme.nobody/test-set/cases?projectId=2489e9ad-2ee2-8e00-8ec9-32d5f69181c0"
    while body(client.get(url, headers=DEMO))["error"]["message"] != "Agent acme.nobody is unknown.":
        assert time.monotonic() < deadline, "the change was never picked up"
        time.sleep(0.1)


def touch_edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_fixture_edit_is_served_after_reload(copy):
    app = create_app(copy / "kindgi.yaml", copy / "fixtures", watch=True)
    client = app.test_client()
    watcher = reloader(app)
    assert not watcher.check()
    first = body(client.get("/v1/test-sets?limit=1", headers=DEMO))["data"][0]
    touch_edit(copy / "fixtures/collections/test-sets.yaml", first["description"], "Edited while serving.")
    assert watcher.check()
    assert body(client.get("/v1/test-sets?limit=1", headers=DEMO))["data"][0]["description"] == "Edited while serving."


def test_an_invalid_edit_keeps_the_last_good_state_and_says_why(copy, caplog):
    app = create_app(copy / "kindgi.yaml", copy / "fixtures", watch=True)
    client = app.test_client()
    watcher = reloader(app)
    client.post("/__mock/scenarios", json={"id": "kept", "operationId": "listTestSets", "latency": 1})
    before = body(client.get("/v1/test-sets?limit=3", headers=DEMO))["data"]
    touch_edit(copy / "fixtures/collections/test-sets.yaml", "version: 1.2.0", "version: one-point-two")
    with caplog.at_level(logging.ERROR, logger="mockserver.reload"):
        assert not watcher.check()
    assert "reload refused" in caplog.text and "test-sets.yaml" in caplog.text and "pattern" in caplog.text
    assert body(client.get("/v1/test-sets?limit=3", headers=DEMO))["data"] == before
    touch_edit(copy / "fixtures/collections/test-sets.yaml", "version: one-point-two", "version: 1.2.0")
    assert watcher.check()  # fixed: reloaded, and the scenario set at run time survived
    assert "kept" in [s["id"] for s in body(client.get("/__mock/scenarios"))["scenarios"]]


def test_a_description_edit_is_reloaded(copy):
    app = create_app(copy / "kindgi.yaml", copy / "fixtures", watch=True)
    watcher = reloader(app)
    touch_edit(copy / "kindgi.yaml", "summary: List workspace test sets", "summary: Renamed")
    assert watcher.check()
    assert app.extensions[MOCK_KEY].pipeline.spec.operations["listTestSets"].summary == "Renamed"


def test_requests_in_flight_during_reloads_all_succeed(copy):
    app = create_app(copy / "kindgi.yaml", copy / "fixtures", watch=True)
    watcher = reloader(app)
    stop = threading.Event()
    statuses: list[int] = []

    def hammer() -> None:
        client = app.test_client()
        while not stop.is_set():
            statuses.append(client.get("/v1/test-sets?limit=5", headers=DEMO).status_code)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    path = copy / "fixtures/collections/test-sets.yaml"
    original = path.read_text()
    reloads = 0
    for n in range(4):
        path.write_text(original.replace("Core accuracy suite", f"Core accuracy suite, edit {n}"))
        time.sleep(0.05)
        reloads += watcher.check()
    stop.set()
    for t in threads:
        t.join()
    assert reloads == 4
    assert statuses and set(statuses) == {200}


@pytest.mark.slow
def test_mockserver_serve_watch_reloads_in_its_worker(copy):
    """`--watch` under Granian: the worker watches the files from the start, so an edit made before its first
    request is served too, and the ones after."""
    test_sets = copy / "fixtures/collections/test-sets.yaml"
    before = create_app(copy / "kindgi.yaml", copy / "fixtures").test_client().get("/v1/test-sets?limit=1",
                                                                                 headers=DEMO)
    description = body(before)["data"][0]["description"]
    with serving("--spec", str(copy / "kindgi.yaml"), "--fixtures", str(copy / "fixtures"), "--watch",
                 "--log-level", "warning") as (_, port):
        def served_description() -> str:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/test-sets?limit=1", headers=DEMO)
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())["data"][0]["description"]

        for edit in ("Edited before the first request.", "Edited while serving."):
            time.sleep(0.05)  # a modification time of its own
            touch_edit(test_sets, description, edit)
            description = edit
            deadline = time.monotonic() + 10
            while served_description() != edit:
                assert time.monotonic() < deadline, f"{edit!r} was never served"
                time.sleep(0.1)


def test_a_file_caught_half_written_is_never_served(copy, monkeypatch):
    """An editor or a copy writes a file in pieces: the watcher sees the first half, but it loads only what has
    stood still for a while, so no answer ever comes from the half; the whole edit is applied once it is written.
    (The pause between the halves is longer than a reload takes to read the file, shorter than the settle time.)"""
    monkeypatch.setattr(reload, "SETTLE", 1.0, raising=False)
    app = create_app(copy / "kindgi.yaml", copy / "fixtures", watch=True)
    watcher = reloader(app)
    url = "/v1/test-sets?limit=100"
    before = body(app.test_client().get(url, headers=DEMO))["data"]
    assert len(before) == 100
    path = copy / "fixtures/collections/test-sets.yaml"
    whole = path.read_text().replace(before[0]["description"], "Edited in two halves.")
    lines = whole.splitlines(keepends=True)
    items = [n for n, line in enumerate(lines) if line.startswith("      - id:")]
    half = "".join(lines[:items[len(items) // 2]])  # a file of its own: fewer test sets, valid as it stands
    stop = threading.Event()
    served: list[list[dict]] = []

    def hammer() -> None:
        client = app.test_client()
        while not stop.is_set():
            served.append(body(client.get(url, headers=DEMO))["data"])

    threads = [threading.Thread(target=hammer) for _ in range(2)]
    for t in threads:
        t.start()
    path.write_text(half)
    reloaded: list[bool] = []
    looking = threading.Thread(target=lambda: reloaded.append(watcher.check()))
    looking.start()  # it sees the half
    time.sleep(0.5)
    path.write_text(whole)
    looking.join()
    time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    assert reloaded == [True]
    assert served and {len(data) for data in served} == {100}, "an answer came from the half-written file"
    # a call already under way when the edit was applied may end after it with the old answer: ask once more
    assert body(app.test_client().get(url, headers=DEMO))["data"][0]["description"] == "Edited in two halves."


@pytest.mark.slow
def test_the_watcher_outlives_a_file_that_breaks_the_reader(copy):
    """A fixture nested 10,000 deep (it crashed the reader, and with it the watcher): refused in one log line, and
    the edits after it are still served."""
    test_sets = copy / "fixtures/collections/test-sets.yaml"
    with serving("--spec", str(copy / "kindgi.yaml"), "--fixtures", str(copy / "fixtures"), "--watch",
                 "--log-level", "warning") as (proc, port):
        def served_description() -> str:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/test-sets?limit=1", headers=DEMO)
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())["data"][0]["description"]

        description = served_description()
        (copy / "fixtures/deep.json").write_text("[" * 10_000 + "]" * 10_000)
        time.sleep(1.5)  # looked at and refused
        (copy / "fixtures/deep.json").unlink()
        touch_edit(test_sets, description, "Edited after the deep file.")
        deadline = time.monotonic() + 10
        while served_description() != "Edited after the deep file.":
            assert time.monotonic() < deadline, "the watcher stopped watching"
            time.sleep(0.1)
    log = proc.stderr.read() if proc.stderr else ""
    assert "deep.json: /: nested deeper than 64 levels" in log and "Traceback" not in log, log[-3000:]


def test_the_watcher_keeps_watching_after_an_unexpected_error(copy, caplog):
    """Whatever a reload meets (here: a bug that raises), the watcher logs one line, keeps the last good state
    and applies the next change."""
    spec, fixtures = copy / "kindgi.yaml", copy / "fixtures"
    app = create_app(spec, fixtures)
    mock = app.extensions[MOCK_KEY]
    failures = [RuntimeError("a bug in the mock")]

    def build() -> Pipeline:
        if failures:
            raise failures.pop()
        return Pipeline.load(spec, fixtures, mock.pipeline.options, mock.pipeline.store)

    watcher = Reloader(build, lambda: mock.pipeline, mock.swap, fixtures, interval=0.05).start()
    client = app.test_client()
    first = body(client.get("/v1/test-sets?limit=1", headers=DEMO))["data"][0]["description"]
    test_sets = fixtures / "collections/test-sets.yaml"
    try:
        with caplog.at_level(logging.ERROR, logger="mockserver.reload"):
            touch_edit(test_sets, first, "Never applied: the build failed.")
            deadline = time.monotonic() + 10
            while "a bug in the mock" not in caplog.text:
                assert time.monotonic() < deadline, "the failure was never logged"
                time.sleep(0.05)
        assert caplog.text.count("\n") == 1 and "RuntimeError: a bug in the mock" in caplog.text
        assert body(client.get("/v1/test-sets?limit=1", headers=DEMO))["data"][0]["description"] == first
        touch_edit(test_sets, "Never applied: the build failed.", "Applied after the failure.")
        deadline = time.monotonic() + 10
        while body(client.get("/v1/test-sets?limit=1", headers=DEMO))["data"][0]["description"] != (
                "Applied after the failure."):
            assert time.monotonic() < deadline, "the watcher stopped watching"
            time.sleep(0.05)
    finally:
        watcher.stop()
