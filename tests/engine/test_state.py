"""The state store's contract, the same for both backends: the embedded one and a real Redis. Two RedisStore
objects on one Redis stand for two processes (each has its own listener and writer)."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from conftest import free_port
from mockserver import state
from mockserver.state import Book, Record, StateError, Store, Transition, memory, open_store, redis_store, unit
from mockserver.state.memory import MemoryStore
from mockserver.state.records import Call, Entry, Wanted


def entry(path: str, status: int = 200, session: str | None = None) -> tuple[Entry, Call, str | None]:
    made = Entry(0, time.time(), "GET", path, "a=1", {"accept": "*/*"}, b"\x00\xff\nbody", status, {}, b'{"a":\n1}',
                 "fixture", "op", None, 1.5, session)
    return made, Call("op", "GET", path, "a=1", status, ()), session


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.slow)])  # a redis-server
def stores(request: pytest.FixtureRequest) -> Iterator[Callable[[], Store]]:
    """A maker of stores sharing one state: the memory store is one process, so it makes the same one again."""
    made: list[Store] = []
    if request.param == "memory":
        single = MemoryStore(journal_size=5, session_ttl=1.0)
        yield lambda: single
        return
    url = request.getfixturevalue("redis_url")

    def make() -> Store:
        store = open_store(url, journal_size=5, session_ttl=1.0)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def test_times_are_exact_under_64_concurrent_hits(stores):
    first, second = stores(), stores()
    barrier = threading.Barrier(16)

    def hit(n: int) -> int:
        if n < 16:
            barrier.wait()
        return (first if n % 2 else second).hit("u1", 5)

    with ThreadPoolExecutor(16) as pool:
        hits = list(pool.map(hit, range(64)))
    assert sorted(h for h in hits if h > 0) == [1, 2, 3, 4, 5] and hits.count(-1) == 59
    assert first.hits(["u1"]) == {"u1": 5}


def test_a_state_machine_moves_once_under_64_concurrent_hits(stores):
    """Checked, counted and moved in one step: of 64 calls that need `Started` and move the machine on, one gets
    through, in whichever process; another session's machine stays where it was."""
    first, second = stores(), stores()
    moving = Transition("alice", "order", required="Started", new="placed")
    barrier = threading.Barrier(16)

    def hit(n: int) -> int:
        if n < 16:
            barrier.wait()
        return (first if n % 2 else second).hit("u1", None, moving)

    with ThreadPoolExecutor(16) as pool:
        hits = list(pool.map(hit, range(64)))
    assert hits.count(1) == 1 and hits.count(-2) == 63
    assert second.states("alice", ["order"]) == {"order": "placed"} and first.states("bob", ["order"]) == {
        "order": "Started"}
    first.hit("u2", None, Transition("bob", "order", new="placed"))
    first.forget_states("alice")
    assert second.states("alice", ["order"]) == {"order": "Started"}
    assert second.states("bob", ["order"]) == {"order": "placed"}


def test_a_sessions_counts_of_a_global_scenario_are_forgotten_with_it(stores):
    first, second = stores(), stores()
    for counter in ("g", "g@alice", "g@alice", "g@bob", "other@alice"):
        first.hit(counter, None)
    second.forget_session_counts("alice")
    assert first.hits(["g", "g@alice", "g@bob", "other@alice"]) == {"g": 1, "g@alice": 0, "g@bob": 1,
                                                                     "other@alice": 0}
    first.hit("g@alice", None)
    second.forget_counts(["g"])  # the scenario removed: every session's counts of it go too
    assert first.hits(["g", "g@alice", "g@bob"]) == {"g": 0, "g@alice": 0, "g@bob": 0}


def test_draws_are_one_sequence_for_every_process(stores):
    first, second = stores(), stores()
    assert [first.draw("r"), second.draw("r"), first.draw("r")] == [0, 1, 2]
    assert unit(4, "rate", 1) == unit(4, "rate", 1) != unit(5, "rate", 1)


def test_a_book_change_is_seen_by_every_process_when_it_returns(stores):
    first, second = stores(), stores()
    first.check(), second.check()  # both listening, as serving processes are
    record = Record("uid-1", "busy", {"operationId": "op", "status": 503}, "alice")
    first.change_book(lambda book, _: book.next([record]))
    assert second.book().runtime == (record,) and second.book().version == first.book().version
    first.change_book(lambda book, hits: book.next([], {"fixture-one"}))
    assert second.book().runtime == () and second.book().removed == {"fixture-one"}


