"""Errors as exceptions: one for a request that cannot be answered normally, one for a bad description or fixture.

A `MockError` is raised anywhere on the request path and rendered once, into the API's own envelope, by
`envelope.ErrorRenderer`. A `Problem` is collected at load time so `mockserver validate` can list them all.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class MockError(Exception):
    """An answer in the API's error envelope. `code=None` means: the code the description gives this status."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.details = details
        self.headers = headers or {}


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a description or a fixture, located for a person: file, line, JSON pointer, rule."""

    file: str
    pointer: str
    message: str
    rule: str = ""
    line: int | None = None

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        rule = f" [{self.rule}]" if self.rule else ""
        return f"{where}: {self.pointer or '/'}: {self.message}{rule}"


@dataclass
class LoadError(Exception):
    """Start-up cannot go on; holds every problem found, not just the first."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)
