"""The embedded store: this process alone, under one lock. The default of `mockserver serve`, `make run`, the
pytest plugin and `MockServer`: nothing to start, nothing on the request path but a dictionary or two."""
from __future__ import annotations

import itertools
import queue
import secrets
import threading
import time
import uuid
from collections import Counter, OrderedDict, deque
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from . import (
    COUNTED_KINDS,
    DRIFT_KINDS,
    INITIAL_STATE,
    UNKNOWN,
    Book,
    BookChange,
    DriftCounts,
    Rows,
    RowsChange,
    Store,
    Transition,
    version_token,
)
from .records import EVERY, Call, Entry, Wanted

_SWEEP_EVERY = 30.0  # seconds between looks for idle sessions (at most; sooner with a short session TTL)
K = TypeVar("K", bound=Hashable)


class _Counts(Generic[K]):
    """Counts of up to `kinds` distinct keys (one scope's calls for coverage, the drift's kinds); a new key past
    them is counted only as a number (`uncounted`)."""

    def __init__(self, kinds: int) -> None:
        self.counts: Counter[K] = Counter()
        self.uncounted = 0
        self._kinds = kinds

    def add(self, key: K) -> bool:
        """Count `key`; False when it was counted only as a number."""
        if key in self.counts or len(self.counts) < self._kinds:
            self.counts[key] += 1
            return True
        self.uncounted += 1
        return False


class _Calls(_Counts[Call]):
    def __init__(self) -> None:
        super().__init__(COUNTED_KINDS)


class _Drift:
    """The proxy's drift counts (see `DriftCounts`)."""

    def __init__(self) -> None:
        self.exchanges = self.drifting = 0
        self.kinds: _Counts[str] = _Counts(DRIFT_KINDS)
        self.rows: dict[str, dict[str, Any]] = {}

    def add(self, kinds: Mapping[str, dict[str, Any]]) -> None:
        self.exchanges += 1
        self.drifting += bool(kinds)
        for kind, row in kinds.items():
            if self.kinds.add(kind):
                self.rows.setdefault(kind, row)

    def counts(self) -> DriftCounts:
        return DriftCounts(self.exchanges, self.drifting, self.kinds.uncounted,
                           {kind: (self.rows[kind], n) for kind, n in self.kinds.counts.items()})


class _Written:
    """One scope's writes to one collection: rows by key, and each key's last change, oldest first, so what
    changed since a version is read from the newest end (a write costs what it changes, not the rows held)."""

    def __init__(self) -> None:
        self.epoch = uuid.uuid4().hex
        self.number = 0
        self.version = version_token(self.epoch, 0)
        self.rows: dict[str, dict[str, Any]] = {}
        self.counters: dict[str, int] = {}
        self.changed: dict[str, int] = {}  # key -> number of the write that last changed it, in that order

    def since(self, known: str | None) -> Rows:
        """The rows changed since `known`, or all of them when `known` is not a version of these rows."""
        if known == self.version:
            return Rows(known, {}, {}, since=known)
        epoch, _, number = (known or "").rpartition(".")
        if epoch != self.epoch or not number.isdigit() or int(number) > self.number:
            return Rows(self.version, dict(self.rows), dict(self.counters))
        after, changed = int(number), []
        for key in reversed(self.changed):
            if self.changed[key] <= after:
                break
            changed.append(key)
        return Rows(self.version, {key: self.rows.get(key) for key in reversed(changed)}, dict(self.counters),
                    since=known)

    def write(self, rows: Mapping[str, dict[str, Any] | None], counters: Mapping[str, int]) -> None:
        self.number += 1
        self.version = version_token(self.epoch, self.number)
        for key, row in rows.items():
            if row is None:
                self.rows.pop(key, None)
            else:
                self.rows[key] = row
            self.changed.pop(key, None)
            self.changed[key] = self.number
        self.counters.update(counters)


