"""The plugin people use to test their clients against the mock."""
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import KINDGI_FIXTURES, KINDGI_SPEC, LIBRARY, ROOT
from mockserver.testing import ControlError, MockServer

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.slow  # pytest runs in subprocesses: `-m 'not slow'` skips them


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_fixture_serves_the_bundled_mock_and_its_control_api(mock_server):
    mock_server.scenario(operationId="listTestSets", status=503, times=2)
    url = mock_server.url + "/v1/test-sets?limit=1"
    codes = [get(url, {"Authorization": "Bearer demo-token"})[0] for _ in range(3)]
    assert codes == [503, 503, 200]
    journal = mock_server.requests(operationId="listTestSets")
    assert [e["status"] for e in journal] == [503, 503, 200]
    assert [e["source"] for e in journal] == ["scenario", "scenario", "fixture"]


@pytest.mark.mockserver(spec=LIBRARY / "openapi.yaml", fixtures=LIBRARY / "fixtures", seed=3)
def test_the_marker_chooses_another_description(mock_server):
    status, data = get(mock_server.url + "/api/v2/books?limit=1", {"X-Api-Key": "reader-key"})
    assert status == 200 and json.loads(data)["more"] is True
    with pytest.raises(ControlError) as caught:
        mock_server.scenario(operationId="listBooks", status=418)
    assert caught.value.status == 400


def test_a_control_token_is_used_by_the_client():
    with MockServer(LIBRARY / "openapi.yaml", LIBRARY / "fixtures", control_token="t0k") as server:
        server.scenario(operationId="getBook", status=404, times=1)
        assert server.scenarios()[0]["remaining"] == 1
        assert get(server.url + "/__mock/scenarios")[0] == 401


def test_the_plugin_is_registered_by_its_entry_point(pytester):
    pytester.makepyfile(test_client="""
        import urllib.request
        def test_health(mock_server):
            with urllib.request.urlopen(mock_server.url + "/__mock/health") as r:
                assert r.status == 200
    """)
    pytester.makeini(f"[pytest]\nmockserver_spec = {LIBRARY / 'openapi.yaml'}\n"
                     f"mockserver_fixtures = {LIBRARY / 'fixtures'}\n")
    result = pytester.runpytest_subprocess("-p", "no:xdist")
    result.assert_outcomes(passed=1)


def errors_pytest_example() -> str:
    """The pytest example of docs/ERRORS.md, as written there."""
    text = (ROOT / "docs" / "ERRORS.md").read_text()
    return text[text.index("```python\n", text.index("**In pytest**")) + 10:].split("\n```", 1)[0] + "\n"


def test_the_docs_example_runs_as_written_wherever_pytest_is_started(tmp_path: Path) -> None:
    """No ini file: the fixture and the marker read their relative paths from pytest's root (the example's
    folder), not from the folder pytest is started in (the project's, or a folder inside it)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_client.py").write_text(errors_pytest_example())
    shutil.copy(KINDGI_SPEC, project / "openapi.yaml")
    shutil.copytree(KINDGI_FIXTURES, project / "fixtures")
    pets = ROOT / "tests" / "data" / "pets"
    (project / "other").mkdir()
    shutil.copy(pets / "openapi.yaml", project / "other" / "openapi.yaml")
    shutil.copytree(pets / "fixtures", project / "other" / "fixtures")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSERVER_")}
    for cwd in (project, project / "other"):  # not from elsewhere: without an ini file that root moves
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
                               project / "test_client.py"], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"from {cwd}:\n{done.stdout}{done.stderr}"
        assert "2 passed" in done.stdout, done.stdout


def test_a_session_of_its_own_on_one_server():
    with MockServer(LIBRARY / "openapi.yaml", LIBRARY / "fixtures") as server:
        mine, theirs = server.session(), server.session("theirs")
        mine.scenario(operationId="getBook", status=404, times=1)
        url = server.url + "/api/v2/books/9780000000010.json"
        key = {"X-Api-Key": "reader-key"}
        assert get(url, {**key, **theirs.headers})[0] != 404 and get(url, {**key, **mine.headers})[0] == 404
        assert [e["session"] for e in mine.requests()] == [mine.session_id]
        assert len(theirs.requests()) == 1 and len(server.requests()) == 2
        assert all(s.get("session") != mine.session_id for s in theirs.scenarios())
        mine.reset()
        assert mine.requests() == [] and len(server.requests()) == 2


PARALLEL_CLIENT_TESTS = """
import urllib.error, urllib.request
import pytest

def get(url, headers):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code

