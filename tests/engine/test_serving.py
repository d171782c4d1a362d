"""The mock on Granian, as `mockserver serve` runs it: limits answered in the envelope, what Granian refuses
itself, broken connections on purpose, slow clients, SIGTERM drains."""
import http.client
import json
import os
import resource
import selectors
import signal
import socket
import threading
import time
from contextlib import ExitStack

import pytest

from conftest import DEMO, SAMPLE_PROJECT, serving

pytestmark = pytest.mark.slow  # servers in other processes, or whole contract runs: `-m 'not slow'` skips them


@pytest.fixture(scope="module")
def two_workers():
    """Limits and refusals need no shared state: two workers of the memory store, accepted as such."""
    with serving("--workers", "2", "--threads", "4", "--state", "memory", "--log-level", "warning") as started:
        yield started


@pytest.fixture()
def one_worker():
    """The tests that set a scenario talk to one worker of the memory store (tests/engine/test_scale_out.py shares one
    between workers through Redis)."""
    with serving("--log-level", "warning") as started:
        yield started


def call(port: int, path: str, headers: dict[str, str] | None = None, body: bytes | None = None,
         method: str = "GET") -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(method, path, body=body, headers={**DEMO, **(headers or {})})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def raw(port: int, data: bytes) -> tuple[bytes, bytes]:
    """Send bytes as they are; the response's head and body, read until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    return head, rest


@pytest.mark.parametrize("path, headers, body, status, code", [
    ("/v1/test-sets?name=" + "a" * 20000, {}, None, 414, "uri-too-long"),
    ("/v1/test-sets", {"X-Long": "y" * 20000}, None, 431, "header-too-large"),
    ("/v1/test-sets", {"Content-Type": "application/json"}, b"x" * (2 * 1024 * 1024), 413, "payload-too-large"),
    ("/v1/test-sets?limit=1&limit=2", {}, None, 400, "bad-input"),
    ("/v1/test-sets?name=%ff%fe", {}, None, 400, "bad-input"),
    ("/v1/agents/%C0%AF/test-set/cases?projectId=" + SAMPLE_PROJECT, {}, None, 400, "bad-input"),
    ("/v1/../fixtures/kindgi.yaml", {}, None, 404, "not-found"),
    ("/v1/test-sets", {"X-Request-Id": "evil\\r\\nSet-Cookie: x=1"}, None, 200, None),
], ids=["long-url", "long-header", "big-body", "repeated", "bad-utf8-query", "overlong-utf8-path", "dotdot", "crlf-id"])
def test_bad_requests_get_a_clear_4xx_in_the_envelope(two_workers, path, headers, body, status, code):
    _, port = two_workers
    got, payload = call(port, path, headers, body)  # Kindgi's operations are GETs: a body too large on one too
    assert got == status
    if code:
        assert payload["error"]["code"] == code
        assert payload["error"]["requestId"].startswith("req_")


@pytest.mark.parametrize("request_bytes, status", [
    (b"GET /v1/test-sets HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n", b"400 Bad Request"),
    (b"G(T /v1/test-sets HTTP/1.1\r\nHost: x\r\n\r\n", b"400 Bad Request"),
    (b"GET /v1/test-sets HTTP/7.1\r\nHost: x\r\n\r\n", b"400 Bad Request"),
    (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 64, b"400 Bad Request"),  # TLS to a plain port
    (b"GET /v1/test-sets?q=" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"414 URI Too Long"),
    (b"GET /v1/test-sets HTTP/1.1\r\nHost: x\r\nX-Huge: " + b"y" * 2_000_000 + b"\r\n\r\n",
     b"431 Request Header Fields Too Large"),
    (b"GET /v1/test-sets HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: v\r\n" % n for n in range(120)) + b"\r\n",
     b"431 Request Header Fields Too Large"),
], ids=["header-name", "method", "version", "tls", "line-over-64-kib", "head-over-2-mib", "over-100-headers"])
def test_requests_granian_cannot_read_get_a_bare_status_never_a_page_or_a_traceback(two_workers, request_bytes,
                                                                                      status):
    _, port = two_workers
    head, body = raw(port, request_bytes)
    lines = head.split(b"\r\n")
    assert lines[0] == b"HTTP/1.1 " + status
    assert b"content-length: 0" in lines and b"connection: close" in lines
    assert body == b""


@pytest.mark.parametrize("kind, share, tries", [("close", 0, 100), ("truncate", 0.5, 10)])
def test_a_scenario_breaks_the_connection_over_a_real_socket(one_worker, kind, share, tries):
    """`close` ends the connection before any byte of the body, `truncate` after half of it, every time (`close`
    once gave a complete, empty 200 in most tries); Granian may have written the status line and headers before
    (a client sees the connection drop either way). The journal says the call was broken and keeps only what was
    sent."""
    proc, port = one_worker
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("POST", "/__mock/scenarios", body=json.dumps({"operationId": "listTestSets", "break": kind}),
                       headers={"Content-Type": "application/json"})
    assert connection.getresponse().status == 201
    connection.close()
    for _ in range(tries):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET /v1/test-sets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer demo-token\r\n\r\n")
            received = b""
            while chunk := sock.recv(65536):  # until the server closes: a kept connection times out here
                received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        if head:
            announced = int(next(line for line in head.split(b"\r\n") if line.startswith(b"content-length:"))[15:])
            assert announced > 0 and len(body) == int(announced * share)
        else:
            assert kind == "close" and received == b""
    status, journal = call(port, "/__mock/requests?operationId=listTestSets")
    assert status == 200 and len(journal["requests"]) == tries
    for entry in journal["requests"]:
        assert entry["scenarioId"] and entry["status"] == 200 and entry["broken"] == kind
        assert (entry["responseBody"] or "") == (body.decode("utf-8", "replace") if kind == "truncate" else "")


def test_stalled_clients_do_not_hold_up_a_normal_request(one_worker):
    """200 connections each send half a request and wait; under gunicorn nine such stalled every thread."""
    _, port = one_worker
    with ExitStack() as stack:
        for _ in range(200):
            stalled = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10))
            stalled.sendall(b"GET /v1/test-sets HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        status, page = call(port, "/v1/test-sets?limit=1")
        took = time.monotonic() - started
    assert status == 200 and len(page["data"]) == 1
    assert took < 2, f"a normal request took {took:.2f} s with 200 stalled connections open"


SLOW_UPLOADS = 2000
SLOW_UPLOAD = (b"POST /v1/test-sets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: 1000000\r\n\r\n{")


@pytest.fixture()
def many_files():
    """The test opens thousands of sockets: its soft limit of descriptors raised to the hard one meanwhile."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < SLOW_UPLOADS + 500:
        pytest.skip(f"2,000 sockets need more descriptors than the hard limit of {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def answers(socks: list[socket.socket], count: int, within: float) -> dict[socket.socket, bytes]:
    """What the server sent on the first `count` of the sockets to close, each read until it closed, waiting at
    most `within` s."""
    chosen = selectors.DefaultSelector()
    received: dict[socket.socket, bytes] = {}
    for sock in socks:
        sock.setblocking(False)
        chosen.register(sock, selectors.EVENT_READ)
    ended: dict[socket.socket, bytes] = {}
    deadline = time.monotonic() + within
    while len(ended) < count and time.monotonic() < deadline:
        for key, _ in chosen.select(0.2):
            sock = key.fileobj
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if chunk:
                received[sock] = received.get(sock, b"") + chunk
            else:
                chosen.unregister(sock)
                ended[sock] = received.get(sock, b"")
    chosen.close()
    return ended


def test_slow_uploads_neither_stall_the_server_nor_stay_open(many_files):
    """2,000 clients send a request's head announcing a 1 MB body, then one byte, then nothing (they used to
    fill Granian's 1,024 connection slots: every other request waited). A normal request still answers at once;
    the bodies past --backpressure are refused 503 mock-busy at once, the others 408 after --body-timeout, and
    every slow connection is closed."""
    with serving("--log-level", "warning", "--body-timeout", "2", "--backpressure", "1000") as (_, port):
        with ExitStack() as stack:
            socks = []
            opened = time.monotonic()
            for _ in range(SLOW_UPLOADS):
                sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10))
                sock.sendall(SLOW_UPLOAD)
                socks.append(sock)
            refused = answers(socks, SLOW_UPLOADS - 1000, within=10)  # the server has taken every head in
            took = []
            for _ in range(5):
                started = time.monotonic()
                status, page = call(port, "/v1/test-sets?limit=1")
                took.append(time.monotonic() - started)
                assert status == 200 and len(page["data"]) == 1
            timed_out = answers([sock for sock in socks if sock not in refused], 1000, within=10)
            ended = time.monotonic() - opened
    assert sorted(took)[2] < 0.1 and max(took) < 1, f"normal requests took {took} s beside 2,000 slow uploads"
    assert len(refused) == 1000 and len(timed_out) == 1000 and 2 <= ended < 6
    for answers_of, status, code in [(refused, b"503 Service Unavailable", "mock-busy"),
                                     (timed_out, b"408 Request Timeout", "request-timeout")]:
        answer = next(iter(answers_of.values()))
        head, _, payload = answer.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        assert lines[0] == b"HTTP/1.1 " + status and b"connection: close" in lines
        assert json.loads(payload)["error"]["code"] == code
    assert all(answer.startswith(b"HTTP/1.1 503") for answer in refused.values())
    assert all(answer.startswith(b"HTTP/1.1 408") for answer in timed_out.values())


