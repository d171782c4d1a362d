"""Production serving on Granian's RSGI interface (web/rsgi.py). Granian is a Rust HTTP server: connections,
parsing and writes happen in Rust, and Python sees a request once its head has arrived, so a client that stalls
half-way through its head holds nothing (under gunicorn nine of them blocked every thread), and a request costs
Python less (twice gunicorn's throughput here, issue 15). Its body the mock reads itself, against a deadline and
with a cap on how many it reads at once (web/rsgi.py).

Granian's own `backpressure` is a number of connections per worker, each held from accept to close, idle or
not: at its default (1024 / workers) 1,030 slow uploads, or as many idle keep-alive connections, left every other
client waiting in the kernel's accept queue. A connection costs a worker a file descriptor and nothing else, so
each worker takes as many as it may open (`open_files`, the soft limit raised to the hard one at start).

The description and fixtures are loaded once, before the workers start (the caller's `factory` closes over
them); each worker process builds its own app with `factory` after the fork, so what must not cross a fork (a
thread, a client connection) is made in the worker that uses it."""
from __future__ import annotations

import errno
import gc
import ipaddress
import logging
import logging.config
import multiprocessing.util
import os
import resource
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from granian import Granian
from granian.constants import HTTPModes, Interfaces, SSLProtocols

from .access import ACCESS
from .app import MockFlask
from .metrics import MULTIPROCESS_DIR
from .rsgi import MockRSGI
from .tls import TlsFiles

DRAIN_S = 10  # SIGTERM: requests in flight get this long to finish before their worker is killed
FDS_KEPT = 256  # a worker's descriptors that are not connections: files, pipes, Redis, the listening socket
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@dataclass(frozen=True)
class Listening:
    """How `mockserver serve` listens, and the size of each worker."""

    host: str
    port: int
    workers: int
    threads: int  # Python threads per worker for what may block: the control API, a proxy's answers
    runtime_threads: int  # Rust threads per worker doing the network I/O
    backpressure: int  # request bodies a worker reads at once; one more is answered 503 mock-busy
    body_timeout: float  # seconds for a request's whole body; past it, 408
    tls: TlsFiles | None = None  # HTTPS with these files; plain HTTP without
    http: str = "auto"  # "1", "2", or "auto": HTTP/1.1, and HTTP/2 where a TLS client offers it (ALPN)


def unusable_address(host: str, port: int) -> str | None:
    """Why the server could not listen there, found before anything starts (Granian would fail later, with a
    traceback, after the start-up line)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will: TIME_WAIT is no bar
            probe.bind(address)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return (f"port {port} on {host} is already in use (another mockserver?): stop it, or choose another "
                    f"port with --port (make run PORT=…)")
        return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is this machine's loopback (0.0.0.0 and :: are every interface)."""
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    addresses = {str(address[4][0]).split("%", 1)[0] for address in found}  # without an IPv6 zone
    return bool(addresses) and all(ipaddress.ip_address(address).is_loopback for address in addresses)


def serve(factory: Callable[[], MockFlask], settings: Listening, log_level: str) -> None:
    """Run until SIGTERM/SIGINT, which stop new connections and let requests in flight finish (DRAIN_S)."""
    server = Granian(
        "mockserver", address=settings.host, port=settings.port, interface=Interfaces.RSGI,
        workers=settings.workers, runtime_threads=settings.runtime_threads,
        backpressure=max(open_files() - FDS_KEPT, 1), websockets=False, workers_kill_timeout=DRAIN_S,
        http=HTTPModes(settings.http), ssl_cert=settings.tls.cert if settings.tls else None,
        ssl_key=settings.tls.key if settings.tls else None, ssl_protocol_min=SSLProtocols.tls12,  # TLS 1.2 clients too
        log_dictconfig=_logging_config(log_level), log_level=log_level)  # type: ignore[arg-type]
    gc.freeze()  # what was loaded lives as long as the process: out of every collection, shared by the workers
    server.serve(target_loader=lambda _target: _worker_app(factory, settings))


@contextmanager
def counted(metrics: bool) -> Iterator[None]:
    """With `--metrics`: a fresh folder where each worker counts (prometheus_client's multiprocess mode, which
    reads it from the environment the workers inherit), removed when the server stops."""
    if not metrics:
        yield
        return
    folder = tempfile.mkdtemp(prefix="mockserver-metrics-")
    os.environ[MULTIPROCESS_DIR] = folder
    try:
        yield
    finally:
        os.environ.pop(MULTIPROCESS_DIR, None)
        shutil.rmtree(folder, ignore_errors=True)


def open_files() -> int:
    """The descriptors this process (and each worker it forks) may open: the soft limit raised to the hard one, as
    a server that holds a connection per client needs."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # an unlimited hard limit the kernel caps lower: keep the soft one
            pass
    return soft if soft != resource.RLIM_INFINITY else 1 << 16


def _worker_app(factory: Callable[[], MockFlask], settings: Listening) -> MockRSGI:
    """In each worker, after the fork: its own app, and its access lines flushed when it stops (a worker process
    ends without running `atexit` handlers; multiprocessing's finalizers do run)."""
    app = MockRSGI.of(factory(), settings.threads, settings.body_timeout, settings.backpressure)
    multiprocessing.util.Finalize(ACCESS, ACCESS.flush, exitpriority=10)
    return app


def _logging_config(level: str) -> dict[str, Any]:
    """One format on stderr for the mock's lines and Granian's, applied again by Granian in each worker."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"line": {"format": LOG_FORMAT}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "line"}},
        "root": {"handlers": ["stderr"], "level": level.upper()},
        "loggers": {"_granian": {"handlers": [], "propagate": True},
                    "granian.access": {"handlers": [], "propagate": False},  # our own access line says more
                    "werkzeug": {"level": "WARNING"}},  # our access line says it already, with the source
    }


def configure_logging(level: str) -> None:
    """Log lines on stderr; the access lines (one per request) written in batches by the access log (each worker
    flushes its own when it stops)."""
    # what each record would otherwise look up (the logging HOWTO's "Optimization"): the calling frame, the
    # thread, the process; a line says what matters itself
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    logging.config.dictConfig(_logging_config(level))
    ACCESS.buffer_into(sys.stderr)
