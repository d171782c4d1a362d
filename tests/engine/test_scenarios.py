"""Every kind of scenario, set through the control API as a user would, and from the fixtures."""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, ROOT, SAMPLE_PROJECT, body
from mockserver import create_app

TEST_SETS = "/v1/test-sets?limit=1"
PETS = ROOT / "tests" / "data" / "pets"


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
    ({"operationId": "listTestSets", "status": 503, "after": -1}, "/after", "minimum"),
    ({"operationId": "listTestSets", "after": 2}, "", "required"),
    ({"operationId": "listTestSets", "status": 503, "after": 2, "rate": 0.5}, "/after", "rate"),
    ({"operationId": "listTestSets", "steps": []}, "/steps", "minItems"),
    ({"operationId": "listTestSets", "steps": [{"status": 503}, {"status": 401}]}, "/steps/0", "required"),
    ({"operationId": "listTestSets", "steps": [{"times": 2}, {"times": 1}]}, "/steps", "required"),
    ({"operationId": "listTestSets", "steps": [{"times": 2}, {"status": 404}]}, "/steps/1/status", "status"),
    ({"operationId": "listTestSets", "steps": [{"times": 1, "colour": "red"}]}, "/steps/0", "additionalProperties"),
    ({"operationId": "listTestSets", "steps": [{"status": 200, "body": {"data": 1, "hasMore": False}}]},
     "/steps/0/body/data", "type"),
    ({"operationId": "listTestSets", "status": 503, "steps": [{"status": 401}]}, "/status", "steps"),
    ({"operationId": "listTestSets", "status": 503, "newState": "down"}, "", "dependentRequired"),
    ({"operationId": "listTestSets", "status": 503, "state": "login"}, "/state", "required"),
    ({"operationId": "listTestSets", "status": 503, "state": "a b", "newState": "x"}, "/state", "pattern"),
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


def test_a_bad_step_in_the_fixtures_stops_start_up_saying_where(write, tmp_path):
    from mockserver.base.errors import LoadError

    write("spec.yaml", (PETS / "openapi.yaml").read_text())
    write("fx/pets.yaml", (PETS / "fixtures" / "pets.yaml").read_text()
          + "scenarios:\n  - operationId: getPet\n    after: 1\n    steps:\n"
          "      - {times: 1}\n      - {status: 503}\n")
    with pytest.raises(LoadError) as caught:
        create_app(tmp_path / "spec.yaml", tmp_path / "fx")
    [problem] = caught.value.problems
    assert problem.pointer == "/scenarios/0/steps/1/status" and "does not declare status 503" in problem.message
    assert problem.file.endswith("pets.yaml") and problem.line == len((PETS / "fixtures" / "pets.yaml").read_text()
                                                                      .splitlines()) + 6


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


def test_after_lets_calls_through_then_fires(client):
    """"503 on the third call only": the two calls before answer as usual, the one after too."""
    set_ = client.post("/__mock/scenarios", json={"id": "third", "operationId": "listTestSets", "status": 503,
                                                  "after": 2, "times": 1})
    assert set_.status_code == 201, set_.data
    answers = [client.get(TEST_SETS, headers=DEMO) for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 503, 200]
    assert [a.headers.get("X-Mock-Scenario") for a in answers] == [None, None, "third", None]
    assert body(client.get("/__mock/scenarios"))["scenarios"][0]["id"] == "flaky-test-set"  # used up: gone


def test_steps_answer_one_after_another_and_show_their_position(client):
    client.post("/__mock/scenarios", json={"id": "seq", "operationId": "listTestSets", "after": 1, "steps": [
        {"status": 503, "times": 2}, {"times": 1}, {"status": 401}]})
    positions = []
    for _ in range(6):
        [shown] = [s for s in body(client.get("/__mock/scenarios"))["scenarios"] if s["id"] == "seq"]
        positions.append((shown["hits"], shown["waiting"], shown["step"]))
        client.get(TEST_SETS, headers=DEMO)
    assert statuses(client, 2) == [401, 401]  # the last step without `times` stays
    assert positions == [(0, 1, 0), (1, 0, 0), (2, 0, 0), (3, 0, 1), (4, 0, 2), (5, 0, 2)]
    assert [e["status"] for e in body(client.get("/__mock/requests?operationId=listTestSets"))["requests"]] == [
        200, 503, 503, 200, 401, 401, 401, 401]


def test_a_scenarios_error_is_the_one_prefer_code_gives(client):
    """Body, details and declared headers as `Prefer: code=503` answers them; the scenario named in a header and
    the journal, not in the body."""
    preferred = client.get(TEST_SETS, headers={**DEMO, "Prefer": "code=503"})
    client.post("/__mock/scenarios", json={"id": "busy", "operationId": "listTestSets", "status": 503, "times": 1})
    answered = client.get(TEST_SETS, headers=DEMO)
    assert answered.status_code == preferred.status_code == 503
    mine, theirs = body(answered)["error"], body(preferred)["error"]
    assert mine.pop("requestId") != theirs.pop("requestId")
    assert mine == theirs and mine["details"] == {"retryAfterSeconds": 2}
    assert answered.headers["Retry-After"] == preferred.headers["Retry-After"] == "2"
    assert answered.headers["X-Mock-Scenario"] == "busy" and "X-Mock-Scenario" not in preferred.headers
    journal = body(client.get("/__mock/requests?limit=1"))["requests"][0]
    assert (journal["scenarioId"], journal["source"]) == ("busy", "scenario")


