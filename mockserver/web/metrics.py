"""Prometheus metrics at `/__mock/metrics` (`serve --metrics`): what a team sizing a shared mock asks — requests by
API, operation, status and source (fixture, example, generated, scenario, proxy, …), their latency, sessions,
stored items and whether the state store is reachable — in Prometheus' text format, by `prometheus_client`.

Granian's workers are processes: each counts into files of its own in `PROMETHEUS_MULTIPROC_DIR` (the client's
multiprocess mode, set by `mockserver serve` before the workers start), and a scrape, whichever worker answers it,
adds up every worker's files. Without that folder (the mock in a test's process) the counts are this process's.
The gauges are read from the state at scrape time: with Redis every worker sees the same ones."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from ..pipeline.pipeline import Pipeline

__all__ = ["CONTENT_TYPE", "MULTIPROCESS_DIR", "Metrics"]

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's own variable: where workers count
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
UNMATCHED = "(none)"  # the operation label of a request no operation matched (a 404, a preflight)
# seconds: a mock answers in well under a millisecond, a scenario's latency or a proxy in seconds
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The counters of one process (a worker), and the text a scrape answers."""

    def __init__(self, apis: Callable[[], dict[str, Pipeline]]) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram, values

        self._multiprocess = bool(os.environ.get(MULTIPROCESS_DIR))
        if self._multiprocess and values.ValueClass is values.MutexValue:
            raise RuntimeError(f"{MULTIPROCESS_DIR} was set after prometheus_client was imported: the counts "
                               f"would stay in each worker")
        self._own = CollectorRegistry(auto_describe=True)  # counted here; in multiprocess mode read from files
        self._requests = Counter("mockserver_requests", "Requests answered by the mock",
                                 ("api", "operation", "status", "source"), registry=self._own)
        self._seconds = Histogram("mockserver_request_duration_seconds", "Time to answer, a scenario's latency "
                                  "included", ("api", "operation"), buckets=BUCKETS, registry=self._own)
        self._counted: dict[tuple[str, str, int, str], Any] = {}  # label children, made once: a lookup a request
        self._timed: dict[tuple[str, str], Any] = {}
        trips = Histogram("mockserver_state_round_trip_seconds", "A request's round trips to a shared state store",
                          ("api", "backend"), buckets=BUCKETS, registry=self._own)
        errors = Counter("mockserver_state_errors", "A request's round trips to a shared state store that failed",
                         ("api", "backend"), registry=self._own)
        for api, pipeline in apis().items():  # the store outlives a reload: told once
            store = pipeline.store
            if store.shared:
                store.timed = _trips(trips.labels(api, store.kind), errors.labels(api, store.kind))
        # what a scrape reads, both at collect time: every worker's files (or this process's counts), the state
        self._scraped = self._own
        if self._multiprocess:
            from prometheus_client.multiprocess import MultiProcessCollector

            self._scraped = CollectorRegistry()
            MultiProcessCollector(self._scraped)
        self._scraped.register(_StateGauges(apis))

    def answered(self, api: str, operation: str | None, status: int, source: str, seconds: float) -> None:
        """One answer of a described API (the request path: two dictionary lookups and two increments)."""
        op = operation or UNMATCHED
        key = (api, op, status, source)
        counter = self._counted.get(key)
        if counter is None:
            counter = self._counted[key] = self._requests.labels(api, op, str(status), source)
        counter.inc()
        timer = self._timed.get((api, op))
        if timer is None:
            timer = self._timed[(api, op)] = self._seconds.labels(api, op)
        timer.observe(seconds)

    def scrape(self) -> bytes:
        """Every worker's counts, and the state's gauges, in Prometheus' text format."""
        from prometheus_client import generate_latest

        return generate_latest(self._scraped)


def _trips(timer: Any, failures: Any) -> Callable[[float, bool], None]:
    def timed(seconds: float, failed: bool) -> None:
        timer.observe(seconds)
        if failed:
            failures.inc()
    return timed


class _StateGauges:
    """What the state of each API holds now, read at scrape time."""

    def __init__(self, apis: Callable[[], dict[str, Pipeline]]) -> None:
        self.apis = apis  # read at each collect: a reload swaps a pipeline

    def describe(self) -> list[Metric]:
        """Nothing, so registering reads no state (an auto-describing registry would collect: a Redis round trip
        at start-up)."""
        return []

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        available = GaugeMetricFamily("mockserver_state_available", "1 while the state store can be reached",
                                      labels=("api", "backend"))
        sessions = GaugeMetricFamily("mockserver_sessions", "Sessions the mock knows (until --session-ttl idle)",
                                     labels=("api",))
        items = GaugeMetricFamily("mockserver_stored_items", "Items in each collection the whole mock serves "
                                  "(sessions' own writes not included)", labels=("api", "collection"))
        for api, pipeline in self.apis().items():
            state = pipeline.store.describe()
            available.add_metric((api, str(state["backend"])), 1.0 if state["available"] else 0.0)
            if not state["available"]:
                continue  # nothing more can be read: said by the gauge above
            sessions.add_metric((api,), float(len(pipeline.store.sessions())))
            for collection in pipeline.answers.collections(None, shown=0):
                items.add_metric((api, collection["name"]), float(collection["count"]))
        yield from (available, sessions, items)
