"""A stateful mock under a test farm's load stays bounded (issue 35): a session idle past `--session-ttl` is
forgotten with everything it wrote and its journal, on both stores, and each session's journal keeps its newest
1,000 calls, whatever the other sessions do. Through HTTP, against `mockserver serve` as a user starts it."""
from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from conftest import ROOT, RedisServer, serving

PETS = ["--spec", str(ROOT / "tests/data/pets/openapi.yaml"), "--fixtures", str(ROOT / "tests/data/pets/fixtures"),
        "--stateful", "--log-level", "warning"]
JOURNAL = 1000  # calls each scope's journal keeps (Options.journal_size)


class Client:
    """One keep-alive connection to the server."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def call(self, method: str, path: str, session: str | None = None, payload: Any = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        if session is not None:
            headers["X-Mock-Session"] = session
        self.connection.request(method, path, json.dumps(payload) if payload is not None else None, headers)
        response = self.connection.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """The flags of each store: the memory store, and a real Redis of the test's own (its keys are looked at)."""
    if request.param == "memory":
        yield ["--state", "memory"]
        return
    server: RedisServer = request.getfixturevalue("own_redis")
    yield ["--state", server.url("bounds")]


def session_keys(flags: list[str], session: str) -> list[str]:
    """The keys Redis holds for a session (none for the memory store)."""
    if "memory" in flags:
        return []
    url = flags[1].split("?")[0]
    found = redis.Redis.from_url(url).scan_iter(match=f"bounds:*{session}*")
    return sorted(key.decode() for key in found)


@pytest.mark.slow
def test_an_idle_session_is_forgotten_with_its_pets_and_journal_and_a_busy_one_is_not(store):
    with serving(*PETS, *store, "--session-ttl", "1") as (_, port):
        client = Client(port)
        for session in ("idle", "busy"):
            status, pet = client.call("POST", "/pets", session, {"name": session, "kind": "cat"})
            assert (status, pet["id"]) == (201, 4)
        assert client.call("GET", "/pets/4", "idle")[0] == 200
        assert "memory" in store or session_keys(store, "idle")  # its pets, its journal and its last use
        # idle past its TTL, while the busy session calls on (every call of it keeps it alive)
        until = time.monotonic() + 2.5
        while time.monotonic() < until:
            assert client.call("GET", "/pets/4", "busy")[0] == 200
            time.sleep(0.05)
        assert session_keys(store, "idle") == []
        assert client.call("GET", "/pets/4", "idle")[0] == 404  # the fixtures' pets alone again
        status, shown = client.call("GET", "/__mock/collections?session=idle")
        pets = next(c for c in shown["collections"] if c["name"] == "pets")
        assert (status, pets["count"], pets["written"]) == (200, 3, False)
        status, journal = client.call("GET", "/__mock/requests?session=idle")
        assert [e["path"] for e in journal["requests"]] == ["/pets/4"]  # the call just made, nothing before it
        status, journal = client.call("GET", "/__mock/requests?session=busy&limit=1")
        assert journal["requests"][0]["path"] == "/pets/4" and client.call("GET", "/pets/4", "busy")[0] == 200


@pytest.mark.slow
def test_each_sessions_journal_keeps_its_newest_1000_calls(store):
    with serving(*PETS, *store) as (_, port):
        client = Client(port)
        for n in range(JOURNAL + 5):
            assert client.call("GET", f"/pets?limit={n % 100 + 1}", "chatty")[0] == 200
        for _ in range(3):
            assert client.call("GET", "/pets/1", "quiet")[0] == 200
        for scope, first, count in (("chatty", "/pets?limit=6", JOURNAL), ("quiet", "/pets/1", 3),
                                    (None, "/pets?limit=9", JOURNAL)):  # the whole mock: its newest 1,000
            status, journal = client.call("GET", "/__mock/requests" + (f"?session={scope}" if scope else ""))
            calls = journal["requests"]
            assert (status, len(calls)) == (200, count), scope
            assert calls[0]["path"] + (f"?{calls[0]['query']}" if calls[0]["query"] else "") == first, scope
        assert session_keys(store, "chatty") == [] or len(redis.Redis.from_url(store[1].split("?")[0]).xrange(
            "bounds:journal|chatty")) == JOURNAL
