"""Sessions: a client that sends X-Mock-Session (or the mock_session cookie) sees its own scenarios and the global
ones, and its calls land in its own journal and coverage; the control API acts on one session with ?session=,
the header or the cookie, and without one on the whole mock."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, body
from mockserver import create_app

TEST_SETS = "/v1/test-sets?limit=1"


@pytest.fixture(scope="module")
def kindgi_mock():
    """One Kindgi mock for the module's tests (building it took most of each test's time)."""
    return create_app(KINDGI_SPEC, KINDGI_FIXTURES)


@pytest.fixture()
def client(kindgi_mock):
    """A client of the module's mock, reset as a user resets it (`POST /__mock/reset`: every session, scenario and
    journal entry gone): each test starts where a new mock starts."""
    client = kindgi_mock.test_client()
    assert client.post("/__mock/reset", json={}).status_code == 200
    return client


def calls(client, session: str | None, n: int = 1) -> list[int]:
    headers = {**DEMO, **({"X-Mock-Session": session} if session else {})}
    return [client.get(TEST_SETS, headers=headers).status_code for _ in range(n)]


def test_each_session_sees_its_own_scenarios_and_the_global_ones(client):
    client.post("/__mock/scenarios?session=alice", json={"operationId": "listTestSets", "status": 503, "times": 2})
    client.post("/__mock/scenarios", headers={"X-Mock-Session": "bob"},
                json={"operationId": "listTestSets", "status": 401, "times": 1})
    assert calls(client, None, 2) == [200, 200]  # no session: the global scenarios only (none)
    assert calls(client, "bob", 2) == [401, 200]
    assert calls(client, "alice", 3) == [503, 503, 200]
    client.post("/__mock/scenarios", json={"id": "everyone", "operationId": "listTestSets", "status": 503})
    assert calls(client, "bob") == calls(client, "alice") == calls(client, None) == [503]
    alice = body(client.get("/__mock/scenarios?session=alice"))["scenarios"]
    assert [s["id"] for s in alice] == ["everyone", "flaky-test-set", "slow-agent"]  # alice's are used up
    everything = body(client.get("/__mock/scenarios"))["scenarios"]
    assert "everyone" in [s["id"] for s in everything]


def test_a_session_scenario_comes_before_a_global_one(client):
    client.post("/__mock/scenarios", json={"operationId": "listTestSets", "status": 503})
    client.post("/__mock/scenarios?session=carol", json={"operationId": "listTestSets", "latency": 1})
    assert calls(client, "carol") == [200] and calls(client, None) == [503]


def test_ids_are_unique_within_a_session_not_across_sessions(client):
    spec = {"id": "busy", "operationId": "listTestSets", "status": 503}
    assert client.post("/__mock/scenarios?session=a", json=spec).status_code == 201
    assert client.post("/__mock/scenarios?session=b", json=spec).status_code == 201
    again = client.post("/__mock/scenarios?session=a", json=spec)
    assert again.status_code == 409 and body(again)["error"]["code"] == "conflict"
    assert client.delete("/__mock/scenarios/busy?session=a", json={}).status_code == 200
    assert calls(client, "a") == [200] and calls(client, "b") == [503]


def test_journal_and_coverage_per_session_and_the_whole_mock(client):
    calls(client, "alice", 2)
    calls(client, "bob", 1)
    client.set_cookie("mock_session", "carol")  # a browser tab holds its session in a cookie
    client.get("/v1/test-sets?kind=accuracy", headers=DEMO)
    client.delete_cookie("mock_session")
    assert len(body(client.get("/__mock/requests?session=alice"))["requests"]) == 2
    carol = body(client.get("/__mock/requests", headers={"X-Mock-Session": "carol"}))["requests"]
    assert [(e["query"], e["session"]) for e in carol] == [("kind=accuracy", "carol")]
    assert len(body(client.get("/__mock/requests"))["requests"]) == 4  # no session: every call
    assert body(client.get("/__mock/coverage?session=bob"))["calls"] == 1
    assert body(client.get("/__mock/coverage"))["calls"] == 4


def test_reset_of_a_session_leaves_the_others(client):
    client.post("/__mock/scenarios?session=alice", json={"operationId": "listTestSets", "status": 503})
    client.post("/__mock/scenarios?session=bob", json={"operationId": "listTestSets", "status": 503})
    calls(client, "alice")
    calls(client, "bob")
    client.post("/__mock/reset?session=alice", json={})
    assert body(client.get("/__mock/requests?session=alice"))["requests"] == []
    assert calls(client, "alice") == [200] and calls(client, "bob") == [503]
    assert len(body(client.get("/__mock/requests?session=bob"))["requests"]) == 2
    client.post("/__mock/reset", json={})  # the whole mock: every session too
    assert calls(client, "bob") == [200]
    assert len(body(client.get("/__mock/requests?session=bob"))["requests"]) == 1


@pytest.mark.parametrize("where", ["header", "cookie", "query"])
def test_a_session_id_that_is_not_a_sane_token_is_a_400_in_the_envelope(client, where):
    bad = "x" * 65 if where != "header" else "two words"
    if where == "query":
        response = client.get(f"/__mock/requests?session={bad}")
        name = "session"
    elif where == "cookie":
        client.set_cookie("mock_session", bad)
        response = client.get(TEST_SETS, headers=DEMO)
        name = "mock_session"
    else:
        response = client.get(TEST_SETS, headers={**DEMO, "X-Mock-Session": bad})
        name = "X-Mock-Session"
    error = body(response)["error"]
    assert response.status_code == 400 and error["code"] == "bad-input" and response.headers["X-Request-Id"]
    assert error["details"]["violations"][0]["parameter"] == name


def test_parallel_sessions_each_see_only_their_own(client):
    def run(name: str) -> tuple[list[int], int]:
        client.post(f"/__mock/scenarios?session={name}", json={"operationId": "listTestSets", "status": 503,
                                                                "times": 3})
        codes = calls(client, name, 6)
        return codes, len(body(client.get(f"/__mock/requests?session={name}"))["requests"])

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, [f"p{n}" for n in range(8)]))
    assert all(codes == [503, 503, 503, 200, 200, 200] and journal == 6 for codes, journal in results)