def test_a_scenarios_401_challenges_as_the_api_does(client):
    """"The token stops working": the 401 carries the challenge a call without a token gets, as `Prefer: code=401`
    does too (RFC 9110: a 401 names how to authenticate)."""
    client.post("/__mock/scenarios", json={"id": "expired", "operationId": "listTestSets", "token": "demo-token",
                                           "status": 401})
    answered = client.get(TEST_SETS, headers=DEMO)
    without_token = client.get(TEST_SETS)
    preferred = client.get(TEST_SETS, headers={"Authorization": "Bearer other-tenant-token", "Prefer": "code=401"})
    assert answered.status_code == without_token.status_code == preferred.status_code == 401
    assert answered.headers["WWW-Authenticate"] == without_token.headers["WWW-Authenticate"] == preferred.headers[
        "WWW-Authenticate"] == 'Bearer realm="mock"'
    assert "details" not in body(answered)["error"] and answered.headers["X-Mock-Scenario"] == "expired"


def test_a_global_scenario_counts_each_sessions_calls_apart(client):
    """Tests in sessions of their own on one mock each see "the second call fails", however their calls interleave;
    a session's reset starts its count again."""
    client.post("/__mock/scenarios", json={"id": "second", "operationId": "listTestSets", "status": 503, "after": 1,
                                           "times": 1})
    alice, bob = {**DEMO, "X-Mock-Session": "alice"}, {**DEMO, "X-Mock-Session": "bob"}
    assert [statuses(client, 1, headers=h)[0] for h in (alice, bob, alice, bob, DEMO, alice)] == [
        200, 200, 503, 503, 200, 200]
    assert "second" not in [s["id"] for s in body(client.get("/__mock/scenarios?session=bob"))["scenarios"]]
    assert [(s["hits"], s["waiting"]) for s in body(client.get("/__mock/scenarios"))["scenarios"]
            if s["id"] == "second"] == [(1, 0)]  # the calls without a session: one let through
    client.post("/__mock/reset?session=alice", json={})
    assert statuses(client, 2, headers=alice) == [200, 503]


@pytest.fixture()
def pets():
    return create_app(PETS / "openapi.yaml", PETS / "fixtures").test_client()


def test_a_scenarios_error_is_the_one_prefer_code_gives_on_pets(pets):
    preferred = pets.get("/pets/1", headers={"Prefer": "code=404"})
    pets.post("/__mock/scenarios", json={"operationId": "getPet", "status": 404, "after": 1})
    assert pets.get("/pets/1").status_code == 200
    answered = pets.get("/pets/1")
    mine, theirs = body(answered)["error"], body(preferred)["error"]
    assert answered.status_code == 404 and mine.pop("requestId") != theirs.pop("requestId") and mine == theirs


ADA = {"id": 1, "name": "Ada", "kind": "cat", "createdAt": "2024-01-01T00:00:00Z"}


def order_flow(client, session=None):
    """After a pet is added, pet 1 reads `pending` twice, then `shipped` (WireMock's states: the POST moves the
    `order` machine, the reads wait for it)."""
    client.post("/__mock/scenarios" + (f"?session={session}" if session else ""), json=[
        {"id": "placed", "operationId": "addPet", "state": "order", "newState": "placed"},
        {"id": "polls", "operationId": "getPet", "pathParams": {"id": 1}, "state": "order", "requiredState": "placed",
         "steps": [{"status": 200, "body": {**ADA, "tag": "pending"}, "times": 2},
                   {"status": 200, "body": {**ADA, "tag": "shipped"}}]}])


def test_named_states_make_a_flow_across_operations(pets):
    order_flow(pets)
    assert body(pets.get("/pets/1")).get("tag") is None  # not placed yet: the reads answer as usual
    assert [s.get("currentState") for s in body(pets.get("/__mock/scenarios"))["scenarios"]] == ["Started"] * 2
    assert pets.post("/pets", json={"name": "Rex"}).status_code == 201
    tags = [body(pets.get("/pets/1"))["tag"] for _ in range(4)]
    assert tags == ["pending", "pending", "shipped", "shipped"]
    shown = {s["id"]: s for s in body(pets.get("/__mock/scenarios"))["scenarios"]}
    assert shown["polls"]["currentState"] == "placed" and shown["polls"]["step"] == 1 and shown["polls"]["hits"] == 4
    pets.post("/__mock/reset", json={})
    order_flow(pets)
    assert body(pets.get("/pets/1")).get("tag") is None  # a reset puts every machine back to Started


def test_a_state_machine_is_per_session(pets):
    order_flow(pets)  # global scenarios: each session's calls move and read the session's own machine
    headers = {"X-Mock-Session": "alice"}
    pets.post("/pets", json={"name": "Rex"}, headers=headers)
    assert body(pets.get("/pets/1", headers=headers))["tag"] == "pending"
    assert body(pets.get("/pets/1")).get("tag") is None
    assert body(pets.get("/pets/1", headers={"X-Mock-Session": "bob"})).get("tag") is None
