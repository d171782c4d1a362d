"""The mock under gunicorn, as `mockserver serve` runs it: limits answered in the envelope, SIGTERM drains."""
import http.client
import json
import os
import signal
import socket
import threading
import time

import pytest

from conftest import serving


@pytest.fixture()
def server():
    with serving("--workers", "2", "--threads", "4", "--state", "memory", "--log-level", "warning") as started:
        yield started


def call(port: int, path: str, headers: dict[str, str] | None = None, body: bytes | None = None,
         method: str = "GET") -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(method, path, body=body, headers={"Authorization": "Bearer demo-token", **(headers or {})})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


@pytest.mark.parametrize("path, headers, body, status, code", [
    ("/v1/test-sets?name=" + "a" * 20000, {}, None, 414, "uri-too-long"),
    ("/v1/test-sets", {"X-Long": "y" * 20000}, None, 431, "header-too-large"),
    ("/v1/test-sets", {"Content-Type": "application/json"}, b"x" * (2 * 1024 * 1024), 413, "payload-too-large"),
    ("/v1/test-sets?limit=1&limit=2", {}, None, 400, "bad-input"),
    ("/v1/test-sets?name=%ff%fe", {}, None, 400, "bad-input"),
    ("/v1/agents/%C0%AF/test-set/cases?projectId=2489e9ad-2ee2-8e00-8ec9-32d5f69181c0", {}, None, 400, "bad-input"),
    ("/v1/../fixtures/kindgi.yaml", {}, None, 404, "not-found"),
    ("/v1/test-sets", {"X-Request-Id": "evil\\r\\nSet-Cookie: x=1"}, None, 200, None),
], ids=["long-url", "long-header", "big-body", "repeated", "bad-utf8-query", "overlong-utf8-path", "dotdot", "crlf-id"])
def test_bad_requests_get_a_clear_4xx_in_the_envelope(server, path, headers, body, status, code):
    _, port = server
    got, payload = call(port, path, headers, body, "POST" if body else "GET")
    if body:
        assert got == 413 or got == 405  # POST is not declared; the size is refused before routing
    else:
        assert got == status
    if code:
        assert payload["error"]["code"] == (code if got == status else payload["error"]["code"])
        assert payload["error"]["requestId"].startswith("req_")


@pytest.mark.parametrize("raw, status", [
    (b"GET /v1/test-sets HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n", 400),
    (b"G(T /v1/test-sets HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"GET /v1/test-sets HTTP/7.1\r\nHost: x\r\n\r\n", 400),
    (b"GET /v1/test-sets HTTP/1.1\r\nHost: x\r\nX-Huge: " + b"y" * (1024 * 1024 + 10) + b"\r\n\r\n", 431),
], ids=["header-name", "method", "version", "header-over-1-mib"])
def test_requests_gunicorn_cannot_read_are_refused_in_the_envelope_not_its_html_page(server, raw, status):
    _, port = server
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(raw)
        response = http.client.HTTPResponse(sock)
        response.begin()
        payload = json.loads(response.read())
    assert response.status == status and response.getheader("Content-Type") == "application/json"
    assert payload["error"]["requestId"] == response.getheader("X-Request-Id")
    assert payload["error"]["message"].startswith("the request cannot be read: ")


def test_sigterm_drains_in_flight_requests_and_exits_0(server):
    proc, port = server
    result: dict[str, int] = {}

    def slow_call() -> None:
        # acme.slow takes 1.5 s (a fixture scenario), then answers 404 agent-not-found
        result["status"] = call(port, "/v1/agents/acme.slow/test-set/cases?projectId="
                                      "2489e9ad-2ee2-8e00-8ec9-32d5f69181c0")[0]

    thread = threading.Thread(target=slow_call)
    thread.start()
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGTERM)
    thread.join(timeout=20)
    assert result.get("status") == 404
    assert proc.wait(timeout=20) == 0


def test_a_worker_holding_a_connection_per_thread_takes_one_more_now_and_then(monkeypatch):
    """gthread workers share one listening socket; one that already holds a connection per thread takes at most
    one more every FAIR_SHARE_WAIT_S (so idle workers take the next ones), unless it is the only worker."""
    from types import SimpleNamespace

    from gunicorn.workers import gthread

    from mockserver.web import serving

    now = [100.0]
    monkeypatch.setattr(serving.time, "monotonic", lambda: now[0])

    def accept(worker, listener):
        worker.nr_conns += 1

    monkeypatch.setattr(gthread.ThreadWorker, "accept", accept)
    worker = serving.ThreadWorker.__new__(serving.ThreadWorker)
    worker.cfg = SimpleNamespace(threads=2, workers=2)
    worker.worker_connections = 1000  # what gthread's __init__ sets from its config
    worker.nr_conns = 0
    worker.accept(None)
    assert worker.worker_connections == 1000
    worker.accept(None)  # now one connection per thread
    assert worker.worker_connections == 0  # the next one is left to the others for a moment
    now[0] += serving.FAIR_SHARE_WAIT_S / 2
    assert worker.worker_connections == 0
    now[0] += serving.FAIR_SHARE_WAIT_S
    assert worker.worker_connections == 1000  # nobody took it: this worker may
    worker.accept(None)
    assert worker.worker_connections == 0  # and waits again before the one after
    worker.cfg.workers = 1
    now[0] += serving.FAIR_SHARE_WAIT_S
    worker.accept(None)
    assert worker.worker_connections == 1000  # alone: no one to leave them to
