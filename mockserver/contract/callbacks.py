"""Callbacks in the contract: against a `--url`, every operation that declares `callbacks` gets the URL of a local
receiver where its callback expression reads one (`{$request.query.callbackUrl}/data`: the query parameter
`callbackUrl`), a token of its own per request, so each callback that comes back names the request that caused
it. Once the run's calls are done the receiver waits (`--callback-timeout`) for what is still due, then every
callback is checked against its description (method, path, headers, body) and folded into the run's findings:
a success answer whose declared callback never arrived, and a callback to a path no request of the run gave, are
findings too."""
from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

from jsonschema import Draft202012Validator
from schemathesis import Case
from schemathesis.core.parameters import ParameterLocation
from schemathesis.engine import events
from schemathesis.engine.recorder import Interaction
from schemathesis.specs.openapi.schemas import OpenApiSchema

from ..base.errors import LoadError
from ..base.http import bare_media_type
from ..base.pointers import pointer_tokens
from ..spec.expressions import ExpressionError, RequestView, ResponseView, Source, Template
from ..spec.index import Outbound, Parameter, SpecIndex, lowest_success
from ..spec.schemas import iter_errors
from .discovery import label as operation_label
from .results import Finding, OperationResult, RunResult, keep

CHECK = "callbacks"
DEFAULT_TIMEOUT_S = 5.0
_PLACES = ("query", "header", "body")  # where a request can carry the receiver's URL
_MAX_ARRIVALS = 10_000  # callbacks kept for checking; past them, only counted (a note says how many)
_MAX_BODY = 1 << 20  # bytes of a callback's body read


class CallbackError(ValueError):
    """A `--callback-…` option the run cannot use: an address it cannot listen on, or a description without
    callbacks."""


@dataclass(frozen=True)
class CallbackOperation:
    """One method of a callback's path item: what the provider must send, and what the receiver answers."""

    headers: tuple[Parameter, ...]  # the index's, each by its name as declared (`X-Hook-Signature`)
    body: dict[str, Draft202012Validator | None]  # by media type; None: no schema
    body_required: bool
    answer: int  # the lowest declared success, which the receiver answers


@dataclass(frozen=True)
class Callback:
    name: str  # "onData"
    expression: str  # the URL as written: "{$request.query.callbackUrl}/data"
    template: Template
    place: Source  # where the run puts the receiver's URL: ("request", "query", "callbackUrl")
    methods: dict[str, CallbackOperation]  # by upper-case method


def declared(spec: SpecIndex) -> tuple[dict[str, list[Callback]], list[str]]:
    """By operation label, the callbacks a run can send to its receiver (the index's, grouped by URL), and a note
    for each it cannot (its URL comes from the response or from a fixed address). LoadError for a URL that does
    not parse, which the index left out with a warning: the run could not check that callback."""
    unparsed = [warning for warning in spec.warnings if warning.rule == "callback"]
    if unparsed:
        raise LoadError(unparsed)
    found: dict[str, list[Callback]] = {}
    notes: list[str] = []
    for op in spec.operations.values():
        label = operation_label(op)
        grouped: dict[tuple[str, Template], list[Outbound]] = {}  # the methods of each callback URL
        for outbound in op.callbacks:
            assert outbound.url is not None  # a callback's is parsed at start-up
            grouped.setdefault((outbound.name, outbound.url), []).append(outbound)
        for (name, template), outbounds in grouped.items():
            expression = template.text
            first = template.parts[0] if template.parts else None
            place = template.sources[0] if template.sources and not isinstance(first, str) else None
            if place is None or place[0] != "request" or place[1] not in _PLACES or place == ("request", "body", ""):
                notes.append(f"callbacks: {name} of {label} not checked: its URL {expression} does not start "
                             f"with a request's query parameter, header or body field the run could fill")
                continue
            found.setdefault(label, []).append(Callback(name, expression, template, place, {
                outbound.method: _operation(outbound) for outbound in outbounds}))
    return found, notes


