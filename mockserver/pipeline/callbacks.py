"""The requests the API itself sends: an operation's `callbacks` after its success, a 3.1 webhook on demand or
after a fixture's write. Planned here as data (the URL its runtime expression names in the call, the method, the
body, the delay), once per answer that sends any, and judged here when the receiver answers; web/outgoing.py
sends them, off the request path. What can be decided before a request comes is (which operations send what,
each one's delay, the webhooks' subscribers in the fixtures)."""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..base.bounded import BoundedCache
from ..base.errors import MockError, Problem
from ..base.http import UNREAD, MockRequest, MockResponse, is_json
from ..fixtures.loading import FixtureSet
from ..spec.expressions import ExpressionError, RequestView, ResponseView
from ..spec.index import Outbound, SpecIndex, response_for
from ..spec.schemas import instance_pointer, iter_errors
from .answers import Answers
from .generation import GenerationError
from .query import to_json

CALLBACK = "callback"
WEBHOOK = "webhook"
CALLBACK_RETRIES = 2  # tries after the first, when the receiver cannot be reached, times out or answers 5xx
CALLBACK_TIMEOUT = 5.0  # seconds one try may take
GENERATED_BODIES = 1024  # generated callback and webhook bodies kept (one per callback the description declares)


@dataclass(frozen=True)
class Sent:
    """One call the mock is to send: which callback or webhook (`kind`, `name`, the index of its operation), after
    which operation's answer, to where, with what, how long after the answer (`due`, a time.time()); `problem`
    says why it cannot be sent (its URL's value is missing from the call), and it is journaled so, unsent."""

    kind: str
    name: str
    index: int
    operation: str | None
    method: str
    url: str
    body: bytes
    media_type: str | None
    due: float
    problem: str | None = None
    session: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The outbox's form of it (the store keeps JSON), with an id of its own."""
        return {"id": uuid.uuid4().hex, "kind": self.kind, "name": self.name, "index": self.index,
                "operation": self.operation, "method": self.method, "url": self.url,
                "body": self.body.decode("utf-8", "replace"), "mediaType": self.media_type, "due": self.due,
                "problem": self.problem, "session": self.session}


