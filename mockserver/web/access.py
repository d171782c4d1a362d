"""The access log: one line per answered request. Through `logging` by default (tests, embedding); when the mock
serves (`mockserver serve`), straight into a buffer written at least every FLUSH_S seconds, in the same format as
the other log lines: a log record per request cost a sixth of an answer (measured in-process: 95 µs a request at
info, 80 at warning), and a line that waits for 255 more never shows up in a developer's terminal."""
from __future__ import annotations

import atexit
import logging
import threading
import time
from typing import TextIO

from ..base.process import PROCESS

FLUSH_S = 0.5
BATCH = 256  # lines written at once under load
logger = logging.getLogger("mockserver.access")


class AccessLog:
    def __init__(self) -> None:
        self._stream: TextIO | None = None
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._flusher_pid = 0  # threads do not survive a fork: each worker process starts its own
        self._second = -1
        self._stamp = ""

    def buffer_into(self, stream: TextIO) -> None:
        """From now on, lines go to `stream` in batches, FLUSH_S late at most, and the rest at exit."""
        self._stream = stream
        atexit.register(self.flush)

    def enabled(self) -> bool:
        return logger.isEnabledFor(logging.INFO)

    def write(self, text: str) -> None:
        if self._stream is None:
            logger.info("%s", text)
            return
        if self._flusher_pid != PROCESS.pid:
            self._flusher_pid = PROCESS.pid
            threading.Thread(target=self._flush_every, name="mockserver-access-log", daemon=True).start()
        line = f"{self._timestamp()} INFO mockserver.access: {text}\n"
        with self._lock:
            self._lines.append(line)
            full = len(self._lines) >= BATCH
        if full:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            lines, self._lines = self._lines, []
        if lines and self._stream is not None:
            self._stream.write("".join(lines))
            self._stream.flush()

    def _flush_every(self) -> None:
        while True:
            time.sleep(FLUSH_S)
            self.flush()

    def _timestamp(self) -> str:
        """As logging's default `asctime` (`2026-11-30 02:44:16,123`); the seconds part made once a second."""
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second, self._stamp = second, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
        return f"{self._stamp},{int((now - second) * 1000):03d}"


ACCESS = AccessLog()