def _operation(outbound: Outbound) -> CallbackOperation:
    """What the provider must send to one method of a callback, and the receiver's answer: its lowest declared
    success."""
    body = outbound.request_body
    return CallbackOperation(
        tuple(outbound.headers),
        {kind: media.schema.validator if media.schema else None for kind, media in body.content.items()}
        if body else {},
        bool(body and body.required), lowest_success(outbound.responses) or 200)


@dataclass
class Arrival:
    """A request the receiver got."""

    method: str
    target: str  # path and query, as sent
    headers: dict[str, str]  # by lower-case name
    body: bytes

    @property
    def key(self) -> str:
        return unquote(self.target)

    @property
    def token(self) -> str:
        return self.target.lstrip("/").partition("/")[0].partition("?")[0]

    def shown(self) -> str:
        body = self.body.decode("utf-8", "replace")
        return f"{self.method} {self.target}" + (f" {body[:300]}{'…' if len(body) > 300 else ''}" if body else "")


@dataclass
class _Due:
    """A callback a request of the run should cause: where it should arrive, and whether it must (a success)."""

    label: str
    callback: Callback
    key: str  # path and query, unquoted
    must: bool
    case: Case
    request_headers: dict[str, str]

    def curl(self) -> str:
        return self.case.as_curl_command(headers=self.request_headers)


