"""The shared store: one Redis behind every worker and replica (`--state redis://host:6379/0`).

What each piece costs on the request path, and why:
- scenarios: each process keeps a copy of the book (the scenarios set at run time), replaced when another
  process announces a change on a pub/sub channel; the writer waits until every subscribed process has taken the
  change, so the next call on any replica sees it. A request that matches no scenario makes no round trip.
- a matching scenario is counted by a Lua script (read, compare, increment in one step), so `times: N` fires
  exactly N times across every process.
- journal entries, coverage counts and the proxy's drift counts are queued and written by a background thread in
  batches (a stream with a length cap per scope, hashes of counts; a long body sent and kept once, by its digest,
  however many entries name it); a reader first asks every process to write what it queued.
- a read of a written collection is one round trip (a script: nothing when its version is still the one held),
  a write one too (two when another process wrote first: the refusal carries what that changed); both scripts
  run on the store's own idle connections.
- every call waits at most the timeout (`--state-timeout`, 1 s): a Redis that refuses and one that does not
  answer (stopped, frozen, cut off) are the same 503. The listener pings it twice a second, so a frozen Redis is
  noticed without a request waiting for it; from then on `check()` fails at once (the API and the control API
  answer 503 `mock-state-unavailable`, no wait), queued entries wait (bounded), and the listener reconnects,
  subscribes and reads the scenarios again by itself.

Keys live under one prefix (`mockserver:` by default; `?prefix=NAME` in the URL for another), so several mocks
can share one Redis. A single Redis, not Redis Cluster: the scripts touch keys they compute."""
from __future__ import annotations

import atexit
import dataclasses
import hashlib
import json
import logging
import multiprocessing.util
import operator
import secrets
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urlencode, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..base.bounded import BoundedCache
from ..base.errors import MockError
from ..base.process import PROCESS
from . import (
    COUNTED_KINDS,
    DRIFT_KINDS,
    INITIAL_STATE,
    STATE_TIMEOUT,
    UNKNOWN,
    Book,
    BookChange,
    DriftCounts,
    Rows,
    RowsChange,
    StateError,
    Store,
    Transition,
    split_prefix,
    unavailable,
)
from .records import EVERY, Call, Entry, Wanted

log = logging.getLogger("mockserver.state")
T = TypeVar("T")
ACK_WAIT_S = 2.0  # how long a change waits for every process to take it (a process that died is not waited for)
QUEUE_LIMIT = 50_000  # entries kept while Redis is away; past it the oldest are dropped, and counted
BATCH = 100  # entries written in one script call at most (Redis does nothing else meanwhile: ~6 ms for 100 pages)
# how long the writer lets a batch fill before it writes it (unless it is full, or a reader waits for it): under load
# one script call carries the calls of LINGER_S, not those that came while the last call ran (the first page at
# --workers 2: 11 calls a script call before, 60 with it)
LINGER_S = 0.02
SWEEP_EVERY_S = 30.0
# fields an HSCAN of the counters or states looks at per round trip: Redis's default, 10, made a scenario's removal
# 80 round trips once 800 scenarios had been counted (a session's counters are kept until the session is forgotten)
SCAN_COUNT = 1000
RECONNECT_MAX_S = 0.5  # the longest wait between two tries to reach a lost Redis: back within a second
PING_EVERY_S = 0.5  # how often the listener asks Redis whether it answers: a frozen Redis sends nothing to notice
BATCH_KEPT_S = 60  # how long Redis remembers a written batch, so a batch sent again after a timeout counts once
# a journal entry's body longer than this is sent to Redis once and kept by its digest, entries naming it (the first
# page's 15.8 kB answer was 16.4 kB sent to Redis per request); a shorter one costs less sent along in its entry
INLINE_BODY = 256
CALL_TEXTS = 4096  # the calls whose JSON a process's writer keeps made
HELD_BODIES = 256  # the long bodies a process remembers Redis holds (at most 4 MB: 16 kB each), so it sends them once
# what the writer queues: a call (journal entry, coverage call, session) or one exchange's drift kinds
Queued = tuple[Entry, Call, str | None] | Mapping[str, dict[str, Any]]

# the next hit of a scenario, or -1 when its `times` are used up, or -2 when its state machine (field ARGV[3] of
# the states hash, when given) is not in the required state ARGV[4]: read, compare, count and move in one step
_HIT = """
local field = ARGV[1] .. '|hits'
local times = tonumber(ARGV[2])
local hits = tonumber(redis.call('HGET', KEYS[1], field) or '0')
if times > 0 and hits >= times then return -1 end
if ARGV[3] ~= '' then
  local now = redis.call('HGET', KEYS[2], ARGV[3]) or ARGV[7]
  if ARGV[4] ~= '' and now ~= ARGV[4] then return -2 end
  if ARGV[5] ~= '' and hits + 1 >= tonumber(ARGV[6]) then redis.call('HSET', KEYS[2], ARGV[3], ARGV[5]) end
end
return redis.call('HINCRBY', KEYS[1], field, 1)
"""

