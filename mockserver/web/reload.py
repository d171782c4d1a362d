"""`--watch`: reload the description and fixtures when a file changes. The new state is built fully and checked
off to the side, then swapped in at once; an invalid edit keeps the last good state and logs why. A change is read
only once every file has stood still (the same sizes and modification times) for `SETTLE` seconds, so a file
caught half written by an editor or a copy is never served. Nothing a reload meets (a bug, a file that crashes a
parser) stops the watcher: it logs one line, keeps the last good state, and keeps watching. A request holds the
state it started with, so requests in flight during a reload finish on it. What the mock remembers (scenarios set
at run time, the journal, coverage, sessions) lives in the store, which the new state shares."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..base.errors import LoadError
from ..pipeline.pipeline import Pipeline

log = logging.getLogger("mockserver.reload")
_SUFFIXES = (".yaml", ".yml", ".json")
SETTLE = 0.25  # seconds the files must stand still before a change is read


def description_files(pipeline: Pipeline) -> list[Path]:
    """Every file of the description: all documents its $refs reach."""
    return [doc.path for doc in pipeline.spec.docs.documents.values()]


def _stamp(files: list[Path], fixtures: Path | None) -> dict[Path, tuple[int, int]]:
    """The modification time and size of each file and of every fixture file, found anew each time (a new file is
    a change too)."""
    stamps = {}
    for path in set(files) | set(fixtures.rglob("*") if fixtures and fixtures.is_dir() else []):
        if path.suffix.lower() in _SUFFIXES:
            try:
                found = path.stat()
                stamps[path] = (found.st_mtime_ns, found.st_size)
            except OSError:
                stamps[path] = (-1, -1)  # removed: a change too
    return stamps


class Reloader:
    def __init__(self, build: Callable[[], Pipeline], current: Callable[[], Pipeline],
                 swap: Callable[[Pipeline], None], fixtures: Path | None, interval: float = 0.5,
                 settle: float | None = None) -> None:
        self._build, self._current, self._swap = build, current, swap
        self._fixtures = fixtures
        self._interval, self._settle = interval, SETTLE if settle is None else settle
        self._stop = threading.Event()
        self._stamps = _stamp(description_files(current()), fixtures)

    def start(self) -> Reloader:
        threading.Thread(target=self._run, name="mockserver-reload", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.check()
            except Exception as exc:  # whatever happens (a bug, a parser crashing), the watcher goes on
                log.error("reload failed, the last good state stays: %s: %s", type(exc).__name__, exc)

    def check(self) -> bool:
        """Reload if any watched file changed, once they all stand still; True when a new state was swapped in.
        Raises only what is no LoadError (a bug): `_run` logs it and goes on."""
        stamps = _stamp(list(self._stamps), self._fixtures)
        if stamps == self._stamps:
            return False
        stamps = self._settled(stamps)
        self._stamps = stamps  # tried once: a broken edit is not built again until the next change
        try:
            fresh = self._build()
        except LoadError as exc:
            log.error("reload refused, the last good state stays: %d problem(s)\n%s", len(exc.problems), exc)
            return False
        if _stamp(list(stamps), self._fixtures) != stamps:
            log.info("a file changed while it was read: it is read again once it stands still")
            return False
        # files the new description reaches first are watched from now on; the others as they were read
        self._stamps = {path: stamps.get(path, now) for path, now in
                        _stamp(description_files(fresh), self._fixtures).items()}
        self._swap(fresh)
        log.info("reloaded: %d operations", len(fresh.spec.operations))
        return True

    def _settled(self, stamps: dict[Path, tuple[int, int]]) -> dict[Path, tuple[int, int]]:
        """The stamps once a whole `settle` passes without a change: a file being written keeps changing."""
        while True:
            time.sleep(self._settle)
            settled = _stamp(list(stamps), self._fixtures)
            if settled == stamps:
                return settled
            stamps = settled
