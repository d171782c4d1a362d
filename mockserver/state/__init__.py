"""Runtime state: what the mock remembers while it serves (the scenarios set at run time and their counts, the
request journal, coverage counts, sessions, the proxy's drift counts, the cursor secret), behind one small
interface, `Store`.

Two backends live beside it: `memory` (one process; the default) and `redis_store` (every worker and replica
sharing one Redis). The request path reads a local copy of the scenarios (no round trip unless a scenario
matches), hands journal entries to the store without waiting, and asks the store only to count a scenario's
firing, atomically, so `times: N` holds however many processes serve."""
from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

from ..base.errors import MockError
from ..base.http import MockRequest
from .records import EVERY, Call, Entry, Wanted

SESSION_HEADER = "X-Mock-Session"
SESSION_COOKIE = "mock_session"
SESSION_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
REDIS_PREFIX = "mockserver"  # a Redis store's keys start with it, unless its URL says `?prefix=`
SESSION_TTL = 3600.0  # seconds a session may stay idle (no call, no control request) before it is forgotten
COUNTED_KINDS = 20_000  # distinct calls counted for coverage per scope; beyond, only a number
DRIFT_KINDS = 1000  # distinct kinds of drift counted with their first example; beyond, only a number (`overflow`)
STATE_TIMEOUT = 1.0  # seconds a call to a shared store may wait for an answer (--state-timeout)


class StateError(Exception):
    """The store cannot be used at start-up (unreachable, misconfigured): one line that says which and why."""


def unavailable(reason: str) -> MockError:
    """The store was lost while serving: the API's requests and the control API answer this until it is back."""
    return MockError(503, f"the mock's shared state is unavailable: {reason}", code="mock-state-unavailable",
                     headers={"Retry-After": "1"})


def session_of(request: MockRequest) -> str | None:
    """The session a request belongs to (header, else cookie), or None; a malformed one is a 400."""
    given = request.header(SESSION_HEADER.lower())
    if given is None:
        given = _cookie(request.header("cookie"), SESSION_COOKIE)
    return check_session(given, "header" if request.header(SESSION_HEADER.lower()) is not None else "cookie")


def check_session(given: str | None, location: str) -> str | None:
    if given is None:
        return None
    if not SESSION_PATTERN.fullmatch(given):  # `$` alone lets a trailing newline through
        name = SESSION_HEADER if location == "header" else SESSION_COOKIE if location == "cookie" else "session"
        raise MockError(400, f"{name} must be 1 to 64 letters, digits, '.', '_' or '-'", details={"violations": [
            {"parameter": name, "in": location, "pointer": "", "rule": "pattern",
             "message": f"{given[:80]!r} does not match {SESSION_PATTERN.pattern}"}]})
    return given


