"""`mockserver proxy`: answers pass unchanged, drift is counted exactly, and the mock answers when the target cannot."""
import time

import pytest
from werkzeug.test import Client

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, SAMPLE_PROJECT, body
from mockserver import create_app
from mockserver.core.pipeline import Pipeline
from mockserver.web.app import MockWSGI
from mockserver.web.proxy import Proxy
from stand_ins import Served, drifting, not_implemented

CASES = f"/v1/agents/acme.drafting/test-set/cases?projectId={SAMPLE_PROJECT}"


def proxy_client(target: str, **options):
    return create_app(KINDGI_SPEC, KINDGI_FIXTURES, proxy=Proxy(target, **options)).test_client()


def test_answers_pass_unchanged_and_drift_is_counted_exactly(kindgi_app, kindgi):
    target = Served(drifting(kindgi_app))
    client = proxy_client(target.url)
    for _ in range(2):
        page = client.get("/v1/test-sets?limit=5", headers=DEMO)
        assert page.status_code == 200 and "X-Request-Id" not in page.headers
        assert [item["kind"] for item in body(page)["data"][1:3]] == ["weird", "weird"]
    assert client.get("/v1/test-sets?limit=500", headers=DEMO).status_code == 400
    teapot = client.get(CASES, headers=DEMO)
    assert (teapot.status_code, body(teapot)) == (418, {"teapot": True})
    busy = client.get("/v1/test-sets", headers={**DEMO, "Prefer": "code=503"})
    assert busy.status_code == 503 and "Retry-After" not in busy.headers
    assert client.get("/v2/nowhere", headers=DEMO).status_code == 404
    clean = client.get("/v1/test-sets/acme.drafting.corrections/versions/1.1.0/cases?limit=2", headers=DEMO)
    assert clean.status_code == 200

    drift = body(client.get("/__mock/drift"))
    assert (drift["exchanges"], drift["drifting"], drift["overflow"]) == (7, 6, 0)
    rows = {(r["operationId"], r["status"], r["in"], r["pointer"], r["rule"]): r["count"] for r in drift["violations"]}
    assert rows == {
        ("listTestSets", 200, "response", "/body/data/*/kind", "enum"): 2,
        ("listTestSets", 200, "response", "/headers/X-Request-Id", "required"): 2,
        ("listTestSets", 400, "request", "/query/limit", "maximum"): 1,
        ("listAgentTestSetCases", 418, "response", "/status", "status"): 1,
        ("listTestSets", 503, "response", "/headers/Retry-After", "required"): 1,
        (None, 404, "request", "/path", "path"): 1,
    }
    first = drift["violations"][0]
    assert first["path"] == "/v1/test-sets" and first["example"]["pointer"] == "/body/data/1/kind"
    assert first["example"]["request"] == "GET /v1/test-sets?limit=5" and "weird" in first["example"]["message"]
    sources = [(e["path"], e["status"], e["source"]) for e in body(client.get("/__mock/requests"))["requests"]]
    assert sources[0] == ("/v1/test-sets", 200, "proxy-drift")
    assert sources[-1] == ("/v1/test-sets/acme.drafting.corrections/versions/1.1.0/cases", 200, "proxy")

    assert client.delete("/__mock/drift", json={}).status_code == 200
    assert body(client.get("/__mock/drift"))["violations"] == []
    assert kindgi.get("/__mock/drift").status_code == 404  # only in proxy mode
    target.stop()


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    return Pipeline.load(KINDGI_SPEC, KINDGI_FIXTURES)


def slow(environ, start_response):
    time.sleep(1)
    return not_implemented(environ, start_response)


@pytest.mark.parametrize("app, timeout, status, code", [
    (None, 5, 502, "bad-gateway"),
    (not_implemented, 5, 501, None),
    (slow, 0.2, 504, "gateway-timeout"),
], ids=["stopped", "501", "timeout"])
@pytest.mark.parametrize("fallback", [True, False], ids=["fallback", "no-fallback"])
def test_the_mock_answers_when_the_target_cannot(pipeline, kindgi, app, timeout, status, code, fallback):
    target = Served(app or not_implemented)
    if app is None:
        target.stop()  # nothing listens there any more: connection refused
    proxy = Proxy(target.url, fallback=fallback, timeout=timeout)
    answer = Client(MockWSGI(pipeline, None, handle=proxy.handle)).get("/v1/test-sets?limit=3", headers=DEMO)
    source = pipeline.journal.entries()[-1].source
    if fallback:
        assert answer.status_code == 200 and source == "fallback"
        assert body(answer)["data"] == body(kindgi.get("/v1/test-sets?limit=3", headers=DEMO))["data"]
    elif code:  # no answer at all: a gateway error in the API's envelope
        assert answer.status_code == status and body(answer)["error"]["code"] == code
        assert answer.headers["X-Request-Id"] == body(answer)["error"]["requestId"]
    else:  # a 501 is an answer: passed on as it came
        assert (answer.status_code, body(answer)) == (501, {"error": "not yet"})
        assert source == "proxy-drift"
    if app is not None:
        target.stop()
