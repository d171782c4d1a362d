"""The request journal: newest last, filtered, bounded, credentials masked."""
import json
from typing import Any

import pytest
import redis

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, body
from mockserver import create_app
from mockserver.spec.secrets import mask
from mockserver.state.journal import Journal
from mockserver.state.memory import MemoryStore
from mockserver.web.app import MOCK_KEY, pipeline_of


def test_the_journal_records_what_was_asked_and_answered(kindgi):
    kindgi.delete("/__mock/requests", json={})
    kindgi.get("/v1/test-sets?limit=2", headers=DEMO)
    kindgi.get("/v1/test-sets?limit=500", headers=DEMO)
    kindgi.get("/v1/test-sets", headers={**DEMO, "Prefer": "code=503"})
    entries = body(kindgi.get("/__mock/requests"))["requests"]
    assert [e["status"] for e in entries] == [200, 400, 503]
    first = entries[0]
    assert (first["method"], first["path"], first["query"], first["source"], first["operationId"]) == (
        "GET", "/v1/test-sets", "limit=2", "fixture", "listTestSets")
    assert first["requestHeaders"]["authorization"] == "Bearer demo…"
    assert first["responseHeaders"]["X-Request-Id"] and '"hasMore":true' in first["responseBody"]
    assert first["durationMs"] >= 0
    assert [e["status"] for e in body(kindgi.get("/__mock/requests?status=400"))["requests"]] == [400]
    assert len(body(kindgi.get("/__mock/requests?limit=1"))["requests"]) == 1
    since = entries[1]["id"]
    assert [e["id"] for e in body(kindgi.get(f"/__mock/requests?since={since}"))["requests"]] == [entries[2]["id"]]
    assert body(kindgi.get("/__mock/requests?status=abc"))["error"]["code"] == "bad-input"


def test_the_journal_is_bounded():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, journal_size=5).test_client()
    for _ in range(12):
        client.get("/v1/test-sets?limit=1", headers=DEMO)
    entries = body(client.get("/__mock/requests"))["requests"]
    assert len(entries) == 5 and entries[-1]["id"] == 12


def test_masking():
    assert mask("Bearer abcdefghijkl") == "Bearer abcd…"
    assert mask("Bearer short") == "Bearer ****"
    assert mask("0123456789") == "0123…"


def test_clear_and_reset_empty_it(kindgi):
    kindgi.get("/v1/test-sets", headers=DEMO)
    kindgi.delete("/__mock/requests", json={})
    assert body(kindgi.get("/__mock/requests"))["requests"] == []
    kindgi.get("/v1/test-sets", headers=DEMO)
    kindgi.post("/__mock/reset", json={})
    assert body(kindgi.get("/__mock/requests"))["requests"] == []
    assert Journal(MemoryStore(journal_size=3), pipeline_of(kindgi.application).secrets).entries() == []


def test_a_broken_call_is_journaled_as_broken_with_only_what_was_sent(kindgi):
    """A scenario's `break` cuts the answer: the entry says so, and claims no body (`close`) or the half that was
    sent (`truncate`), never the whole body as if it had been sent."""
    session = {**DEMO, "X-Mock-Session": "broken"}
    kindgi.post("/__mock/reset?session=broken", json={})
    whole = kindgi.get("/v1/test-sets", headers=session).data
    assert body(kindgi.get("/__mock/requests?session=broken"))["requests"][0]["broken"] is None
    for kind, sent in [("close", None), ("truncate", whole[: len(whole) // 2].decode("utf-8", "replace"))]:
        kindgi.post("/__mock/reset?session=broken", json={})
        assert kindgi.post("/__mock/scenarios?session=broken",
                           json={"operationId": "listTestSets", "break": kind}).status_code == 201
        kindgi.get("/v1/test-sets", headers=session)
        entry, = body(kindgi.get("/__mock/requests?session=broken"))["requests"]
        assert (entry["status"], entry["broken"], entry["responseBody"]) == (200, kind, sent)
        assert entry["responseHeaders"]["Content-Length"] == str(len(whole))
    kindgi.post("/__mock/reset?session=broken", json={})


PETS = KINDGI_SPEC.parents[1] / "tests" / "data" / "pets"
LONG_NAME = "a long name " * 400  # a pet's name that makes its create, its answer and the list long bodies


@pytest.mark.slow  # a redis-server
def test_a_journal_on_redis_reads_what_was_sent_and_keeps_each_long_body_once(redis_url):
    """On Redis a long body (a request's or an answer's) is sent once and kept once however many entries name it;
    the journal, of the mock and of a session, still reads every body as it went over the wire; a body goes with
    the last entry that names it (the cap), with a session's clear, and with a reset, after which it is sent
    again when needed."""
    client = create_app(PETS / "openapi.yaml", PETS / "fixtures", stateful=True, journal_size=3,
                        state=redis_url).test_client()
    prefix = redis_url.rsplit("prefix=", 1)[1]
    store = redis.Redis.from_url(redis_url.split("?")[0])
    s1 = {"X-Mock-Session": "s1"}
    sent: list[tuple[str, str, int, Any, str]] = []  # the request's JSON as parsed (the journal keeps it compact)

    def exchange(method: str, path: str, headers: dict[str, str] | None = None, payload: Any = None) -> bytes:
        answer = client.open(path, method=method, json=payload, headers=headers or {})
        sent.append((method, path, answer.status_code, payload, answer.get_data(as_text=True)))
        return answer.data

    def journal(headers: dict[str, str] | None = None) -> list[tuple[str, str, int, Any, str]]:
        return [(e["method"], e["path"], e["status"], e["requestBody"] and json.loads(e["requestBody"]),
                 e["responseBody"])
                for e in body(client.get("/__mock/requests", headers=headers or {}))["requests"]]

    def bodies_held() -> int:
        return store.hlen(f"{prefix}:bodies")

    exchange("POST", "/pets", s1, {"name": LONG_NAME, "kind": "cat"})  # its answer: trimmed from both journals
    exchange("POST", "/pets", s1, {"name": LONG_NAME, "kind": "dog"})
    listed = exchange("GET", "/pets", s1)
    exchange("GET", "/pets", s1)  # the same long answer again
    exchange("GET", "/pets/1")
    exchange("GET", "/pets")
    assert len(listed) > 2 * len(LONG_NAME)
    assert journal(s1) == sent[1:4] and journal() == sent[3:]
    assert bodies_held() == 3  # the second create's request and answer, and the list

    assert client.delete("/__mock/requests", headers=s1).status_code == 200
    assert journal(s1) == [] and journal() == sent[3:] and bodies_held() == 1  # the list, which the mock's names

    before = store.info("stats")["total_net_input_bytes"]
    for _ in range(10):
        exchange("GET", "/pets", s1)
    assert journal(s1) == sent[-3:]
    assert store.info("stats")["total_net_input_bytes"] - before < 2 * len(listed)  # ten answers: sent once

    assert client.post("/__mock/reset", json={}).status_code == 200
    assert store.exists(f"{prefix}:bodies", f"{prefix}:body-refs") == 0
    exchange("POST", "/pets", s1, {"name": LONG_NAME, "kind": "cat"})  # a body this process sent before the reset
    assert journal(s1) == sent[-1:] and journal() == sent[-1:] and bodies_held() == 2
    store.close()
    client.application.extensions[MOCK_KEY].pipeline.store.close()