@dataclass
class Watch:
    """The receiver of one run and what it knows: which request got which token, what is due, what arrived."""

    url: str  # the receiver's, as the deployment calls it
    callbacks: dict[str, list[Callback]]  # by operation label
    timeout: float
    notes: list[str] = field(default_factory=list)  # the callbacks the run cannot direct to it
    sent: dict[str, str] = field(default_factory=dict)  # case id (the token) -> operation label
    due: list[_Due] = field(default_factory=list)
    arrivals: list[Arrival] = field(default_factory=list)
    dropped: int = 0  # arrivals past _MAX_ARRIVALS
    arrived: threading.Condition = field(default_factory=threading.Condition)
    # the status the receiver answers, by (operation label, method): the lowest its callbacks there declare
    answers: dict[tuple[str, str], int] = field(init=False)

    def __post_init__(self) -> None:
        self.answers = {}
        for label, callbacks in self.callbacks.items():
            for callback in callbacks:
                for method, operation in callback.methods.items():
                    known = self.answers.get((label, method), operation.answer)
                    self.answers[label, method] = min(known, operation.answer)

    def inject(self, case: Case) -> Case:
        """The receiver's URL, with the case's id as token, wherever the case's operation's callbacks read it,
        unless the case breaks that location on purpose."""
        callbacks = self.callbacks.get(case.operation.label)
        if not callbacks:
            return case
        url = f"{self.url}/{case.id}"
        injected = False
        for _, location, name in {callback.place for callback in callbacks}:
            if case.meta is not None and case.meta.is_negative_at(ParameterLocation(location)):
                continue
            if location == "query":
                case.query[name] = url
            elif location == "header":
                case.headers[name] = url
            elif not _put(case.body, pointer_tokens(name), url):
                continue
            injected = True
        if injected:
            self.sent[case.id] = case.operation.label
        return case

    def see(self, event: events.EngineEvent) -> None:
        """Note the callbacks due from each answer to a request that carried a token."""
        if not isinstance(event, events.ScenarioFinished):
            return
        recorder = event.recorder
        for case_id, interaction in recorder.interactions.items():
            label = self.sent.get(case_id)
            if label is None or interaction.response is None or case_id not in recorder.cases:
                continue
            case = recorder.cases[case_id].value
            if interaction.request.method.upper() != case.operation.method.upper():
                continue
            request, response = _views(interaction, case)
            headers = {name: values[0] for name, values in interaction.request.headers.items() if values}
            for callback in self.callbacks[label]:
                try:
                    rendered = urlsplit(callback.template.render(request, response))
                except ExpressionError:
                    continue  # the answer lacks what the URL needs: its own checks say so
                key = unquote(rendered.path + (f"?{rendered.query}" if rendered.query else ""))
                with self.arrived:
                    self.due.append(_Due(label, callback, key, 200 <= response.status < 300, case, headers))

    def receive(self, arrival: Arrival) -> int:
        """Keep an arrival; the status to answer it with."""
        label = self.sent.get(arrival.token)
        with self.arrived:
            if len(self.arrivals) < _MAX_ARRIVALS:
                self.arrivals.append(arrival)
            else:
                self.dropped += 1
            self.arrived.notify_all()
        return 404 if label is None else self.answers.get((label, arrival.method), 200)

    def finish(self, result: RunResult) -> None:
        """Wait for every callback due from a success (at most the timeout), then fold the verdicts into
        `result`: each arrival checked against its callback, each success whose callback never came, each
        callback to a path no request gave."""
        result.notes += self.notes
        if not self.callbacks:
            return
        with self.arrived:
            self.arrived.wait_for(lambda: _answered(self.due, self.arrivals) >= self._awaited(), self.timeout)
            arrivals, due = list(self.arrivals), list(self.due)
        if CHECK not in result.checks:
            result.checks.append(CHECK)
        if self.dropped:
            result.notes.append(f"callbacks: {self.dropped} arrived past the first {_MAX_ARRIVALS:,} and were not "
                                f"checked")
        by_key: dict[str, list[Arrival]] = {}
        for arrival in arrivals:
            by_key.setdefault(arrival.key, []).append(arrival)
        first: dict[str, _Due] = {}  # by path: what an arrival of a method no callback there declares is held to
        for item in due:
            first.setdefault(item.key, item)
        claimed: set[int] = set()
        for item in due:
            op = result.operations.get(item.label)
            if op is None:
                continue
            for arrival in by_key.get(item.key, []):
                if arrival.method in item.callback.methods:
                    _check(op, item, arrival, claimed)
        answered = _answered(due, arrivals)
        missing: dict[tuple[str, str], list[_Due]] = {}
        for item in due:
            if item.must and (item.label, item.case.id) not in answered:
                missing.setdefault((item.label, item.case.id), []).append(item)
        for (label, _), items in missing.items():
            op = result.operations.get(label)
            if op is None:
                continue
            op.failed[CHECK] += 1
            names = " or ".join(f"{' or '.join(i.callback.methods)} {self.url}{i.key} ({i.callback.name}: "
                                f"{i.callback.expression})" for i in items)
            keep(op, Finding(label, CHECK, "Declared callback never arrived",
                             f"{names} within {self.timeout:g} s of the run's last call", "nothing arrived",
                             items[0].curl(), cause=f"callback {' or '.join(i.callback.name for i in items)}",
                             rule="never arrived"))
        for arrival in arrivals:
            if id(arrival) in claimed:
                continue
            held = first.get(arrival.key)
            op = result.operations.get(held.label) if held is not None else None
            if held is not None and op is not None:
                _check(op, held, arrival, claimed)  # a method its callback does not declare
            else:
                self._unknown(result, arrival, due)

    def _awaited(self) -> set[tuple[str, str]]:
        """The (operation, request) pairs whose success makes a callback due."""
        return {(item.label, item.case.id) for item in self.due if item.must}

    def _unknown(self, result: RunResult, arrival: Arrival, due: list[_Due]) -> None:
        """A callback to a path no request of the run gave: on the operation whose token it carries, else on the
        first that declares callbacks."""
        label = self.sent.get(arrival.token) or next(
            (label for label in sorted(self.callbacks) if label in result.operations), "")
        op = result.operations.get(label)
        if op is None:  # no operation of the run declares a callback
            result.notes.append(f"callbacks: {arrival.shown()} arrived, though the run checked no operation that "
                                f"declares a callback")
            return
        mine = [item for item in due if item.label == label and item.case.id == arrival.token]
        expected = (", ".join(f"{self.url}{item.key}" for item in mine) if mine else
                    "a URL a request of the run gave: " + ", ".join(
                        callback.expression for callback in self.callbacks[label]))
        op.failed[CHECK] += 1
        keep(op, Finding(label, CHECK, "Callback to a path no request gave", expected, arrival.shown(),
                         mine[0].curl() if mine else "", cause="callback path", rule="unknown path"))


def _answered(due: list[_Due], arrivals: list[Arrival]) -> set[tuple[str, str]]:
    """The (operation, request) pairs that got one of their callbacks: a request's callbacks are alternatives
    (`onSuccess`, `onFailure`), so any one of them, at its path with one of its methods, will do."""
    came = {(arrival.key, arrival.method) for arrival in arrivals}
    return {(item.label, item.case.id) for item in due
            if any((item.key, method) in came for method in item.callback.methods)}


