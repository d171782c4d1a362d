"""OpenAPI runtime expressions (`$request.body#/callbackUrl`, `$response.header.Location`, `$url`, …) and the
templates that mix them with text (`{$request.body#/callbackUrl}?id={$response.body#/id}`), as callbacks' URLs
and links name values of a call. A template is parsed once, at start-up (`parse`); sending a callback or checking
one only renders it against the call (`Template.render`), and `Template.sources` says which parts of the request
or response it reads, so the contract side knows where to put its receiver's URL."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base.pointers import pointer_tokens

# (side, location, name): ("request", "body", "/callbackUrl"), ("request", "query", "x"), ("request", "url", "")
Source = tuple[str, str, str]
_SIDES = ("request", "response")
_PARAMETERS = ("header", "query", "path")  # the locations read by a name; the body by a JSON pointer


class ExpressionError(ValueError):
    """A runtime expression that cannot be parsed, or whose value the call does not have; the message names the
    expression."""


@dataclass(frozen=True)
class RequestView:
    """The parts of a request an expression may read: `headers` by lower-case name, `query` and `path` parameters
    by name (the query's first value counts), `body` the parsed JSON body (None when there is none)."""

    url: str
    method: str
    headers: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, list[str]] = field(default_factory=dict)
    path: Mapping[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass(frozen=True)
class ResponseView:
    """The parts of a response an expression may read: `headers` by lower-case name, `body` the parsed JSON."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass(frozen=True)
class Expression:
    """One runtime expression: `$url`, `$method`, `$statusCode`, or `$request.`/`$response.` with a location
    (`header`, `query`, `path`, `body`) and a name (a header's, a parameter's) or a JSON pointer (the body's)."""

    text: str
    source: Source

    def value(self, request: RequestView, response: ResponseView | None) -> str:
        """The expression's value in this call, as text (a JSON value that is not a string as JSON); an
        ExpressionError names the expression when the call does not have it."""
        side, location, name = self.source
        if location == "url":
            return request.url
        if location == "method":
            return request.method
        view: RequestView | ResponseView
        if side == "request":
            view = request
        elif response is None:
            raise ExpressionError(f"{self.text}: there is no response to read")
        else:
            view = response
        if isinstance(view, ResponseView) and location == "status":
            return str(view.status)
        if location == "body":
            return _text(_at(view.body, name, self.text))
        found: str | None
        if location == "header":
            found = view.headers.get(name)
        elif location == "query":
            values = request.query.get(name)
            found = values[0] if values else None
        else:
            found = request.path.get(name)
        if found is None:
            raise ExpressionError(f"{self.text}: the {side} has no {location} {name!r}")
        return found


@dataclass(frozen=True)
class Template:
    """A text with runtime expressions in braces (or one bare expression): `parts` alternate between text (str)
    and `Expression`s."""

    text: str
    parts: tuple[str | Expression, ...]

    @property
    def sources(self) -> list[Source]:
        """What of the call the template reads, in order: e.g. [("request", "body", "/callbackUrl")]."""
        return [part.source for part in self.parts if isinstance(part, Expression)]

    def render(self, request: RequestView, response: ResponseView | None = None) -> str:
        """The template's text with each expression's value in this call; ExpressionError when one is missing."""
        return "".join(part if isinstance(part, str) else part.value(request, response) for part in self.parts)


def parse(text: str) -> Template:
    """A template of text and `{expression}` parts, or a bare expression (`$response.body#/id`, as links give
    them); ExpressionError says what is wrong and where."""
    if text.startswith("$") and "{" not in text:
        return Template(text, (parse_expression(text),))
    parts: list[str | Expression] = []
    at = 0
    while (start := text.find("{", at)) != -1:
        end = text.find("}", start)
        if end == -1:
            raise ExpressionError(f"{text!r}: the brace at {start} is never closed")
        if start > at:
            parts.append(text[at:start])
        parts.append(parse_expression(text[start + 1:end]))
        at = end + 1
    if "}" in text[at:]:
        raise ExpressionError(f"{text!r}: a closing brace at {text.index('}', at)} has no opening one")
    if at < len(text):
        parts.append(text[at:])
    return Template(text, tuple(parts))


def parse_expression(text: str) -> Expression:
    """One runtime expression, as OpenAPI's ABNF gives it (§ Runtime Expressions)."""
    simple = {"$url": ("request", "url", ""), "$method": ("request", "method", ""),
              "$statusCode": ("response", "status", "")}
    if text in simple:
        return Expression(text, simple[text])
    side, dot, rest = text[1:].partition(".") if text.startswith("$") else ("", "", "")
    if side not in _SIDES or not dot:
        raise ExpressionError(f"{text!r} is not a runtime expression: it starts with $url, $method, $statusCode,"
                              f" $request. or $response.")
    if rest == "body" or rest.startswith("body#"):
        pointer = rest[len("body#"):] if "#" in rest else ""
        if pointer and not pointer.startswith("/"):
            raise ExpressionError(f"{text!r}: the body's JSON pointer {pointer!r} does not start with /")
        return Expression(text, (side, "body", pointer))
    location, dot, name = rest.partition(".")
    if location not in _PARAMETERS or not dot or not name:
        raise ExpressionError(f"{text!r}: after ${side}. comes header.NAME, query.NAME, path.NAME or body#/POINTER")
    if side == "response" and location != "header":
        raise ExpressionError(f"{text!r}: a response has a header or a body, no {location}")
    return Expression(text, (side, location, name.lower() if location == "header" else name))


def _at(value: Any, pointer: str, expression: str) -> Any:
    """The value `pointer` points to inside a JSON `value`."""
    for token in pointer_tokens(pointer):
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            raise ExpressionError(f"{expression}: the body has no value at {pointer}")
    if value is None and not pointer:
        raise ExpressionError(f"{expression}: there is no JSON body")
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
