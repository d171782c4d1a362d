"""`--watch`: reload the description and fixtures when a file changes. The new state is built fully and checked
off to the side, then swapped in at once; an invalid edit keeps the last good state and logs why. A request
holds the state it started with, so requests in flight during a reload finish on it. What the mock remembers
(scenarios set at run time, the journal, coverage, sessions) lives in the store, which the new state shares."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from ..core.errors import LoadError
from ..core.pipeline import Pipeline

log = logging.getLogger("mockserver.reload")
_SUFFIXES = (".yaml", ".yml", ".json")


def description_files(pipeline: Pipeline) -> list[Path]:
    """Every file of the description: all documents its $refs reach."""
    return [doc.path for doc in pipeline.spec.docs.documents.values()]


def _stamp(files: list[Path], fixtures: Path | None) -> dict[Path, int]:
    """The modification time of each file and of every fixture file, found anew each time (a new file is a
    change too)."""
    stamps = {}
    for path in set(files) | set(fixtures.rglob("*") if fixtures and fixtures.is_dir() else []):
        if path.suffix.lower() in _SUFFIXES:
            try:
                stamps[path] = path.stat().st_mtime_ns
            except OSError:
                stamps[path] = -1  # removed: a change too
    return stamps


class Reloader:
    def __init__(self, build: Callable[[], Pipeline], current: Callable[[], Pipeline],
                 swap: Callable[[Pipeline], None], fixtures: Path | None, interval: float = 0.5) -> None:
        self._build, self._current, self._swap = build, current, swap
        self._fixtures = fixtures
        self._interval = interval
        self._stop = threading.Event()
        self._stamps = _stamp(description_files(current()), fixtures)

    def start(self) -> Reloader:
        threading.Thread(target=self._run, name="mockserver-reload", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.check()

    def check(self) -> bool:
        """Reload if any watched file changed; True when a new state was swapped in."""
        stamps = _stamp(list(self._stamps), self._fixtures)
        if stamps == self._stamps:
            return False
        self._stamps = stamps
        try:
            fresh = self._build()
        except LoadError as exc:
            log.error("reload refused, the last good state stays: %d problem(s)\n%s", len(exc.problems), exc)
            return False
        self._stamps = _stamp(description_files(fresh), self._fixtures)
        self._swap(fresh)
        log.info("reloaded: %d operations", len(fresh.spec.operations))
        return True
