"""Rendering every error the mock makes into the API's own envelope, declared once in the fixtures' settings as a
template; else the API's own error body where the operation declares one, else the API's convention (the error
body most of the description's error responses share), and RFC 7807 problem+json only when the API has none. The
code of a status on an operation is read from the description (the first example of that response), so `404` is
`agent-not-found` where the API says so. An API's own body carries the request's id where it has a field for it,
and FastAPI's validation error (`detail: [{loc, msg, type, input}]`) lists the request's real violations."""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from ..base.bounded import BoundedCache
from ..base.errors import MockError
from ..base.pointers import pointer_tokens
from ..spec.index import Operation, SpecIndex
from .request_validation import InvalidRequest, Violation

PROBLEM_TEMPLATE = {
    "type": "about:blank",
    "title": "{{title}}",
    "status": "{{status}}",
    "detail": "{{message}}",
    "code": "{{code}}",
    "details": "{{details}}",
    "requestId": "{{requestId}}",
}


def fill(template: Any, values: dict[str, Any]) -> Any:
    """Replace `"{{name}}"` by the value (any type; a None value drops its key), and `{{name}}` inside text."""
    if isinstance(template, dict):
        result = {}
        for key, sub in template.items():
            filled = fill(sub, values)
            if filled is not _DROP:
                result[key] = filled
        return result
    if isinstance(template, list):
        return [v for v in (fill(sub, values) for sub in template) if v is not _DROP]
    if isinstance(template, str) and "{{" in template:
        name = _placeholder(template)
        if name is not None:
            value = values.get(name)
            return _DROP if value is None else value
        return _replaced(template, values)
    return template


_DROP = object()
Filler = Callable[[dict[str, Any]], Any]


def filler(template: Any, known: dict[str, Any]) -> Filler:
    """`fill` of `template` made once: what the `known` values alone fill is filled now, the rest on each call,
    which is given all the values (`fill`'s own)."""
    fixed, part = _folded(template, known)
    return (lambda values: part) if fixed else part


def _folded(template: Any, known: dict[str, Any]) -> tuple[bool, Any]:
    """(True, the part filled) where `known` fills it all; else (False, the function that fills it)."""
    if isinstance(template, dict):
        items = [(key, *_folded(sub, known)) for key, sub in template.items()]
        if all(fixed for _, fixed, _ in items):
            return True, {key: part for key, _, part in items if part is not _DROP}

        def filled_dict(values: dict[str, Any]) -> dict[str, Any]:
            result = {}
            for key, fixed, part in items:
                value = part if fixed else part(values)
                if value is not _DROP:
                    result[key] = value
            return result
        return False, filled_dict
    if isinstance(template, list):
        parts = [_folded(sub, known) for sub in template]
        if all(fixed for fixed, _ in parts):
            return True, [part for _, part in parts if part is not _DROP]
        return False, lambda values: [v for v in (part if fixed else part(values) for fixed, part in parts)
                                      if v is not _DROP]
    if isinstance(template, str) and "{{" in template:
        name = _placeholder(template)
        if name is None:  # a text: filled whole on each call, in `fill`'s order
            return False, lambda values: _replaced(template, values)
        if name in known:
            return True, _DROP if known[name] is None else known[name]
        return False, lambda values: _DROP if (value := values.get(name)) is None else value
    return True, template


def _placeholder(text: str) -> str | None:
    """The name of a text that is one placeholder (`"{{message}}"`), whose value takes its place whatever its type."""
    stripped = text.strip()
    if stripped.startswith("{{") and stripped.endswith("}}") and stripped.count("{{") == 1:
        return stripped[2:-2].strip()
    return None


def _replaced(text: str, values: dict[str, Any]) -> str:
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", "" if value is None else str(value))
    return text


def path_to(template: Any, placeholder: str) -> list[Any] | None:
    """Where in the template a placeholder stands, e.g. ["error", "code"]."""
    if isinstance(template, dict):
        for key, sub in template.items():
            if isinstance(sub, str) and sub.strip() == placeholder:
                return [key]
            found = path_to(sub, placeholder)
            if found is not None:
                return [key, *found]
    return None


