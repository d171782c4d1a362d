"""Every kind of scenario, set through the control API as a user would, and from the fixtures."""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, SAMPLE_PROJECT, body
from mockserver import create_app

TEST_SETS = "/v1/test-sets?limit=1"


@pytest.fixture(scope="module")
def kindgi_mock():
    """One Kindgi mock for the module's tests (building it took most of each test's time)."""
    return create_app(KINDGI_SPEC, KINDGI_FIXTURES)


@pytest.fixture()
def app(kindgi_mock):
    """The module's mock, reset as a user resets it (`POST /__mock/reset`: no scenario set at run time, the
    fixtures' back with fresh counts, an empty journal, no session): each test starts where a new mock starts."""
    assert kindgi_mock.test_client().post("/__mock/reset", json={}).status_code == 200
    return kindgi_mock


@pytest.fixture()
def client(app):
    return app.test_client()


def statuses(client, n, url=TEST_SETS, headers=DEMO):
    return [client.get(url, headers=headers).status_code for _ in range(n)]


def test_the_simplest_form_works_as_written(client):
    response = client.post("/__mock/scenarios", json={"operationId": "listTestSets", "status": 503, "times": 2})
    assert response.status_code == 201
    assert statuses(client, 3) == [503, 503, 200]


def test_an_injected_error_is_the_operations_own(client):
    client.post("/__mock/scenarios", json={"operationId": "listAgentTestSetCases", "status": 404})
    response = client.get(f"/v1/agents/acme.drafting/test-set/cases?projectId={SAMPLE_PROJECT}", headers=DEMO)
    error = body(response)["error"]
    assert response.status_code == 404 and error["code"] == "agent-not-found"
    assert error["requestId"] == response.headers["X-Request-Id"]


def test_503_carries_retry_after_and_its_code(client):
    client.post("/__mock/scenarios", json={"operationId": "listTestSets", "status": 503,
                                           "responseHeaders": {"Retry-After": "7"}})
    response = client.get(TEST_SETS, headers=DEMO)
    assert response.headers["Retry-After"] == "7" and body(response)["error"]["code"] == "database-busy"


def test_a_scenario_by_method_and_path_with_query_and_token(client):
    client.post("/__mock/scenarios", json={"method": "get", "path": "/v1/test-sets", "query": {"kind": "custom"},
                                           "token": "other-tenant-token", "status": 401, "code": "token-revoked",
                                           "message": "revoked a minute ago"})
    assert client.get("/v1/test-sets?kind=custom", headers=DEMO).status_code == 200
    assert client.get("/v1/test-sets?kind=accuracy",
                      headers={"Authorization": "Bearer other-tenant-token"}).status_code == 200
    response = client.get("/v1/test-sets?kind=custom", headers={"Authorization": "Bearer other-tenant-token"})
    assert response.status_code == 401
    assert body(response)["error"]["code"] == "token-revoked"


def test_a_body_of_its_own_is_checked_against_the_description(client):
    page = {"data": [], "hasMore": False}
    assert client.post("/__mock/scenarios", json={"operationId": "listTestSets", "status": 200, "body": page,
                                                  "times": 1}).status_code == 201
    response = client.get(TEST_SETS, headers=DEMO)
    assert body(response) == page
    bad = client.post("/__mock/scenarios", json={"operationId": "listTestSets", "status": 200,
                                                 "body": {"data": "nope"}})
    assert bad.status_code == 400
    violation = body(bad)["error"]["details"]["violations"][0]
    assert violation["pointer"].startswith("/body") and violation["rule"] in ("type", "required")


def test_latency_fixed_and_range(client):
    client.post("/__mock/scenarios", json={"operationId": "listTestSets", "latency": 300, "times": 1})
    started = time.perf_counter()
    assert client.get(TEST_SETS, headers=DEMO).status_code == 200
    assert time.perf_counter() - started >= 0.3
    client.post("/__mock/scenarios", json={"operationId": "listTestSets", "latency": {"min": 100, "max": 200},
                                           "times": 1})
    started = time.perf_counter()
    client.get(TEST_SETS, headers=DEMO)
    assert 0.1 <= time.perf_counter() - started < 1.0


def test_a_seeded_fraction_of_calls_fails_the_same_way_each_time():
    def run() -> list[int]:
        client = create_app(KINDGI_SPEC, KINDGI_FIXTURES).test_client()
        client.post("/__mock/scenarios", json={"operationId": "listTestSets", "status": 503, "rate": 0.3, "seed": 4})
        return statuses(client, 200)

    first = run()
    assert first == run()
    assert 30 <= first.count(503) <= 90 and set(first) == {200, 503}


def test_counts_stay_exact_under_concurrency(app):
    app.test_client().post("/__mock/scenarios", json={"operationId": "listTestSets", "status": 503, "times": 5})
    barrier = threading.Barrier(16)

    def call(_: int) -> int:
        barrier.wait()
        return app.test_client().get(TEST_SETS, headers=DEMO).status_code

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(call, range(48)))
    assert results.count(503) == 5 and results.count(200) == 43


