"""Spans around a request's stages (routing and validation, scenarios, the answer), for OpenTelemetry when the mock
serves with `--otel` (web/otel.py sets `current`), and nothing otherwise: the pipeline says where its stages begin
and end, and knows nothing of who listens. Off, a stage costs one call returning a shared null context."""
from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

__all__ = ["NO_TRACING", "Tracing", "answered", "request", "stage", "use"]


class Tracing(Protocol):
    def request(self, api: str, method: str, path: str) -> AbstractContextManager[Any]:
        """The span of a request to `api`, around all it takes to answer it."""

    def stage(self, name: str) -> AbstractContextManager[Any]:
        """A span named `name`, the child of the request's, around what the `with` block does."""

    def answered(self, status: int, operation: str | None, source: str) -> None:
        """What the request's span says of its answer."""


class _NoTracing:
    _none: AbstractContextManager[Any] = nullcontext()

    def request(self, api: str, method: str, path: str) -> AbstractContextManager[Any]:
        return self._none

    def stage(self, name: str) -> AbstractContextManager[Any]:
        return self._none

    def answered(self, status: int, operation: str | None, source: str) -> None:
        return None


NO_TRACING: Tracing = _NoTracing()
current: Tracing = NO_TRACING  # this process's: set once at start-up, in each worker


def use(tracing: Tracing) -> None:
    global current
    current = tracing


def stage(name: str) -> AbstractContextManager[Any]:
    return current.stage(name)


def request(api: str, method: str, path: str) -> AbstractContextManager[Any]:
    return current.request(api, method, path)


def answered(status: int, operation: str | None, source: str) -> None:
    current.answered(status, operation, source)
