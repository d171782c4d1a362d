"""Rendering every error the mock makes into the API's own envelope, declared once in the fixtures' settings as a
template; RFC 7807 problem+json when the API declares none. The code of a status on an operation is read from
the description (the first example of that response), so `404` is `agent-not-found` where the API says so."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from ..base.errors import MockError
from ..spec.index import Operation, SpecIndex

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
        stripped = template.strip()
        if stripped.startswith("{{") and stripped.endswith("}}") and stripped.count("{{") == 1:
            value = values.get(stripped[2:-2].strip())
            return _DROP if value is None else value
        for name, value in values.items():
            template = template.replace("{{" + name + "}}", "" if value is None else str(value))
        return template
    return template


_DROP = object()


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


@dataclass(frozen=True)
class OwnBody:
    """An API's own error body, and where its message goes (None: it is served as it is); `for_status` gives the
    body with its status fields (`status: 401`, `code: unauthorized`) set for a status of `statuses` as the schema
    (`fits`) takes them."""

    media_type: str
    body: Any
    message_path: list[Any] | None
    statuses: frozenset[int]
    fits: Callable[[Any], bool]
    _fitted: dict[int, Any] = field(default_factory=dict, compare=False, repr=False)

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
        path = next((p for p in _message_paths(body) if fits(_put(body, p, _PROBE))), None)
        statuses = frozenset() if example and key.isdigit() else frozenset(statuses_under(key))
        self.description_bodies[(op.id, key)] = OwnBody(media_type, body, path, statuses, fits)

    def _own(self, status: int, op: Operation | None, code: str | None = None) -> OwnBody | None:
        """The API's own error body for this status, if it takes the place of the envelope; never for the mock's
        own faults (`mock-…`), whose message is what a person needs to see."""
        if op is None or not self.description_bodies or (code or "").startswith("mock-"):
            return None
        for key in (str(status), f"{str(status)[0]}XX", "default"):
            if key in op.responses:
                return self.description_bodies.get((op.id, key))
        return None

    def _shape(self, status: int, op: Operation | None) -> Operation | None:
        return op if op is not None else self._unrouted.get(status)

    def body(self, error: MockError, request_id: str, op: Operation | None) -> Any:
        own = self._own(error.status, self._shape(error.status, op), error.code)
        if own is not None:
            fitted = own.for_status(error.status)
            if own.message_path is None:
                return fitted
            message = error.message if len(error.message) <= _MAX_MESSAGE else error.message[:_MAX_MESSAGE - 1] + "…"
            return _put(fitted, own.message_path, message)
        return fill(self.template, {
            "code": error.code or self.code(error.status, op),
            "message": error.message,
            "details": error.details,
            "requestId": request_id,
            "status": error.status,
            "title": HTTPStatus(error.status).phrase if error.status in HTTPStatus._value2member_map_ else "Error",
        })

    def media_type_for(self, status: int, op: Operation | None, code: str | None = None) -> str:
        """The media type the operation declares for this status when it does, else the envelope's. With no
        operation, the first that declares the status stands for the API."""
        op = self._shape(status, op)
        own = self._own(status, op, code)
        if own is not None:
            return own.media_type
        response = op.response(status) if op is not None else None
        if response is not None and response.content and self.media_type not in response.content:
            return next(iter(response.content))
        return self.media_type
