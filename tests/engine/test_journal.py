"""The request journal: newest last, filtered, bounded, credentials masked."""
from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, body
from mockserver import create_app
from mockserver.spec.secrets import mask
from mockserver.state.journal import Journal
from mockserver.state.memory import MemoryStore
from mockserver.web.app import pipeline_of


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