@pytest.mark.parametrize("n", range(12))
def test_my_own_scenarios_and_calls(mock_server, n):
    mock_server.scenario(operationId="listTestSets", status=503, times=2)
    headers = {"Authorization": "Bearer demo-token", **mock_server.headers}
    codes = [get(mock_server.url + "/v1/test-sets?limit=1", headers) for _ in range(3)]
    assert codes == [503, 503, 200]
    assert [e["status"] for e in mock_server.requests()] == [503, 503, 200]
"""


def test_tests_in_parallel_against_one_shared_mock_do_not_see_each_other(pytester):
    """pytest-xdist, 2 workers, 12 tests against one running mock: each test's session keeps its scenario and
    its calls to itself (without sessions, the counts and journals would mix)."""
    with MockServer(KINDGI_SPEC, KINDGI_FIXTURES) as shared:
        pytester.makepyfile(test_parallel=PARALLEL_CLIENT_TESTS)
        pytester.makeini(f"[pytest]\nmockserver_url = {shared.url}\n")
        result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist")
        result.assert_outcomes(passed=12)
        assert len(shared.requests()) == 36 and shared.scenarios() == shared.session().scenarios()
        sessions = {e["session"] for e in shared.requests()}  # the mock's own unguessable names
        assert len(sessions) == 12 and all(re.fullmatch(r"s-[A-Za-z0-9_-]{32}", s) for s in sessions), sessions


@pytest.mark.parametrize("kind", ["close", "truncate"])
def test_a_broken_connection(mock_server, kind):
    import http.client

    mock_server.scenario(operationId="listTestSets", **{"break": kind})
    connection = http.client.HTTPConnection(mock_server.url.removeprefix("http://"), timeout=10)
    connection.request("GET", "/v1/test-sets", headers={"Authorization": "Bearer demo-token"})
    if kind == "close":
        with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
            connection.getresponse()
    else:
        response = connection.getresponse()
        assert response.status == 200
        with pytest.raises(http.client.IncompleteRead):
            response.read()
    assert mock_server.requests()[-1]["scenarioId"]



OWN_ERRORS = {
    "openapi": "3.1.0", "info": {"title": "own errors", "version": "1"},
    "paths": {"/it/{id}": {"get": {"parameters": [{"name": "id", "in": "path", "required": True,
                                                      "schema": {"type": "string"}}],
                                      "responses": {"200": {"description": "ok"}, "4XX": {
                                          "description": "the API's own error body", "content": {"application/json": {
                                              "schema": {"type": "object", "required": ["code", "message"],
                                                         "properties": {"code": {"type": "integer"},
                                                                        "message": {"type": "string"}}}}}}}}}}}


@pytest.mark.parametrize("cut", ["", "%", "%E", "%E2", "%E2%82", "only-escapes"])
def test_a_request_line_over_64_kib_is_refused_in_the_operations_error_shape_wherever_it_is_cut(write, cut):
    """The test server refuses the line before the app sees it; the answer still takes the operation's own error
    body (not RFC 7807), even when the 64 KiB cut lands inside a percent-escape or a UTF-8 sequence."""
    import http.client

    if cut == "only-escapes":  # the whole value non-ASCII `Î`s, cut right after a `%C3` that cannot be decoded
        path = ("/it/" + "%C3%8E" * 12000)[:65537 - len("GET ")] + "-rest"
        assert path.endswith("%C3-rest")
    else:
        path = "/it/" + "a" * (65537 - len("GET /it/") - len(cut)) + cut + "-rest"  # readline(65537) cuts
    with MockServer(write("own.json", OWN_ERRORS)) as server:
        connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
        connection.request("GET", path)
        response = connection.getresponse()
        body = json.loads(response.read())
    assert response.status == 414
    assert response.getheader("Content-Type") == "application/json"
    assert isinstance(body["code"], int) and isinstance(body["message"], str)  # the 4XX schema, not RFC 7807


CALLBACKS = ROOT / "tests" / "data" / "callbacks"


@pytest.mark.mockserver(spec=CALLBACKS / "openapi.yaml", fixtures=CALLBACKS / "fixtures")
def test_the_mock_callbacks_fixture_receives_the_mock_s_own_callbacks(mock_server, mock_callbacks):
    sent = json.dumps({"name": "nightly", "callbackUrl": f"{mock_callbacks.url}/done"}).encode()
    request = urllib.request.Request(f"{mock_server.url}/jobs", data=sent, method="POST",
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).close()
    [arrived] = mock_callbacks.wait()
    assert (arrived.method, arrived.path, arrived.query) == ("POST", "/done", "job=job-1")
    assert arrived.json == {"id": "job-1", "status": "done"}
    assert [c["name"] for c in mock_server.callbacks()] == ["jobDone"]
