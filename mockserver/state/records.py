"""The journal's records, as the store keeps them: an exchange (`Entry`) and a call as coverage counts it (`Call`).
Apart from the `Journal` that makes them so that the store can hold them without importing the journal."""
from __future__ import annotations

import itertools
import sys
from collections.abc import Reversible
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

BODY_LIMIT = 16 * 1024  # per body kept: 1,000 entries stay within tens of MB


def _text(data: bytes) -> str | None:
    if not data:
        return None
    text = data[:BODY_LIMIT].decode("utf-8", "replace")
    return text + ("…(truncated)" if len(data) > BODY_LIMIT else "")


@dataclass
class Entry:
    """One exchange as the journal keeps it. A field added later goes last, with a default: the Redis store keeps
    the fields as a list in this order, and entries written before it have none."""

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
    violations: list[dict[str, str]] | None = None  # how a request let through (`--request-validation warn`) broke
    # the description

    def as_dict(self) -> dict[str, Any]:
        """The entry as the control API shows it: camelCase names, bodies as text. Its fields are read as they are,
        not deep-copied (`dataclasses.asdict` was most of a journal read's cost): the store never changes them."""
        data = {camel: getattr(self, name) for name, camel in _SHOWN}
        data["requestBody"], data["responseBody"] = _text(self.request_body), _text(self.response_body)
        return data


class Call(NamedTuple):
    """A call as coverage reads it; the same calls share one count."""

    operation_id: str | None
    method: str
    path: str
    query: str
    status: int
    headers: tuple[tuple[str, str], ...]  # only those the journal was asked to count (enum header parameters)
    violated: bool = False  # let through despite breaking the description (`--request-validation warn`)


@dataclass(frozen=True)
class Wanted:
    """What a read of the journal wants, so that a store reads no more than that (on Redis a page of the newest
    entries, not the whole journal): the newest `limit` entries (None: all) of those after id `since` (None: from
    the oldest). The journal's other filters are applied to what the store read."""

    limit: int | None = None
    since: int | None = None

    def pick(self, journal: Reversible[Entry]) -> list[Entry]:
        """The wanted entries of a journal held in memory (oldest first, ids rising), oldest first."""
        if self == EVERY:
            return list(journal)
        newer = itertools.takewhile(lambda e: self.since is None or e.id > self.since, reversed(journal))
        picked = list(itertools.islice(newer, None if self.limit is None else min(self.limit, sys.maxsize)))
        picked.reverse()
        return picked


EVERY = Wanted()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_SHOWN = tuple((f.name, _camel(f.name)) for f in fields(Entry))  # each field's name, as `Entry.as_dict` shows it
