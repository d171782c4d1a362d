"""The calls the mock sends: callbacks after an answer, webhooks on demand (`POST /__mock/webhooks/{name}`) or after
a fixture's write. The request path only plans them (pipeline/callbacks.py) and puts them in the store's outbox;
a thread of each process claims them from there (on Redis, every replica's thread pops the same list, so each
call is taken, and sent, once) and a small pool sends each when it is due, with a timeout, retries with backoff
(a receiver that cannot be reached, times out, or answers 5xx or 429), and notes every try in the journal of
outgoing calls (`GET /__mock/callbacks`). A target that is neither loopback nor a host `--callback-allow` names
is refused, journaled, and never contacted: the mock cannot be made to reach an internal network. No redirect is
followed, for the same reason."""
from __future__ import annotations

import heapq
import http.client
import ipaddress
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ..base.errors import MockError
from ..base.http import MockRequest, MockResponse
from ..base.process import PROCESS
from ..pipeline.callbacks import Sent, verdict
from ..pipeline.pipeline import Pipeline

log = logging.getLogger("mockserver.outgoing")
SENDERS = 4  # calls sent at once per process
BACKOFF_S = 0.25  # the wait before the first retry; doubled before each next one
CLAIM_WAIT_S = 0.5  # the longest the claiming thread waits on the outbox before looking at what is due
KEPT_BYTES = 64 * 1024  # of a receiver's answer, in the journal
RETRIED = frozenset({429, 500, 502, 503, 504})