# a batch of calls: each gets the next id, goes into the journal (and its session's) and is counted for coverage;
# a batch whose token was written already is not written again (sent again after a timeout it may have reached a
# Redis that was only frozen). A body longer than INLINE_BODY is kept once, in the `bodies` hash by its digest,
# with the number of journal entries that name it (`body-refs`): an entry carries the digests (fields `q`, `r`),
# and a body goes when the last entry naming it is trimmed or cleared (_RELEASE). ARGV: prefix, journal size,
# coverage cap, now, token, how long a token is kept, the number of bodies sent (digest, body), the number of groups
# of calls in the batch and each group's session, call, request body's digest and response body's digest ('' for a
# body kept in the entry), then per call its group's number (from 0), a space and its entry: what calls share is
# sent once a batch, not once an entry (a first page's batch is one group: 5 arguments an entry were 1). A named
# body neither sent nor held is asked for: the script writes nothing and returns the digests to send.
# What a batch changes it changes once: a call's count by the number of its calls, a body's count by the entries
# that came and went naming it, the sessions' last use in one command (per entry they were most of its commands).
# _RELEASE: `unname` counts the bodies that entries (as XRANGE gives them) name, -1 an entry, into `changes`;
# `settle` applies each body's change, and a body no entry names any more goes.
_RELEASE = """
local function unname(found, changes)
  for _, e in ipairs(found) do
    local f = e[2]
    for k = 1, #f, 2 do
      if f[k] == 'q' or f[k] == 'r' then changes[f[k + 1]] = (changes[f[k + 1]] or 0) - 1 end
    end
  end
end
local function settle(p, changes)
  local refs, bodies = p .. 'body-refs', p .. 'bodies'
  for d, n in pairs(changes) do
    if redis.call('HINCRBY', refs, d, n) <= 0 then
      redis.call('HDEL', refs, d)
      redis.call('HDEL', bodies, d)
    end
  end
end
"""
_APPEND = _RELEASE + """
local p, maxlen, cap, now, token, kept = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6]
local bodies = p .. 'bodies'
local groups = 8 + 2 * tonumber(ARGV[7])
local first = groups + 1 + 4 * tonumber(ARGV[groups])
local sent, missing, asked = {}, {}, {}
for i = 8, groups - 1, 2 do sent[ARGV[i]] = true end
for i = groups + 1, first - 1, 4 do
  for j = i + 2, i + 3 do
    local d = ARGV[j]
    if d ~= '' and not sent[d] and not asked[d] then
      asked[d] = true
      if redis.call('HEXISTS', bodies, d) == 0 then missing[#missing + 1] = d end
    end
  end
end
if #missing > 0 then return missing end
if not redis.call('SET', p .. 'batch|' .. token, 1, 'NX', 'EX', kept) then return {} end
for i = 8, groups - 1, 2 do redis.call('HSETNX', bodies, ARGV[i], ARGV[i + 1]) end
local id = redis.call('INCRBY', p .. 'seq', #ARGV - first + 1) - (#ARGV - first + 1)
local named, counted, order, streams, sessions = {}, {}, {}, {}, {}
local function count(key, scope, field)
  local at = key .. '|' .. field
  if not counted[at] then
    counted[at] = 0
    order[#order + 1] = {key, scope, field, at}
  end
  counted[at] = counted[at] + 1
end
local function add(key, id, entry, q, r)
  local fields = {'e', entry}
  if q ~= '' then fields[#fields + 1] = 'q'; fields[#fields + 1] = q; named[q] = (named[q] or 0) + 1 end
  if r ~= '' then fields[#fields + 1] = 'r'; fields[#fields + 1] = r; named[r] = (named[r] or 0) + 1 end
  redis.call('XADD', key, id, unpack(fields))
  streams[key] = true
end
for i = first, #ARGV do
  local at = string.find(ARGV[i], ' ', 1, true)
  local k = groups + 1 + 4 * tonumber(string.sub(ARGV[i], 1, at - 1))
  local session, call, q, r = ARGV[k], ARGV[k + 1], ARGV[k + 2], ARGV[k + 3]
  local entry = string.sub(ARGV[i], at + 1)
  id = id + 1
  add(p .. 'journal', id .. '-0', entry, q, r)
  count(p .. 'calls', '', call)
  if session ~= '' then
    add(p .. 'journal|' .. session, id .. '-0', entry, q, r)
    count(p .. 'calls|' .. session, session, call)
    sessions[session] = true
  end
end
for key in pairs(streams) do
  local over = redis.call('XLEN', key) - maxlen
  if over > 0 then
    unname(redis.call('XRANGE', key, '-', '+', 'COUNT', over), named)
    redis.call('XTRIM', key, 'MAXLEN', maxlen)
  end
end
settle(p, named)
for _, c in ipairs(order) do
  local key, scope, field, n = c[1], c[2], c[3], counted[c[4]]
  -- a call counted before is one command; a new one past the cap is taken back and counted only as a number
  if redis.call('HINCRBY', key, field, n) == n and redis.call('HLEN', key) > cap then
    redis.call('HDEL', key, field)
    redis.call('HINCRBY', p .. 'uncounted', scope, n)
  end
end
local used = {}
for session in pairs(sessions) do
  used[#used + 1] = now
  used[#used + 1] = session
end
if #used > 0 then redis.call('ZADD', p .. 'sessions', unpack(used)) end
return {}
"""

# a journal's (KEYS[1]) entries from id ARGV[1] ('-': the oldest), the newest ARGV[2] of them ('': all), with the
# bodies they name: {entries as XRANGE gives them (newest first for the newest few), digests, bodies}
_READ = """
local found
if ARGV[2] == '' then
  found = redis.call('XRANGE', KEYS[1], ARGV[1], '+')
else
  found = redis.call('XREVRANGE', KEYS[1], '+', ARGV[1], 'COUNT', ARGV[2])
end
local names, seen = {}, {}
for _, e in ipairs(found) do
  local f = e[2]
  for k = 1, #f, 2 do
    if (f[k] == 'q' or f[k] == 'r') and not seen[f[k + 1]] then
      seen[f[k + 1]] = true
      names[#names + 1] = f[k + 1]
    end
  end
end
if #names == 0 then return {found, {}, {}} end
return {found, names, redis.call('HMGET', KEYS[2], unpack(names))}
"""

# one session's journal and coverage forgotten (ARGV[1] the prefix, ARGV[2] the session), with the bodies only its
# entries named; or ('' for the session) every journal, coverage count and body, in one step with the sessions'
# (a batch written between reading the sessions and deleting would leave a session's entries naming no body)
_CLEAR = _RELEASE + """
local p, session = ARGV[1], ARGV[2]
if session == '' then
  redis.call('DEL', p .. 'journal', p .. 'calls', p .. 'uncounted', p .. 'bodies', p .. 'body-refs')
  for _, s in ipairs(redis.call('ZRANGE', p .. 'sessions', 0, -1)) do
    redis.call('DEL', p .. 'journal|' .. s, p .. 'calls|' .. s)
  end
  return
end
local key = p .. 'journal|' .. session
local changes = {}
unname(redis.call('XRANGE', key, '-', '+'), changes)
settle(p, changes)
redis.call('DEL', key, p .. 'calls|' .. session)
redis.call('HDEL', p .. 'uncounted', session)
"""

# a batch of exchanges the proxy checked: each counted, and each of its kinds of drift (a count and the row first
# seen) up to a cap of kinds; written once per token, like the journal's batches
_DRIFT = """
local p, cap, token, kept = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
if not redis.call('SET', p .. 'batch|' .. token, 1, 'NX', 'EX', kept) then return 0 end
local counts, rows, totals = p .. 'drift', p .. 'drift-rows', p .. 'drift-totals'
local i = 5
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  redis.call('HINCRBY', totals, 'exchanges', 1)
  if n > 0 then redis.call('HINCRBY', totals, 'drifting', 1) end
  for j = i + 1, i + 2 * n, 2 do
    if redis.call('HEXISTS', counts, ARGV[j]) == 1 or redis.call('HLEN', counts) < cap then
      redis.call('HINCRBY', counts, ARGV[j], 1)
      redis.call('HSETNX', rows, ARGV[j], ARGV[j + 1])
    else
      redis.call('HINCRBY', totals, 'overflow', 1)
    end
  end
  i = i + 1 + 2 * n
end
return 1
"""

