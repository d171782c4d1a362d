"""The request and the response as the pure core sees them: no Flask, no WSGI."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

_UNPARSED: Any = object()
UNREAD: Any = object()  # a body no stage has read as JSON (yet)


def bare_media_type(media_type: str | None) -> str:
    """A media type without its parameters, in lower case, as media types compare: `Text/HTML; charset=utf-8` is
    `text/html` ('' for none)."""
    return (media_type or "").split(";", 1)[0].strip().lower()


def is_json(media_type: str | None) -> bool:
    """The one answer to "is this JSON?": application/json, or any type with the +json suffix (RFC 6839), with or
    without parameters."""
    base = bare_media_type(media_type)
    return base == "application/json" or base.endswith("+json")


def parse_query(text: str, *, strict: bool = False) -> dict[str, list[str]]:
    """`a=1&b=2&a=3` as values by name (a repeated name keeps each); `strict` raises UnicodeDecodeError where a
    percent-escape is not UTF-8 (else it is replaced)."""
    values: dict[str, list[str]] = {}
    for name, value in parse_qsl(text, keep_blank_values=True, errors="strict" if strict else "replace"):
        values.setdefault(name, []).append(value)
    return values


def parse_cookies(header: str | None) -> dict[str, str]:
    """A Cookie header's pairs, read as servers read them (RFC 6265 §5.4): `;`-separated `name=value`, each one
    alone, so a pair `http.cookies` would refuse (`theme=dark mode`, a bare `flag`) loses nothing but itself."""
    found: dict[str, str] = {}
    for pair in (header or "").split(";"):
        name, equals, value = pair.partition("=")
        if equals and name.strip():
            value = value.strip()
            found[name.strip()] = value[1:-1] if len(value) > 1 and value[0] == value[-1] == '"' else value
    return found


@dataclass
class MockRequest:
    method: str
    path: str  # as sent, still percent-encoded
    query_string: str = ""
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""
    _query: Any = field(default=_UNPARSED, init=False, repr=False, compare=False)
    # the body as request validation read it (JSON), so the journal masks that value instead of parsing it again
    json: Any = field(default=UNREAD, init=False, repr=False, compare=False)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def query(self) -> dict[str, list[str]] | None:
        """The query's values by name (a repeated name keeps each), parsed once for every stage; None when it
        is not valid UTF-8 once percent-decoded."""
        if self._query is _UNPARSED:
            try:
                self._query = parse_query(self.query_string, strict=True)
            except UnicodeDecodeError:
                self._query = None
        return self._query


@dataclass
class MockResponse:
    status: int
    body: bytes = b""
    media_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    source: str = "error"  # which stage answered: fixture, example, generated, error, scenario, cors
    operation_id: str | None = None
    payload: Any = None  # the body before serialisation, for validation and the journal
    scenario_id: str | None = None
    delay_ms: int = 0  # latency a scenario asks for: the HTTP layer waits before answering
    disconnect: str | None = None  # "close" (no response at all) or "truncate" (half a body), from a scenario
    session: str | None = None  # the session the request belongs to (X-Mock-Session), for the journal
    journaled: bool = True  # False: the mock's own answer (its icon, a redirect to its dashboard), no API call
    violations: list[dict[str, str]] | None = None  # of a request let through by `--request-validation warn`
    # what an answer's callbacks read (pipeline/callbacks.py), found on the way to it: nothing routes it again
    path_params: dict[str, str] | None = None
    callback_delay: int | None = None  # `Prefer: callback-delay=<ms>`


def sent_body(disconnect: str | None, body: bytes) -> bytes:
    """What of a body reaches the client: all of it, none for a scenario's `break: close`, half for `truncate`."""
    if disconnect is None:
        return body
    return body[: len(body) // 2] if disconnect == "truncate" else b""
