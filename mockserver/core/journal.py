"""The request journal: what the mock was asked and what it answered, newest last, bounded in size.
`Authorization` (and other credentials) are masked before anything is kept. Every call is also counted (`Call`:
what coverage needs of it, not its bodies), so coverage sees every call since a reset, not only those the
journal still holds."""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .state import Store

SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "x-api-key", "x-mock-control-token"}
BODY_LIMIT = 16 * 1024  # per body kept: 1,000 entries stay within tens of MB


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
    session: str | None = None
    broken: str | None = None  # a scenario's `break`: "close" (no body sent) or "truncate" (the part sent)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["request_body"], data["response_body"] = _text(self.request_body), _text(self.response_body)
        return {_camel(k): v for k, v in data.items()}


class Call(NamedTuple):
    """A call as coverage reads it; the same calls share one count."""

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
    """What the request path and the control API see of the journal; the calls themselves live in the store
    (this process's memory, or Redis shared by every worker and replica)."""

    def __init__(self, store: Store, counted_headers: frozenset[str] = frozenset()) -> None:
        self.store = store
        self._counted_headers = counted_headers  # lower-case names

    def record(self, *, method: str, path: str, query: str, request_headers: dict[str, str], request_body: bytes,
               status: int, response_headers: dict[str, str], response_body: bytes, source: str,
               operation_id: str | None, scenario_id: str | None, duration_ms: float,
               session: str | None = None, broken: str | None = None) -> None:
        masked = {k: mask(k, v) for k, v in request_headers.items()}
        entry = Entry(0, time.time(), method, path, query, masked, _kept(request_body), status,
                      dict(response_headers), _kept(response_body), source, operation_id, scenario_id,
                      round(duration_ms, 3), session, broken)
        call = Call(operation_id, method, path, query, status,
                    tuple((h, masked[h]) for h in self._counted_headers if h in masked))
        self.store.record(entry, call, session)

    def calls(self, session: str | None = None) -> tuple[dict[Call, int], int]:
        """Every call since the last reset (of the session, or of the whole mock), as coverage counts them."""
        return self.store.calls(session)

    def entries(self, *, operation_id: str | None = None, status: int | None = None, method: str | None = None,
                path_prefix: str | None = None, since: int | None = None, limit: int | None = None,
                session: str | None = None) -> list[Entry]:
        found = [e for e in self.store.entries(session)
                 if (operation_id is None or e.operation_id == operation_id)
                 and (status is None or e.status == status)
                 and (method is None or e.method == method.upper())
                 and (path_prefix is None or e.path.startswith(path_prefix))
                 and (since is None or e.id > since)]
        return found[-limit:] if limit else found

    def clear(self, session: str | None = None) -> None:
        self.store.clear(session)
