"""The mock as one transport-neutral app: a `MockRequest` in, an `Answer` out. It answers CORS preflights, asks the
pipeline (or the proxy in its place), and does what every transport would otherwise do again: the CORS headers,
the journal and the access line. What is left to a transport (web/wsgi.py, web/rsgi.py) is translation: its
request into a `MockRequest`, the `Answer` onto the wire, a latency waited out its own way (a thread's sleep, an
`asyncio.sleep`) and a broken connection cut its own way. No Flask, no WSGI, no RSGI here."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..base import tracing
from ..base.errors import MockError
from ..base.http import MockRequest, MockResponse, sent_body
from ..base.process import PROCESS
from ..pipeline.pipeline import Pipeline
from .access import ACCESS
from .cors import cors_headers, is_preflight, preflight_headers
from .metrics import Metrics
from .outgoing import Outgoing
from .reload import Reloader

access_log = logging.getLogger("mockserver.access")
TRUNCATE_FLUSH_S = 0.1  # a transport that ends a body short may drop what it has not written yet: time to send it


@dataclass(frozen=True, slots=True)
class Answer:
    """What the mock answers, for a transport to carry out: wait `delay_s` (a scenario's latency), send the status
    and headers, then `body`; with `disconnect` (a scenario's `break`: "close" or "truncate") the headers announce
    the whole body, `body` is only what is sent of it, and the transport cuts the connection after it."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    delay_s: float = 0.0
    disconnect: str | None = None


class MockApp:
    """Serves the described API, whatever the transport; the control API is Flask's, mounted beside it."""

    def __init__(self, pipeline: Pipeline,
                 handle: Callable[[Pipeline, MockRequest], MockResponse] | None = None) -> None:
        self.pipeline = pipeline  # swapped whole by a reload; a request reads it once
        self.handle = handle or Pipeline.handle  # a proxy answers in the pipeline's place (web/proxy.py)
        self.proxied = handle is not None  # its answers wait on the network
        self.reloader: Reloader | None = None  # --watch: it knows the files as they were loaded
        self.metrics: Metrics | None = None  # --metrics: counted per answer
        self.name = pipeline.options.api or pipeline.spec.title  # what metrics and traces call its API
        self._reloader_pid = 0
        self.outgoing = Outgoing(lambda: self.pipeline)  # the callbacks and webhooks it sends

    def swap(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    def ensure_reloader(self) -> None:
        """Threads do not survive a fork: each process starts its watcher's thread on its first request, to the
        mock or to the control API (the watcher compares with the files as they were when the app was built, so
        an edit made before is seen)."""
        if self.reloader is not None and self._reloader_pid != PROCESS.pid:
            self._reloader_pid = PROCESS.pid
            self.reloader.start()

    def waits(self, method: str, path: str) -> bool:
        """Whether an answer may wait (on the deployment, a round trip to Redis): a transport makes it in a thread."""
        return self.proxied or self.pipeline.waits_on_store(method, path)

    def body_limit(self) -> int:
        """Bytes of a body worth reading: one more than allowed tells the pipeline it is too large."""
        return self.pipeline.options.max_body + 1

    def respond(self, request: MockRequest, started: float) -> Answer:
        """The answer to `request` (which arrived at `started`, a `time.perf_counter()`): a preflight's, else the
        pipeline's (or the proxy's); a bug in the mock is logged with its traceback and answered without one."""
        self.ensure_reloader()
        pipeline = self.pipeline
        if is_preflight(request.method, request.headers):
            return Answer(204, list(preflight(pipeline, request.method, request.path, request.query_string,
                                              request.headers, started).items()), b"")
        with tracing.request(self.name, request.method, request.path):
            try:
                result = self.handle(pipeline, request)
            except Exception:
                access_log.exception("internal error on %s %s", request.method, request.path)
                result = pipeline.error_response(MockError(500, "the mock failed to answer; see its log",
                                                           code="mock-internal-error"),
                                                 pipeline.request_id(request), None)
            return self.finish(pipeline, request, result, started)

    def refuse(self, request: MockRequest, error: MockError, started: float) -> Answer:
        """`error` as the answer to a request a transport will not pass on (its body too slow, too many bodies at
        once), in the API's envelope, journaled like any other."""
        pipeline = self.pipeline
        return self.finish(pipeline, request, pipeline.error_response(error, pipeline.request_id(request), None),
                            started)

    def finish(self, pipeline: Pipeline, request: MockRequest, result: MockResponse, started: float) -> Answer:
        """The answer's headers (CORS too), once it is in the journal and the access log; its time counts the
        latency the transport is about to wait."""
        out_headers = dict(result.headers)
        if result.media_type:
            out_headers["Content-Type"] = result.media_type
        out_headers["Content-Length"] = str(len(result.body))
        out_headers.update(cors_headers(request.headers))
        took_ms = _ms_since(started) + result.delay_ms
        query = pipeline.journal.record(request, result, out_headers, took_ms)
        log_access(request.method, request.path, query, result.status, took_ms, result.source, result.operation_id)
        if self.metrics is not None:
            self.metrics.answered(self.name, result.operation_id, result.status, result.source, took_ms / 1000)
        tracing.answered(result.status, result.operation_id, result.source)
        self.outgoing.after(pipeline, request, result)
        body = sent_body(result.disconnect, result.body) if result.disconnect else result.body
        return Answer(result.status, list(out_headers.items()), body, result.delay_ms / 1000, result.disconnect)


def preflight(pipeline: Pipeline, method: str, path: str, query_string: str, request_headers: Mapping[str, str],
              started: float) -> dict[str, str]:
    """The headers of the 204 that answers a CORS preflight (to the API or to the control API), once its access
    line is written, its query masked by `pipeline`'s secrets."""
    log_access(method, path, pipeline.secrets.query_string(query_string), 204, _ms_since(started), "cors")
    return preflight_headers(request_headers)


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def log_access(method: str, path: str, query: str, status: int, took_ms: float, source: str,
               operation_id: str | None = None) -> None:
    if ACCESS.enabled():
        ACCESS.write(f"{method} {path}{'?' + query if query else ''} {status} {took_ms:.1f}ms {source}"
                     f"{' ' + operation_id if operation_id else ''}")