def _check(op: OperationResult, item: _Due, arrival: Arrival, claimed: set[int]) -> None:
    """Hold an arrival (once) to the callback due at its path: a pass, or a finding per rule it breaks."""
    if id(arrival) in claimed:
        return
    claimed.add(id(arrival))
    broken = violations(item.callback, arrival)
    op.failed[CHECK] += bool(broken)
    op.passed[CHECK] += not broken
    for cause, rule, title, expected in broken:
        keep(op, Finding(item.label, CHECK, title, expected, arrival.shown(), item.curl(),
                         cause=f"callback {item.callback.name} {cause}", rule=rule))


def violations(callback: Callback, arrival: Arrival) -> list[tuple[str, str, str, str]]:
    """What an arrival breaks of its callback's description: (cause, rule, title, expected) each."""
    operation = callback.methods.get(arrival.method)
    if operation is None:
        return [("method", "not declared", "Callback with an undeclared method",
                 f"{' or '.join(callback.methods) or 'no method'} ({callback.name}: {callback.expression})")]
    broken = []
    for header in operation.headers:
        value = arrival.headers.get(header.name.lower())
        if value is None:
            if header.required:
                broken.append((f"header {header.name}", "missing", "Callback without a required header",
                               f"header {header.name} (required)"))
            continue
        for error in _header_errors(header, value):
            broken.append((f"header {header.name}", str(error.validator), "Callback header does not match its "
                           "schema", f"header {header.name}: {error.message}"))
    return broken + _body_violations(operation, arrival)


def _header_errors(header: Parameter, value: str) -> list[Any]:
    """A header's schema errors, its text read as JSON when the text itself does not fit (`X-Attempt: 3`)."""
    if header.schema is None:
        return []
    errors = list(iter_errors(header.schema.validator, value))
    if errors:
        try:
            errors = list(iter_errors(header.schema.validator, json.loads(value)))
        except ValueError:
            pass
    return errors


def _body_violations(operation: CallbackOperation, arrival: Arrival) -> list[tuple[str, str, str, str]]:
    if not operation.body:
        return []
    if not arrival.body:
        return [("body", "missing", "Callback without its required body", "a body")] if operation.body_required \
            else []
    sent = bare_media_type(arrival.headers.get("content-type"))
    kind = next((kind for kind in operation.body if _media_matches(kind, sent)), None)
    if kind is None:
        return [("content type", "not declared", "Callback body of an undeclared media type",
                 f"Content-Type {' or '.join(operation.body)}")]
    validator = operation.body[kind]
    if validator is None or not (kind.endswith("/json") or kind.endswith("+json")):
        return []
    try:
        value = json.loads(arrival.body)
    except ValueError as exc:
        return [("body", "not JSON", "Callback body is not JSON", f"JSON ({exc})")]
    return [(f"body {_field(error)}", str(error.validator), "Callback body does not match its schema",
             f"body {_field(error)}: {error.message}") for error in iter_errors(validator, value)]


def _field(error: Any) -> str:
    """The body field an error is about, array indices as `*` (`/items/*/id`), as other findings name it."""
    return "/" + "/".join("*" if isinstance(part, int) else str(part) for part in error.absolute_path)


def _media_matches(declared: str, sent: str) -> bool:
    declared = declared.lower()
    return declared in (sent, "*/*") or (declared.endswith("/*") and sent.startswith(declared[:-1]))


def _put(body: Any, tokens: list[str], value: str) -> bool:
    """Set `value` at `tokens` inside a JSON object body, making the objects on the way; False when the body is
    no object there."""
    for token in tokens[:-1]:
        if not isinstance(body, dict):
            return False
        body = body.setdefault(token, {})
    if not isinstance(body, dict) or not tokens:
        return False
    body[tokens[-1]] = value
    return True