def test_the_journal_keeps_every_process_calls_in_order_and_per_session(stores):
    first, second = stores(), stores()
    for n in range(3):
        first.record(*entry(f"/a{n}"))
        second.record(*entry(f"/b{n}", session="bob"))
    first.sync()
    everything = second.entries(None)
    assert len(everything) == 5  # the cap: the newest five of six
    assert [e.id for e in everything] == sorted(e.id for e in everything)
    assert {e.path for e in everything} >= {"/a2", "/b2"}
    assert [e.path for e in first.entries("bob")] == ["/b0", "/b1", "/b2"]
    kept = first.entries("bob")[0]
    assert kept.request_body == b"\x00\xff\nbody" and kept.response_body == b'{"a":\n1}' and kept.session == "bob"
    calls, uncounted = first.calls(None)
    assert sum(calls.values()) == 6 and uncounted == 0  # coverage counts every call, not only those kept
    assert sum(first.calls("bob")[0].values()) == 3
    first.clear("bob")
    assert first.entries("bob") == [] and first.calls("bob") == ({}, 0) and len(first.entries(None)) == 5
    first.clear(None)
    assert second.entries(None) == [] and second.calls(None) == ({}, 0)


def test_reset_clears_everything_everywhere(stores):
    first, second = stores(), stores()
    second.check()
    first.change_book(lambda book, _: book.next([Record("u", "x", {"operationId": "op", "latency": 1})]))
    first.hit("u", None)
    first.record(*entry("/a", session="s1"))
    first.touch("s2")
    second.reset()
    assert first.book().runtime == () and first.hits(["u"]) == {"u": 0}
    assert first.entries(None) == [] and first.entries("s1") == [] and first.sessions() == []


def test_drift_is_counted_once_for_every_process_up_to_its_cap(stores, monkeypatch):
    """Every process's exchanges add to one count per kind, each kind shown as first seen; past the cap a new kind
    is only counted (`overflow`); a reset forgets it."""
    monkeypatch.setattr(state, "DRIFT_KINDS", 2)
    monkeypatch.setattr(memory, "DRIFT_KINDS", 2)
    monkeypatch.setattr(redis_store, "DRIFT_KINDS", 2)
    first, second = stores(), stores()
    first.clear_drift()  # counted afresh, under the cap set above
    first.count_drift({"a": {"seen": 1}, "b": {"seen": 1}})
    second.count_drift({"a": {"seen": 2}})
    second.count_drift({})
    first.count_drift({"c": {"seen": 3}, "b": {"seen": 3}})
    for store in (first, second):  # both processes' counts sent before either is read (a batch may wait 20 ms)
        store.sync()
    for store in (first, second):
        counts = store.drift()
        assert (counts.exchanges, counts.drifting, counts.overflow) == (4, 3, 1)
        assert dict(counts.kinds) == {"a": ({"seen": 1}, 2), "b": ({"seen": 1}, 2)}
    second.reset()
    assert first.drift().exchanges == 0 and dict(first.drift().kinds) == {}


def test_idle_sessions_are_forgotten(stores):
    store = stores()
    store.check()
    store.change_book(lambda book, _: book.next([Record("u", "x", {"operationId": "op", "latency": 1}, "idle")]))
    store.record(*entry("/a", session="idle"))
    store.sync()
    time.sleep(1.2)  # past the TTL of 1 s
    deadline = time.monotonic() + 5
    while "idle" in store.sessions() and time.monotonic() < deadline:
        store.record(*entry("/b", session="busy"))  # the memory store sweeps as calls come; Redis's listener itself
        time.sleep(0.1)
    assert "idle" not in store.sessions() and store.entries("idle") == []
    assert all(r.session != "idle" for r in store.book().runtime)