def test_fixture_scenarios_are_there_from_the_start():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES).test_client()  # a new mock: no reset before
    response = client.get("/v1/test-sets/acme.flaky/versions/1.0.0/cases", headers=DEMO)
    assert response.status_code == 503 and response.headers["Retry-After"] == "2"
    assert body(response)["error"]["code"] == "database-busy"
    listed = body(client.get("/__mock/scenarios"))["scenarios"]
    assert {"flaky-test-set", "slow-agent"} <= {s["id"] for s in listed}


def test_clear_remove_and_reset(client):
    client.post("/__mock/scenarios", json={"id": "mine", "operationId": "listTestSets", "status": 503})
    assert client.post("/__mock/scenarios", json={"id": "mine", "operationId": "listTestSets",
                                                  "status": 503}).status_code == 409
    assert client.delete("/__mock/scenarios/mine", json={}).status_code == 200
    assert client.delete("/__mock/scenarios/mine", json={}).status_code == 404
    client.delete("/__mock/scenarios", json={})
    assert body(client.get("/__mock/scenarios"))["scenarios"] == []
    assert client.get("/v1/test-sets/acme.flaky/versions/1.0.0/cases", headers=DEMO).status_code == 404
    client.post("/__mock/reset", json={})
    assert client.get("/v1/test-sets/acme.flaky/versions/1.0.0/cases", headers=DEMO).status_code == 503


@pytest.mark.parametrize("scenario, pointer, rule", [
    ({"status": 503}, "", "required"),
    ({"operationId": "nope", "status": 503}, "/operationId", "operationId"),
    ({"operationId": "listTestSets", "status": 404}, "/status", "status"),
    ({"operationId": "listTestSets", "status": "503"}, "/status", "type"),
    ({"operationId": "listTestSets"}, "", "required"),
    ({"operationId": "listTestSets", "status": 503, "times": 0}, "/times", "minimum"),
    ({"operationId": "listTestSets", "status": 503, "times": 1, "rate": 0.5}, "", "not"),
    ({"operationId": "listTestSets", "latency": {"min": 500, "max": 100}}, "/latency", "range"),
    ({"operationId": "listTestSets", "break": "explode"}, "/break", "enum"),
    ({"operationId": "listTestSets", "status": 503, "colour": "red"}, "", "additionalProperties"),
    ([{"operationId": "listTestSets", "status": 503}, {"operationId": "x", "status": 503}], "/1/operationId",
     "operationId"),
])
def test_a_malformed_scenario_is_400_saying_where(client, scenario, pointer, rule):
    response = client.post("/__mock/scenarios", json=scenario)
    assert response.status_code == 400, response.data
    violation = body(response)["error"]["details"]["violations"][0]
    assert (violation["pointer"], violation["rule"]) == (pointer, rule)
    assert body(client.get("/__mock/scenarios"))["scenarios"][0]["id"] == "flaky-test-set"  # nothing was set


def test_a_bad_scenario_in_the_fixtures_stops_start_up(write, tmp_path):
    import shutil

    from mockserver.base.errors import LoadError

    shutil.copytree(KINDGI_FIXTURES, tmp_path / "fx")
    write("fx/zz-bad.yaml", "scenarios:\n  - operationId: listTestSets\n    status: 418\n")
    with pytest.raises(LoadError) as caught:
        create_app(KINDGI_SPEC, tmp_path / "fx")
    [problem] = caught.value.problems
    assert problem.file.endswith("zz-bad.yaml") and problem.pointer == "/scenarios/0/status" and problem.line == 3


@pytest.mark.parametrize("extra, media, start", [
    ({}, "application/json", b'{"error":{"code":"bad-gateway"'),
    ({"proxy": "html"}, "text/html", b"<html>\r\n<head><title>502 Bad Gateway</title>"),
    ({"proxy": "empty"}, None, b""),
    ({"body": {"message": "upstream timed out"}}, "application/json", b'{"message":"upstream timed out"}'),
])
def test_a_gateways_undeclared_status_when_asked(app, extra, media, start):
    client = app.test_client()
    refused = client.post("/__mock/scenarios", json={"operationId": "listTestSets", "status": 502})
    assert refused.status_code == 400 and '"undeclared": true' in body(refused)["error"]["message"]
    set_ = client.post("/__mock/scenarios", json={"operationId": "listTestSets", "status": 502, "undeclared": True,
                                                  "times": 1, **extra})
    assert set_.status_code == 201, set_.data
    answer = client.get(TEST_SETS, headers=DEMO)
    assert answer.status_code == 502 and answer.data.startswith(start) and answer.headers["X-Request-Id"]
    assert answer.headers.get("Content-Type") == media
    assert client.get("/__mock/requests?limit=1").json["requests"][0]["source"] == "scenario-undeclared"


@pytest.mark.parametrize("spec, pointer", [
    ({"status": 503, "undeclared": True}, "/undeclared"),  # declared already
    ({"status": 502, "proxy": "html"}, ""),  # proxy without undeclared
    ({"status": 502, "undeclared": True, "proxy": "html", "body": {}}, "/proxy"),
])
def test_undeclared_is_only_for_what_it_says(app, spec, pointer):
    refused = app.test_client().post("/__mock/scenarios", json={"operationId": "listTestSets", **spec})
    assert refused.status_code == 400
    assert body(refused)["error"]["details"]["violations"][0]["pointer"] == pointer
