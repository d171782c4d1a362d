"""The request journal: what the mock was asked and what it answered, newest last, bounded in size.
`Authorization` (and other credentials) are masked before anything is kept. A call that leaves the journal is
still counted (`Call`: what coverage needs of it, not its bodies), so coverage sees every call since a reset."""
from __future__ import annotations

import itertools
import threading
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "x-api-key", "x-mock-control-token"}
BODY_LIMIT = 16 * 1024  # per body kept: 1,000 entries stay within tens of MB
COUNTED_KINDS = 20_000  # distinct calls counted after they leave the journal (a few MB); beyond, only a number


def mask(name: str, value: str) -> str:
    """Keep the scheme and a hint of the credential (`Bearer demo…`), never the whole of it."""
    if name.lower() not in SECRET_HEADERS:
        return value
    scheme, _, credential = value.partition(" ")
    if credential:
        return f"{scheme} {credential[:4]}…" if len(credential) > 8 else f"{scheme} ****"
    return value[:4] + "…" if len(value) > 8 else "****"


def _text(data: bytes) -> str | None:
    if not data:
        return None
    text = data[:BODY_LIMIT].decode("utf-8", "replace")
    return text + ("…(truncated)" if len(data) > BODY_LIMIT else "")


def _kept(data: bytes) -> bytes:
    """A body as kept: its first BODY_LIMIT bytes and one more (to say it was cut); decoded only when read."""
    return data[:BODY_LIMIT + 1] if len(data) > BODY_LIMIT else data


@dataclass
class Entry:
    id: int
    time: float
    method: str
    path: str
    query: str
    request_headers: dict[str, str]
    request_body: bytes
    status: int
    response_headers: dict[str, str]
    response_body: bytes
    source: str
    operation_id: str | None
    scenario_id: str | None
    duration_ms: float

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["request_body"], data["response_body"] = _text(self.request_body), _text(self.response_body)
        return {_camel(k): v for k, v in data.items()}


class Call(NamedTuple):
    """A call that left the journal, as coverage reads it; the same calls share one count."""

    operation_id: str | None
    method: str
    path: str
    query: str
    status: int
    headers: tuple[tuple[str, str], ...]  # only those the journal was asked to count (enum header parameters)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class Journal:
    def __init__(self, size: int = 1000, counted_headers: frozenset[str] = frozenset()) -> None:
        self._entries: deque[Entry] = deque(maxlen=size)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._counted_headers = counted_headers  # lower-case names
        self._left: Counter[Call] = Counter()
        self._uncounted = 0  # calls that left when COUNTED_KINDS distinct ones were counted already

    def record(self, *, method: str, path: str, query: str, request_headers: dict[str, str], request_body: bytes,
               status: int, response_headers: dict[str, str], response_body: bytes, source: str,
               operation_id: str | None, scenario_id: str | None, duration_ms: float) -> None:
        entry = Entry(0, time.time(), method, path, query,
                      {k: mask(k, v) for k, v in request_headers.items()}, _kept(request_body), status,
                      dict(response_headers), _kept(response_body), source, operation_id, scenario_id,
                      round(duration_ms, 3))
        with self._lock:
            entry.id = next(self._ids)
            if len(self._entries) == self._entries.maxlen:
                self._count_leaving(self._entries[0])
            self._entries.append(entry)

    def _count_leaving(self, entry: Entry) -> None:
        call = Call(entry.operation_id, entry.method, entry.path, entry.query, entry.status,
                    tuple((h, entry.request_headers[h]) for h in self._counted_headers if h in entry.request_headers))
        if call in self._left or len(self._left) < COUNTED_KINDS:
            self._left[call] += 1
        else:
            self._uncounted += 1

    def snapshot(self) -> tuple[list[Entry], dict[Call, int], int]:
        """Taken together, so no call is counted twice or missed: the entries, the calls that left the journal
        since the last reset with their counts, and how many more left uncounted (past COUNTED_KINDS distinct)."""
        with self._lock:
            return list(self._entries), dict(self._left), self._uncounted

    def entries(self, *, operation_id: str | None = None, status: int | None = None, method: str | None = None,
                path_prefix: str | None = None, since: int | None = None, limit: int | None = None) -> list[Entry]:
        with self._lock:
            found = [e for e in self._entries
                     if (operation_id is None or e.operation_id == operation_id)
                     and (status is None or e.status == status)
                     and (method is None or e.method == method.upper())
                     and (path_prefix is None or e.path.startswith(path_prefix))
                     and (since is None or e.id > since)]
        return found[-limit:] if limit else found

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._left.clear()
            self._uncounted = 0
