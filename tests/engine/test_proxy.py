"""`mockserver proxy`: answers pass unchanged, drift is counted exactly, and the mock answers when the target cannot."""
import http.client
import subprocess
import sys
import time
import urllib.request

import pytest
from werkzeug.test import Client

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, ROOT, SAMPLE_PROJECT, body, free_port, serving
from mockserver import create_app
from mockserver.cli import main
from mockserver.pipeline.pipeline import Pipeline
from mockserver.web.mock_app import MockApp
from mockserver.web.proxy import Proxy
from mockserver.web.wsgi import MockWSGI
from stand_ins import Served, drifting, get, not_implemented

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
    answer = Client(MockWSGI(MockApp(pipeline, handle=proxy.handle))).get("/v1/test-sets?limit=3", headers=DEMO)
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


class Recorded:
    """A target on loopback that answers 200 and keeps what reached it: method, path as sent, headers."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.served = Served(self.app)

    def app(self, environ, start_response):
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        self.seen.append((environ["REQUEST_METHOD"], environ.get("RAW_URI") or environ["REQUEST_URI"], headers))
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b"{}"]


@pytest.fixture()
def recorded():
    target = Recorded()
    yield target
    target.served.stop()


@pytest.mark.parametrize("path", ["/%2e%2e/%2e%2e/admin", "/v1/%2E%2E%2f..%2f..%2fadmin", "/v1/..%5c..%5cadmin",
                                  "/v1/..;/..;/admin", "/v1/../../admin"])
def test_a_path_that_leaves_the_targets_base_path_is_refused_and_never_forwarded(recorded, path):
    client = proxy_client(recorded.served.url + "/base")
    refused = client.get(path, headers=DEMO)
    assert refused.status_code == 400 and body(refused)["error"]["code"] == "path-outside-target"
    assert recorded.seen == []
    inside = client.get("/v1/nowhere/../test-sets?limit=1", headers=DEMO)  # dot segments that stay: resolved
    assert inside.status_code == 200 and [s[1] for s in recorded.seen] == ["/base/v1/test-sets?limit=1"]


def test_mock_headers_never_reach_the_target(recorded):
    client = proxy_client(recorded.served.url)
    sent = {**DEMO, "X-Mock-Control-Token": "control-secret", "X-Mock-Session": "s1", "x-MOCK-whatever": "1"}
    for name, value in [("theme", "dark"), ("mock_session", "s-secret"), ("lang", "en")]:
        client.set_cookie(name, value)
    assert client.get("/v1/test-sets", headers=sent).status_code == 200
    only_session = proxy_client(recorded.served.url)
    only_session.set_cookie("mock_session", "s-secret")
    assert only_session.get("/v1/test-sets", headers=DEMO).status_code == 200
    (_, _, headers), (_, _, only_session_headers) = recorded.seen
    assert headers["authorization"] == DEMO["Authorization"]
    assert [name for name in headers if name.startswith("x-mock")] == []
    assert headers["cookie"] == "theme=dark; lang=en" and "cookie" not in only_session_headers


@pytest.mark.parametrize("method", ["FOO", "CONNECT", "TRACE", "get"])
def test_methods_http_does_not_define_get_405_and_never_reach_the_target(recorded, method):
    answer = proxy_client(recorded.served.url).open("/v1/test-sets", method=method, headers=DEMO)
    assert answer.status_code == 405
    assert answer.headers["Allow"] == "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
    assert body(answer)["error"]["requestId"] == answer.headers["X-Request-Id"]
    assert recorded.seen == []
    assert proxy_client(recorded.served.url).open("/v1/test-sets", method="PATCH", headers=DEMO).status_code == 200
    assert [s[0] for s in recorded.seen] == ["PATCH"]


@pytest.mark.slow
def test_the_command_on_granian_forwards_only_what_the_target_should_see(recorded):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mockserver", "proxy", "--target", recorded.served.url + "/base",
                             "--port", str(port), "--log-level", "warning"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def send(method: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, http.client.HTTPMessage]:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            connection.request(method, path, headers={**DEMO, **(headers or {})})
            answer = connection.getresponse()
            answer.read()
            return answer.status, answer.headers
        finally:
            connection.close()

    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, _ = send("GET", "/v1/test-sets?limit=1", {"X-Mock-Control-Token": "control-secret"})
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)
        assert status == 200
        assert send("GET", "/%2e%2e/%2e%2e/admin")[0] == 400
        assert send("GET", "/v1/..%2f..%2fadmin")[0] == 400
        refused, headers = send("FOO", "/v1/test-sets")
        assert refused == 405 and headers["Allow"].startswith("GET, HEAD")
        (method, path, seen), = recorded.seen
        assert (method, path) == ("GET", "/base/v1/test-sets?limit=1") and "x-mock-control-token" not in seen
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_two_workers_on_one_redis_count_drift_together(kindgi_app, redis_url):
    """Each worker adds to the counts in the store, so every call of /__mock/drift, whichever worker answers it,
    is the same whole report."""
    target = Served(drifting(kindgi_app))
    with serving("--target", target.url, "--workers", "2", "--state", redis_url, "--log-level", "warning",
                 command="proxy") as (_, port):
        url = f"http://127.0.0.1:{port}"
        assert [get(url, "/v1/test-sets?limit=5")[0] for _ in range(8)] == [200] * 8  # a connection each
        reports = [get(url, "/__mock/drift")[2] for _ in range(6)]
        reset = urllib.request.Request(url + "/__mock/reset", b"{}", {"Content-Type": "application/json"})
        urllib.request.urlopen(reset, timeout=10).close()
        assert [get(url, "/__mock/drift")[2]["exchanges"] for _ in range(4)] == [0] * 4  # a reset forgets it all
    assert all(report == reports[0] for report in reports)
    assert (reports[0]["exchanges"], reports[0]["drifting"]) == (8, 8)
    assert {row["pointer"]: row["count"] for row in reports[0]["violations"]} == {
        "/body/data/*/kind": 8, "/headers/X-Request-Id": 8}
    target.stop()


def test_two_proxy_workers_without_a_shared_store_are_refused(capsys):
    assert main(["proxy", "--target", "http://127.0.0.1:9", "--port", str(free_port()), "--workers", "2"]) == 2
    said = capsys.readouterr().err
    assert "--state redis://" in said and "drift counts" in said and len(said.strip().splitlines()) == 1