def dig(value: Any, path: list[Any]) -> Any:
    for step in path:
        if not isinstance(value, dict):
            return None
        value = value.get(step)
    return value


_MAX_MESSAGE = 1000  # characters of a message put in an API's own error body; any text this long must fit there
_PROBE = "m" * _MAX_MESSAGE
_MESSAGE_KEYS = ("message", "detail", "error_description", "error_message", "description", "msg", "error")


# statuses the mock makes itself (refusals, auth, validation, its own faults, `Prefer: code=`'s usual asks): an
# API's own error body is fitted to each, at start-up, under the `4XX`/`5XX`/`default` response that covers it
MOCK_STATUSES = (400, 401, 403, 404, 405, 406, 409, 413, 414, 415, 422, 429, 431, 500, 501, 502, 503, 504)
_STATUS_KEYS = ("status", "statuscode", "status_code", "httpstatus", "http_status", "code", "error")


# fields of an error body that name the request (compared without case, `_` or `-`)
_REQUEST_ID_KEYS = frozenset({"requestid", "traceid", "correlationid"})
_SAMPLE_IDS = ("req_" + "0" * 32, "00000000-0000-4000-8000-000000000000")  # what `Pipeline.request_id` makes
_MOCK_CODE = "mock-contract-violation"  # a code of the mock's own faults, to try a code field with
# FastAPI's 422 (`HTTPValidationError`): its schema takes a list of violations, each of which must name its place
_VALIDATION_PROBE = {"detail": [{"loc": ["body", "name"], "msg": "m", "type": "t"}]}
_UNPLACED = {"detail": [{"msg": "m"}]}
_REQUIRED = re.compile(r"^'(.+)' is a required property$")
_MAX_INPUT = 1000  # characters of an offending value's JSON given back as FastAPI's `input`


@dataclass(frozen=True)
class OwnBody:
    """An API's own error body, and where its message goes (None: it is served as it is); `for_status` gives the
    body with its status fields (`status: 401`, `code: unauthorized`) set for a status of `statuses` as the schema
    (`fits`) takes them. Where the schema takes them: the request's id (`request_id_path`), the mock's own codes
    (`code_path`: `mock-contract-violation`), and, for FastAPI's validation error (`validation`), the list of
    what was wrong."""

    media_type: str
    body: Any
    message_path: list[Any] | None
    statuses: frozenset[int]
    fits: Callable[[Any], bool]
    request_id_path: list[Any] | None = None
    code_path: list[Any] | None = None
    validation: bool = False
    _fitted: dict[int, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, media_type: str, body: Any, statuses: frozenset[int], fits: Callable[[Any], bool]) -> OwnBody:
        """Where in `body` the message, the request id and a code go, worked out once against its schema."""
        message = next((p for p in _message_paths(body) if fits(_put(body, p, _PROBE))), None)
        request_id = next((p for p in _string_paths(body) if _plain(p[-1]) in _REQUEST_ID_KEYS
                           and any(fits(_put(body, p, sample)) for sample in _SAMPLE_IDS)), None)
        code = next((p for p in _status_paths(body) if str(p[-1]).lower() == "code"
                     and isinstance(dig(body, p), str) and fits(_put(body, p, _MOCK_CODE))), None)
        return cls(media_type, body, message, statuses, fits, request_id, code,
                   fits(_VALIDATION_PROBE) and not fits(_UNPLACED))

    def prepared(self, status: int, code: str | None) -> Any:
        """The body for a status and code before an error's message and request id: the same for each such error."""
        body = self.for_status(status)
        if self.code_path is not None and (code or "").startswith("mock-"):
            body = _put(body, self.code_path, code)
        return body

    def render(self, error: MockError, request_id: str, prepared: Any) -> Any:
        """The body for `error`: FastAPI's list of the violations, else its `prepared` body with the message and
        the request's id where they go."""
        if self.validation and isinstance(error, InvalidRequest):
            listed = _validation_body(error.violations, self.fits)
            if listed is not None:
                return listed
        body = prepared
        if self.message_path is not None:
            message = error.message if len(error.message) <= _MAX_MESSAGE else error.message[:_MAX_MESSAGE - 1] + "…"
            body = _put(body, self.message_path, message)
        if self.request_id_path is not None:
            body = _put(body, self.request_id_path, request_id)
        return body

    def for_status(self, status: int) -> Any:
        """Worked out when the status is first answered, not at start-up: each status of each `default` or `4XX`
        response, fitted up front, was most of a big description's start (Discord's: 484 responses)."""
        if status not in self.statuses:
            return self.body
        if status not in self._fitted:
            self._fitted[status] = _for_status(self.body, status, self.fits)  # the same body whoever works it out
        return self._fitted[status]