class MemoryStore(Store):
    kind = "memory"
    shared = False

    def __init__(self, *, journal_size: int = 1000, session_ttl: float = 3600.0) -> None:
        self._lock = threading.Lock()
        self._size = journal_size
        self._ttl = session_ttl
        self._book = Book()
        self._hits: Counter[str] = Counter()
        self._draws: Counter[str] = Counter()
        self._states: dict[tuple[str | None, str], str] = {}  # (session, machine) -> state, once moved
        self._ids = itertools.count(1)
        self._journal: deque[Entry] = deque(maxlen=journal_size)
        self._calls = _Calls()
        self._session_journals: dict[str, deque[Entry]] = {}
        self._session_calls: dict[str, _Calls] = {}
        self._seen: dict[str, float] = {}  # session -> last use (monotonic)
        self._next_sweep = time.monotonic() + min(_SWEEP_EVERY, session_ttl / 2)
        self._secret = secrets.token_hex(32)  # per process, kept across reloads
        self._live: dict[tuple[str | None, str], _Written] = {}
        self._drift = _Drift()
        self._outbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self._outgoing: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._subscriptions: dict[str, list[str]] = {}

    def describe(self) -> dict[str, Any]:
        return {"backend": "memory", "shared": False, "available": True, "sessionTtl": self._ttl}

    def check(self) -> None:
        return None

    def probe(self) -> None:
        return None  # in this process: nothing to ask

    def book(self) -> Book:
        return self._book

    def change_book(self, change: BookChange) -> Book:
        with self._lock:
            self._book = change(self._book, lambda uids: {uid: self._hits[uid] for uid in uids})
            return self._book

    def hit(self, uid: str, times: int | None, transition: Transition | None = None) -> int:
        with self._lock:
            if times is not None and self._hits[uid] >= times:
                return -1
            if transition is not None:
                machine = (transition.scope, transition.name)
                if transition.required is not None and self._states.get(machine, INITIAL_STATE) != transition.required:
                    return -2
                if transition.new is not None and self._hits[uid] + 1 >= transition.moves_from:
                    self._states[machine] = transition.new
            self._hits[uid] += 1
            return self._hits[uid]

    def draw(self, uid: str) -> int:
        with self._lock:
            self._draws[uid] += 1
            return self._draws[uid] - 1

    def hits(self, uids: Iterable[str]) -> dict[str, int]:
        with self._lock:
            return {uid: self._hits[uid] for uid in uids}

    def forget_counts(self, uids: Iterable[str] | None) -> None:
        with self._lock:
            if uids is None:
                self._hits.clear()
                self._draws.clear()
                return
            gone = set(uids)
            for counts in (self._hits, self._draws):
                for key in [k for k in counts if k.partition("@")[0] in gone]:
                    del counts[key]

    def forget_session_counts(self, session: str) -> None:
        with self._lock:
            for counts in (self._hits, self._draws):
                for key in [k for k in counts if k.endswith(f"@{session}")]:
                    del counts[key]

    def states(self, scope: str | None, names: Iterable[str]) -> dict[str, str]:
        with self._lock:
            return {name: self._states.get((scope, name), INITIAL_STATE) for name in names}

    def forget_states(self, scope: str | None) -> None:
        with self._lock:
            for key in [k for k in self._states if scope is None or k[0] == scope]:
                del self._states[key]

    def live(self, scope: str | None, collection: str, known: str | None) -> Rows | None:
        written = self._live.get((scope, collection))
        if (written.version if written else None) == known:
            return None
        if written is None:
            return Rows()
        with self._lock:
            return written.since(known)

    def change_live(self, scope: str | None, collection: str, change: RowsChange, known: str | None = UNKNOWN
                    ) -> Rows:
        with self._lock:
            written = self._live.get((scope, collection))
            current = written.since(known) if written else Rows()
            update = change(current)
            if written is None:
                written = self._live[(scope, collection)] = _Written()
            written.write(update.rows, update.counters)
            return Rows(written.version, dict(update.rows), dict(update.counters), since=current.version)

    def forget_live(self, scope: str | None) -> None:
        with self._lock:
            for key in [k for k in self._live if scope is None or k[0] == scope]:
                del self._live[key]

    def record(self, entry: Entry, call: Call, session: str | None) -> None:
        with self._lock:
            entry.id = next(self._ids)
            self._journal.append(entry)
            self._calls.add(call)
            if session is None and not self._seen:
                return
            now = time.monotonic()
            if session is not None:
                self._seen[session] = now
                journal = self._session_journals.get(session)
                if journal is None:
                    journal = self._session_journals[session] = deque(maxlen=self._size)
                    self._session_calls[session] = _Calls()
                journal.append(entry)
                self._session_calls[session].add(call)
        if now >= self._next_sweep:
            self._sweep(now)

    def entries(self, session: str | None, wanted: Wanted = EVERY) -> list[Entry]:
        with self._lock:
            return wanted.pick(self._journal if session is None else self._session_journals.get(session, ()))

    def calls(self, session: str | None) -> tuple[dict[Call, int], int]:
        with self._lock:
            scope = self._calls if session is None else self._session_calls.get(session)
            return (dict(scope.counts), scope.uncounted) if scope else ({}, 0)

    def clear(self, session: str | None) -> None:
        with self._lock:
            if session is None:
                self._journal.clear()
                self._calls = _Calls()
                self._session_journals.clear()
                self._session_calls.clear()
            else:
                self._session_journals.pop(session, None)
                self._session_calls.pop(session, None)

    def count_drift(self, kinds: Mapping[str, dict[str, Any]]) -> None:
        with self._lock:
            self._drift.add(kinds)

    def drift(self) -> DriftCounts:
        with self._lock:
            return self._drift.counts()

    def clear_drift(self) -> None:
        with self._lock:
            self._drift = _Drift()

    def send_later(self, call: dict[str, Any]) -> None:
        self._outbox.put(call)

    def claim(self, wait: float) -> dict[str, Any] | None:
        try:
            return self._outbox.get(timeout=wait)
        except queue.Empty:
            return None

    def note_outgoing(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._outgoing[entry["id"]] = entry
            while len(self._outgoing) > self._size:
                self._outgoing.popitem(last=False)

    def outgoing(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._outgoing.values())

    def subscribe(self, webhook: str, url: str) -> None:
        with self._lock:
            urls = self._subscriptions.setdefault(webhook, [])
            if url not in urls:
                urls.append(url)

    def subscriptions(self) -> dict[str, list[str]]:
        with self._lock:
            return {name: list(urls) for name, urls in self._subscriptions.items()}

    def clear_outgoing(self) -> None:
        with self._lock:
            self._outgoing.clear()
            self._subscriptions.clear()
            while not self._outbox.empty():
                self._outbox.get_nowait()

    def touch(self, session: str) -> None:
        with self._lock:
            self._seen[session] = time.monotonic()

    def sessions(self) -> list[str]:
        with self._lock:
            return sorted(self._seen, key=self._seen.__getitem__)

    def _untrack(self, session: str) -> None:
        with self._lock:
            self._seen.pop(session, None)

    def _sweep(self, now: float) -> None:
        with self._lock:
            self._next_sweep = now + min(_SWEEP_EVERY, self._ttl / 2)
            idle = [s for s, seen in self._seen.items() if now - seen > self._ttl]
        for session in idle:
            self.forget(session)

    def secret(self) -> str:
        return self._secret
