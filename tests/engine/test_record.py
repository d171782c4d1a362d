"""`mockserver record`: answers become fixtures that load and serve the same items (filtered and paged), errors
become scenarios, secrets never reach a file, and answers that break the description are kept apart."""
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, LIBRARY, ROOT, SAMPLE_PROJECT, body, free_port
from mockserver import create_app
from mockserver.cli import main
from mockserver.testing import MockServer
from mockserver.web.proxy import Proxy
from mockserver.web.recording import Recorder
from stand_ins import Served, drifting, get

CASES = "/v1/agents/{agent}/test-set/cases?projectId={project}"
VERSION_CASES = "/v1/test-sets/acme.drafting.corrections/versions/1.1.0/cases"
Get = Callable[[str], tuple[int, Any]]


@pytest.fixture(scope="module")
def target():
    """The real deployment's stand-in: the Kindgi mock on its own port."""
    with MockServer(KINDGI_SPEC, KINDGI_FIXTURES) as server:
        yield server


def recording(target_url: str, folder: Path, *redact: str, spec: Path = KINDGI_SPEC,
              fixtures: Path | None = KINDGI_FIXTURES, auth: dict[str, str] = DEMO) -> Get:
    """A recording proxy (in-process) to the target; returns a GET that answers (status, JSON body)."""
    proxy = Proxy(target_url, recorder=Recorder(folder / "recorded", folder / "rejected", redact))
    client = create_app(spec, fixtures, proxy=proxy).test_client()

    def call(path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        answer = client.get(path, headers={**auth, **(headers or {})})
        return answer.status_code, body(answer)

    return call


def served(folder: Path, spec: Path = KINDGI_SPEC, auth: dict[str, str] = DEMO) -> Get:
    """`serve` of the recording alone (in-process)."""
    client = create_app(spec, folder).test_client()
    return lambda path: (lambda r: (r.status_code, body(r)))(client.get(path, headers=auth))


def over_http(url: str, auth: dict[str, str] = DEMO) -> Get:
    return lambda path: (lambda r: (r[0], r[2]))(get(url, path, auth))


def walk(call: Get, path: str) -> list[tuple[list[Any], bool]]:
    """Every page of a list (items and hasMore), following nextCursor."""
    pages, cursor = [], None
    while True:
        status, page = call(path + (f"&cursor={cursor}" if cursor else ""))
        assert status == 200, page
        pages.append((page["data"], page["hasMore"]))
        cursor = page.get("nextCursor")
        if not cursor:
            return pages


def written(folder: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(folder.rglob("*")) if p.is_file())


def test_recorded_fixtures_load_and_serve_the_same_items_filtered_and_paged(target, tmp_path):
    record = recording(target.url, tmp_path)
    cases = CASES.format(agent="acme.drafting", project=SAMPLE_PROJECT)
    for path in ("/v1/test-sets?limit=40", "/v1/test-sets?kind=corrections&limit=100", cases + "&limit=30",
                 VERSION_CASES + "?limit=10"):
        walk(record, path)
    folder = tmp_path / "recorded"
    assert sorted(p.name for p in (folder / "collections").iterdir()) == [
        "agentCases.yaml", "testSetCases.yaml", "testSets.yaml"]
    assert main(["validate", "--spec", str(KINDGI_SPEC), "--fixtures", str(folder)]) == 0

    real, replay = over_http(target.url), served(folder)
    for path in ("/v1/test-sets?kind=accuracy&limit=7", "/v1/test-sets?name=acme.drafting&limit=2",
                 "/v1/test-sets?kind=corrections&limit=3", cases + "&kind=hand&limit=4", cases + "&limit=25",
                 VERSION_CASES + "?limit=3"):  # filters and page sizes the recording never saw
        assert walk(replay, path) == walk(real, path), path


def test_without_fixtures_pages_become_collections_and_other_answers_fixed_ones(target, tmp_path):
    record = recording(target.url, tmp_path, fixtures=None)
    cases = CASES.format(agent="acme.drafting", project=SAMPLE_PROJECT)
    for path in ("/v1/test-sets?limit=100", cases + "&limit=100"):
        walk(record, path)
    real, replay = over_http(target.url), served(tmp_path / "recorded")
    for path in ("/v1/test-sets?kind=accuracy&limit=9", cases + "&limit=7"):  # scoped by path and projectId
        assert walk(replay, path) == walk(real, path), path
    assert walk(replay, CASES.format(agent="acme.support", project=SAMPLE_PROJECT)) == [([], False)]

    key = {"X-Api-Key": "reader-key"}
    with MockServer(LIBRARY / "openapi.yaml", LIBRARY / "fixtures") as library:
        record = recording(library.url, tmp_path / "library", spec=LIBRARY / "openapi.yaml", fixtures=None, auth=key)
        paths = ["/api/v2/books/9780000000020.json", "/api/v2/books?genre=novel", "/api/v2/books"]
        answers = [record(path) for path in paths]
    replay = served(tmp_path / "library" / "recorded", LIBRARY / "openapi.yaml", key)
    assert [replay(path) for path in paths] == answers  # each answer fixed to its own path and query values
    assert "reader-key" not in written(tmp_path / "library")


def test_errors_become_scenarios(target, tmp_path):
    record = recording(target.url, tmp_path)
    nobody = CASES.format(agent="acme.nobody", project=SAMPLE_PROJECT)
    status, missing = record(nobody)
    assert status == 404
    target.scenario(operationId="listTestSets", query={"kind": "pairwise"}, status=503, times=1)
    assert record("/v1/test-sets?kind=pairwise")[0] == 503

    scenarios = yaml.safe_load((tmp_path / "recorded" / "scenarios.yaml").read_text())["scenarios"]
    assert [(s["status"], s.get("pathParams"), s.get("query"), s.get("times"), s.get("responseHeaders"))
            for s in scenarios] == [
        (404, {"agentId": "acme.nobody"}, {"projectId": SAMPLE_PROJECT}, None, None),
        (503, None, {"kind": "pairwise"}, 1, {"Retry-After": "2"})]
    replay = served(tmp_path / "recorded")
    status, again = replay(nobody)
    assert status == 404 and again["error"]["code"] == missing["error"]["code"] == "agent-not-found"
    assert again["error"]["message"] == missing["error"]["message"]
    assert [replay("/v1/test-sets?kind=pairwise")[0] for _ in range(2)] == [503, 200]  # transient: once


def test_secrets_never_reach_a_file(target, tmp_path):
    token = "tok-Sup3rSecret-0042"
    record = recording(target.url, tmp_path, "projectId", "/data/*/description")  # a name, and a pointer
    me = {"Authorization": f"Bearer {token}"}
    target.scenario(operationId="listAgentTestSetCases", pathParams={"agentId": "acme.spy"}, status=404,
                    message=f"the token {token} may not read acme.spy")  # the target repeats the credential
    assert record(CASES.format(agent="acme.spy", project=SAMPLE_PROJECT), me)[0] == 404
    test_sets = walk(record, "/v1/test-sets?limit=100")
    cases = walk(record, CASES.format(agent="acme.drafting", project=SAMPLE_PROJECT) + "&limit=100")
    descriptions = {item["description"] for page, _ in test_sets for item in page if item.get("description")}
    assert descriptions

    files = written(tmp_path)
    for secret in (token, SAMPLE_PROJECT, *descriptions):
        assert secret not in files
    folder = tmp_path / "recorded"
    assert main(["validate", "--spec", str(KINDGI_SPEC), "--fixtures", str(folder)]) == 0
    recorded = yaml.safe_load((folder / "collections" / "agentCases.yaml").read_text())["collections"]["agentCases"]
    pseudonym = recorded["items"][0]["projectId"]
    assert re.fullmatch(r"[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}", pseudonym)  # the same shape: still a uuid
    # the same pseudonym everywhere (items and the query they were listed under): served under it, every one
    replay = walk(served(folder), CASES.format(agent="acme.drafting", project=pseudonym) + "&limit=100")
    assert [i["id"] for p, _ in replay for i in p] == [i["id"] for p, _ in cases for i in p]


def test_answers_that_break_the_description_are_kept_apart(kindgi_app, tmp_path):
    target = Served(drifting(kindgi_app))
    record = recording(target.url, tmp_path)
    record("/v1/test-sets?limit=5")
    record("/v1/test-sets", {"Prefer": "code=503"})
    record(VERSION_CASES + "?limit=2")
    target.stop()
    folder = tmp_path / "recorded"
    assert [p.name for p in (folder / "collections").iterdir()] == ["testSetCases.yaml"]  # only the good answer
    assert not (folder / "scenarios.yaml").exists()
    kept = {p.name: yaml.safe_load(p.read_text()) for p in (tmp_path / "rejected").iterdir()}
    found = [(k["response"]["status"], v["pointer"], v["rule"]) for k in kept.values() for v in k["violations"]]
    assert sorted(found) == [
        (200, "/body/data/1/kind", "enum"), (200, "/body/data/2/kind", "enum"),
        (200, "/headers/X-Request-Id", "required"), (503, "/headers/Retry-After", "required")]


def test_a_new_recording_merges_with_the_last(target, tmp_path):
    first, second = walk(over_http(target.url), "/v1/test-sets?limit=3")[:2]
    recording(target.url, tmp_path)("/v1/test-sets?limit=3")
    cursor = over_http(target.url)("/v1/test-sets?limit=3")[1]["nextCursor"]
    recording(target.url, tmp_path)(f"/v1/test-sets?limit=3&cursor={cursor}")
    items = yaml.safe_load((tmp_path / "recorded" / "collections" / "testSets.yaml").read_text())
    assert [i["id"] for i in items["collections"]["testSets"]["items"]] == [i["id"] for i in first[0] + second[0]]


@pytest.mark.slow
def test_the_command_records_on_granian_and_stops_on_sigterm(target, tmp_path):
    assert main(["record", "--target", target.url, "--out", str(KINDGI_FIXTURES / "recorded")]) == 2
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mockserver", "record", "--target", target.url, "--out",
                             str(tmp_path / "recorded"), "--port", str(port), "--log-level", "warning"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, _, page = get(url, "/v1/test-sets?limit=2")
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)
        assert status == 200 and get(url, "/__mock/drift")[2]["exchanges"] == 1
        recorded = yaml.safe_load((tmp_path / "recorded" / "collections" / "testSets.yaml").read_text())
        assert [i["id"] for i in recorded["collections"]["testSets"]["items"]] == [i["id"] for i in page["data"]]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_earlier_recording_that_cannot_be_read_stops_the_command_naming_the_file(target, tmp_path, capsys):
    """A file of --out that links out of it is not read; one that is not YAML is named with its line, unquoted."""
    marker = f"secret-{uuid.uuid4().hex}"
    (tmp_path / "secret.yaml").write_text(f"collections: {{{marker}: {{items: []}}}}\n")
    out = tmp_path / "recorded"
    (out / "collections").mkdir(parents=True)
    (out / "collections" / "leak.yaml").symlink_to(tmp_path / "secret.yaml")
    (out / "settings.yaml").write_text(f"settings: x: {marker}\n")
    assert main(["record", "--target", target.url, "--out", str(out), "--port", str(free_port())]) == 2
    said = capsys.readouterr().err
    assert marker not in said
    assert (f"{out / 'collections' / 'leak.yaml'}: /: {out / 'collections' / 'leak.yaml'} (a link to "
            f"{tmp_path / 'secret.yaml'}) lies outside the recording's folder {out}: not read [outside-folder]") in said
    assert f"{out / 'settings.yaml'}:1: /: not valid YAML: mapping values are not allowed" in said