def test_slow_scenario_answers_hold_no_thread_and_do_not_hold_up_the_others(one_worker):
    """A scenario's latency waits on the worker's event loop: eight slow answers at once (more than its 2 threads)
    all end after their 1.5 s, and a normal request beside them answers at once."""
    _, port = one_worker
    ended: list[float] = []
    began = time.monotonic()

    def slow() -> None:
        call(port, f"/v1/agents/acme.slow/test-set/cases?projectId={SAMPLE_PROJECT}")  # 1.5 s (a fixture scenario)
        ended.append(time.monotonic() - began)

    slow_calls = [threading.Thread(target=slow) for _ in range(8)]
    for thread in slow_calls:
        thread.start()
    time.sleep(0.3)
    started = time.monotonic()
    status, _ = call(port, "/v1/test-sets?limit=1")
    took = time.monotonic() - started
    for thread in slow_calls:
        thread.join(timeout=20)
    assert status == 200 and took < 1, f"a normal request took {took:.2f} s beside eight slow ones"
    assert len(ended) == 8 and max(ended) < 3, f"eight slow answers of 1.5 s ended after {sorted(ended)} s"


def test_sigterm_drains_in_flight_requests_and_exits_0(one_worker):
    proc, port = one_worker
    result: dict[str, int] = {}

    def slow_call() -> None:
        # acme.slow takes 1.5 s (a fixture scenario), then answers 404 agent-not-found
        result["status"] = call(port, f"/v1/agents/acme.slow/test-set/cases?projectId={SAMPLE_PROJECT}")[0]

    thread = threading.Thread(target=slow_call)
    thread.start()
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGTERM)
    thread.join(timeout=20)
    assert result.get("status") == 404
    assert proc.wait(timeout=20) == 0
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()  # nobody listens any more
