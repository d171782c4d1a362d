"""`mockserver proxy` and `record`: the described API's requests go to a real deployment and its answers come back
unchanged; each exchange is checked against the description (`tools.drift`) and, when recording, saved as
fixtures (learnt by `tools.recorder`, written by `web/recording.py`). With fallback, the mock answers what the
deployment cannot (down, too slow, 501), so a frontend keeps working while the backend does not. It plugs into
the mock app (web/mock_app.py) in place of `Pipeline.handle`, so CORS, the journal, the access log and the control
API work as they do for the mock."""
from __future__ import annotations

import dataclasses
import http.client
import logging
import re
from urllib.parse import urlsplit

from ..base.errors import MockError
from ..base.http import MockRequest, MockResponse
from ..pipeline.pipeline import Pipeline
from ..state import SESSION_COOKIE
from ..tools.drift import DriftLog, check
from .recording import Recorder

log = logging.getLogger("mockserver.proxy")
# not forwarded either way (RFC 9110 §7.6.1), or recomputed; Accept-Encoding so that answers can be read and checked
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                         "transfer-encoding", "upgrade", "host", "content-length", "accept-encoding"})
# the methods forwarded: RFC 9110's and PATCH (RFC 5789), but not CONNECT (a tunnel, not a call of the API)
# HTTP's methods but TRACE, which would echo the client's credentials back (cross-site tracing)
FORWARDED_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_ALLOW = ", ".join(FORWARDED_METHODS)
_MOCK_HEADERS = "x-mock-"  # the mock's own (control token, session, …): never the target's business
# what a server behind may read as a separator or a dot: an encoded slash or backslash, a backslash, an encoded dot
_SEPARATOR = re.compile(r"%2f|%5c|\\", re.IGNORECASE)
_DOT = re.compile(r"%2e", re.IGNORECASE)