def _message_paths(body: Any, depth: int = 0) -> Iterator[list[Any]]:
    """Strings in an error body that may hold its message, most likely first: `{"message": …}`, then one level
    down (`{"error": {"message": …}}`, FastAPI's `{"detail": [{"msg": …}]}`)."""
    if isinstance(body, list) and body and depth <= 1:
        for path in _message_paths(body[0], depth):
            yield [0, *path]
    if not isinstance(body, dict) or depth > 1:
        return
    for key in _MESSAGE_KEYS:
        if isinstance(body.get(key), str):
            yield [key]
    for key, sub in body.items():
        for path in _message_paths(sub, depth + 1):
            yield [key, *path]


def _string_paths(body: Any, depth: int = 0) -> Iterator[list[Any]]:
    """Strings of an error body's objects, two levels deep (`{"error": {"requestId": …}}`)."""
    if not isinstance(body, dict) or depth > 1:
        return
    for key, sub in body.items():
        if isinstance(sub, str):
            yield [key]
        for path in _string_paths(sub, depth + 1):
            yield [key, *path]


def _plain(name: Any) -> str:
    return re.sub(r"[^a-z]", "", str(name).lower())


def _validation_body(violations: list[Violation], fits: Callable[[Any], bool]) -> Any:
    """FastAPI's `{"detail": [{loc, msg, type, input}]}` of the request's violations, as its schema takes it
    (with `input`, else without); None when it takes neither."""
    detail = [{"loc": _loc(v), "msg": v.message[:_MAX_MESSAGE], "type": v.rule, "input": _input(v.value)}
              for v in violations]
    for candidate in ({"detail": detail}, {"detail": [{k: v for k, v in d.items() if k != "input"} for d in detail]}):
        if fits(candidate):
            return candidate
    return None


def _loc(violation: Violation) -> list[Any]:
    """Where FastAPI says a field is: `["body", "items", 0, "name"]`, `["query", "limit"]`; a missing property
    is named as the field, not its object."""
    tokens: list[Any] = pointer_tokens(violation.pointer)
    head = ["body"] if violation.location == "body" else [violation.location, violation.parameter]
    missing = _REQUIRED.match(violation.message) if violation.rule == "required" else None
    return [*head, *(int(t) if t.isdigit() else t for t in tokens), *([missing.group(1)] if missing else [])]


def _input(value: Any) -> Any:
    """The offending value, as FastAPI gives it back; a large one is left out (null)."""
    return value if len(json.dumps(value, default=str)) <= _MAX_INPUT else None


def _status_paths(body: Any, depth: int = 0) -> Iterator[list[str]]:
    """Scalars in an error body named like its status or code (`status`, `statusCode`, `code`), one level deep."""
    if not isinstance(body, dict) or depth > 1:
        return
    for key, sub in body.items():
        if isinstance(sub, (str, int)) and not isinstance(sub, bool) and str(key).lower() in _STATUS_KEYS:
            yield [key]
        for path in _status_paths(sub, depth + 1):
            yield [key, *path]


