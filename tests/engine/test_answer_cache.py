"""The same read asked again within a second gets the answer already made (pipeline/answer_cache.py), and nothing a
user can see tells it apart from a fresh one: each call has its own request id, is journaled and counted; a
scenario, another caller, another Accept or a write in stateful mode each get their own answer."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, OTHER, body
from mockserver import create_app, pipeline_of
from mockserver.pipeline import answer_cache

PETS = Path(__file__).resolve().parents[1] / "data" / "pets"


@pytest.fixture()
def client():
    return create_app(KINDGI_SPEC, KINDGI_FIXTURES).test_client()


def test_the_same_read_twice_is_the_same_answer_with_its_own_request_id_and_journal_entry(client):
    first, second = (client.get("/v1/test-sets?limit=3", headers=DEMO) for _ in range(2))
    assert first.status_code == second.status_code == 200 and first.data == second.data
    assert first.headers["X-Request-Id"] != second.headers["X-Request-Id"]
    entries = body(client.get("/__mock/requests?operationId=listTestSets"))["requests"]
    assert [e["source"] for e in entries] == ["fixture", "fixture"]
    assert {e["responseHeaders"]["X-Request-Id"] for e in entries} == {first.headers["X-Request-Id"],
                                                                        second.headers["X-Request-Id"]}
    [operation] = [o for o in body(client.get("/__mock/coverage"))["operations"] if o["operationId"] == "listTestSets"]
    assert operation["calls"] == 2


def test_a_scenario_set_between_two_identical_reads_answers_the_second(client):
    assert client.get("/v1/test-sets?limit=3", headers=DEMO).status_code == 200
    client.post("/__mock/scenarios", json={"operationId": "listTestSets", "status": 503, "times": 1})
    assert client.get("/v1/test-sets?limit=3", headers=DEMO).status_code == 503
    assert client.get("/v1/test-sets?limit=3", headers=DEMO).status_code == 200


def test_each_caller_and_each_accept_gets_its_own_answer(client):
    ours, theirs = (body(client.get("/v1/test-sets?limit=100", headers=h))["data"] for h in (DEMO, OTHER))
    assert len(theirs) < len(ours)  # each tenant sees its own test sets (4 for the other tenant)
    refused = client.get("/v1/test-sets?limit=100", headers={**DEMO, "Accept": "text/csv"})
    assert refused.status_code == 406
    assert client.get("/v1/test-sets?limit=100", headers={**DEMO, "Accept": "text/csv"}).status_code == 406


def test_a_write_is_seen_by_the_next_read_at_once_and_only_in_its_session():
    """Written collections are kept too: a kept list is keyed by each written collection's version."""
    pets = create_app(PETS / "openapi.yaml", PETS / "fixtures").test_client()
    alice = {"X-Mock-Session": "alice"}

    def names(headers: dict[str, str]) -> list[str]:
        return [p["name"] for p in body(pets.get("/pets", headers=headers))["data"]]

    before = names({})
    assert names({}) == names(alice) == before  # each list made and kept
    assert pets.post("/pets", json={"name": "Rex"}, headers=alice).status_code == 201
    assert names(alice) == [*before, "Rex"]
    assert names({}) == before
    assert pets.delete(f"/pets/{body(pets.get('/pets', headers=alice))['data'][-1]['id']}",
                       headers=alice).status_code == 204
    assert names(alice) == before


def test_a_kept_answer_is_made_again_once_its_second_is_over(client, monkeypatch):
    """Past TTL_S the answer is made afresh: a page's next cursor is then signed anew."""
    now = [1000.0]
    monkeypatch.setattr(answer_cache.time, "monotonic", lambda: now[0])
    monkeypatch.setattr("mockserver.pipeline.query.time.time", lambda: now[0] + 1_800_000_000)
    first = body(client.get("/v1/test-sets?limit=3", headers=DEMO))["nextCursor"]
    now[0] += answer_cache.TTL_S / 2
    assert body(client.get("/v1/test-sets?limit=3", headers=DEMO))["nextCursor"] == first  # kept
    now[0] += answer_cache.TTL_S * 5
    assert body(client.get("/v1/test-sets?limit=3", headers=DEMO))["nextCursor"] != first  # made again


def test_the_kept_answers_stay_within_their_bounds(client, monkeypatch):
    """However many different reads a worker serves, what it keeps is bounded (SIZE answers, MAX_BYTES of bodies)."""
    monkeypatch.setattr(answer_cache, "MAX_BYTES", 20_000)
    kept = pipeline_of(client.application).answer_cache
    for limit in range(1, 40):
        assert client.get(f"/v1/test-sets?limit={limit}", headers=DEMO).status_code == 200
        assert kept._bytes <= 20_000 and sum(len(k.body) for k in kept._answers.values()) == kept._bytes
    assert 0 < len(kept._answers) < 39