class Unanswered(Exception):
    """The deployment gave no answer: refused, unreachable, timed out, or broke the connection."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status  # 502, or 504 for a timeout, when there is no fallback


class Proxy:
    def __init__(self, target: str, *, fallback: bool = False, timeout: float = 10.0,
                 recorder: Recorder | None = None) -> None:
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the target must be an http(s) URL, not {target!r}")
        self._netloc = parts.netloc.rpartition("@")[2]  # credentials in the URL stay out of messages
        self._base = parts.path.rstrip("/")
        self._connection = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self.target = f"{parts.scheme}://{self._netloc}{self._base}"
        self.fallback = fallback
        self.timeout = timeout
        self.recorder = recorder
        self.drift = DriftLog()

    def handle(self, pipeline: Pipeline, request: MockRequest) -> MockResponse:
        """Same signature as `Pipeline.handle`: the deployment's answer, the mock's (fallback), a 502/504, or the
        refusal of what the target should not see (a method HTTP does not define, a path out of its base path)."""
        if len(request.body) > pipeline.options.max_body:
            return pipeline.handle(request)  # the body was cut at the limit: the mock's own 413, never half a body
        if request.method not in FORWARDED_METHODS:
            return self._refuse(pipeline, request, MockError(
                405, f"{request.method} is not forwarded to the target; these are: {_ALLOW}",
                details={"allowed": list(FORWARDED_METHODS)}, headers={"Allow": _ALLOW}))
        path = target_path(request.path)
        if path is None:
            return self._refuse(pipeline, request, MockError(
                400, f"the path {request.path} leaves the target's base path {self._base or '/'} once its dot "
                     "segments are read: not forwarded", code="path-outside-target", details={"path": request.path}))
        if path != request.path:  # the target, the drift check and the recording all see the path resolved
            request = dataclasses.replace(request, path=path)
        try:
            status, headers, body = self._forward(request)
        except Unanswered as exc:
            return self._unanswered(pipeline, request, exc)
        if status == 501 and self.fallback:
            return self._unanswered(pipeline, request, Unanswered(501, "the target answered 501 Not Implemented"))
        exchange = check(pipeline, request, status, headers, body)
        self.drift.add(exchange, pipeline.store, pipeline.secrets)
        if exchange.violations:
            first = exchange.violations[0]
            log.warning("DRIFT %s %s -> %d: %d violation(s), first: %s %s %s: %s", request.method, request.path,
                        status, len(exchange.violations), first.side, first.pointer, first.rule, first.message)
        if self.recorder is not None:
            log.info("record %s %s -> %d: %s", request.method, request.path, status,
                     self.recorder.observe(pipeline, exchange))
        return MockResponse(status, body, None, headers, "proxy-drift" if exchange.violations else "proxy",
                            exchange.operation.id if exchange.operation else None, exchange.payload)

    def _forward(self, request: MockRequest) -> tuple[int, dict[str, str], bytes]:
        connection = self._connection(self._netloc, timeout=self.timeout)
        url = self._base + request.path + (f"?{request.query_string}" if request.query_string else "")
        headers = {k: v for k, v in request.headers.items()
                   if k not in _HOP_BY_HOP and not k.startswith(_MOCK_HEADERS)}
        if "cookie" in headers:
            headers = _without_session_cookie(headers)
        try:
            connection.request(request.method, url, body=request.body or None, headers=headers)
            response = connection.getresponse()
            body = response.read()
        except TimeoutError:
            raise Unanswered(504, f"no answer within {self.timeout:g} s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise Unanswered(502, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None
        finally:
            connection.close()
        answer: dict[str, str] = {}
        for name, value in response.getheaders():
            if name.lower() not in _HOP_BY_HOP:  # a repeated header is folded into one line (RFC 9110 §5.3)
                answer[name] = f"{answer[name]}, {value}" if name in answer else value
        return response.status, answer, body

    def _refuse(self, pipeline: Pipeline, request: MockRequest, error: MockError) -> MockResponse:
        log.warning("REFUSED %s %s: %s", request.method, request.path, error.message)
        return pipeline.error_response(error, pipeline.request_id(request), None)

    def _unanswered(self, pipeline: Pipeline, request: MockRequest, reason: Unanswered) -> MockResponse:
        if self.fallback:
            log.warning("FALLBACK %s %s: %s; the mock answers", request.method, request.path, reason)
            response = pipeline.handle(request)
            response.source = "fallback"
            return response
        log.warning("UNANSWERED %s %s: %s", request.method, request.path, reason)
        code = "gateway-timeout" if reason.status == 504 else "bad-gateway"
        return pipeline.error_response(MockError(reason.status, f"the target {self.target} did not answer: {reason}",
                                                 code=code, details={"target": self.target}),
                                       pipeline.request_id(request), None)


def target_path(path: str) -> str | None:
    """The path as a server behind may read it, dot segments removed (RFC 3986 §5.2.4), with encoded dots and
    slashes, backslashes and `;parameters` (`..;`) counted as such; None when it climbs above the root, out of
    the target's base path. A path without dot segments is forwarded as sent (an encoded slash in an id stays)."""
    segments = _DOT.sub(".", _SEPARATOR.sub("/", path)).split("/")[1:]
    dots = [segment.split(";", 1)[0] in (".", "..") for segment in segments]
    if not any(dots):
        return path
    kept: list[str] = []
    for segment, dot in zip(segments, dots):
        if not dot:
            kept.append(segment)
        elif segment.startswith(".."):
            if not kept:
                return None
            kept.pop()
    return "/" + "/".join(kept) + ("/" if dots[-1] and kept else "")


def _without_session_cookie(headers: dict[str, str]) -> dict[str, str]:
    """The headers with the mock's own session cookie left out of `Cookie` (the target's cookies kept): like the
    `X-Mock-…` headers, it is not the target's business."""
    kept = "; ".join(c.strip() for c in headers["cookie"].split(";")
                     if c.strip() and c.split("=", 1)[0].strip() != SESSION_COOKIE)
    rest = {k: v for k, v in headers.items() if k != "cookie"}
    return {**rest, "cookie": kept} if kept else rest