def refusal(url: str, allowed: tuple[str, ...]) -> str | None:
    """Why the mock may not send to `url` (None: it may): only http(s), to loopback or a host `--callback-allow`
    names."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{url!r} is not an http(s) URL"
    host = parts.hostname
    if host == "localhost" or host in allowed:
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass
    return f"{host} is neither loopback nor a host --callback-allow names; nothing was sent"


class Outgoing:
    """The sender of one process, for the app whose state `current()` is."""

    def __init__(self, current: Callable[[], Pipeline]) -> None:
        self._current = current
        self._pid = 0
        self._starting = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    # -- the request path ------------------------------------------------------------------------------------
    def after(self, pipeline: Pipeline, request: MockRequest, response: MockResponse) -> None:
        """The calls the answer `response` sends, into the outbox; a dict look-up for every other answer."""
        if response.operation_id not in pipeline.callbacks.triggers:
            return
        try:
            subscribers = (self.subscribers(pipeline) if response.operation_id in pipeline.callbacks.after_write
                           else {})
            self.queue(pipeline, pipeline.callbacks.after(request, response, subscribers))
        except Exception:  # the answer is made already: a call that cannot be planned is the log's, not the client's
            log.exception("the callbacks of %s %s cannot be sent", request.method, request.path)

    def queue(self, pipeline: Pipeline, calls: list[Sent]) -> list[str]:
        """Each call into the outbox (and started on its way, in this process or another); their ids."""
        ids = []
        for call in calls:
            item = call.as_json()
            pipeline.store.send_later(item)
            ids.append(item["id"])
        if ids:
            self.ensure_started()
        return ids

    @staticmethod
    def subscribers(pipeline: Pipeline) -> dict[str, list[str]]:
        """The URLs each webhook is sent to: the fixtures' and those subscribed at run time."""
        found = {name: list(urls) for name, urls in pipeline.callbacks.subscribers.items()}
        for name, urls in pipeline.store.subscriptions().items():
            found.setdefault(name, []).extend(url for url in urls if url not in found[name])
        return found

    # -- off the request path --------------------------------------------------------------------------------
    def ensure_started(self) -> None:
        """The claiming thread and the pool of this process (threads do not survive a fork: each worker its own)."""
        if self._pid == PROCESS.pid:
            return
        with self._starting:
            if self._pid != PROCESS.pid:
                self._pool = ThreadPoolExecutor(SENDERS, thread_name_prefix="mockserver-outgoing")
                threading.Thread(target=self._claiming, name="mockserver-outbox", daemon=True).start()
                self._pid = PROCESS.pid

    def _claiming(self) -> None:
        """Take calls from the outbox as they come; hand each to the pool when it is due."""
        waiting: list[tuple[float, int, dict[str, Any]]] = []
        order = itertools.count()
        while True:
            now = time.time()
            while waiting and waiting[0][0] <= now:
                assert self._pool is not None
                self._pool.submit(self._deliver, heapq.heappop(waiting)[2])
            wait = min(CLAIM_WAIT_S, waiting[0][0] - now) if waiting else CLAIM_WAIT_S
            try:
                item = self._current().store.claim(max(wait, 0.01))
            except MockError:  # the shared store is away: its listener says so; try again in a while
                time.sleep(CLAIM_WAIT_S)
                continue
            if item is not None:
                heapq.heappush(waiting, (item["due"], next(order), item))

    def _deliver(self, item: dict[str, Any]) -> None:
        try:
            self._send(self._current(), item)
        except Exception:
            log.exception("the outgoing call %s to %s failed", item.get("id"), item.get("url"))

    def _send(self, pipeline: Pipeline, item: dict[str, Any]) -> None:
        """One call: refused, or tried until it is answered (a retried failure aside), noted after every try."""
        options = pipeline.options
        headers = {"User-Agent": "mockserver", "X-Mock-Callback-Id": item["id"]}
        if item["mediaType"]:
            headers["Content-Type"] = item["mediaType"]
        entry: dict[str, Any] = {
            "id": item["id"], "kind": item["kind"], "name": item["name"], "operationId": item["operation"],
            "session": item["session"], "method": item["method"], "url": item["url"],
            "request": {"headers": headers, "body": item["body"]}, "queued": _stamp(item["due"]),
            "attempts": [], "answer": None, "verdict": "sending", "reason": ""}
        reason = item["problem"] or refusal(item["url"], options.callback_allow)
        if reason is not None:
            entry.update(verdict="unsendable" if item["problem"] else "refused", reason=reason)
            pipeline.store.note_outgoing(entry)
            log.warning("%s %s not sent: %s", item["kind"], item["name"], reason)
            return
        pipeline.store.note_outgoing(entry)
        for attempt in range(options.callback_retries + 1):
            if attempt:
                time.sleep(BACKOFF_S * 2 ** (attempt - 1))
            started = time.perf_counter()
            tried: dict[str, Any] = {"at": _stamp(time.time())}
            try:
                status, answer_headers, body = _call(item["method"], item["url"], item["body"].encode(), headers,
                                                     options.callback_timeout)
            except (OSError, http.client.HTTPException) as exc:
                tried.update(error=str(exc) or type(exc).__name__, ms=_ms(started))
                entry["attempts"].append(tried)
                last = attempt == options.callback_retries
                entry.update(verdict="failed" if last else "retrying",
                             reason=f"no answer after {attempt + 1} tries: {tried['error']}")
                pipeline.store.note_outgoing(entry)
                continue
            tried.update(status=status, ms=_ms(started))
            entry["attempts"].append(tried)
            entry["answer"] = {"status": status, "headers": answer_headers,
                               "body": body[:KEPT_BYTES].decode("utf-8", "replace")}
            if status in RETRIED and attempt < options.callback_retries:
                entry.update(verdict="retrying", reason=f"the receiver answered {status}")
                pipeline.store.note_outgoing(entry)
                continue
            outbound = pipeline.callbacks.outbound(item["kind"], item["name"], item["operation"], item["index"])
            found, why = verdict(outbound, status, answer_headers.get("content-type"), body)
            entry.update(verdict=found, reason=why)
            pipeline.store.note_outgoing(entry)
            return


def _call(method: str, url: str, body: bytes, headers: dict[str, str],
          timeout: float) -> tuple[int, dict[str, str], bytes]:
    """One HTTP exchange, no redirect followed: the status, the headers by lower-case name, the body."""
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname or "", parts.port, timeout=timeout)
    try:
        connection.request(method, (parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                           body=body or None, headers=headers)
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read(KEPT_BYTES + 1)
    finally:
        connection.close()


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
