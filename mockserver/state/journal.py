"""The request journal: what the mock was asked and what it answered, newest last, bounded in size.
Credentials and `writeOnly` values are masked before anything is kept (`secrets.Secrets`). Every call is also
counted (`Call`: what coverage needs of it, not its bodies), so coverage sees every call since a reset, not only
those the journal still holds."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..base.http import sent_body
from .records import BODY_LIMIT, Call, Entry, Wanted

if TYPE_CHECKING:
    from ..base.http import MockRequest, MockResponse
    from ..spec.secrets import Secrets
    from . import Store

FOREIGN = frozenset({"proxy", "proxy-drift"})  # sources whose answers a deployment wrote, not the mock


def _kept(data: bytes) -> bytes:
    """A body as kept: its first BODY_LIMIT bytes and one more (to say it was cut); decoded only when read."""
    return data[:BODY_LIMIT + 1] if len(data) > BODY_LIMIT else data


class Journal:
    """What the request path and the control API see of the journal; the calls themselves live in the store
    (this process's memory, or Redis shared by every worker and replica)."""

    def __init__(self, store: Store, secrets: Secrets, counted_headers: frozenset[str] = frozenset()) -> None:
        self.store = store
        self.secrets = secrets
        self._counted_headers = counted_headers  # lower-case names

    def record(self, request: MockRequest, result: MockResponse, response_headers: dict[str, str],
               duration_ms: float) -> str:
        """Keep one exchange, its secrets masked first, and of a broken answer (a scenario's `break`) only what was
        sent (nothing of one not `journaled`); returns the query as kept, for the access log."""
        secrets = self.secrets
        query = secrets.query_string(request.query_string, request.query())
        if not result.journaled:
            return query
        masked = secrets.request_headers(request.headers)
        foreign = result.source in FOREIGN
        media_type = result.media_type
        if media_type is None and foreign:  # a deployment's answer: its own Content-Type, however spelt
            media_type = next((v for k, v in response_headers.items() if k.lower() == "content-type"), None)
        response_body = secrets.response_body(sent_body(result.disconnect, result.body), media_type,
                                              result.operation_id, result.status, foreign)
        if foreign:  # a deployment may say what it was sent ("the key SIG-555… may not …"); the mock never does
            response_body = secrets.repeated(request, response_body)
        entry = Entry(0, time.time(), request.method, request.path, query, masked,
                      _kept(secrets.request_body(request, result.operation_id)), result.status,
                      secrets.response_headers(response_headers), _kept(response_body), result.source,
                      result.operation_id, result.scenario_id, round(duration_ms, 3), result.session,
                      result.disconnect, result.violations)
        call = Call(result.operation_id, request.method, request.path, query, result.status,
                    tuple((h, masked[h]) for h in self._counted_headers if h in masked), bool(result.violations))
        self.store.record(entry, call, result.session)
        return query

    def calls(self, session: str | None = None) -> tuple[dict[Call, int], int]:
        """Every call since the last reset (of the session, or of the whole mock), as coverage counts them."""
        return self.store.calls(session)

    def entries(self, *, operation_id: str | None = None, status: int | None = None, method: str | None = None,
                path_prefix: str | None = None, since: int | None = None, limit: int | None = None,
                session: str | None = None) -> list[Entry]:
        """The entries that pass every filter given, oldest first, the newest `limit` of them. The store is asked
        only for what it can pick itself (entries after `since`, and the newest `limit` unless another filter comes
        first): a page of a long journal is read from Redis, not the whole journal."""
        filtered = (operation_id, status, method, path_prefix) != (None, None, None, None)
        page = limit if limit is not None and limit > 0 and not filtered else None  # a negative limit drops the oldest
        found = self.store.entries(session, Wanted(page, since))
        if filtered:
            found = [e for e in found
                     if (operation_id is None or e.operation_id == operation_id)
                     and (status is None or e.status == status)
                     and (method is None or e.method == method.upper())
                     and (path_prefix is None or e.path.startswith(path_prefix))]
        return found[-limit:] if limit else found

    def clear(self, session: str | None = None) -> None:
        self.store.clear(session)