# a scope's writes to a collection (stateful mode) are three keys: a hash (KEYS[1]: `r:<key>` a row as JSON, `~v`
# the version `<epoch>.<n>`, `~e` the epoch, `~n` the writes so far), a sorted set of item keys by the number of
# the write that last changed them (KEYS[2]), and a hash of counters (KEYS[3]).
# _SINCE: what changed since version `known` (epoch, number) when the version is now `v` (neither nothing nor
# `known`): {v, 'delta', counters, keys, rows} the rows changed since (false: removed), else {v, 'full', counters,
# the hash}. A reader pays for what changed, not for the collection.
_SINCE = """
local function since(v, epoch, number, limit)
  local counters = redis.call('HGETALL', KEYS[3])
  if number ~= '' and redis.call('HGET', KEYS[1], '~e') == epoch then
    local keys = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. number, '+inf', 'LIMIT', 0, tonumber(limit) + 1)
    if #keys <= tonumber(limit) then
      local rows = {}
      if #keys > 0 then
        local fields = {}
        for i, k in ipairs(keys) do fields[i] = 'r:' .. k end
        rows = redis.call('HMGET', KEYS[1], unpack(fields))
      end
      return {v, 'delta', counters, keys, rows}
    end
  end
  return {v, 'full', counters, redis.call('HGETALL', KEYS[1])}
end
"""
# _LIVE: what changed since version ARGV[1] (epoch ARGV[2], number ARGV[3], at most ARGV[4] rows as a delta): {''}
# nothing written; {version} no change; else as _SINCE.
_LIVE = _SINCE + """
local v = redis.call('HGET', KEYS[1], '~v')
if not v then return {''} end
if v == ARGV[1] then return {v} end
return since(v, ARGV[2], ARGV[3], ARGV[4])
"""

# _WRITE: one write, only if the version is still ARGV[1] ('' for nothing written; epoch ARGV[2], number ARGV[3],
# as _LIVE's): {new version, 'done'}; else what changed since, as _LIVE answers it, so the writer decides again
# without another round trip. ARGV[5] is the epoch when the rows start from nothing, ARGV[6] the number of counters
# that follow (name, value), then (item key, row) pairs, '' removing the row. It touches only the rows it writes.
_WRITE = _SINCE + """
local v = redis.call('HGET', KEYS[1], '~v')
if not v then
  if ARGV[1] ~= '' then return {''} end
elseif v ~= ARGV[1] then
  return since(v, ARGV[2], ARGV[3], ARGV[4])
end
local e = redis.call('HGET', KEYS[1], '~e')
if not e then
  e = ARGV[5]
  redis.call('HSET', KEYS[1], '~e', e)
end
local n = redis.call('HINCRBY', KEYS[1], '~n', 1)
local version = e .. '.' .. n
redis.call('HSET', KEYS[1], '~v', version)
local c = tonumber(ARGV[6])
for i = 7, 6 + 2 * c, 2 do redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1]) end
for i = 7 + 2 * c, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[1], 'r:' .. ARGV[i])
  else
    redis.call('HSET', KEYS[1], 'r:' .. ARGV[i], ARGV[i + 1])
  end
  redis.call('ZADD', KEYS[2], n, ARGV[i])
end
redis.call('SADD', KEYS[4], KEYS[1], KEYS[2], KEYS[3])
return {version, 'done'}
"""
LARGEST = 2**63 - 1  # the largest number Redis takes as a stream id or a count: a larger one means as much
DELTA_LIMIT = 4000  # rows read as what changed; past it, all of them (a Lua call takes at most ~8,000 arguments)


class Hot(NamedTuple):
    """A script of the request path, run on the store's own idle connections (`RedisStore._run`) by its SHA-1."""

    text: str
    sha: str


def _hot(text: str) -> Hot:
    return Hot(text, hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest())


_LIVE_HOT, _WRITE_HOT = _hot(_LIVE), _hot(_WRITE)


def _split_url(url: str) -> tuple[str, str, str]:
    """The URL for redis-py, the key prefix (`?prefix=`), and the URL as it may be shown (no password)."""
    parts, query, prefix = split_prefix(url)
    clean = urlunsplit(parts._replace(query=urlencode(query)))
    netloc = parts.netloc.rsplit("@", 1)
    shown = urlunsplit(parts._replace(netloc="***@" + netloc[1] if len(netloc) == 2 else parts.netloc))
    return clean, prefix + ":", shown


# an entry's fields in its head in Redis, in `Entry`'s order (a field added later goes last, with a default: an
# entry written before it has none, and gets the default)
_HEAD = tuple(f.name for f in dataclasses.fields(Entry) if f.name not in ("id", "request_body", "response_body"))
_head_of = operator.attrgetter(*_HEAD)
# json.dumps makes an encoder per call when given separators: made once, the head of a first page's entry took 4 us,
# not 5 (of the writer's 19 us an entry); an entry holds no cycle to look for
_compact = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def _entry_bytes(entry: Entry, request_inline: bool, response_inline: bool) -> bytes:
    """An entry as kept in Redis: one line of JSON, a list of the inline request body's length and the fields in
    _HEAD's order (their names were 38 % of the head's bytes), then its bodies short enough to keep inline, as
    they are (a body in JSON was a fifth of a worker's time under load with Redis: every quote of a JSON body
    escaped, then unescaped); a longer body is kept apart, by its digest (see _APPEND)."""
    request = entry.request_body if request_inline else b""
    return (_compact([len(request), *_head_of(entry)]).encode() + b"\n" + request
            + (entry.response_body if response_inline else b""))


def _digest(body: bytes) -> str:
    """The name a long body is kept under in Redis (SHA-256: the fastest of hashlib's with the CPU's SHA support)."""
    return hashlib.sha256(body).hexdigest()[:32]


