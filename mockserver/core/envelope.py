"""Rendering every error the mock makes into the API's own envelope, declared once in the fixtures' settings as a
template; RFC 7807 problem+json when the API declares none. The code of a status on an operation is read from
the description (the first example of that response), so `404` is `agent-not-found` where the API says so."""
from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Callable, Iterator

from .errors import MockError
from .spec import Operation, SpecIndex

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


@dataclass(frozen=True)
class OwnBody:
    """An API's own error body, and where its message goes (None: it is served as it is)."""

    media_type: str
    body: Any
    message_path: list[str] | None


def _message_paths(body: Any, depth: int = 0) -> Iterator[list[str]]:
    """Strings in an error body that may hold its message, most likely first: `{"message": …}`, then one level
    down (`{"error": {"message": …}}`)."""
    if not isinstance(body, dict) or depth > 1:
        return
    for key in _MESSAGE_KEYS:
        if isinstance(body.get(key), str):
            yield [key]
    for key, sub in body.items():
        for path in _message_paths(sub, depth + 1):
            yield [key, *path]


def _put(value: Any, path: list[str], text: str) -> Any:
    """A copy of `value` with `text` at `path`; what is not on the path is shared."""
    if not path:
        return text
    return {**value, path[0]: _put(value[path[0]], path[1:], text)}


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
        for op in spec.operations.values():
            for status, response in op.responses.items():
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

    def use_description(self, op: Operation, key: str, media_type: str, body: Any, fits: Callable[[Any], bool]) -> None:
        """Answer this response's errors with `body`; where one of its strings reads as the message (`message`,
        `detail`, …) and the schema (`fits`) takes any text there, the mock's own message goes in it."""
        path = next((p for p in _message_paths(body) if fits(_put(body, p, _PROBE))), None)
        self.description_bodies[(op.id, key)] = OwnBody(media_type, body, path)

    def _own(self, status: int, op: Operation | None, code: str | None = None) -> OwnBody | None:
        """The API's own error body for this status, if it takes the place of the envelope; never for the mock's
        own faults (`mock-…`), whose message is what a person needs to see."""
        if op is None or not self.description_bodies or (code or "").startswith("mock-"):
            return None
        for key in (str(status), f"{str(status)[0]}XX", "default"):
            if key in op.responses:
                return self.description_bodies.get((op.id, key))
        return None

    def body(self, error: MockError, request_id: str, op: Operation | None) -> Any:
        own = self._own(error.status, op, error.code)
        if own is not None:
            if own.message_path is None:
                return own.body
            message = error.message if len(error.message) <= _MAX_MESSAGE else error.message[:_MAX_MESSAGE - 1] + "…"
            return _put(own.body, own.message_path, message)
        return fill(self.template, {
            "code": error.code or self.code(error.status, op),
            "message": error.message,
            "details": error.details,
            "requestId": request_id,
            "status": error.status,
            "title": HTTPStatus(error.status).phrase if error.status in HTTPStatus._value2member_map_ else "Error",
        })

    def media_type_for(self, status: int, op: Operation | None, code: str | None = None) -> str:
        """The media type the operation declares for this status when it does, else the envelope's."""
        own = self._own(status, op, code)
        if own is not None:
            return own.media_type
        response = op.response(status) if op is not None else None
        if response is not None and response.content and self.media_type not in response.content:
            return next(iter(response.content))
        return self.media_type
