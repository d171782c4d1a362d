"""Production serving under gunicorn: the app is built once in the master (`preload_app`) and forked into the
workers, so start-up cost is paid once and memory is shared."""
from __future__ import annotations

import gc
import logging
import logging.handlers
import sys
from typing import Any, Callable

from flask import Flask
from gunicorn.app.base import BaseApplication


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    def __init__(self, app: Flask, options: dict[str, Any]) -> None:
        self._app = app
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        return self._app


def serve(app: Flask, *, host: str, port: int, workers: int, threads: int,
          on_exit: Callable[[], None] | None = None) -> None:
    """Run until SIGTERM/SIGINT; gunicorn drains in-flight requests (graceful timeout) before exiting."""
    options = {
        "bind": f"{host}:{port}",
        "workers": workers,
        "threads": threads,
        "worker_class": "gthread" if threads > 1 else "sync",
        "preload_app": True,
        "accesslog": None,  # our own access line says more (source, operation) and is buffered
        "errorlog": "-",
        "loglevel": "warning",
        "graceful_timeout": 10,
        "timeout": 120,  # a scenario's latency may be long
        "keepalive": 5,
        # the mock answers over-long request lines and headers itself (414/431 in the API's envelope); gunicorn
        # only refuses what is absurd (a header over 1 MiB: 0 would mean its default of 8 KiB here)
        "limit_request_line": 0,
        "limit_request_field_size": 1024 * 1024,
    }
    if on_exit is not None:
        options["on_exit"] = lambda server: on_exit()
    gc.freeze()  # the description and fixtures live as long as the process: keep them out of every collection
    _Gunicorn(app, options).run()


def configure_logging(level: str) -> logging.Handler:
    """Access lines go through a memory buffer flushed every 256 lines (or at once for warnings and errors),
    so logging costs little per request."""
    stream = logging.StreamHandler(sys.stderr)
    stream.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    buffered = logging.handlers.MemoryHandler(256, flushLevel=logging.WARNING, target=stream)
    root = logging.getLogger()
    root.handlers[:] = [buffered]
    root.setLevel(level.upper())
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # our access line says it already, with the source
    return buffered
