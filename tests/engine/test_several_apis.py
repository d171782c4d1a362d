"""Several APIs on one mock (`serve --api`, `mockserver.yaml`): Kindgi and the pets description on one server,
mounted by prefix and by Host, each with its own routes, scenarios, journal and coverage; the control API names
the API a call is for."""
import http.client
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, ROOT, free_port, serving
from mockserver.web.app import create_apps
from mockserver.web.mounts import Api

PETS = ROOT / "tests" / "data" / "pets"
KINDGI_API = f"kindgi={KINDGI_SPEC},fixtures={KINDGI_FIXTURES},prefix=/kindgi"
PETS_API = f"pets={PETS / 'openapi.yaml'},fixtures={PETS / 'fixtures'},host=pets.localhost"
PETS_HOST = {"Host": "pets.localhost"}


def call(port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET",
         payload: Any = None, auth: bool = True) -> tuple[int, Any]:
    """The status and JSON body of one call, as Kindgi's demo caller unless `auth` is False."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    sent = {**(DEMO if auth else {}), **(headers or {})}
    if payload is not None:
        sent["Content-Type"] = "application/json"
    connection.request(method, path, body=json.dumps(payload) if payload is not None else None, headers=sent)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, json.loads(data) if data else None


@pytest.fixture(scope="module")
def two_apis():
    """Kindgi under /kindgi and the pets API on its own host, one Granian worker."""
    with serving("--api", KINDGI_API, "--api", PETS_API, "--log-level", "warning") as (_, port):
        yield port


@pytest.fixture()
def port(two_apis: int) -> int:
    for api in ("kindgi", "pets"):
        assert call(two_apis, f"/__mock/reset?api={api}", method="POST", payload={})[0] == 200
    return two_apis


@pytest.mark.slow
def test_each_api_answers_at_its_mount(port: int) -> None:
    status, page = call(port, "/kindgi/v1/test-sets?limit=2")
    assert status == 200 and len(page["data"]) == 2
    status, pets = call(port, "/pets?limit=1", PETS_HOST)
    assert status == 200 and pets["data"][0]["name"] == "Ada"
    status, pet = call(port, "/pets/1", {"Host": "pets.localhost:8080"})  # the port is no part of the host
    assert status == 200 and pet["id"] == 1
    # Kindgi's paths start at its prefix; the pets API is not served on another host
    assert call(port, "/v1/test-sets")[0] == 404
    status, missing = call(port, "/pets")
    assert status == 404
    assert "kindgi at prefix /kindgi; pets at host pets.localhost" in missing["error"]["message"]


@pytest.mark.slow
def test_scenarios_are_scoped_by_api(port: int) -> None:
    status, _ = call(port, "/__mock/scenarios?api=kindgi", method="POST",
                     payload={"operationId": "listTestSets", "status": 503})
    assert status == 201
    assert call(port, "/kindgi/v1/test-sets")[0] == 503
    assert call(port, "/pets", PETS_HOST)[0] == 200
    assert call(port, "/__mock/scenarios?api=pets")[1] == {"scenarios": []}
    # a scenario names an operation of its own API: the pets API has no listTestSets
    status, refused = call(port, "/__mock/scenarios?api=pets", method="POST",
                           payload={"operationId": "listTestSets", "status": 503})
    assert status == 400 and "listTestSets" in refused["error"]["message"]


@pytest.mark.slow
def test_journal_entries_are_tagged_with_their_api(port: int) -> None:
    call(port, "/kindgi/v1/test-sets?limit=1")
    call(port, "/pets/1", PETS_HOST)
    kindgi = call(port, "/__mock/requests?api=kindgi")[1]["requests"]
    pets = call(port, "/__mock/requests?api=pets")[1]["requests"]
    assert [(e["api"], e["path"]) for e in kindgi] == [("kindgi", "/kindgi/v1/test-sets")]
    assert [(e["api"], e["path"], e["operationId"]) for e in pets] == [("pets", "/pets/1", "getPet")]


@pytest.mark.slow
def test_coverage_is_per_api(port: int) -> None:
    call(port, "/pets/1", PETS_HOST)
    pets = call(port, "/__mock/coverage?api=pets")[1]
    kindgi = call(port, "/__mock/coverage?api=kindgi")[1]
    assert pets["api"] == "pets" and pets["calls"] == 1
    assert {op["operationId"] for op in pets["operations"] if op["calls"]} == {"getPet"}
    assert kindgi["calls"] == 0
    done = subprocess.run([sys.executable, "-m", "mockserver", "coverage", "--url", f"http://127.0.0.1:{port}",
                           "--api", "pets"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "getPet · 1 calls" in done.stdout
    done = subprocess.run([sys.executable, "-m", "mockserver", "coverage", "--url", f"http://127.0.0.1:{port}"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "name one with ?api= (kindgi, pets)" in done.stderr


@pytest.mark.slow
def test_a_control_call_names_its_api(port: int) -> None:
    status, refused = call(port, "/__mock/requests")
    assert status == 400
    assert refused["error"]["message"] == ("this mock serves several APIs: name one with ?api= "
                                           "(kindgi, pets)")
    status, refused = call(port, "/__mock/scenarios?api=billing")
    assert status == 400 and "no API 'billing'" in refused["error"]["message"]
    status, health = call(port, "/__mock/health")  # a probe names no API: all of them
    assert status == 200 and [api["api"] for api in health["apis"]] == ["kindgi", "pets"]


@pytest.mark.slow
def test_the_config_file_mounts_the_apis_and_sets_flags(tmp_path: Path) -> None:
    config = tmp_path / "mockserver.yaml"
    config.write_text(textwrap.dedent(f"""\
        apis:
          - name: kindgi
            spec: {KINDGI_SPEC}
            fixtures: {KINDGI_FIXTURES}
            prefix: /kindgi
          - {{name: pets, spec: {PETS / 'openapi.yaml'}, fixtures: {PETS / 'fixtures'}, prefix: /pets-api}}
        strict-auth: true
        log-level: warning
        """))
    with serving("--config", str(config)) as (_, port):
        assert call(port, "/kindgi/v1/test-sets?limit=1")[0] == 200
        assert call(port, "/pets-api/pets/1", auth=False)[0] == 200
        # strict-auth from the file: a token the fixtures do not declare is refused
        assert call(port, "/kindgi/v1/test-sets", {"Authorization": "Bearer stranger"})[0] == 401


@pytest.mark.slow
def test_a_flag_on_the_command_line_wins_over_the_config_file_even_with_its_default_value(tmp_path: Path) -> None:
    """`--request-validation strict` (the default) over the file's `warn`: a query that breaks its schema is
    refused."""
    config = tmp_path / "mockserver.yaml"
    config.write_text("request-validation: warn\nlog-level: warning\n")
    with serving("--config", str(config), "--spec", str(PETS / "openapi.yaml"), "--request-validation",
                 "strict") as (_, port):
        assert call(port, "/pets?limit=abc", auth=False)[0] == 400


@pytest.mark.slow
def test_a_bad_config_file_is_named_with_its_line_and_key(tmp_path: Path) -> None:
    (tmp_path / "mockserver.yaml").write_text(textwrap.dedent("""\
        apis:
          - name: kindgi
            spec: openapi.yaml
            prefx: /kindgi
        prot: 4011
        """))
    done = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", str(free_port())], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "mockserver.yaml:4: /apis/0/prefx: 'prefx': expected one of name, spec, fixtures, prefix, host" \
        in done.stderr
    assert "mockserver.yaml:5: /prot: unknown key 'prot'" in done.stderr


@pytest.mark.slow
def test_problems_are_reported_per_api(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("openapi: 3.0.3\ninfo: {title: Broken, version: '1'}\npaths:\n  /a:\n    get:\n"
                      "      responses: {'200': {$ref: '#/components/responses/Nope'}}\n")
    done = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", str(free_port()), "--api", KINDGI_API,
                           "--api", f"billing={broken},host=billing.localhost"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert f"mockserver: API 'billing' ({broken}): 1 problem(s) found:" in done.stderr
    assert "kindgi" not in done.stderr  # the API that loaded is not blamed


def test_one_docs_page_and_one_dashboard_per_api() -> None:
    app = create_apps([Api("kindgi", KINDGI_SPEC, KINDGI_FIXTURES, "/kindgi"),
                       Api("pets", PETS / "openapi.yaml", PETS / "fixtures", host="pets.localhost")])
    client = app.test_client()
    docs = client.get("/__mock/docs?api=pets").get_data(as_text=True)
    assert 'data-description="/__mock/apis/pets/docs/description/openapi.yaml"' in docs
    described = client.get("/__mock/apis/pets/docs/description/openapi.yaml").get_json()
    assert described["info"]["title"] == "Pets (stateful tests)"
    kindgi = client.get("/__mock/description.json?api=kindgi", base_url="http://mock.test").get_json()
    assert kindgi["servers"][0]["url"] == "http://mock.test/kindgi"  # the prefix is part of its server URL
    page = client.get("/__mock/?api=kindgi").get_data(as_text=True)
    assert '<a href="/__mock/?api=pets">pets</a>' in page
    assert '<a href="/__mock/?api=kindgi" aria-current="page">kindgi</a>' in page
    assert "/kindgi/v1/test-sets" in page  # its "try" URLs start at its prefix
    # in process too, each API answers at its mount
    assert client.get("/kindgi/v1/test-sets?limit=1", headers=DEMO).status_code == 200
    assert client.get("/pets/1", headers={"Host": "pets.localhost"}).status_code == 200
    assert client.get("/pets/1").status_code == 404


@pytest.mark.slow
def test_contract_checks_one_api_where_it_is_mounted(port: int) -> None:
    done = subprocess.run([sys.executable, "-m", "mockserver", "contract", "--spec", str(PETS / "openapi.yaml"),
                           "--url", f"http://127.0.0.1:{port}", "--api", "pets", "--operation", "getPet",
                           "--max-examples", "2", "--phases", "fuzzing", "--checks", "not_a_server_error",
                           "--read-only"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "responses: 2 of 2 declared observed" in done.stdout  # 200 and 404: the pets API answered, by its host


@pytest.mark.slow
def test_diff_reads_one_apis_journal_below_its_prefix(port: int, tmp_path: Path) -> None:
    call(port, "/kindgi/v1/test-sets?limit=2")
    description = yaml.safe_load(KINDGI_SPEC.read_text())
    listing = description["paths"]["/v1/test-sets"]["get"]
    listing["parameters"] = [p for p in listing["parameters"] if p.get("$ref") != "#/components/parameters/Limit"]
    new = tmp_path / "kindgi.yaml"
    new.write_text(yaml.safe_dump(description, sort_keys=False))
    done = subprocess.run([sys.executable, "-m", "mockserver", "diff", str(KINDGI_SPEC), str(new), "--url",
                           f"http://127.0.0.1:{port}", "--api", "kindgi", "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    removed = json.loads(done.stdout)["changes"][0]
    assert removed["kind"] == "parameter-removed"
    assert " GET /v1/test-sets?limit=2 → 200" in removed["evidence"]["journaled requests"]["instance"]


def test_apis_keep_their_state_apart_in_one_redis(redis_url: str) -> None:
    app = create_apps([Api("kindgi", KINDGI_SPEC, KINDGI_FIXTURES, "/kindgi"),
                       Api("pets", PETS / "openapi.yaml", PETS / "fixtures")], state=redis_url)
    client = app.test_client()
    try:
        set_scenario = client.post("/__mock/scenarios?api=pets", json={"operationId": "getPet", "status": 404})
        assert set_scenario.status_code == 201
        assert client.get("/pets/1").status_code == 404
        assert client.get("/kindgi/v1/test-sets?limit=1", headers=DEMO).status_code == 200
        kindgi = client.get("/__mock/scenarios?api=kindgi").get_json()["scenarios"]
        assert kindgi and "getPet" not in {scenario["operationId"] for scenario in kindgi}  # its fixtures' own only
        assert [e["path"] for e in client.get("/__mock/requests?api=kindgi").get_json()["requests"]] == \
            ["/kindgi/v1/test-sets"]
        prefix = redis_url.rsplit("=", 1)[1]
        shown = {api["api"]: api["state"]["prefix"] for api in client.get("/__mock/health").get_json()["apis"]}
        assert shown == {"kindgi": f"{prefix}:kindgi:", "pets": f"{prefix}:pets:"}
    finally:
        for mock in app.mounts.mocks.values() if app.mounts else ():
            mock.pipeline.store.close()


def test_a_request_goes_to_its_hosts_api_then_the_longest_prefix() -> None:
    library = ROOT / "tests" / "data" / "library"
    app = create_apps([Api("pets", PETS / "openapi.yaml", PETS / "fixtures"),  # neither: every other request
                       Api("kindgi", KINDGI_SPEC, KINDGI_FIXTURES, "/kindgi"),
                       Api("library", library / "openapi.yaml", library / "fixtures", host="library.localhost")])
    client = app.test_client()
    assert client.get("/kindgi/v1/test-sets?limit=1", headers=DEMO).status_code == 200
    assert client.get("/pets/1").get_json()["name"] == "Ada"
    assert client.get("/kindgiX/v1/test-sets", headers=DEMO).status_code == 404  # a prefix is whole segments
    on_its_host = client.get("/pets/1", headers={"Host": "LIBRARY.localhost:4010"})  # the host's API, not pets
    assert on_its_host.status_code == 404

    def paths(api: str) -> list[str]:
        return [e["path"] for e in client.get(f"/__mock/requests?api={api}").get_json()["requests"]]

    assert paths("pets") == ["/pets/1", "/kindgiX/v1/test-sets"]
    assert paths("library") == ["/pets/1"]
    assert paths("kindgi") == ["/kindgi/v1/test-sets"]


def test_a_request_no_api_is_mounted_for_is_a_404_naming_the_mounts_in_process() -> None:
    """Through WSGI (the tests' and an embedding's transport), a body too: read, then answered like any other."""
    app = create_apps([Api("kindgi", KINDGI_SPEC, KINDGI_FIXTURES, "/kindgi"),
                       Api("pets", PETS / "openapi.yaml", PETS / "fixtures", "/pets-api")])
    client = app.test_client()
    for answer in (client.get("/v1/test-sets"), client.post("/elsewhere", json={"name": "Ada"})):
        assert answer.status_code == 404
        assert "kindgi at prefix /kindgi; pets at prefix /pets-api" in answer.get_json()["error"]["message"]
    assert client.get("/pets-api/pets/1").get_json()["name"] == "Ada"

