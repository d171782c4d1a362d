"""The request and the response as the pure core sees them: no Flask, no WSGI."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class MockRequest:
    method: str
    path: str  # as sent, still percent-encoded
    query_string: str = ""
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


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