def _entry(stream_id: bytes, fields: dict[bytes, bytes], bodies: Mapping[bytes, bytes]) -> Entry:
    """An entry from its stream fields: `e` (the head, and the bodies kept inline), `q` and `r` (the digests of a
    long request and response body, kept in `bodies`). Entries an earlier mock sharing this Redis wrote are read
    too: a head of named fields, and before it the bodies inside that JSON, as latin-1 text."""
    head, newline, inline = fields[b"e"].partition(b"\n")  # one line: JSON escapes every newline in its strings
    data = json.loads(head)
    if isinstance(data, list):
        split, *values = data
        data = dict(zip(_HEAD, values))
    elif newline:
        split = data.pop("request_bytes")
    else:
        data["request_body"] = data["request_body"].encode("latin-1")
        data["response_body"] = data["response_body"].encode("latin-1")
        return Entry(int(stream_id.split(b"-")[0]), **data)
    data["request_body"], data["response_body"] = inline[:split], inline[split:]
    for field, name in ((b"q", "request_body"), (b"r", "response_body")):
        if field in fields:
            data[name] = bodies[fields[field]]
    return Entry(int(stream_id.split(b"-")[0]), **data)


def _evalsha(connection: Any, script: Hot, keys: list[str], args: list[Any]) -> Any:
    connection.send_command("EVALSHA", script.sha, len(keys), *keys, *args)
    try:
        return connection.read_response()
    except redis.exceptions.NoScriptError:
        connection.send_command("EVAL", script.text, len(keys), *keys, *args)
        return connection.read_response()


def _known(known: str | None) -> list[Any]:
    """A held version as _LIVE and _WRITE take it: the version, its epoch, its number, and the delta limit."""
    epoch, _, number = (known or "").rpartition(".")
    return [known or "", epoch, number if number.isdigit() else "", DELTA_LIMIT]


def _since(answer: list[Any], known: str | None) -> Rows | None:
    """_LIVE's (or a refused _WRITE's) answer: the rows changed since `known`, None when none did."""
    version = answer[0].decode() or None
    if version == known:
        return None
    if version is None:
        return Rows()
    if answer[1] == b"delta":
        rows = {key.decode(): json.loads(row) if row else None for key, row in zip(answer[3], answer[4])}
        return Rows(version, rows, _counters(answer[2]), since=known)
    return _full(answer[0], answer[2], answer[3])


def _full(version: bytes, counters: list[bytes], raw: list[bytes]) -> Rows:
    """All the rows of a scope's collection, from its hash's fields and values (`n:` counters: an earlier mock's)."""
    fields = dict(zip(raw[::2], raw[1::2]))
    older = {k.decode()[2:]: int(v) for k, v in fields.items() if k.startswith(b"n:")}
    return Rows(version.decode(), {k.decode()[2:]: json.loads(v) for k, v in fields.items() if k.startswith(b"r:")},
                {**older, **_counters(counters)})


def _counters(raw: list[bytes]) -> dict[str, int]:
    return {k.decode(): int(v) for k, v in zip(raw[::2], raw[1::2])}


def _call_json(call: Call) -> bytes:
    return _compact([*call[:5], [list(h) for h in call.headers], call.violated]).encode()


def _call(raw: bytes) -> Call:
    op, method, path, query, status, headers, *violated = json.loads(raw)  # counted by an earlier mock: none
    return Call(op, method, path, query, status, tuple((k, v) for k, v in headers), bool(violated and violated[0]))


