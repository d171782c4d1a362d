"""The request journal: newest last, filtered, bounded, credentials masked."""
import http.client
import json
import re
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import redis

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, body, serving
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


def _traffic(port: int, calls: int, session: str) -> None:
    """`calls` reads and writes of the pets in a session, on one connection: found, not found, created (a long body
    now and then), listed."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"X-Mock-Session": session, "Content-Type": "application/json"}
    for n in range(calls):
        if n % 7 == 6:
            name = LONG_NAME if n % 21 == 20 else f"pet {n}"
            connection.request("POST", "/pets", json.dumps({"name": name, "kind": "cat"}), headers)
        elif n % 7 == 5:
            connection.request("GET", "/pets?limit=2", headers=headers)
        else:
            connection.request("GET", f"/pets/{n % 5 + 1}", headers=headers)
        connection.getresponse().read()
    connection.close()


def _journal(port: int, query: str, session: str) -> list[dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", f"/__mock/requests{query}", headers={"X-Mock-Session": session})
    response = connection.getresponse()
    found = json.loads(response.read())
    connection.close()
    assert response.status == 200, found
    return list(found["requests"])


@pytest.fixture()
def pets_on_redis(redis_url: str) -> Iterator[tuple[int, redis.Redis]]:
    """`mockserver serve --stateful` of the pets sharing a real Redis: its port, and a client of that Redis."""
    with serving("--spec", str(PETS / "openapi.yaml"), "--fixtures", str(PETS / "fixtures"), "--stateful",
                 "--state", redis_url, "--log-level", "warning") as (_, port), \
            redis.Redis.from_url(redis_url.split("?")[0]) as store:
        yield port, store


@pytest.mark.slow  # a server and a redis-server
def test_a_limited_read_on_redis_takes_only_the_newest_entries(pets_on_redis):
    """`GET /__mock/requests?limit=10` of a session of 500 entries reads those ten (and the bodies they name) from
    Redis, not the whole journal: the same ten entries, a small part of the bytes."""
    port, store = pets_on_redis
    _traffic(port, 500, "big")
    everything = _journal(port, "", "big")
    assert len(everything) == 500

    def read(query: str) -> tuple[list[dict[str, Any]], int]:
        before = store.info("stats")["total_net_output_bytes"]
        found = _journal(port, query, "big")
        return found, store.info("stats")["total_net_output_bytes"] - before

    page, moved = read("?limit=10")
    _, whole = read("")
    assert page == everything[-10:]
    assert whole > 200_000 and moved < whole / 10, (moved, whole)
    newer, moved = read(f"?since={everything[-4]['id']}")
    assert newer == everything[-3:] and moved < whole / 10, moved


_OWN = re.compile(r'req_[0-9a-f]+|"nextCursor":"[^"]*"|"createdAt":"[^"]*"')  # each server's own: ids, time, secret


@pytest.mark.slow  # two servers and a redis-server
def test_a_filtered_or_limited_read_answers_the_same_on_redis_as_in_memory(redis_url):
    """Whatever a journal read asks (a page, entries since an id, filters, together or not, odd numbers too), the
    mock answers it the same on Redis, which reads only a page where it can, as on the memory store."""
    answers = []
    with ExitStack() as stack:
        for state in ("memory", redis_url):
            _, port = stack.enter_context(serving("--spec", str(PETS / "openapi.yaml"), "--fixtures",
                                                  str(PETS / "fixtures"), "--stateful", "--state", state,
                                                  "--log-level", "warning"))
            _traffic(port, 60, "s")
            _traffic(port, 5, "other")
            queries = ["", "?limit=1", "?limit=10", "?limit=1000", "?limit=0", "?limit=-3", "?since=30",
                       "?since=30&limit=4", "?since=-5&limit=2", "?since=64", f"?since={10**30}&limit={10**30}",
                       "?status=404", "?status=404&limit=3", "?method=post&limit=2", "?path=/pets/1&since=40",
                       "?operationId=listPets&limit=2&since=20"]
            answers.append({query: [(e["id"], e["method"], e["path"], e["query"], e["status"], e["session"],
                                     e["requestBody"], _OWN.sub("…", e["responseBody"] or ""), e["operationId"])
                                    for e in _journal(port, query, "s")] for query in queries})
    memory, on_redis = answers
    assert len(memory["?limit=10"]) == 10 and len(memory[""]) == 60 and memory["?since=64"] == []
    assert on_redis == memory
