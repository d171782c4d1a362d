"""Answers already made, served again to the same request: a client polling a list, or a load test, asks for the
same page many times, and picking, paging, checking and writing it is most of the mock's own work per call.

Only what cannot change between two identical requests is cached: answers of reads (GET, HEAD) with no scenario in
force and no varied data asked for, for at most TTL_S seconds (a cursor in a cached page was signed at most that long
ago; one asked for is checked again within that time). The key is everything the answer is made from: the
operation, the path, query and body as sent, the headers the answer depends on, the caller's credential, the
session and the version of every written collection the session sees (so a write is seen by the very next read).
Every call is still routed, authenticated, validated, checked for scenarios and journaled with its own request
id; only the answer is reused. A reload builds a new pipeline and so a new cache."""
from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

from ..base.http import MockRequest
from ..spec.index import SpecIndex

TTL_S = 1.0
SIZE = 1024  # answers cached at most, and
MAX_BYTES = 8 * 2**20  # bytes of bodies cached at most: past either the cache starts again empty (a worker's memory
# stays flat however many different reads it serves; cached answers are a second old at most anyway), as with
# `base.bounded.BoundedCache`, which counts entries only
_READS = frozenset({"GET", "HEAD"})


class Cached(NamedTuple):
    status: int
    body: bytes
    media_type: str | None
    headers: dict[str, str]  # without the request's id
    source: str
    payload: Any
    until: float


class AnswerCache:
    def __init__(self, *, enabled: bool, varies_on: tuple[str, ...]) -> None:
        self.enabled = enabled
        self._varies_on = varies_on  # lower-case header names an answer may depend on
        self._answers: dict[tuple[Any, ...], Cached] = {}
        self._bytes = 0

    @classmethod
    def of(cls, spec: SpecIndex, *, enabled: bool) -> AnswerCache:
        """The cache for a description: an answer depends on the headers it declares as parameters besides the
        credential, on `Accept` and `Prefer`, and on cookies when a parameter is one."""
        declared = [p for op in spec.operations.values() for p in op.parameters]
        varies_on = {"accept", "prefer"} | {p.name.lower() for p in declared if p.location == "header"}
        varies_on |= {"cookie"} if any(p.location == "cookie" for p in declared) else set()
        return cls(enabled=enabled, varies_on=tuple(sorted(varies_on)))

    def key(self, op_id: str, request: MockRequest, caller_key: str, session: str | None,
            versions: Callable[[], tuple[str | None, ...]]) -> tuple[Any, ...] | None:
        """The request's key, or None when its answer must be made afresh; `versions` (of the written
        collections) is asked only for a read."""
        if not self.enabled or request.method not in _READS:
            return None
        return (op_id, request.method, request.path, request.query_string, caller_key, session, versions(),
                zlib.crc32(request.body) if request.body else None,
                *(request.headers.get(name) for name in self._varies_on))

    def get(self, key: tuple[Any, ...]) -> Cached | None:
        cached = self._answers.get(key)
        return cached if cached is not None and cached.until > time.monotonic() else None

    def put(self, key: tuple[Any, ...], status: int, body: bytes, media_type: str | None, headers: dict[str, str],
            source: str, payload: Any) -> None:
        if len(body) > MAX_BYTES:
            return
        if len(self._answers) >= SIZE or self._bytes + len(body) > MAX_BYTES:
            self._answers.clear()
            self._bytes = 0
        self._bytes += len(body)
        self._answers[key] = Cached(status, body, media_type, headers, source, payload, time.monotonic() + TTL_S)