def _views(interaction: Interaction, case: Case) -> tuple[RequestView, ResponseView]:
    """The request as sent and its answer, as runtime expressions read them (the body as the case holds it, so a
    form's fields are read as a JSON body's)."""
    request, response = interaction.request, interaction.response
    assert response is not None
    return (RequestView(request.uri, request.method.upper(),
                        {name.lower(): values[0] for name, values in request.headers.items() if values},
                        parse_qs(urlsplit(request.uri).query, keep_blank_values=True),
                        {name: str(value) for name, value in (case.path_parameters or {}).items()},
                        case.body if isinstance(case.body, (dict, list)) else _json(request.body)),
            ResponseView(response.status_code,
                         {name.lower(): values[0] for name, values in response.headers.items() if values},
                         _json(response.content)))


def _json(content: bytes | None) -> Any:
    try:
        return json.loads(content) if content else None
    except ValueError:
        return None


@contextmanager
def receiving(spec: SpecIndex | None, listen: tuple[str, int] | None, timeout: float,
              schema: OpenApiSchema) -> Iterator[Watch | None]:
    """The run's receiver on `listen` (default: a free loopback port) while the run goes on, its `map_case` hook
    on `schema`; None for the in-process mock (`spec` None), which sends no callbacks yet. A description whose
    callbacks the run cannot direct gets a Watch without a receiver, for its notes. CallbackError when `listen`
    is given and there is nothing to receive, or it cannot be listened on."""
    if spec is None:
        if listen is not None:
            raise CallbackError("--callback-listen needs --url: callbacks are checked on a deployment")
        yield None
        return
    callbacks, notes = declared(spec)
    if not callbacks:
        if listen is not None:
            raise CallbackError(f"--callback-listen {listen[0]}:{listen[1]}: no operation of {spec.path} declares "
                                f"a callback whose URL a request gives")
        yield Watch("", {}, timeout, notes)
        return
    host, port = listen or ("127.0.0.1", 0)
    watch = Watch("", callbacks, timeout, notes)
    try:
        server = _Receiver((host, port), watch)
    except OSError as exc:
        raise CallbackError(f"--callback-listen {host}:{port}: cannot listen there ({exc.strerror or exc})") \
            from None
    watch.url = f"http://{f'[{host}]' if ':' in host else host}:{server.server_port}"
    _hook(schema, watch)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield watch
    finally:
        server.shutdown()
        server.server_close()


def _hook(schema: OpenApiSchema, watch: Watch) -> None:
    """Every case of every phase gets the receiver's URL: generated ones through `map_case`, the examples phase's
    (which that hook does not see) through `before_add_examples`."""

    def map_case(context: Any, case: Case) -> Case:
        return watch.inject(case)

    def before_add_examples(context: Any, examples: list[Case]) -> None:
        for case in examples:
            watch.inject(case)

    schema.hook(map_case)
    schema.hook(before_add_examples)


class _Receiver(ThreadingHTTPServer):
    """The HTTP server of one run's Watch, on an IPv4 or IPv6 address."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], watch: Watch) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.watch = watch
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    """Any method, any path: kept for the checks, answered with the callback's declared success."""

    protocol_version = "HTTP/1.1"

    def _receive(self) -> None:
        try:
            body = self._body()
        except ValueError:  # a length or chunk size that is no number: answered, never a traceback
            self.close_connection = True
            self._answer(400)
            return
        arrival = Arrival(self.command.upper(), self.path, {name.lower(): value for name, value in
                                                             self.headers.items()}, body)
        self._answer(cast(_Receiver, self.server).watch.receive(arrival))

    def _body(self) -> bytes:
        """The body, by its length or in chunks, at most _MAX_BODY bytes of it (the connection is then closed)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = b""
            while size := int(self.rfile.readline(64).split(b";")[0].strip(), 16):
                body += self.rfile.read(min(size, _MAX_BODY + 1 - len(body)))
                if len(body) > _MAX_BODY:
                    self.close_connection = True
                    return body[:_MAX_BODY]
                self.rfile.readline(64)  # the chunk's line end
            self.rfile.readline(64)  # the last chunk's line end (no trailers are sent back this way)
            return body
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            self.close_connection = True
        return self.rfile.read(min(length, _MAX_BODY))

    def _answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _receive

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
        """Quiet: the report says what arrived."""