class Callbacks:
    """Which answers send what, compiled from the description and the fixtures' `callbacks` and `webhooks`."""

    def __init__(self, spec: SpecIndex, fixtures: FixtureSet, answers: Answers) -> None:
        self.spec = spec
        self.answers = answers
        self.problems: list[Problem] = []
        settings = fixtures.settings.get("callbacks") or {}
        self.delay_ms: int = settings.get("delayMs", 0)
        self.subscribers: dict[str, list[str]] = {}  # the fixtures' subscriptions, by webhook
        located = fixtures.settings_from.get("callbacks")
        for name, urls in (settings.get("subscriptions") or {}).items():
            if located is not None and self._unknown(name, located.problem, "subscriptions", name):
                continue
            self.subscribers[name] = list(urls)
        self.delays: dict[str, int] = {}  # the fixtures' own delay of an operation's callbacks
        self.after_write: dict[str, list[str]] = {}  # operation -> the webhooks its success sends
        for op_id, where in fixtures.operations.items():
            config = where.value
            if "callbacks" in config:
                self.delays[op_id] = config["callbacks"].get("delayMs", self.delay_ms)
            names = config.get("webhooks") or []
            unknown = [i for i, name in enumerate(names) if self._unknown(name, where.problem, "webhooks", i)]
            if names and not unknown:
                self.after_write[op_id] = names
        self._generated: BoundedCache[str, Any] = BoundedCache(GENERATED_BODIES)  # by callback or webhook
        # the operations whose success sends something: the one look-up every answer pays
        self.triggers = frozenset(op.id for op in spec.operations.values() if op.callbacks) | set(self.after_write)

    def _unknown(self, name: str, problem: Any, *where: Any) -> bool:
        if name in self.spec.webhooks:
            return False
        known = ", ".join(sorted(self.spec.webhooks)) or "none"
        self.problems.append(problem(f"no webhook {name!r} in the description (its webhooks: {known})", "webhook",
                                     *where))
        return True

    # -- on the request path, only for an answer in `triggers` --------------------------------------------------
    def after(self, request: MockRequest, response: MockResponse, subscribers: dict[str, list[str]]) -> list[Sent]:
        """What a success of an operation sends (nothing after any other answer, nor behind a proxy): each
        callback, to the URL its expression names in this call (its path parameters as the pipeline found them),
        and the webhooks its fixture sends, to their `subscribers` (the fixtures' and those made at run time); a
        `Prefer: callback-delay=<ms>` goes before the fixtures' delay."""
        op_id = response.operation_id
        if op_id is None or not 200 <= response.status < 300 or response.source.startswith("proxy"):
            return []  # a proxied answer is the deployment's, which sends its own callbacks
        op = self.spec.operations[op_id]
        asked = response.callback_delay
        delay = self.delays.get(op_id, self.delay_ms) if asked is None else asked
        due = time.time() + delay / 1000
        body = request.json if request.json is not UNREAD else _json(request.body, request.header("content-type"))
        query = request.query() or {}
        host = request.header("host") or "localhost"
        url = f"http://{host}{request.path}" + (f"?{request.query_string}" if request.query_string else "")
        call = RequestView(url, request.method, request.headers, query, response.path_params or {}, body)
        answer = ResponseView(response.status, {k.lower(): v for k, v in response.headers.items()},
                              response.payload)
        sent: list[Sent] = []
        for index, callback in enumerate(op.callbacks):
            assert callback.url is not None  # a callback's is parsed at start-up
            try:
                target, problem = callback.url.render(call, answer), None
            except ExpressionError as exc:
                target, problem = callback.url.text, f"its URL cannot be made: {exc}"
            payload, media = self.body(callback, f"{op_id}|{callback.name}|{index}", body, response.payload)
            sent.append(Sent(CALLBACK, callback.name, index, op_id, callback.method, target, payload, media, due,
                             problem, response.session))
        for name in self.after_write.get(op_id, ()):
            sent += self.webhook(name, subscribers.get(name, []), None, response.payload, due, op_id,
                                 response.session)
        return sent

    def webhook(self, name: str, urls: list[str], given: Any, related: Any, due: float,
                operation: str | None = None, session: str | None = None) -> list[Sent]:
        """A webhook's event to each of `urls`: the body `given`, else `related` (the answer it follows) where it
        fits the event's schema, else its example, else generated agreeing with `related`."""
        sent = []
        for index, hook in enumerate(self.spec.webhooks[name]):
            media = _media_type(hook)
            schema = hook.request_body.content[media].schema if hook.request_body and media else None
            if given is None and related is not None and schema is not None and schema.validator.is_valid(related):
                given = related  # the answer it follows is the event (a created item → `itemCreated`)
            if given is not None:
                payload = to_json(given) if media is None or is_json(media) else str(given).encode()
            else:
                payload, media = self.body(hook, f"webhook|{name}|{index}", None, related)
            sent += [Sent(WEBHOOK, name, index, operation, hook.method, url, payload, media, due, None, session)
                     for url in urls]
        return sent

    def body(self, outbound: Outbound, key: str, *related: Any) -> tuple[bytes, str | None]:
        """The body of a callback or webhook: its example, else generated from its schema; a JSON object's
        members named as in the `related` values (the request's body, the answer) take their values where the
        body still fits its schema."""
        media_type = _media_type(outbound)
        if media_type is None:
            return b"", None
        assert outbound.request_body is not None
        media = outbound.request_body.content[media_type]
        if media.examples:
            payload = next(iter(media.examples.values()))
        elif media.schema is not None:
            schema = media.schema
            try:  # the same seed makes the same body: made once per callback (never changed)
                payload = self._generated.made(key, lambda: self.answers.generator.generate(
                    schema.node, schema.uri, self.answers.rng(key), static=True))
            except GenerationError as exc:
                raise MockError(500, f"the mock cannot make up the body of {outbound.name}: {exc}",
                                code="mock-cannot-generate") from None
            payload = _agreeing(payload, related, media.schema.validator.is_valid)
        else:
            payload = None
        if isinstance(payload, bytes):
            return payload, media_type
        return (to_json(payload) if is_json(media_type) else str(payload).encode()), media_type

    def outbound(self, kind: str, name: str, operation: str | None, index: int) -> Outbound | None:
        """The callback or webhook a call was planned from (None when a reload took it away)."""
        try:
            if kind == WEBHOOK:
                return self.spec.webhooks[name][index]
            found = self.spec.operations[operation or ""].callbacks[index]
        except (KeyError, IndexError):
            return None
        return found if found.name == name else None


def verdict(outbound: Outbound | None, status: int, media_type: str | None, body: bytes) -> tuple[str, str]:
    """("ok", "") when the receiver's answer keeps to what the callback or webhook declares, else ("breach",
    what it breaks): its status, and a JSON body against the declared schema."""
    if outbound is None:
        return "unchecked", "the description no longer declares it"
    if not outbound.declares(status):
        return "breach", f"status {status} is not declared (it declares {', '.join(sorted(outbound.responses))})"
    response = response_for(outbound.responses, status)
    if response is None or not response.content or not is_json(media_type):
        return "ok", ""
    media = next((m for name, m in response.content.items() if is_json(name)), None)
    if media is None or media.schema is None:
        return "ok", ""
    try:
        value = json.loads(body)
    except ValueError:
        return "breach", "the answer's body is not JSON"
    for error in iter_errors(media.schema.validator, value):
        return "breach", f"the answer's body breaks the schema at {instance_pointer(error) or '/'}: {error.message}"
    return "ok", ""


def _media_type(outbound: Outbound) -> str | None:
    """The media type a callback or webhook sends: its body's first (JSON first), or None for no body."""
    content = outbound.request_body.content if outbound.request_body else {}
    return next((name for name in content if is_json(name)), next(iter(content), None))


def _json(body: bytes, content_type: str | None) -> Any:
    """A request's JSON body no stage has read (None when it has none, or it is no JSON)."""
    if not body or not is_json(content_type):
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def _agreeing(payload: Any, related: tuple[Any, ...], fits: Any) -> Any:
    """`payload` with each member a related value names the same taking that value, one by one where the whole
    still fits."""
    if not isinstance(payload, dict):
        return payload
    for source in related:
        if not isinstance(source, dict):
            continue
        for name, value in source.items():
            if name in payload and payload[name] != value:
                changed = {**payload, name: value}
                if fits(changed):
                    payload = changed
    return payload
