"""Production serving under gunicorn: the app is built once in the master (`preload_app`) and forked into the
workers, so start-up cost is paid once and memory is shared."""
from __future__ import annotations

import gc
import logging
import sys
import time
from typing import Any, Callable

from flask import Flask
from gunicorn import util
from gunicorn.app.base import BaseApplication
from gunicorn.http import errors
from gunicorn.workers import gthread, sync

from ..core.http import MockResponse
from .access import ACCESS, AccessLog
from .app import status_line

# what gunicorn refuses before the app sees a request, by the status it gives (400 for the rest)
_REFUSAL_STATUS = ((errors.LimitRequestLine, 414), (errors.LimitRequestHeaders, 431),
                   (errors.UnsupportedTransferCoding, 501), (errors.ExpectationFailed, 417))
FAIR_SHARE_WAIT_S = 0.005  # a worker with a connection per thread takes one more this often at most
# parse errors that are faults of the server's side, which gunicorn reports as it does
_NOT_THE_CLIENTS = (errors.InvalidResponseHeader, errors.InvalidResponseHeaderName, errors.ConfigurationProblem)


class _Refusals:
    """gunicorn answers a request it cannot read (a malformed request line or header, a header over its limit)
    with its own HTML page; the mock answers it in the API's envelope instead, like every other error."""

    wsgi: Flask
    log: Any

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        if not isinstance(exc, errors.ParseException) or isinstance(exc, _NOT_THE_CLIENTS):
            super().handle_error(req, client, addr, exc)  # type: ignore[misc]
            return
        status = next((code for kind, code in _REFUSAL_STATUS if isinstance(exc, kind)), 400)
        self.log.warning("refused a request from %s: %s", (addr or ("",))[0], exc)
        line = f"{req.method} {req.uri}" if getattr(req, "uri", None) else ""
        response = self.wsgi.extensions["mockserver"].pipeline.refusal(
            status, f"the request cannot be read: {exc}", line)
        try:
            util.write_nonblock(client, _raw(response))
        except OSError:
            pass  # the client is gone


class ThreadWorker(_Refusals, gthread.ThreadWorker):  # type: ignore[misc]
    """gunicorn's gthread worker, refusing in the envelope and taking a fair share of connections.

    Workers share one listening socket and whichever wakes first accepts: at a burst of new connections one
    worker can take them all while another idles (measured with 2 workers × 8 threads and 16 connections: 16/0
    in one run of four, 15/1 and 14/2 in two others; a third of the throughput and twice the p99 of an even
    split). So a worker holding a connection per thread takes at most one more every FAIR_SHARE_WAIT_S, leaving
    the others time to take theirs; alone (one worker) it takes them as they come."""

    _configured_connections = 1000
    _hold_until = 0.0

    @property
    def worker_connections(self) -> int:
        """How many connections this worker may hold now: gthread's loop reads it before each wait."""
        return 0 if self._hold_until > time.monotonic() else self._configured_connections

    @worker_connections.setter
    def worker_connections(self, value: int) -> None:
        self._configured_connections = value

    def accept(self, listener: Any) -> None:
        super().accept(listener)
        if self.nr_conns >= self.cfg.threads and self.cfg.workers > 1:
            self._hold_until = time.monotonic() + FAIR_SHARE_WAIT_S

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        if not self._accepting:  # wake up when accepting may start again
            timeout = min(timeout, max(self._hold_until - time.monotonic(), 0.0))
        super().wait_for_and_dispatch_events(timeout)


class SyncWorker(_Refusals, sync.SyncWorker):  # type: ignore[misc]
    """gunicorn's sync worker (one thread), refusing in the envelope."""


def _raw(response: MockResponse) -> bytes:
    """A whole HTTP/1.1 response, closing the connection (the request could not be read, so neither can the next)."""
    headers = {**response.headers, "Content-Type": response.media_type or "application/json",
               "Content-Length": str(len(response.body)), "Connection": "close"}
    head = f"HTTP/1.1 {status_line(response.status)}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    return head.encode("latin-1") + response.body


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
        "worker_class": f"{__name__}.{'ThreadWorker' if threads > 1 else 'SyncWorker'}",
        "preload_app": True,
        "accesslog": None,  # our own access line says more (source, operation) and is buffered
        "errorlog": "-",
        "loglevel": "warning",
        "graceful_timeout": 10,
        "timeout": 120,  # a scenario's latency may be long
        "keepalive": 5,
        # the mock answers over-long request lines and headers itself (414/431 with its own limits); gunicorn
        # only refuses what is absurd (a header over 1 MiB: 0 would mean its default of 8 KiB here), and its
        # refusals are in the envelope too (the workers above)
        "limit_request_line": 0,
        "limit_request_field_size": 1024 * 1024,
    }
    if on_exit is not None:
        options["on_exit"] = lambda server: on_exit()
    gc.freeze()  # the description and fixtures live as long as the process: keep them out of every collection
    _Gunicorn(app, options).run()


def configure_logging(level: str) -> AccessLog:
    """Log lines on stderr; the access lines (one per request) written in batches by the access log, which is
    returned so the caller flushes it at exit."""
    # what each record would otherwise look up (the logging HOWTO's "Optimization"): the calling frame, the
    # thread, the process; a line says what matters itself
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    stream = logging.StreamHandler(sys.stderr)
    stream.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [stream]
    root.setLevel(level.upper())
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # our access line says it already, with the source
    ACCESS.buffer_into(sys.stderr)
    return ACCESS
