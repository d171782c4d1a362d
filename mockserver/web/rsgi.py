"""The mock over Granian's RSGI interface, as `mockserver serve` runs it: translation only, the scope into a
`MockRequest` and the mock app's `Answer` onto Granian's protocol. Each worker answers the described API on its
event loop: the pipeline's work is short, and its state store does the slow part off the request path (the
memory store has none; Redis is written in batches by a thread of its own and read from a copy its listener keeps),
so it runs right there, and a scenario's latency is an `asyncio.sleep` that holds no thread (under WSGI each slow
answer held one of a few threads, and the threads fought for the GIL). What may block for long runs in the
worker's threads (`threads`): the control API and its pages (Flask's WSGI app, mounted under `PREFIX` as
`DispatcherMiddleware` mounts it under WSGI; a change waits for every process to take it), every answer behind
`mockserver proxy` (it waits on the deployment), and on Redis the answers that make a round trip (a scenario's
count, a written collection's rows: `Pipeline.waits_on_store`), so a frozen Redis holds up those calls alone, never
a 404 or a preflight. The control API has threads of its own, apart from the answers': on Redis a journal read or a
scenario set waits until every process has answered it, and under a test farm's mixed load those waits held half
of the threads the answers were queued for. On a store of the process's own (memory) the journal reads and the
scenario changes a test farm makes all the time wait on nothing: they are answered on the loop (`_ON_LOOP`).
A request's body is read here, in chunks, against a deadline (`body_timeout`), and at most `max_bodies` bodies
are read at once: a client sending its body slowly holds a coroutine and a connection, nothing more, until the
deadline answers it 408; beyond the cap a request is answered 503 `mock-busy` at once instead of waiting."""
from __future__ import annotations

import asyncio
import io
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from ..base.errors import MockError
from ..base.http import MockRequest
from ..state import SESSION_HEADER
from .app import mounted
from .mock_app import TRUNCATE_FLUSH_S, Answer, MockApp
from .wsgi import WSGIApp, encoded_path

if TYPE_CHECKING:
    from .app import MockFlask
    from .mounts import Mounts, Unmounted

T = TypeVar("T")
_SESSION = SESSION_HEADER.lower()


# the control API's threads, per answer thread: on Redis a scenario change or a journal read waits for every process
# to take it (a round trip, not the interpreter), and 64 sessions doing so held two threads all the time: a change
# queued behind the others for up to half a second (the mixed load's p99 500 ms on Redis, 120 ms with eight)
CONTROL_SHARE = 4
# the control calls a test farm makes all the time (journal reads, scenarios set and removed): on a store of this
# process alone they wait on nothing, so they are answered on the loop, without two hand-offs to a thread and back
_ON_LOOP = ("/requests", "/scenarios")

class MockRSGI:
    """The mock app (or the apps of several APIs, `mounts`: web/mounts.py), and the control API's WSGI app (None
    without one) mounted under its prefix, over RSGI."""

    def __init__(self, mock: MockApp, control: WSGIApp | None, threads: int, body_timeout: float,
                 max_bodies: int, mounts: Mounts | None = None) -> None:
        self.mock = mock
        self.mounts = mounts
        self.control = control
        # made in the worker, after the fork (serving._worker_app); their threads start on first use
        self._control_pool = ThreadPoolExecutor(threads * CONTROL_SHARE, thread_name_prefix="mockserver-control")
        self._answer_pool = ThreadPoolExecutor(threads, thread_name_prefix="mockserver")
        self.body_timeout = body_timeout
        self.max_bodies = max_bodies
        self._bodies = 0  # bodies being read now
        # on a shared store (Redis) a journal read or a scenario change waits for every process: in a thread
        self._control_waits = any(app.pipeline.store.shared for app in (mounts.mocks.values() if mounts else [mock]))

    @classmethod
    def of(cls, app: MockFlask, threads: int, body_timeout: float, max_bodies: int) -> MockRSGI:
        """The app `create_app` made, over RSGI."""
        return cls(app.mock, app.control, threads, body_timeout, max_bodies, app.mounts)

    def __rsgi_del__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._control_pool.shutdown(wait=False)
        self._answer_pool.shutdown(wait=False)

    async def _blocking(self, call: Callable[..., T], *args: Any) -> T:
        """An answer that may wait (a deployment, a round trip to Redis), in the answers' threads."""
        return await _in(self._answer_pool, call, *args)

    async def _in_control(self, call: Callable[..., T], *args: Any) -> T:
        """A control call that may wait (for every process sharing the store), in the control API's threads."""
        return await _in(self._control_pool, call, *args)

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        started = time.perf_counter()
        headers = _headers(scope.headers)
        request = MockRequest(scope.method, _raw(scope.path), scope.query_string, headers)
        mounts = self.mounts
        mock = self.mock if mounts is None else mounts.pick(headers.get("host"), request.path)
        if headers.get("content-length", "0") != "0" or "transfer-encoding" in headers:
            refused = await self._read_body(proto, request, started, mock)
            if refused is not None:
                proto.response_bytes(refused.status, [*refused.headers, ("Connection", "close")], refused.body)
                return
        control = self.control
        script, path_info = mounted(scope.path) if control is not None else (None, "")
        if script is not None and control is not None:
            on_loop = not self._control_waits and path_info.startswith(_ON_LOOP)
            status, out, chunks = await (_now if on_loop else self._in_control)(_wsgi_call, control, scope, script,
                                                                                path_info, request)
            proto.response_bytes(status, out, chunks)
            return
        # a proxied answer waits on the deployment, one that asks Redis on Redis: never on the loop
        run = self._blocking if mock.waits(request.method, request.path) else _now
        answer = await run(mock.respond, request, started)
        if answer.delay_s:
            await asyncio.sleep(answer.delay_s)
        if answer.disconnect:
            await _broken(proto, answer)
        else:
            proto.response_bytes(answer.status, answer.headers, answer.body)

    __call__ = __rsgi__

    async def _read_body(self, proto: Any, request: MockRequest, started: float,
                         mock: MockApp | Unmounted) -> Answer | None:
        """The request's body, into `request`, chunk by chunk under the deadline (`mock`'s limit); or the refusal
        to answer at once (the connection is closed after it, so what is left of the body is never read)."""
        if self._bodies >= self.max_bodies:
            return mock.refuse(request, MockError(
                503, f"the mock is reading {self.max_bodies} request bodies already (--backpressure); try again",
                code="mock-busy", headers={"Retry-After": "1"}), started)
        self._bodies += 1
        try:
            async with asyncio.timeout(self.body_timeout):
                request.body = await _body(proto, mock.body_limit())
        except TimeoutError:
            return mock.refuse(request, MockError(
                408, f"the request's body did not arrive within {self.body_timeout:g} s (--body-timeout)",
                code="request-timeout"), started)
        finally:
            self._bodies -= 1
        return None


