"""OpenTelemetry traces (`serve --otel`): a span per request of the described API, with a child span for each stage
the pipeline names (routing, authentication and validation; scenarios; the answer: picking, generating,
paginating, checking), exported over OTLP/HTTP where the standard variables say (`OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`, …; the collector's default
http://localhost:4318 without them), as `OTEL_SERVICE_NAME` (default "mockserver").

An extra, not a dependency: `pip install 'mockserver[otel]'`. Each worker sets up its own exporter after the fork
(its batching thread would not survive one) and flushes it when it stops."""
from __future__ import annotations

import multiprocessing.util
import os
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["OtelTracing", "missing"]

INSTALL = "pip install 'mockserver[otel]'"


def missing() -> str | None:
    """Why `--otel` cannot be served here, or None."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as exc:
        return f"--otel needs the OpenTelemetry SDK and its OTLP exporter ({exc.name} is not installed): {INSTALL}"
    return None


class OtelTracing:
    """The spans of this process's requests, batched to an OTLP collector."""

    def __init__(self) -> None:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; the name, when they give none
        named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "mockserver"}
        provider = TracerProvider(resource=Resource.create(named))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        multiprocessing.util.Finalize(self, provider.shutdown, exitpriority=10)  # a worker runs no atexit
        self._provider = provider
        self._tracer = provider.get_tracer("mockserver")
        self._current_span = trace.get_current_span
        self._server = trace.SpanKind.SERVER

    def request(self, api: str, method: str, path: str) -> AbstractContextManager[Any]:
        return self._tracer.start_as_current_span(method, kind=self._server, attributes={
            "http.request.method": method, "url.path": path, "mockserver.api": api})

    def stage(self, name: str) -> AbstractContextManager[Any]:
        return self._tracer.start_as_current_span(name)

    def answered(self, status: int, operation: str | None, source: str) -> None:
        span = self._current_span()
        span.set_attribute("http.response.status_code", status)
        span.set_attribute("mockserver.source", source)
        if operation:  # low cardinality, as a span name must be: the operation, not the path
            span.set_attribute("mockserver.operation", operation)
            # "GET listTestSets": the SDK's span has the name it started with (the method); the API's type does not say
            span.update_name(f"{getattr(span, 'name', '')} {operation}".lstrip())