def _put(value: Any, path: list[Any], text: Any) -> Any:
    """A copy of `value` with `text` at `path`; what is not on the path is shared."""
    if not path:
        return text
    if isinstance(value, list):
        return [_put(value[0], path[1:], text), *value[1:]]
    return {**value, path[0]: _put(value[path[0]], path[1:], text)}


def _status_spellings(status: int, key: str) -> list[Any]:
    """How an error body may spell a status: 404, "404", not_found, not-found, NOT_FOUND, Not Found; a field
    named `status…` takes the number first, a `code`/`error` the words."""
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else str(status)
    words = phrase.replace("'", "").replace("-", " ").split()
    named = ["_".join(words).lower(), "-".join(words).lower(), "_".join(words).upper(), phrase]
    numbers = [status, str(status)]
    return numbers + named if "status" in key.lower() else named + numbers


def _for_status(body: Any, status: int, fits: Callable[[Any], bool]) -> Any:
    """The body with each status field set to the status's spelling the schema takes (left as it is if none)."""
    for path in _status_paths(body):
        for spelling in _status_spellings(status, str(path[-1])):
            if type(spelling) is type(dig(body, path)) and fits(candidate := _put(body, path, spelling)):
                body = candidate
                break
    return body


def statuses_under(key: str) -> list[int]:
    if key.isdigit():
        return [int(key)]
    if key == "default":
        return list(MOCK_STATUSES)
    return [s for s in MOCK_STATUSES if str(s)[0] == key[0]]


def slug(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "-").replace("'", "")
    except ValueError:
        return f"status-{status}"


_RENDERED_MAX = 4096  # kinds of error answer kept prepared


@dataclass(frozen=True, slots=True)
class Rendered:
    """What each error answer of one kind (an operation, a status, a code) shares, worked out on its first
    answer: its media type, and the API's own body (`own`) for that status and code, or the envelope's filler
    with the code, status and title in; an error's message, details and request id are put in per answer."""

    media_type: str
    own: OwnBody | None
    prepared: Any  # the own body before the message and request id
    envelope: Filler
    code: str  # the envelope's
    status: int
    title: str

    def body(self, error: MockError, request_id: str) -> Any:
        if self.own is not None:
            return self.own.render(error, request_id, self.prepared)
        return self.envelope({"code": self.code, "message": error.message, "details": error.details,
                              "requestId": request_id, "status": self.status, "title": self.title})