async def _in(pool: ThreadPoolExecutor, call: Callable[..., T], *args: Any) -> T:
    return await asyncio.get_running_loop().run_in_executor(pool, call, *args)


async def _now(call: Callable[..., T], *args: Any) -> T:
    """`call` right here on the loop: the counterpart of `MockRSGI._blocking` for what does not wait long."""
    return call(*args)


def _raw(path: str) -> str:
    """The path percent-encoded again. Granian decodes it lossily: a byte that is not UTF-8 arrives as U+FFFD,
    sent on as such a byte, so the router refuses the path (400) as it refuses any that is not UTF-8 (a client's
    own U+FFFD is refused too: its bytes are gone by now)."""
    return encoded_path(path.encode("utf-8").replace("\ufffd".encode(), b"\xff"))


def _headers(raw: Any) -> dict[str, str]:
    """The request's headers by lower-case name; a repeated header's values joined with ", " (as WSGI does).
    Granian leaves a value that is not visible ASCII out of `items()` (the name stays in the headers): a session
    header sent so is kept as U+FFFD, so it is refused as malformed rather than read as no session."""
    headers: dict[str, str] = {}
    for name, value in raw.items():
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if _SESSION not in headers and _SESSION in raw:
        headers[_SESSION] = "\ufffd"
    return headers


async def _body(proto: Any, limit: int) -> bytes:
    """Up to `limit` bytes of the body, chunk by chunk as they arrive: the rest of a body too large is never
    held."""
    received = bytearray()
    async for chunk in proto:
        received += chunk
        if len(received) >= limit:
            return bytes(received[:limit])
    return bytes(received)


async def _broken(proto: Any, answer: Answer) -> None:
    """A scenario's `break`: the whole length is announced, then `truncate` sends half the body and `close` none
    of it; a body that ends short of its Content-Length makes Granian drop the connection (it may have written
    the status line and headers already). The empty chunk comes first because a stream already ended when
    Granian takes the answer is sent as a complete, empty answer (`Content-Length: 0`, the connection kept):
    without it `close` gave clients a whole empty 200 in more than half of the tries."""
    transport = proto.response_stream(answer.status, answer.headers)
    await transport.send_bytes(b"")
    if answer.disconnect == "truncate":
        await transport.send_bytes(answer.body)
        await asyncio.sleep(TRUNCATE_FLUSH_S)  # Granian drops what it has not written yet when a body ends short


def _wsgi_call(control: WSGIApp, scope: Any, script: str, path_info: str,
               request: MockRequest) -> tuple[int, list[tuple[str, str]], bytes]:
    """The control API's answer from its WSGI app (in a control thread, or on the loop: `_ON_LOOP`): the environ
    PEP 3333 asks for, from the scope, mounted at `script`."""
    host, _, port = scope.server.rpartition(":")
    environ: dict[str, Any] = {
        # PEP 3333: the path's bytes as latin-1 (Granian's U+FFFD for a byte that was not UTF-8 stays one)
        "REQUEST_METHOD": scope.method, "SCRIPT_NAME": script,
        "PATH_INFO": path_info.encode().decode("latin-1"), "RAW_URI": request.path,
        "QUERY_STRING": scope.query_string, "SERVER_NAME": host, "SERVER_PORT": port,
        "SERVER_PROTOCOL": f"HTTP/{scope.http_version}", "REMOTE_ADDR": scope.client.rpartition(":")[0],
        "wsgi.version": (1, 0), "wsgi.url_scheme": scope.scheme, "wsgi.input": io.BytesIO(request.body),
        "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": True, "wsgi.run_once": False,
        "wsgi.input_terminated": True,  # the whole body is read (chunked too): werkzeug may read without a length
    }
    for name, value in request.headers.items():
        key = name.upper().replace("-", "_")
        environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value
    started: list[Any] = []

    def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        started[:] = [int(status.split(" ", 1)[0]), response_headers]

    answered = control(environ, start_response)
    try:
        chunks = b"".join(answered)
    finally:
        getattr(answered, "close", lambda: None)()
    status, out = started
    return status, out, chunks