def test_a_journal_entry_an_earlier_mock_wrote_to_the_shared_redis_is_still_read(redis_url):
    """Replicas of earlier versions wrote their entries as one JSON text (bodies as latin-1 text), then as a JSON
    object of named fields followed by the bodies kept inline (a long body named by its digest): both are read
    beside the entries written now, in a whole read and in a read of the newest few."""
    store = open_store(redis_url, journal_size=5)
    earlier = {"time": 1.0, "method": "GET", "path": "/old", "query": "", "request_headers": {}, "request_body": "\xff",
               "status": 200, "response_headers": {}, "response_body": '{"a":1}', "source": "fixture",
               "operation_id": "op", "scenario_id": None, "duration_ms": 1.0, "session": None}
    named = {"time": 2.0, "method": "POST", "path": "/named", "query": "b=2", "request_headers": {"accept": "*/*"},
             "status": 201, "response_headers": {"X-A": "1"}, "source": "fixture", "operation_id": "op",
             "scenario_id": "sc", "duration_ms": 2.5, "session": None, "broken": None,
             "violations": [{"rule": "type"}], "request_bytes": 5}
    long_body = b"x" * 300
    prefix = redis_url.rsplit("prefix=", 1)[1]
    with redis.Redis.from_url(redis_url.split("?")[0]) as client:
        client.xadd(f"{prefix}:journal", {"e": json.dumps(earlier)}, id="7-0")
        client.xadd(f"{prefix}:journal", {"e": json.dumps(named).encode() + b"\n\x00\xff\nab{}"}, id="8-0")
        client.xadd(f"{prefix}:journal", {"e": json.dumps({**named, "request_bytes": 0}).encode() + b"\n",
                                          "r": "d1"}, id="9-0")
        client.hset(f"{prefix}:bodies", "d1", long_body)
        client.hset(f"{prefix}:body-refs", "d1", 1)
        client.set(f"{prefix}:seq", 9)
    store.record(*entry("/now"))
    store.sync()
    old, with_bodies, with_digest, now = store.entries(None)
    assert (old.id, old.path, old.request_body, old.response_body) == (7, "/old", b"\xff", b'{"a":1}')
    assert with_bodies == Entry(8, 2.0, "POST", "/named", "b=2", {"accept": "*/*"}, b"\x00\xff\nab", 201, {"X-A": "1"},
                                b"{}", "fixture", "op", "sc", 2.5, None, None, [{"rule": "type"}])
    assert (with_digest.id, with_digest.request_body, with_digest.response_body) == (9, b"", long_body)
    assert (now.id, now.path, now.request_body) == (10, "/now", b"\x00\xff\nbody")
    assert store.entries(None, Wanted(limit=3)) == [with_bodies, with_digest, now]
    assert store.entries(None, Wanted(limit=2, since=7)) == [with_digest, now]
    store.close()


@pytest.mark.slow  # a redis-server
def test_a_process_forked_after_the_store_started_writes_its_journal_with_threads_of_its_own(redis_url):
    """A server's worker may be forked from a process whose store already runs its listener and writer: threads do
    not survive a fork, so the child starts its own, and what it records reaches Redis."""
    store = open_store(redis_url, journal_size=5)
    store.check()  # its listener and writer run in this process
    child = os.fork()
    if child == 0:  # pragma: no cover (the child process)
        code = 1
        try:
            store.record(*entry("/from-the-child"))
            store.sync()
            store.close()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [e.path for e in store.entries(None)] == ["/from-the-child"]
    store.close()


def test_the_cursor_secret_is_shared_through_redis(redis_url):
    first, second = open_store(redis_url), open_store(redis_url)
    assert first.secret() == second.secret()
    assert MemoryStore().secret() != MemoryStore().secret()


def test_an_unreachable_or_unknown_store_is_one_clear_line():
    dead = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    with pytest.raises(StateError) as caught:
        open_store(dead)
    message = str(caught.value)
    assert message.startswith("--state redis://***@127.0.0.1:") and "hunter2" not in message
    assert "Connection refused" in message or "connecting" in message
    with pytest.raises(StateError, match="expected 'memory' or a Redis URL"):
        open_store("postgres://x")


def test_a_book_round_trips_through_json():
    book = Book(3, (Record("u", "i", {"operationId": "op", "status": 503}, None),), frozenset({"f"}))
    assert Book.from_json(book.as_json()) == book and Book.from_json(None) == Book()


@pytest.mark.slow
def test_a_frozen_redis_never_holds_a_journal_write_and_what_it_drops_is_said_once(own_redis, monkeypatch, caplog):
    """While Redis does not answer, calls are queued without waiting; past the queue's bound the oldest go, which
    the log says once when it starts and once, with the count, when Redis takes the journal again."""
    monkeypatch.setattr(redis_store, "QUEUE_LIMIT", 5)
    store = open_store(own_redis.url(), journal_size=50)
    try:
        store.check()  # its listener and writer run
        os.kill(own_redis.pid, signal.SIGSTOP)
        try:
            slowest = 0.0
            for n in range(12):
                began = time.monotonic()
                store.record(*entry(f"/{n}"))
                slowest = max(slowest, time.monotonic() - began)
                time.sleep(0.02)
            assert slowest < 0.05
        finally:
            os.kill(own_redis.pid, signal.SIGCONT)
        store.sync()
        kept = [e.path for e in store.entries(None)]
        dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
        assert len(dropped) == 2 and "oldest are dropped" in dropped[0], dropped
        count = int(dropped[1].split(": ")[1].split()[0])
        assert kept[-5:] == [f"/{n}" for n in range(7, 12)] and len(kept) + count == 12, (kept, dropped)
    finally:
        store.close()