class ErrorRenderer:
    def __init__(self, settings: dict[str, Any] | None, spec: SpecIndex) -> None:
        settings = settings or {}
        self.template = settings.get("template", PROBLEM_TEMPLATE)
        self.media_type = settings.get("mediaType", "application/json" if "template" in settings
                                       else "application/problem+json")
        self.codes = {int(k): v for k, v in (settings.get("codes") or {}).items()}
        code_path = path_to(self.template, "{{code}}")
        # (operation, response key) -> the API's own error body, where the envelope cannot fit
        self.description_bodies: dict[tuple[str, str], OwnBody] = {}
        self.declared: dict[tuple[str, int], str] = {}
        # by status, the first operation declaring it with a body: the shape of an error on no operation (a path
        # the description lacks), so it still comes in the API's own media type and body where it has one
        self._unrouted: dict[int, Operation] = {}
        # the error body most of the description's error responses share, for an error no response declares
        # (startup.learn_error_convention); None: RFC 7807 there
        self.convention: OwnBody | None = None
        # (operation, status, code): a scenario's own code makes one kind per code, so the kinds are bounded
        self._rendered: BoundedCache[tuple[str | None, int, str | None], Rendered] = BoundedCache(_RENDERED_MAX)
        for op in spec.operations.values():
            for status, response in op.responses.items():
                if status.isdigit() and int(status) >= 400 and response.content:
                    self._unrouted.setdefault(int(status), op)
                if not status.isdigit() or code_path is None:
                    continue
                for media in response.content.values():
                    code = next((c for c in (dig(ex, code_path) for ex in media.examples.values())
                                 if isinstance(c, str)), None)
                    if code:
                        self.declared[(op.id, int(status))] = code
                        break

    def code(self, status: int, op: Operation | None) -> str:
        """The operation's own code for the status, else the settings', else a slug of the HTTP phrase."""
        if op is not None and (op.id, status) in self.declared:
            return self.declared[(op.id, status)]
        return self.codes.get(status) or slug(status)

    def use_description(self, op: Operation, key: str, media_type: str, body: Any, fits: Callable[[Any], bool], *,
                        example: bool = False) -> None:
        """Answer this response's errors with `body`; where one of its strings reads as the message (`message`,
        `detail`, …) and the schema (`fits`) takes any text there, the mock's own message goes in it. Its status
        fields are set for each status it answers, unless it is the description's own example of that very
        status (whose code is the API's word: `agent-not-found`)."""
        statuses = frozenset() if example and key.isdigit() else frozenset(statuses_under(key))
        self.description_bodies[(op.id, key)] = OwnBody.of(media_type, body, statuses, fits)
        self._rendered.clear()  # the checks at start-up rendered errors before this body was known

    def use_convention(self, media_type: str, body: Any, fits: Callable[[Any], bool]) -> None:
        """Answer the errors no response declares (a body) with `body`, the API's usual error body."""
        self.convention = OwnBody.of(media_type, body, frozenset(MOCK_STATUSES), fits)
        self._rendered.clear()

    def _own(self, status: int, op: Operation | None, code: str | None = None) -> OwnBody | None:
        """The API's own error body for this status, if it takes the place of the envelope: the response's that
        answers it, or the API's convention where none with a body does; for the mock's own faults (`mock-…`)
        only one that carries the message, which is what a person needs to see, and the code, so that the fault is
        not taken for one of the API's."""
        found = self.convention
        responses = op.responses if op is not None else {}
        for key in (str(status), f"{str(status)[0]}XX", "default"):
            if key in responses:
                assert op is not None
                found = self.description_bodies.get((op.id, key)) if responses[key].content else self.convention
                break
        if found is None or ((code or "").startswith("mock-") and None in (found.message_path, found.code_path)):
            return None
        return found

    def _shape(self, status: int, op: Operation | None) -> Operation | None:
        return op if op is not None else self._unrouted.get(status)

    def body(self, error: MockError, request_id: str, op: Operation | None) -> Any:
        return self.rendered(error.status, op, error.code).body(error, request_id)

    def envelope(self, error: MockError, request_id: str, op: Operation | None) -> Any:
        """The error in the fixtures' template (RFC 7807 by default)."""
        return fill(self.template, {
            "code": error.code or self.code(error.status, op), "message": error.message, "details": error.details,
            "requestId": request_id, "status": error.status, "title": _title(error.status),
        })

    def media_type_for(self, status: int, op: Operation | None, code: str | None = None) -> str:
        return self.rendered(status, op, code).media_type

    def rendered(self, status: int, op: Operation | None, code: str | None) -> Rendered:
        """What each error of `status` and `code` on `op` shares, worked out on its first answer."""
        return self._rendered.made((op.id if op is not None else None, status, code),
                                   lambda: self._prepare(status, op, code))

    def _prepare(self, status: int, op: Operation | None, code: str | None) -> Rendered:
        """The API's own body for the status, else the envelope; in the media type the operation declares for
        the status when it does, else the envelope's. With no operation, the first that declares the status stands
        for the API."""
        shape = self._shape(status, op)
        own = self._own(status, shape, code)
        media_type = self.media_type
        response = shape.response(status) if shape is not None else None
        if own is not None:
            media_type = own.media_type
        elif response is not None and response.content and self.media_type not in response.content:
            media_type = next(iter(response.content))
        prepared = own.prepared(status, code) if own is not None else None
        code = code or self.code(status, op)
        title = _title(status)
        envelope = filler(self.template, {"code": code, "status": status, "title": title})
        return Rendered(media_type, own, prepared, envelope, code, status, title)


def _title(status: int) -> str:
    return HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