def _cookie(header: str | None, name: str) -> str | None:
    for part in (header or "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value.strip('"')
    return None


def unit(seed: int, stream: str, n: int) -> float:
    """The n-th number in [0, 1) of a seeded sequence, computed alone: every process draws the same n-th value, so
    a `rate` scenario with a seed gives the same sequence however many workers share it."""
    digest = hashlib.blake2b(f"{seed}|{stream}|{n}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@dataclass(frozen=True)
class Record:
    """A scenario set at run time, as the store keeps it: `uid` names its counts (a scenario set again under the
    same id counts afresh); `session` None is global."""

    uid: str
    id: str
    spec: dict[str, Any]
    session: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"uid": self.uid, "id": self.id, "spec": self.spec, "session": self.session}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        return cls(data["uid"], data["id"], dict(data["spec"]), data.get("session"))


@dataclass(frozen=True)
class Book:
    """The scenarios in force besides the fixtures': those set at run time (newest first) and the fixtures'
    scenarios removed by id. `version` grows with every change, so a process knows when its copy is stale."""

    version: int = 0
    runtime: tuple[Record, ...] = ()
    removed: frozenset[str] = field(default_factory=frozenset)

    def as_json(self) -> dict[str, Any]:
        return {"version": self.version, "runtime": [r.as_json() for r in self.runtime],
                "removed": sorted(self.removed)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Book:
        if not data:
            return cls()
        return cls(int(data["version"]), tuple(Record.from_json(r) for r in data["runtime"]),
                   frozenset(data.get("removed", ())))

    def next(self, runtime: Iterable[Record], removed: Iterable[str] | None = None) -> Book:
        return replace(self, version=self.version + 1, runtime=tuple(runtime),
                       removed=self.removed if removed is None else frozenset(removed))


INITIAL_STATE = "Started"  # a named state machine's state until a scenario moves it (as WireMock names it)


@dataclass(frozen=True)
class Transition:
    """A named state machine's part in one counted call (WireMock's scenario states): the call is counted only
    while the machine `name` of the session `scope` (None: calls without a session) is in `required` (None: in
    any state), and from the scenario's `moves_from`-th count on, counting it moves the machine to `new`. Checked,
    counted and moved in one atomic step, so two workers never both see the old state."""

    scope: str | None
    name: str
    required: str | None = None
    new: str | None = None
    moves_from: int = 1


BookChange = Callable[[Book, Callable[[Iterable[str]], dict[str, int]]], Book]


@dataclass(frozen=True)
class Rows:
    """The writes of one scope (a session, or the whole mock) to one collection: rows by item key, opaque JSON
    objects to the store. `version` changes with every write (a fresh token, never reused, so a copy made from
    an earlier version is known stale even after a reset); None when nothing was written. `counters`: the
    highest number each of the collection's sequences handed out, which a delete never lowers (an id is never
    given twice until the scope is reset).

    `since` None: `rows` are all of them. Else `rows` are only those changed after version `since` (None: the
    row was removed) and `counters` those that moved: a reader that holds `since` applies them and is current,
    so a write and a read after one cost in proportion to what changed, not to the collection's size."""

    version: str | None = None
    rows: Mapping[str, dict[str, Any] | None] = field(default_factory=dict)
    counters: Mapping[str, int] = field(default_factory=dict)
    since: str | None = None


@dataclass(frozen=True)
class RowsUpdate:
    """What one write changes: rows by item key (None: remove the row) and the counters it moved on."""

    rows: Mapping[str, dict[str, Any] | None]
    counters: Mapping[str, int] = field(default_factory=dict)


# `change(rows)` -> what to write; it may raise to refuse the write. `rows` are what changed since the version
# the writer holds (`Rows.since`), or all of them when the store cannot tell.
RowsChange = Callable[[Rows], RowsUpdate]
UNKNOWN = ""  # no version of a store's is ever "": `live(..., UNKNOWN)` answers every row


def version_token(epoch: str, number: int) -> str:
    """A version: the scope's epoch (a fresh token each time its rows start from nothing: a reset never gives a
    version again) and the number of writes since."""
    return f"{epoch}.{number}"


@dataclass(frozen=True)
class DriftCounts:
    """The proxy's drift counts (`mockserver proxy`): exchanges checked, those with a violation, new kinds past
    DRIFT_KINDS counted only as a number, and each kind's count with its row as first seen (opaque JSON to the
    store)."""

    exchanges: int = 0
    drifting: int = 0
    overflow: int = 0
    kinds: Mapping[str, tuple[dict[str, Any], int]] = field(default_factory=dict)


class Store(ABC):
    """Where runtime state lives. `session` arguments: None means the whole mock (every call, every session),
    a name means that session only."""

    kind: str
    shared: bool  # several processes can serve from it
    # told of each round trip made for a request, its seconds and whether it failed (`--metrics`); None: nobody
    timed: Callable[[float, bool], None] | None = None

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What /__mock/health says of the store (no credentials)."""

    @abstractmethod
    def check(self) -> None:
        """Raises `unavailable(...)` while the store cannot be used; cheap (no round trip)."""

    def settled(self) -> bool:
        """Whether `check` answers at once in this process; a shared store's first use in a process may wait
        (at most the timeout) until it is known to be reachable."""
        return True

    @abstractmethod
    def probe(self) -> None:
        """Asks the store itself (a round trip where there is one), for /__mock/health: what `describe` says next is
        the store as it is now, not as this process last saw it (a worker that has served no call since Redis went
        away would otherwise call itself healthy)."""

    # -- scenarios ------------------------------------------------------------------------------------------
    @abstractmethod
    def book(self) -> Book:
        """The scenarios set at run time: a local copy, no round trip."""

    @abstractmethod
    def change_book(self, change: BookChange) -> Book:
        """Apply `change(book, hits)` atomically (it may raise to refuse); every process sees the new book before
        this returns. `hits(uids)` reads the current counts, so a spent scenario can give way."""

    @abstractmethod
    def hit(self, uid: str, times: int | None, transition: Transition | None = None) -> int:
        """Count one call of a scenario, atomically: its hit number (1 for the first), or -1 when `times` are
        spent already, or -2 when `transition`'s machine is not in its required state (nothing counted); a count
        may move the machine (see `Transition`)."""

    @abstractmethod
    def draw(self, uid: str) -> int:
        """The next draw number (0, 1, …) of a `rate` scenario, shared by every process."""

    @abstractmethod
    def hits(self, uids: Iterable[str]) -> dict[str, int]:
        """How many times each scenario fired since it was set (or since the last reset)."""

    @abstractmethod
    def forget_counts(self, uids: Iterable[str] | None) -> None:
        """Drop the counts of these scenarios, each session's of them too (None: of every scenario, the fixtures'
        too). A global or fixtures' scenario counts a session's calls under `uid@session`."""

    @abstractmethod
    def forget_session_counts(self, session: str) -> None:
        """Drop what a session's calls counted of the global and fixtures' scenarios (`uid@session`)."""

    @abstractmethod
    def states(self, scope: str | None, names: Iterable[str]) -> dict[str, str]:
        """The state each named state machine of a scope is in now (INITIAL_STATE until a scenario moves it)."""

    @abstractmethod
    def forget_states(self, scope: str | None) -> None:
        """Every named state machine of a session back to INITIAL_STATE (None: of every session and without one)."""

    # -- the journal and coverage ---------------------------------------------------------------------------
    @abstractmethod
    def record(self, entry: Entry, call: Call, session: str | None) -> None:
        """Keep a call: in the journal (bounded) and counted for coverage; the caller does not wait for it."""

    @abstractmethod
    def entries(self, session: str | None, wanted: Wanted = EVERY) -> list[Entry]:
        """The journal's `wanted` entries (all of them by default), oldest first, with every call recorded so far by
        every process."""

    @abstractmethod
    def calls(self, session: str | None) -> tuple[dict[Call, int], int]:
        """Every call since the last reset, counted by what coverage reads of it, and how many more were counted
        only as a number (past COUNTED_KINDS distinct ones)."""

    @abstractmethod
    def clear(self, session: str | None) -> None:
        """Empty the journal and the coverage counts (of one session, or all of them)."""

    # -- drift (mockserver proxy) ------------------------------------------------------------------------------
    @abstractmethod
    def count_drift(self, kinds: Mapping[str, dict[str, Any]]) -> None:
        """Count one exchange the proxy checked: `kinds` are its violations' kinds, each once, with the row to show
        for a kind first seen; the caller does not wait for it."""

    @abstractmethod
    def drift(self) -> DriftCounts:
        """The drift counted so far by every process (after `sync`)."""

    @abstractmethod
    def clear_drift(self) -> None:
        """Forget the drift counted so far."""

    # -- collections written at run time (stateful mode) ----------------------------------------------------
    @abstractmethod
    def live(self, scope: str | None, collection: str, known: str | None) -> Rows | None:
        """The writes of a scope (a session; None: the whole mock's own) to a collection, or None when their
        version is still `known`: a reader keeps what it built from them and pays one look-up per request. Rows
        changed since `known` (`Rows.since`) where the store can tell, else all of them (`UNKNOWN`: always)."""

    @abstractmethod
    def change_live(self, scope: str | None, collection: str, change: RowsChange, known: str | None = UNKNOWN
                    ) -> Rows:
        """Apply `change` atomically (every process sharing the store sees one order of writes); an exception
        raised by `change` writes nothing. `change` is given the rows changed since `known` (the version the
        writer holds; it may be called again with later changes when another process wrote first). Answers
        what the write changed, `since` the version `change` last saw: it touches only the rows it writes."""

    @abstractmethod
    def forget_live(self, scope: str | None) -> None:
        """Drop the writes of one session (None: of every session and of the whole mock): the fixtures again."""

    # -- outgoing calls: callbacks and webhooks (web/outgoing.py) ----------------------------------------------
    @abstractmethod
    def send_later(self, call: dict[str, Any]) -> None:
        """Put an outgoing call in the outbox, for whichever process claims it first."""

    @abstractmethod
    def claim(self, wait: float) -> dict[str, Any] | None:
        """Take the next outgoing call out of the outbox, atomically (two processes never take the same one);
        None when none came within `wait` seconds."""

    @abstractmethod
    def note_outgoing(self, entry: dict[str, Any]) -> None:
        """Keep (or replace, by its `id`) an outgoing call's entry in its journal, bounded as the journal is."""

    @abstractmethod
    def outgoing(self) -> list[dict[str, Any]]:
        """The journal of outgoing calls, oldest first, as every process noted them."""

    @abstractmethod
    def subscribe(self, webhook: str, url: str) -> None:
        """Send the webhook's events to `url` too, from now on (until a reset)."""

    @abstractmethod
    def subscriptions(self) -> dict[str, list[str]]:
        """The URLs subscribed at run time, by webhook."""

    @abstractmethod
    def clear_outgoing(self) -> None:
        """Forget the outgoing calls' journal, what waits in the outbox and the subscriptions made at run time."""

    # -- sessions -------------------------------------------------------------------------------------------
    @abstractmethod
    def touch(self, session: str) -> None:
        """The session is in use (a control request): its idle time starts again."""

    @abstractmethod
    def sessions(self) -> list[str]:
        """The sessions known now, oldest use first."""

    def forget(self, session: str) -> None:
        """Everything of one session: its scenarios (and their counts), state machines, journal, coverage and writes."""
        uids = [r.uid for r in self.book().runtime if r.session == session]
        self.forget_session_counts(session)
        self.forget_states(session)
        # a new book even when the session set no scenario: every process then forgets which of the session's
        # counts it learnt were used up (pipeline/scenarios.py keeps that to save a round trip)
        self.change_book(lambda book, _: book.next(r for r in book.runtime if r.session != session))
        if uids:
            self.forget_counts(uids)
        self.clear(session)
        self.forget_live(session)
        self._untrack(session)

    @abstractmethod
    def _untrack(self, session: str) -> None:
        """The session is no longer known (its idle time is no longer watched)."""

    def reset(self) -> None:
        """Everything, everywhere: no scenario set at run time, the fixtures' back with fresh counts, an empty
        journal and coverage, no session, no write (the fixtures' collections as they are in the files), no drift,
        no outgoing call and no subscription made at run time."""
        self.sync()
        self.change_book(lambda book, _: book.next((), ()))
        self.forget_counts(None)
        self.forget_states(None)
        self.clear(None)
        self.clear_drift()
        self.forget_live(None)
        self.clear_outgoing()
        for session in self.sessions():
            self._untrack(session)

    # -- the rest -------------------------------------------------------------------------------------------
    def sync(self) -> None:  # noqa: B027 (a no-op where nothing is ever on its way: the memory store)
        """Every call recorded so far, by every process, is readable once this returns."""

    @abstractmethod
    def secret(self) -> str:
        """The secret cursors are sealed with, the same for every process sharing the store."""

    def close(self) -> None:  # noqa: B027 (a no-op where nothing is ever on its way: the memory store)
        """Write what is still on its way; the store may not be used afterwards."""


def scoped_state(url: str | None, scope: str) -> str | None:
    """The store URL for one API of a mock of several: the memory store is each API's own anyway; in Redis its
    keys get a prefix of their own (the URL's `?prefix=`, by default `mockserver`, then `:scope`), so scenarios,
    journal and coverage stay apart however many mocks share the Redis."""
    if url in (None, "", "memory"):
        return url
    assert url is not None
    parts, query, prefix = split_prefix(url)
    return urlunsplit(parts._replace(query=urlencode([*query, ("prefix", f"{prefix}:{scope}")], safe=":")))


def split_prefix(url: str) -> tuple[SplitResult, list[tuple[str, str]], str]:
    """A Redis URL's parts, its query without `?prefix=`, and that key prefix (default `mockserver`) without a
    trailing `:`: what `scoped_state` scopes and the Redis store keys its names with."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = next((value for key, value in query if key == "prefix"), REDIS_PREFIX).rstrip(":")
    return parts, [(key, value) for key, value in query if key != "prefix"], prefix


def open_store(url: str | None, *, journal_size: int = 1000, session_ttl: float = SESSION_TTL,
               timeout: float = STATE_TIMEOUT) -> Store:
    """`None` or `memory`: this process alone; `redis://…` (or `rediss://`, `unix://`): shared, each call to it
    waiting at most `timeout` seconds. Raises StateError with one line naming the URL and what failed."""
    if url in (None, "", "memory"):
        from .memory import MemoryStore

        return MemoryStore(journal_size=journal_size, session_ttl=session_ttl)
    assert url is not None
    if url.split("://", 1)[0] in ("redis", "rediss", "unix"):
        from .redis_store import RedisStore

        return RedisStore(url, journal_size=journal_size, session_ttl=session_ttl, timeout=timeout)
    raise StateError(f"--state {url!r}: expected 'memory' or a Redis URL such as redis://127.0.0.1:6379/0")