class RedisStore(Store):
    kind = "redis"
    shared = True

    def __init__(self, url: str, *, journal_size: int = 1000, session_ttl: float = 3600.0,
                 timeout: float = STATE_TIMEOUT) -> None:
        clean, self._prefix, self._shown = _split_url(url)
        self._size, self._ttl, self._timeout = journal_size, session_ttl, timeout
        try:
            # a call waits at most `timeout`, to connect or for an answer: one retry at once, only where the
            # connection was refused or dropped (a pooled connection to a restarted Redis), never after a timeout,
            # which would double the wait (redis-py's default retries three times, with backoff, timeouts too)
            # Any: redis-py types every reply as the union of its sync and async forms, which no call here narrows
            self._redis: Any = redis.Redis.from_url(
                clean, socket_timeout=timeout, socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)))
            self._redis.ping()
            self._hit = self._redis.register_script(_HIT)
            self._append = self._redis.register_script(_APPEND)
            self._read_journal = self._redis.register_script(_READ)
            self._clear = self._redis.register_script(_CLEAR)
            self._count_drift = self._redis.register_script(_DRIFT)
            self._book = self._read_book()
            self._redis.set(self._k("secret"), secrets.token_hex(32), nx=True)
            self._secret = self._redis.get(self._k("secret")).decode()  # type: ignore[union-attr]
        except (redis.RedisError, ValueError) as exc:
            raise StateError(f"--state {self._shown}: {exc or type(exc).__name__}") from None
        self._available, self._reason = True, ""
        self._pid = 0  # the process whose threads run: threads do not survive a fork, so each worker starts its own
        # connections the hot scripts run on, taken and put back by one thread at a time (a list's pop and append
        # are atomic); of one process: a forked worker starts with none (`_idle_pid`)
        self._idle: list[Any] = []
        self._idle_pid = PROCESS.pid
        self._starting = threading.Lock()
        # one change of the book at a time in a process: its threads changing it together only failed each other's
        # WATCH, each reading and parsing the whole book again (64 sessions setting and removing scenarios: 5
        # transactions tried per change)
        self._changing = threading.Lock()
        self._closed = False

    def _k(self, name: str) -> str:
        return self._prefix + name

    def _guarded(self, action: Callable[[], T]) -> T:
        """A Redis call on behalf of a request: a lost Redis is the API's 503, never a traceback; its time and
        outcome told to `timed` when someone listens."""
        started, failed = time.perf_counter(), True
        try:
            done = action()
            failed = False
            return done
        except redis.RedisError as exc:
            raise unavailable(self._lost(exc)) from None
        finally:
            if self.timed is not None:
                self.timed(time.perf_counter() - started, failed)

    def _run(self, script: Hot, keys: list[str], args: list[Any]) -> Any:
        """A hot script's answer, by EVALSHA on an idle connection of the store's: no pool, lock or retry wrapper
        of redis-py's on the way. A connection Redis dropped (restarted) is tried once more on a new one, as the
        pool's retry would; NOSCRIPT (a restarted Redis, SCRIPT FLUSH) sends the script itself, which Redis keeps
        again. Any other failure drops the connection: its answer may still be on the way."""
        if self._idle_pid != PROCESS.pid:  # a forked worker: the parent's sockets are not its own
            self._idle, self._idle_pid = [], PROCESS.pid
        idle = self._idle
        try:
            connection = idle.pop()
        except IndexError:
            pool = self._redis.connection_pool
            connection = pool.connection_class(**pool.connection_kwargs)
        try:
            try:
                answer = _evalsha(connection, script, keys, args)
            except redis.ConnectionError:  # dropped by a restarted Redis: once more, connected afresh
                connection.disconnect()
                answer = _evalsha(connection, script, keys, args)
        except redis.ResponseError:  # an error in the script: the connection is fine
            idle.append(connection)
            raise
        except BaseException:
            connection.disconnect()
            raise
        idle.append(connection)
        return answer

    def _lost(self, exc: redis.RedisError) -> str:
        """Why Redis cannot be used, said once in the log. A Redis that refused or did not answer in time is away
        for every request from now on (503 at once, no wait for it) until the listener is subscribed again."""
        reason = f"Redis at {self._shown}: {exc or type(exc).__name__}"
        if isinstance(exc, (redis.ConnectionError, redis.TimeoutError)):
            if self._available:
                log.error("the shared state at %s is unavailable: %s", self._shown, exc)
            self._available, self._reason = False, reason
        return reason

    # -- one listener and one writer per process --------------------------------------------------------
    def _ensure_threads(self) -> None:
        if self._pid == PROCESS.pid:
            return
        with self._starting:  # the first requests of a new worker arrive together: one starts, all wait for it
            if self._pid == PROCESS.pid:
                return
            self._cond = threading.Condition()
            # the oldest entries go first when Redis is away long enough to fill it
            self._queue: deque[Queued] = deque(maxlen=QUEUE_LIMIT)
            self._in_flight = 0
            self._flushing = 0  # readers waiting for the queue to be written: the writer lingers for none
            self._dropped = 0
            # body -> digest of the long bodies Redis took from this process's writer (its thread alone uses it)
            self._held: BoundedCache[bytes, str] = BoundedCache(HELD_BODIES)
            # a call as JSON: the same request is the same call (json.dumps of it was 14 % of the writer's samples)
            self._call_texts: BoundedCache[Call, bytes] = BoundedCache(CALL_TEXTS)
            self._ready = threading.Event()  # set once the listener subscribed, or found Redis away
            self._listener = threading.Thread(target=self._listen, name="mockserver-state-listener", daemon=True)
            self._listener.start()
            threading.Thread(target=self._write, name="mockserver-state-writer", daemon=True).start()
            # what is still queued is written at exit: atexit for a plain process, multiprocessing's finalizers for a
            # server's worker process (which ends without running atexit handlers)
            atexit.register(self._flush_at_exit)
            multiprocessing.util.Finalize(self, self._flush_at_exit, exitpriority=20)
            self._pid = PROCESS.pid  # last: a thread that sees it finds everything above in place

    def _wait_listening(self) -> None:
        """A new worker's first calls that use the scenarios wait (at most the timeout) until its listener is
        subscribed, so it misses no change; unsubscribed by then, Redis is away. A call that needs no state (a
        404, the journal entry of any call) never waits here."""
        if not self._ready.is_set() and not self._ready.wait(self._timeout):
            raise unavailable(f"Redis at {self._shown} did not answer within {self._timeout:g} s")

    def _listen(self) -> None:
        """Take every change another process announces; on a (re)connection, read the whole book again."""
        backoff = 0.1
        while not self._closed:
            pubsub = self._redis.pubsub()
            try:
                pubsub.subscribe(self._k("events"))
                next_sweep = next_ping = time.monotonic()
                while not self._closed:
                    # wakes often: a Redis that refuses is noticed at once, a frozen one at the next ping
                    message = pubsub.get_message(timeout=min(0.25, self._timeout))
                    if message and message["type"] == "subscribe":  # first, and after redis-py reconnected
                        self._book = self._read_book()
                        if not self._available:
                            log.warning("the shared state at %s is back", self._shown)
                        self._available, backoff = True, 0.1
                        self._ready.set()
                    elif message and message["type"] == "message":
                        self._on_events([message["data"].decode(), *self._pending(pubsub)])
                    if not self._available:  # a request or the writer lost Redis: reconnect, read the book again
                        raise redis.ConnectionError(self._reason)
                    if time.monotonic() >= next_ping:  # a frozen Redis sends nothing: ask it (at most the timeout)
                        self._redis.ping()
                        next_ping = time.monotonic() + PING_EVERY_S
                    if time.monotonic() >= next_sweep:
                        self._sweep()
                        next_sweep = time.monotonic() + min(SWEEP_EVERY_S, self._ttl / 2)
            except (redis.RedisError, MockError) as exc:  # MockError: a Redis call of the sweep, guarded
                if self._available:
                    log.error("the shared state at %s is unavailable: %s", self._shown, exc)
                self._available, self._reason = False, f"Redis at {self._shown}: {exc or type(exc).__name__}"
                self._ready.set()  # a new worker's first calls wait no longer: they answer 503 at once
                time.sleep(backoff)
                backoff = min(backoff * 2, RECONNECT_MAX_S)
            finally:
                try:
                    pubsub.close()
                except redis.RedisError:
                    pass

    @staticmethod
    def _pending(pubsub: Any) -> Iterator[str]:
        """The changes announced meanwhile, already received: taken with the first, so a busy process does each
        kind of work once for all of them (64 sessions changing scenarios and reading journals announce some 100 a
        second; one at a time, each waiting for the interpreter among the answering threads, the listener fell
        behind and a scenario change waited up to a second for its acknowledgements)."""
        while (message := pubsub.get_message(timeout=0.0)) is not None:
            if message["type"] == "message":
                yield message["data"].decode()
            elif message["type"] == "subscribe":  # redis-py subscribed again: what was missed is in the book
                yield "book:"

    def _on_events(self, events: list[str]) -> None:
        """Do what the announced changes ask (the scenarios' book read once, queued entries written once), then
        acknowledge each in one round trip: the broadcaster deletes its list, the expiry only guards a lost one."""
        kinds = {event.partition(":")[0] for event in events}
        if "book" in kinds:
            book = self._read_book()
            if book.version >= self._book.version or book.version == 0:
                self._book = book
        if "flush" in kinds:
            self._flush_local(ACK_WAIT_S)
        tokens = [token for event in events if (token := event.partition(":")[2])]
        if tokens:
            ack = self._redis.pipeline(transaction=False)
            for token in tokens:
                ack.rpush(self._k("ack|" + token), 1)
                ack.expire(self._k("ack|" + token), 10)
            ack.execute()

    def _broadcast(self, kind: str) -> None:
        """Announce a change (or ask for queued entries) and wait until every process subscribed has done it."""
        token = uuid.uuid4().hex
        receivers = int(self._redis.publish(self._k("events"), f"{kind}:{token}"))
        if threading.current_thread() is getattr(self, "_listener", None):
            return  # the listener itself (a session sweep) cannot wait for its own answer
        key, deadline = self._k("ack|" + token), time.monotonic() + ACK_WAIT_S
        while receivers:
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("a process sharing %s did not answer within %.0f s", self._shown, ACK_WAIT_S)
                break
            # each wait shorter than the timeout: Redis answers a BLPOP only when it ends
            if self._redis.blpop([key], timeout=max(0.01, min(left, self._timeout / 2))) is not None:
                receivers -= 1
        self._redis.delete(key)

    def _write(self) -> None:
        """Write queued entries in batches; while Redis is away, send the batch again (the same batch: written
        once however often it is sent) every half second, while requests keep queueing (up to QUEUE_LIMIT)."""
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._closed)
                self._cond.wait_for(lambda: len(self._queue) >= BATCH or self._flushing or self._closed, LINGER_S)
                if not self._queue:
                    return
                batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
                self._in_flight = len(batch)
            groups: dict[tuple[str, bytes, str, str], int] = {}  # (session, call, digests) -> its number
            calls: list[bytes] = []
            named: dict[str, bytes] = {}  # digest -> body of every long body the batch's entries name
            drift: list[Any] = [self._prefix, DRIFT_KINDS, uuid.uuid4().hex, BATCH_KEPT_S]
            for item in batch:
                if isinstance(item, tuple):
                    entry, call, session = item
                    request, response = self._name(entry.request_body, named), self._name(entry.response_body, named)
                    group = (session or "", self._call_texts.made(call, partial(_call_json, call)), request, response)
                    number = groups.setdefault(group, len(groups))
                    calls.append(b"%d " % number + _entry_bytes(entry, not request, not response))
                else:
                    drift.append(len(item))
                    for kind, row in item.items():
                        drift += [kind, json.dumps(row, separators=(",", ":"))]
            if calls:
                self._append_calls(groups, calls, named)
            if len(drift) > 4:
                self._send(self._count_drift, drift)
            with self._cond:
                if self._dropped:
                    log.warning("Redis at %s takes the journal again: %d entries were dropped while it was away",
                                self._shown, self._dropped)
                    self._dropped = 0
                self._in_flight = 0
                self._cond.notify_all()

    def _name(self, body: bytes, named: dict[str, bytes]) -> str:
        """The digest a long body is kept under ('' for a body kept inline), noted in `named`."""
        if len(body) <= INLINE_BODY:
            return ""
        digest = self._held.get(body) or _digest(body)  # the same answer again: a dict look-up, no hashing
        named[digest] = body
        return digest

    def _append_calls(self, groups: Mapping[tuple[str, bytes, str, str], int], calls: list[bytes],
                      named: dict[str, bytes]) -> None:
        """Write a batch of calls (each its group's number and its entry, see _APPEND), with the long bodies Redis
        does not hold yet; those it lost meanwhile (trimmed with the last entry naming them, or reset) it asks
        for, and they are sent with the same batch again."""
        head = [self._prefix, self._size, COUNTED_KINDS, time.time(), uuid.uuid4().hex, BATCH_KEPT_S]
        shared = [len(groups), *(part for group in groups for part in group)]  # in their numbers' order
        fresh = {digest: body for digest, body in named.items() if body not in self._held}
        while True:
            sent = [part for pair in fresh.items() for part in pair]
            missing = self._send(self._append, [*head, len(fresh), *sent, *shared, *calls])
            if not missing:
                break
            for raw in missing:
                digest = raw.decode()
                self._held.pop(named[digest], None)
                fresh[digest] = named[digest]
        for digest, body in fresh.items():
            self._held.put(body, digest)

    def _send(self, script: Any, args: list[Any]) -> Any:
        """Run a batch's script until Redis takes it (or the store closes), trying again every half second; its
        answer."""
        refused = False
        while True:
            try:
                return script(args=args)
            except redis.RedisError as exc:
                self._lost(exc)
                if not refused and not isinstance(exc, (redis.ConnectionError, redis.TimeoutError)):
                    log.error("Redis at %s refuses the journal: %s; trying again every 0.5 s", self._shown, exc)
                refused = True
                if self._closed:  # lost, and said so by _flush_at_exit
                    return None
                time.sleep(0.5)

    def _flush_local(self, timeout: float) -> None:
        if self._pid != PROCESS.pid:
            return  # nothing queued in this process
        with self._cond:
            self._flushing += 1
            self._cond.notify_all()
            try:
                self._cond.wait_for(lambda: not self._queue and not self._in_flight, timeout)
            finally:
                self._flushing -= 1

    def _flush_at_exit(self) -> None:
        """What is queued is written before the process ends, if Redis answers within 5 s; else it is lost, and
        the log says how much."""
        self._flush_local(5.0)
        if self._pid == PROCESS.pid and (self._queue or self._in_flight):
            log.error("Redis at %s did not answer before this process ended: %d journal entries not written",
                      self._shown, len(self._queue) + self._in_flight)

    def _sweep(self) -> None:
        """Forget sessions idle longer than the TTL (any replica may do it; doing it twice is harmless)."""
        for raw in self._redis.zrangebyscore(self._k("sessions"), "-inf", time.time() - self._ttl):
            self.forget(raw.decode())

    # -- Store ----------------------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        shown = {"backend": "redis", "url": self._shown, "prefix": self._prefix, "shared": True,
                 "available": self._available, "sessionTtl": self._ttl}
        return shown if self._available else {**shown, "reason": self._reason}

    def probe(self) -> None:
        if not self._available and self._pid == PROCESS.pid:
            return  # known away, and this process's listener tries again every half second: no wait for Redis
        try:
            self._redis.ping()
        except redis.RedisError as exc:  # the listener sees it, reconnects and says when Redis is back
            if self._available:
                log.error("the shared state at %s is unavailable: %s", self._shown, exc)
            self._available, self._reason = False, f"Redis at {self._shown}: {exc or type(exc).__name__}"
            return
        if not self._available and self._pid != PROCESS.pid:  # no listener here yet to say Redis is back: the
            self._available, self._reason = True, ""  # first request starts it, and it reads the book afresh

    def settled(self) -> bool:
        return self._pid == PROCESS.pid and self._ready.is_set()

    def check(self) -> None:
        self._ensure_threads()
        self._wait_listening()
        if not self._available:
            raise unavailable(self._reason or f"Redis at {self._shown} cannot be reached")

    def _read_book(self) -> Book:
        raw = self._redis.get(self._k("book"))
        return Book.from_json(json.loads(raw)) if raw else Book()

    def book(self) -> Book:
        return self._book

    def change_book(self, change: BookChange) -> Book:
        self._ensure_threads()
        self._wait_listening()
        key, counters = self._k("book"), self._k("counters")
        changed: list[Book] = []

        def transaction(pipe: Any) -> None:
            raw = pipe.get(key)
            current = Book.from_json(json.loads(raw)) if raw else Book()

            def hits(uids: Iterable[str]) -> dict[str, int]:
                uids = list(uids)
                values = pipe.hmget(counters, [f"{uid}|hits" for uid in uids]) if uids else []
                return {uid: int(value or 0) for uid, value in zip(uids, values)}

            new = change(current, hits)
            pipe.multi()
            pipe.set(key, json.dumps(new.as_json()))
            changed[:] = [new]

        with self._changing:
            self.check()  # Redis lost while this call waited for the change before it: 503 at once, no second wait
            self._guarded(lambda: self._redis.transaction(transaction, key))
        self._book = changed[0]
        self._guarded(lambda: self._broadcast("book"))
        return changed[0]

    def hit(self, uid: str, times: int | None, transition: Transition | None = None) -> int:
        machine: list[str | int] = ["", "", "", 0]  # no state machine: the script reads none
        if transition is not None:
            machine = [_machine(transition.scope, transition.name), transition.required or "", transition.new or "",
                       transition.moves_from]
        return int(self._guarded(lambda: self._hit(keys=[self._k("counters"), self._k("states")],
                                                    args=[uid, times or 0, *machine, INITIAL_STATE])))

    def draw(self, uid: str) -> int:
        return int(self._guarded(lambda: self._redis.hincrby(self._k("counters"), f"{uid}|draws", 1))) - 1

    def hits(self, uids: Iterable[str]) -> dict[str, int]:
        uids = list(uids)
        if not uids:
            return {}
        values = self._guarded(lambda: self._redis.hmget(self._k("counters"), [f"{u}|hits" for u in uids]))
        return {uid: int(value or 0) for uid, value in zip(uids, values)}

    def forget_counts(self, uids: Iterable[str] | None) -> None:
        if uids is None:
            self._guarded(lambda: self._redis.delete(self._k("counters")))
            return
        gone = set(uids)
        fields = [f"{uid}|{kind}" for uid in gone for kind in ("hits", "draws")]
        if gone:
            fields += [f for f in self._counter_fields("*@*") if f.partition("@")[0] in gone]
        if fields:
            self._guarded(lambda: self._redis.hdel(self._k("counters"), *fields))

    def forget_session_counts(self, session: str) -> None:
        fields = self._counter_fields(f"*@{session}|*")
        if fields:
            self._guarded(lambda: self._redis.hdel(self._k("counters"), *fields))

    def _counter_fields(self, match: str) -> list[str]:
        """The fields of the counters hash that match a glob (no id or session name holds a glob's characters)."""
        found = self._guarded(lambda: list(self._redis.hscan_iter(self._k("counters"), match=match, count=SCAN_COUNT)))
        return [field.decode() for field, _ in found]

    def states(self, scope: str | None, names: Iterable[str]) -> dict[str, str]:
        names = list(names)
        if not names:
            return {}
        values = self._guarded(lambda: self._redis.hmget(self._k("states"), [_machine(scope, n) for n in names]))
        return {name: value.decode() if value else INITIAL_STATE for name, value in zip(names, values)}

    def forget_states(self, scope: str | None) -> None:
        key = self._k("states")
        if scope is None:
            self._guarded(lambda: self._redis.delete(key))
            return
        fields = [f for f, _ in self._guarded(lambda: list(self._redis.hscan_iter(key, match=_machine(scope, "*"),
                                                                                   count=SCAN_COUNT)))]
        if fields:
            self._guarded(lambda: self._redis.hdel(key, *fields))

    def record(self, entry: Entry, call: Call, session: str | None) -> None:
        self._enqueue((entry, call, session))

    def count_drift(self, kinds: Mapping[str, dict[str, Any]]) -> None:
        self._enqueue(kinds)

    def _enqueue(self, item: Queued) -> None:
        self._ensure_threads()
        with self._cond:
            # full, the deque drops the oldest: said once here, counted, and said with the count when Redis takes
            # the journal again (the writer)
            if len(self._queue) == self._queue.maxlen:
                if not self._dropped:
                    log.error("Redis at %s away too long: %d journal entries queued, the oldest are dropped "
                              "until it answers", self._shown, self._queue.maxlen)
                self._dropped += 1
            self._queue.append(item)
            if len(self._queue) in (1, BATCH):  # the writer waits for a first entry, then for a full batch
                self._cond.notify()

    def sync(self) -> None:
        self._ensure_threads()
        self._flush_local(ACK_WAIT_S)
        self._guarded(lambda: self._broadcast("flush"))

    def entries(self, session: str | None, wanted: Wanted = EVERY) -> list[Entry]:
        """One script call, which reads only the wanted entries and the long bodies they name (a page of ten of a
        session's 500 entries: 15 kB from Redis, not 370 kB)."""
        key = self._k("journal" if session is None else f"journal|{session}")
        since = "-" if wanted.since is None or wanted.since < 0 else min(wanted.since + 1, LARGEST)
        newest = "" if wanted.limit is None else min(wanted.limit, LARGEST)
        found, digests, bodies = self._guarded(lambda: self._read_journal(keys=[key, self._k("bodies")],
                                                                          args=[since, newest]))
        if newest:
            found.reverse()  # the newest first
        held = dict(zip(digests, bodies))
        return [_entry(stream_id, dict(zip(fields[::2], fields[1::2])), held) for stream_id, fields in found]

    def calls(self, session: str | None) -> tuple[dict[Call, int], int]:
        key = self._k("calls" if session is None else f"calls|{session}")
        counts, uncounted = self._guarded(lambda: self._redis.pipeline().hgetall(key).hget(
            self._k("uncounted"), session or "").execute())
        return {_call(raw): int(n) for raw, n in counts.items()}, int(uncounted or 0)

    def clear(self, session: str | None) -> None:
        self._guarded(lambda: self._clear(args=[self._prefix, session or ""]))

    def drift(self) -> DriftCounts:
        counts, rows, totals = self._guarded(lambda: self._redis.pipeline().hgetall(self._k("drift")).hgetall(
            self._k("drift-rows")).hgetall(self._k("drift-totals")).execute())
        return DriftCounts(int(totals.get(b"exchanges", 0)), int(totals.get(b"drifting", 0)),
                           int(totals.get(b"overflow", 0)),
                           {kind.decode(): (json.loads(rows[kind]), int(n)) for kind, n in counts.items()})

    def clear_drift(self) -> None:
        self._guarded(lambda: self._redis.delete(self._k("drift"), self._k("drift-rows"), self._k("drift-totals")))

    def _live_keys(self, scope: str | None, collection: str) -> list[str]:
        """The keys of a scope's writes to a collection (see _LIVE); '~' is no session's name."""
        key = self._k(f"live|{'~' if scope is None else scope}|{collection}")
        return [key, f"{key}|log", f"{key}|n"]

    def live(self, scope: str | None, collection: str, known: str | None) -> Rows | None:
        return self._changed(self._live_keys(scope, collection), known)

    def _changed(self, keys: list[str], known: str | None) -> Rows | None:
        """The rows changed since `known` (all of them when it is no version of theirs), None when none did: one
        round trip either way (a read that first asked for the version made two whenever another write came
        between: more than a third of the reads of the mixed load)."""
        return _since(self._guarded(lambda: self._run(_LIVE_HOT, keys, _known(known))), known)

    def change_live(self, scope: str | None, collection: str, change: RowsChange, known: str | None = UNKNOWN
                    ) -> Rows:
        """One script call when `known` is still the version (a writer that holds its collection, as the mock
        does): the write checks the version and applies in one step. Refused because another process wrote
        first, the same call answers what that changed: `change` decides again from it, and the write is sent
        again (two calls, not three with a read between)."""
        keys = self._live_keys(scope, collection)
        current = Rows(known, {}, {}, since=known) if known != UNKNOWN else self._changed(keys, UNKNOWN) or Rows()
        while True:
            update = change(current)
            # an epoch only for rows that start from nothing (uuid4 was 7 % of a worker's samples under writes)
            args: list[Any] = [*_known(current.version), "" if current.version else uuid.uuid4().hex,
                               len(update.counters)]
            for name, value in update.counters.items():
                args += [name, value]
            for key, row in update.rows.items():
                args += [key, "" if row is None else json.dumps(row, separators=(",", ":"))]
            answer = self._guarded(partial(self._run, _WRITE_HOT, [*keys, self._k("live-keys")], args))
            if answer[-1] == b"done":
                return Rows(answer[0].decode(), dict(update.rows), dict(update.counters), since=current.version)
            current = _since(answer, current.version) or Rows(current.version, {}, {}, since=current.version)

    def forget_live(self, scope: str | None) -> None:
        start = self._k(f"live|{scope}|")
        keys = [raw.decode() for raw in self._guarded(lambda: self._redis.smembers(self._k("live-keys")))]
        keys = [k for k in keys if scope is None or k.startswith(start)]
        if keys:
            self._guarded(lambda: self._redis.pipeline().delete(*keys).srem(self._k("live-keys"), *keys).execute())

    # outgoing calls: the outbox a list every process pops from (BLPOP: one taker per call), their journal a hash
    # by id with a list of ids in order (trimmed as the journal is), subscriptions a set of [webhook, url] pairs
    def send_later(self, call: dict[str, Any]) -> None:
        self._guarded(lambda: self._redis.rpush(self._k("outbox"), json.dumps(call)))

    def claim(self, wait: float) -> dict[str, Any] | None:
        # a blocking pop waits less than the socket may, so the wait is never taken for a lost Redis
        taken = self._guarded(lambda: self._redis.blpop([self._k("outbox")], timeout=min(wait, self._timeout / 2)))
        return json.loads(taken[1]) if taken else None

    def note_outgoing(self, entry: dict[str, Any]) -> None:
        key, order = self._k("outgoing"), self._k("outgoing-order")

        def note() -> None:
            if not self._redis.hset(key, entry["id"], json.dumps(entry)):
                return  # known already: replaced in place
            self._redis.rpush(order, entry["id"])
            dropped = self._redis.lrange(order, 0, -self._size - 1)
            if dropped:
                self._redis.pipeline().ltrim(order, -self._size, -1).hdel(key, *dropped).execute()

        self._guarded(note)

    def outgoing(self) -> list[dict[str, Any]]:
        ids = self._guarded(lambda: self._redis.lrange(self._k("outgoing-order"), 0, -1))
        found = self._guarded(lambda: self._redis.hmget(self._k("outgoing"), ids)) if ids else []
        return [json.loads(raw) for raw in found if raw is not None]

    def subscribe(self, webhook: str, url: str) -> None:
        self._guarded(lambda: self._redis.sadd(self._k("subscriptions"), json.dumps([webhook, url])))

    def subscriptions(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for raw in sorted(self._guarded(lambda: self._redis.smembers(self._k("subscriptions")))):
            webhook, url = json.loads(raw)
            found.setdefault(webhook, []).append(url)
        return found

    def clear_outgoing(self) -> None:
        self._guarded(lambda: self._redis.delete(*(self._k(name) for name in (
            "outbox", "outgoing", "outgoing-order", "subscriptions"))))

    def touch(self, session: str) -> None:
        self._guarded(lambda: self._redis.zadd(self._k("sessions"), {session: time.time()}))

    def sessions(self) -> list[str]:
        return [raw.decode() for raw in self._guarded(lambda: self._redis.zrange(self._k("sessions"), 0, -1))]

    def _untrack(self, session: str) -> None:
        self._guarded(lambda: self._redis.zrem(self._k("sessions"), session))

    def secret(self) -> str:
        return self._secret

    def close(self) -> None:
        self._flush_at_exit()
        self._closed = True
        if self._idle_pid == PROCESS.pid:
            for connection in self._idle:
                connection.disconnect()
        if self._pid == PROCESS.pid:
            with self._cond:
                self._cond.notify_all()


def _machine(scope: str | None, name: str) -> str:
    """A named state machine's field in the states hash: a session name holds no `|`."""
    return f"{scope or ''}|{name}"
