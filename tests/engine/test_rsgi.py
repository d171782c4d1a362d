"""The RSGI adapter (web/rsgi.py, what `mockserver serve` runs under Granian) in process: `__rsgi__(scope, proto)`
driven with a small double of Granian's RSGI scope and HTTP protocol, written from the RSGI spec (a scope with
`method`, `path` (percent-decoded), `query_string` and `headers`; a protocol that is iterated for the body's chunks
and answered once with `response_bytes`/`response_empty`, or `response_stream` and `send_bytes`). The servers in
other processes (tests/engine/test_serving.py) stay the proof of Granian itself."""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mockserver import create_app
from mockserver.web.rsgi import MockRSGI

PETS = Path(__file__).resolve().parents[1] / "data" / "pets"
ORIGIN = "http://localhost:5173"


class Headers:
    """Granian's `RSGIHeaders`: names lower-case, a repeated header once per value in `items()`."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._pairs = [(name.lower(), value) for name, value in pairs]

    def items(self) -> list[tuple[str, str]]:
        return list(self._pairs)

    def keys(self) -> list[str]:
        return [name for name, _ in self._pairs]

    def __contains__(self, name: str) -> bool:
        return name in self.keys()

    def get(self, name: str, default: Any = None) -> Any:
        return next((value for key, value in self._pairs if key == name), default)


@dataclass
class Scope:
    method: str
    path: str
    query_string: str = ""
    headers: Headers = field(default_factory=lambda: Headers([]))
    proto: str = "http"
    http_version: str = "1.1"
    rsgi_version: str = "1.5"
    server: str = "127.0.0.1:4010"
    client: str = "127.0.0.1:50123"
    scheme: str = "http"
    authority: str | None = None


class Stream:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    async def send_bytes(self, data: bytes) -> None:
        self.sent.append(data)


class Protocol:
    """One request's protocol: its body arrives in `chunks` (`stall` seconds before the last one); the answer is
    kept as status, headers and what was sent."""

    def __init__(self, chunks: tuple[bytes, ...] = (), stall: float = 0.0) -> None:
        self.chunks, self.stall = chunks, stall
        self.status: int | None = None
        self.headers: list[tuple[str, str]] = []
        self.body = b""
        self.stream: Stream | None = None

    async def __call__(self) -> bytes:
        return b"".join([chunk async for chunk in self])

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for number, chunk in enumerate(self.chunks):
            if self.stall and number == len(self.chunks) - 1:
                await asyncio.sleep(self.stall)
            yield chunk

    def _answer(self, status: int, headers: list[tuple[str, str]]) -> None:
        assert self.status is None, "answered twice"
        self.status, self.headers = status, headers

    def response_empty(self, status: int, headers: list[tuple[str, str]]) -> None:
        self._answer(status, headers)

    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self._answer(status, headers)
        self.body = body

    def response_str(self, status: int, headers: list[tuple[str, str]], body: str) -> None:
        self.response_bytes(status, headers, body.encode())

    def response_stream(self, status: int, headers: list[tuple[str, str]]) -> Stream:
        self._answer(status, headers)
        self.stream = Stream()
        return self.stream

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)

    def json(self) -> Any:
        return json.loads(self.body)


@pytest.fixture()
def rsgi() -> Iterator[MockRSGI]:
    app = MockRSGI.of(create_app(PETS / "openapi.yaml", PETS / "fixtures"), threads=2, body_timeout=0.3,
                      max_bodies=4)
    yield app
    app.__rsgi_del__(asyncio.new_event_loop())


def call(app: MockRSGI, method: str, path: str, headers: list[tuple[str, str]] = (), chunks: tuple[bytes, ...] = (),
         query: str = "", stall: float = 0.0) -> Protocol:
    """One request; a body is announced by its length unless `headers` say how (as a client does)."""
    sent = list(headers)
    if chunks and not {"content-length", "transfer-encoding"} & {name.lower() for name, _ in sent}:
        sent.append(("Content-Length", str(sum(map(len, chunks)))))
    proto = Protocol(chunks, stall)
    asyncio.run(app.__rsgi__(Scope(method, path, query, Headers(sent)), proto))
    return proto


def scenario(app: MockRSGI, **given: Any) -> None:
    made = call(app, "POST", "/__mock/scenarios", [("Content-Type", "application/json")], (json.dumps(given).encode(),))
    assert made.status == 201, made.body


def test_a_body_in_chunks_is_read_whole_and_answered(rsgi):
    sent = b'{"name": "Rex", "kind": "dog"}'
    made = call(rsgi, "POST", "/pets", [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")],
                (sent[:5], sent[5:17], sent[17:]))
    assert made.status == 201 and made.json()["name"] == "Rex"
    assert made.header("Content-Length") == str(len(made.body))
    listed = call(rsgi, "GET", "/pets", query="kind=dog")
    assert [pet["name"] for pet in listed.json()["data"]] == ["Bo", "Rex"]


def test_a_body_that_stalls_past_the_deadline_is_a_408_in_the_envelope(rsgi):
    refused = call(rsgi, "POST", "/pets", [("Content-Type", "application/json"), ("Content-Length", "30")],
                   (b'{"name": ', b'"Rex"}'), stall=5)
    assert refused.status == 408 and refused.json()["error"]["code"] == "request-timeout"
    assert ("Connection", "close") in refused.headers


def test_repeated_headers_reach_the_mock_joined_as_wsgi_joins_them(rsgi):
    call(rsgi, "GET", "/pets", [("X-Trace", "first"), ("X-Trace", "second")])
    journal = call(rsgi, "GET", "/__mock/requests").json()["requests"]
    assert journal[-1]["requestHeaders"]["x-trace"] == "first, second"


@pytest.mark.parametrize("kind, sent", [("close", []), ("truncate", ["half"])])
def test_a_break_announces_the_whole_body_and_ends_it_short(rsgi, kind, sent):
    whole = call(rsgi, "GET", "/pets/1")
    scenario(rsgi, operationId="getPet", **{"break": kind})
    broken = call(rsgi, "GET", "/pets/1")
    assert broken.status == 200 and broken.header("Content-Length") == str(len(whole.body))
    assert broken.stream is not None and broken.stream.sent[0] == b""  # Granian sends the head, then gives up
    expected = [whole.body[: len(whole.body) // 2]] if sent else []
    assert broken.stream.sent[1:] == expected


def test_a_latency_is_awaited_on_the_loop_so_slow_answers_overlap(rsgi):
    """Six answers of 0.4 s at once take about 0.4 s, not 2.4 s: the wait holds no thread and blocks no loop."""
    scenario(rsgi, operationId="listPets", latency=400)
    protos = [Protocol() for _ in range(6)]

    async def all_at_once() -> None:
        await asyncio.gather(*(rsgi.__rsgi__(Scope("GET", "/pets"), proto) for proto in protos))

    started = time.monotonic()
    asyncio.run(all_at_once())
    took = time.monotonic() - started
    assert [proto.status for proto in protos] == [200] * 6
    assert 0.4 <= took < 1.2, took


def test_the_control_api_answers_through_its_prefix_and_names_a_path_as_sent(rsgi):
    assert call(rsgi, "GET", "/__mock/health").json()["status"] == "ok"
    assert "no operation at /__mockery" in call(rsgi, "GET", "/__mockery").json()["error"]["message"]  # the mock's
    missing = call(rsgi, "GET", "/__mock/\ufffd")  # Granian's decoding of /__mock/%ff
    assert missing.status == 404 and missing.header("Content-Type") == "application/json"
    message = missing.json()["error"]["message"]
    assert "/__mock/%FF" in message and "\ufffd" not in message, message
    refused = call(rsgi, "PUT", "/__mock/reset")
    assert refused.status == 405 and refused.header("Allow") == "POST"


def test_preflights_are_answered_for_the_api_and_for_the_pages_the_control_api_lets_in(rsgi):
    asked = [("Origin", ORIGIN), ("Access-Control-Request-Method", "POST"), ("Host", "localhost:4010")]
    api = call(rsgi, "OPTIONS", "/pets", asked)
    assert api.status == 204 and api.header("Access-Control-Allow-Origin") == ORIGIN
    control = call(rsgi, "OPTIONS", "/__mock/scenarios", [*asked[:2], ("Host", "localhost:5173")])
    assert control.status == 204 and "POST" in (control.header("Access-Control-Allow-Methods") or "")
    other = call(rsgi, "OPTIONS", "/__mock/scenarios", asked)
    assert other.status == 403 and other.header("Access-Control-Allow-Origin") is None
