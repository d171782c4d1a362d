"""The small rule language of fixtures: values taken from the request, conditions on them, and filters on items.

Rules are compiled once at load into closures; on the request path a filter binds the request's values once
(`bind`) and then tests items with plain comparisons.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base.pointers import pointer_tokens
from .auth import Caller
from .request_validation import ValidRequest

LOCATIONS = ("path", "query", "header", "cookie", "caller")
SOURCES = (*LOCATIONS, "body")  # what a reference may name: a request value, or the body at a JSON pointer
MISSING = object()  # what field_getter gives for a field an item does not have


@dataclass
class Context:
    """What a rule may read: the validated request and the caller; and what a write needs besides: the session
    whose state it changes (None: the whole mock's) and the request's path (a created item's `Location`); and
    what a fixture's template may echo besides: every header as sent (lower-case names) and the request id."""

    request: ValidRequest
    caller: Caller
    session: str | None = None
    path: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    request_id: str = ""


Value = Callable[[Context], Any]
Condition = Callable[[Context], bool]
ItemTest = Callable[[dict[str, Any]], bool]


def _reference(spec: Any) -> tuple[str, str] | None:
    if isinstance(spec, dict):
        for location in SOURCES:
            if location in spec and isinstance(spec[location], str):
                return location, spec[location]
    return None


def pointer_getter(pointer: str) -> Callable[[Any], Any]:
    """A JSON Pointer into a value (a request's body), read with its tokens split once; a missing step gives
    MISSING, never an exception."""
    steps = pointer_tokens(pointer)

    def get(value: Any) -> Any:
        for step in steps:
            if isinstance(value, dict) and step in value:
                value = value[step]
            elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
                value = value[int(step)]
            else:
                return MISSING
        return value

    return get


def compile_value(spec: Any) -> Value:
    """A literal, or `{query: name}` / `{path: …}` / `{header: …}` / `{caller: id|tenant}`, optionally `split`;
    or `{body: pointer}`: the request body's value there (MISSING when it has none: a sent null is a value)."""
    ref = _reference(spec)
    if ref is None:
        return lambda ctx: spec
    location, name = ref
    split = spec.get("split")
    if location == "body":
        in_body = pointer_getter(name)
        read: Value = lambda ctx: in_body(ctx.request.body)  # noqa: E731 (one of three readers)
    elif location == "caller":
        read = lambda ctx: ctx.caller.value(name)  # noqa: E731
    else:
        read = lambda ctx: ctx.request.get(location, name)  # noqa: E731
    if not split:
        return read

    def value(ctx: Context) -> Any:
        found = read(ctx)
        return found.split(split) if isinstance(found, str) else found

    return value


def _was_sent(location: str, name: str) -> Condition:
    if location == "body":
        get = pointer_getter(name)
        return lambda ctx: get(ctx.request.body) is not MISSING
    if location == "caller":
        return lambda ctx: ctx.caller.value(name) is not None
    key = name.lower() if location == "header" else name
    return lambda ctx: (location, key) in ctx.request.sent


def compile_condition(spec: dict[str, Any]) -> Condition:
    if "all" in spec:
        parts = [compile_condition(s) for s in spec["all"]]
        return lambda ctx: all(p(ctx) for p in parts)
    if "any" in spec:
        parts = [compile_condition(s) for s in spec["any"]]
        return lambda ctx: any(p(ctx) for p in parts)
    if "not" in spec:
        inner = compile_condition(spec["not"])
        return lambda ctx: not inner(ctx)
    ref = _reference(spec)
    assert ref is not None, "the fixture schema allows no other shape"
    subject = compile_value({ref[0]: ref[1]})
    if "present" in spec:
        sent = _was_sent(*ref)
        return sent if spec["present"] else (lambda ctx: not sent(ctx))
    compare = _comparison(spec)
    return lambda ctx: compare(ctx)(subject(ctx))


def _comparison(spec: dict[str, Any]) -> Callable[[Context], Callable[[Any], bool]]:
    """`equals` / `notEquals` / `in` / `startsWith` / `contains` against a literal or a request value, bound per
    request; `matches`: a regular expression (a literal, compiled once), searched in a string."""
    ignore_case = spec.get("ignoreCase", False)
    if "matches" in spec:
        pattern = re.compile(spec["matches"], re.IGNORECASE if ignore_case else 0)
        return lambda ctx: lambda v: isinstance(v, str) and pattern.search(v) is not None
    fold = _folder(ignore_case)
    op = next(op for op in ("equals", "notEquals", "in", "startsWith", "contains") if op in spec)
    other = compile_value(spec[op])

    def bind(ctx: Context) -> Callable[[Any], bool]:
        wanted = other(ctx)
        if op == "in":
            options = [fold(o) for o in (wanted if isinstance(wanted, list) else [wanted])]
            return lambda v: v is not MISSING and fold(v) in options
        wanted = fold(wanted)
        if op == "equals":
            return lambda v: v is not MISSING and fold(v) == wanted
        if op == "notEquals":
            return lambda v: v is MISSING or fold(v) != wanted
        if op == "contains":  # an array holding the value, or a string holding the text
            return lambda v: (isinstance(v, list) and wanted in [fold(e) for e in v]
                              or isinstance(v, str) and isinstance(wanted, str) and wanted in fold(v))
        return lambda v: isinstance(v, str) and isinstance(wanted, str) and fold(v).startswith(wanted)

    return bind


def _folder(ignore_case: bool) -> Callable[[Any], Any]:
    if not ignore_case:
        return lambda v: v
    return lambda v: v.lower() if isinstance(v, str) else v


def field_getter(path: str) -> Callable[[dict[str, Any]], Any]:
    """A dotted path into an item; a missing step gives a sentinel, never an exception."""
    steps = path.split(".")

    def get(item: dict[str, Any]) -> Any:
        value: Any = item
        for step in steps:
            if not isinstance(value, dict) or step not in value:
                return MISSING
            value = value[step]
        return value

    return get


class Filter:
    """`{field, equals|notEquals|in|startsWith|present, ignoreCase?, when?}` on the items of a collection."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.field = field_getter(spec["field"])
        self.when = compile_condition(spec["when"]) if "when" in spec else None
        self.present = spec.get("present")
        self.compare = None if "present" in spec else _comparison(spec)
        # a field this filter fixes to one value (`equals`, case kept, always in force): a written collection finds
        # the item by its key instead of testing every item
        self.pins: tuple[str, Callable[[Context], Any]] | None = (spec["field"], compile_value(spec["equals"])) \
            if "equals" in spec and "when" not in spec and not spec.get("ignoreCase") else None

    def bind(self, ctx: Context) -> ItemTest | None:
        """A test for items under this request, or None when the filter does not apply to it."""
        if self.when is not None and not self.when(ctx):
            return None
        get = self.field
        if self.present is not None:
            wanted = bool(self.present)
            return lambda item: (get(item) is not MISSING) == wanted
        assert self.compare is not None
        test = self.compare(ctx)  # the request side is read once, not once per item
        return lambda item: test(get(item))