def test_a_reader_of_written_rows_gets_only_those_changed_since_the_version_it_holds(stores):
    """Stateful mode's writes: a process holding a version is given what changed since (a write's own answer too),
    not every row; a version is never given again after a reset."""
    writer, reader = stores(), stores()

    def put(key: str, row: dict[str, int] | None) -> state.RowsChange:
        return lambda rows: state.RowsUpdate({key: row}, {"n": 1} if row else {})

    first = writer.change_live("s", "pets", put("a", {"v": 1}))
    assert reader.live("s", "pets", state.UNKNOWN) == state.Rows(first.version, {"a": {"v": 1}}, {"n": 1})
    for i in range(30):
        writer.change_live("s", "pets", put(f"k{i}", {"v": i}))
    last = writer.change_live("s", "pets", put("a", None))
    assert (last.rows, last.counters) == ({"a": None}, {})
    changed = reader.live("s", "pets", first.version)
    assert changed is not None and (changed.version, changed.since) == (last.version, first.version)
    assert changed.rows == {**{f"k{i}": {"v": i} for i in range(30)}, "a": None}
    assert reader.live("s", "pets", last.version) is None
    seen: list[state.Rows] = []
    writer.change_live("s", "pets", lambda rows: seen.append(rows) or state.RowsUpdate({"b": {"v": 2}}), last.version)
    assert [(rows.rows, rows.since) for rows in seen] == [({}, last.version)]
    writer.forget_live("s")
    assert reader.live("s", "pets", last.version) == state.Rows()
    again = writer.change_live("s", "pets", put("a", {"v": 3}))
    assert again.version not in (first.version, last.version)
    assert reader.live("s", "pets", last.version) == state.Rows(again.version, {"a": {"v": 3}}, {"n": 1})


@pytest.mark.slow  # a redis-server
def test_a_batch_of_one_call_changes_its_counts_once_not_once_an_entry(redis_url):
    """100 entries of one call in a session whose journal is full, each naming the same long answer: the call's
    coverage counts (the mock's and the session's), the body's count of entries naming it (those written and
    those trimmed) and the session's last use change once a batch, as Redis sees it (MONITOR), not once an entry.
    The journal still holds the newest entries and the body, and coverage counted every call."""
    store = open_store(redis_url, journal_size=5)
    prefix = redis_url.rsplit("prefix=", 1)[1] + ":"
    made, call, _ = entry("/same", session="s")
    made.response_body = b"r" * 1000
    for _ in range(5):  # the journals full, the body held
        store.record(made, call, "s")
    store.sync()
    seen: list[list[str]] = []
    with redis.Redis.from_url(redis_url.split("?")[0]) as client:
        with client.monitor() as monitor:
            def watch() -> None:
                while (command := monitor.next_command()["command"].split(" ")) != ["ECHO", "stop"]:
                    seen.append(command)

            watcher = threading.Thread(target=watch)
            watcher.start()
            time.sleep(0.2)  # MONITOR answers every command from its OK on
            for _ in range(100):
                store.record(made, call, "s")
            store.sync()
            client.echo("stop")
            watcher.join(10)
    batches = sum(1 for c in seen if c[:2] == ["INCRBY", prefix + "seq"])
    counting = [c[:2] for c in seen if c[0] in ("HINCRBY", "HEXISTS", "HLEN", "ZADD", "HDEL") and c[1] in (
        prefix + "calls", prefix + "calls|s", prefix + "body-refs", prefix + "sessions")]
    assert 1 <= batches <= 4 and sum(c[0] == "XADD" for c in seen) == 200, seen
    assert len(counting) <= 4 * batches, counting  # the two coverage counts, the body's count, the session's use
    assert [e.path for e in store.entries("s")] == ["/same"] * 5 and store.entries("s")[0].response_body == b"r" * 1000
    assert store.calls("s") == ({call: 105}, 0) and store.calls(None) == ({call: 105}, 0)
    store.close()
