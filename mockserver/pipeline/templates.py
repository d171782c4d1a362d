"""Fixture answers built from the request: a `respond` answer's status, header values and body strings may be
Jinja2 templates (`{{ body.name }}`), compiled once at start-up in Jinja2's sandbox and rendered per request.

A string that is one expression and nothing else keeps the expression's type (`"{{ body.age }}"` is a number when
the body's `age` is); any other template gives text. What a template may read is fixed (`NAMES`); an unknown name,
an attribute or key starting with `_` (the way out of any Python sandbox) and a `jsonpath()`/`pointer()` of a path
that is not a literal are start-up problems, as is a template Jinja2 cannot compile. Request data is only ever a
value: text echoed from a request is never read as a template. An answer without templates pays nothing."""
from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from jinja2 import StrictUndefined, TemplateError, TemplateSyntaxError, Undefined, UndefinedError, nodes
from jinja2.exceptions import SecurityError
from jinja2.meta import find_undeclared_variables
from jinja2.sandbox import SandboxedEnvironment

from ..base.errors import MockError
from ..base.pointers import pointer_join
from .rules import MISSING, Context, pointer_getter

# what a template may read: the request's values, and what the mock makes for the answer
NAMES = ("path", "query", "header", "cookie", "caller", "body", "requestId", "now", "uuid", "sequence", "pointer",
         "jsonpath")
_RESULT_BITS = 1 << 16  # the most bits a `**` may give (about 20,000 digits)
_RESULT_LENGTH = 100_000  # the longest text or list a `*` may give (Jinja2's own MAX_RANGE)


class _Bounded(SandboxedEnvironment):
    """Jinja2's sandbox with `**` and `*` bounded: a fixture's `{{ body.n ** body.m }}` or `{{ body.s * body.n }}`
    must not let a client make the mock compute or hold gigabytes (the sandbox bounds `range`, not these)."""

    intercepted_binops = frozenset({"**", "*"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0 \
                and max(left.bit_length(), 1) * right > _RESULT_BITS:
            raise SecurityError(f"{left!r} ** {right!r} is too large (more than {_RESULT_BITS} bits)")
        if operator == "*" and any(isinstance(a, (str, list, tuple)) and isinstance(b, int)
                                   and len(a) * b > _RESULT_LENGTH for a, b in ((left, right), (right, left))):
            raise SecurityError(f"a repetition longer than {_RESULT_LENGTH:,} is refused")
        return super().call_binop(context, operator, left, right)


_ENV = _Bounded(undefined=StrictUndefined, autoescape=False)
_WHOLE = re.compile(r"\s*\{\{(?P<expression>.*)\}\}\s*", re.S)
_SCALARS = (str, int, bool, type(None))


def is_template(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


@dataclass(frozen=True)
class TemplateProblem:
    """A template that cannot be used, found at start-up, with where it is: JSON Pointer tokens under the answer."""

    tokens: tuple[Any, ...]
    message: str


Names = dict[str, Any]  # what the templates read for one request (`AnswerTemplate.names`)
# what a user's template may raise while it renders: the answer is then the mock's own 500, naming the template
_RENDER_ERRORS = (TemplateError, TypeError, ValueError, ArithmeticError, LookupError)


class _Failed(Exception):
    def __init__(self, template: _Template, reason: str) -> None:
        super().__init__(reason)
        self.template = template
        self.reason = reason


@dataclass
class _Template:
    """One templated string: where it stands in the answer, its text, and how it renders."""

    pointer: str
    source: str
    render: Callable[[Names], Any]

    def __call__(self, names: Names) -> Any:
        try:
            return self.render(names)
        except _RENDER_ERRORS as exc:
            raise _Failed(self, f"cannot be rendered: {exc}") from None


@dataclass
class AnswerTemplate:
    """The templates of one `respond` answer. `pointers` are where the body has templates, as JSON Pointers into
    the body (the start-up check of the body leaves their values to the check of each rendered answer)."""

    origin: str  # file:line of the answer, for messages
    status: _Template | None = None
    headers: dict[str, _Template | str] = field(default_factory=dict)
    body: Callable[[Names], Any] | None = None  # None: the body has no template
    pointers: list[str] = field(default_factory=list)
    used: set[str] = field(default_factory=set)  # the names its templates read: only those are made per request
    problems: list[TemplateProblem] = field(default_factory=list)
    # the paths `jsonpath()` and `pointer()` are given, compiled: by their text
    _jsonpaths: dict[str, Any] = field(default_factory=dict)
    _pointers: dict[str, Callable[[Any], Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, raw: dict[str, Any], origin: str) -> AnswerTemplate | None:
        """The templates of a `respond` entry, or None when it has none (the answer is served as written)."""
        made = cls(origin)
        if is_template(raw["status"]):
            made.status = made._compile(raw["status"], ("status",))
        made.headers = {name: made._compile(value, ("headers", name)) if is_template(value) else value
                        for name, value in (raw.get("headers") or {}).items()}
        made.body = made._node(raw.get("body"), ("body",))
        templated = made.status or made.body or any(not isinstance(v, str) for v in made.headers.values())
        return made if templated else None

    # -- start-up ------------------------------------------------------------------------------------------
    def _node(self, value: Any, tokens: tuple[Any, ...]) -> Callable[[Names], Any] | None:
        """A function making this part of the body for a request's values, or None when it has no template
        (it is then used as written, shared by every answer: answers are never changed in place)."""
        if is_template(value):
            self.pointers.append(pointer_join("", *tokens[1:]))  # within the body
            return self._compile(value, tokens)
        if isinstance(value, dict):
            parts = {key: self._node(inner, (*tokens, key)) for key, inner in value.items()}
            if not any(parts.values()):
                return None
            return lambda names: {key: make(names) if make else value[key] for key, make in parts.items()}
        if isinstance(value, list):
            items = [self._node(inner, (*tokens, index)) for index, inner in enumerate(value)]
            if not any(items):
                return None
            return lambda names: [make(names) if make else value[i] for i, make in enumerate(items)]
        return None

    def _compile(self, source: str, tokens: tuple[Any, ...]) -> _Template:
        pointer = pointer_join("", *tokens)
        try:
            tree = _ENV.parse(source)
            self._check(tree, tokens)
            whole = _WHOLE.fullmatch(source)
            if whole is not None and "{{" not in whole["expression"] and "}}" not in whole["expression"]:
                expression = _ENV.compile_expression(whole["expression"], undefined_to_none=False)
                render: Callable[[Names], Any] = lambda names: _value(expression(**names))  # noqa: E731
            else:
                render = _ENV.from_string(source).render
        except TemplateSyntaxError as exc:
            self.problems.append(TemplateProblem(tokens, f"the template {source!r} does not compile: "
                                                         f"{exc.message} (line {exc.lineno} of the template)"))
            render = str
        return _Template(pointer, source, render)

    def _check(self, tree: nodes.Template, tokens: tuple[Any, ...]) -> None:
        """What the sandbox would only stop at run time is refused here: a name templates do not know, an
        attribute or key starting with `_`, another template (`include`, `import`, `extends`), and a path given
        to `jsonpath()`/`pointer()` that is not a literal (the paths are compiled here, once)."""
        used = find_undeclared_variables(tree)
        self.used |= used
        unknown = sorted(used - set(NAMES) - set(_ENV.globals))  # Jinja2's own (`range`, …) are known too
        if unknown:
            self.problems.append(TemplateProblem(tokens, f"the template uses {', '.join(unknown)}, which templates "
                                                         f"do not know; they know {', '.join(NAMES)}"))
        for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Filter)):
            name = _attribute(node)
            if isinstance(name, str) and name.startswith("_"):
                self.problems.append(TemplateProblem(tokens, f"the template reads {name!r}: names starting with "
                                                             "'_' are refused (they lead out of the sandbox)"))
        if any(True for _ in tree.find_all((nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport))):
            self.problems.append(TemplateProblem(tokens, "the template reads another template: a fixture's "
                                                         "templates are each one string, and read no file"))
        for call in tree.find_all(nodes.Call):
            function = call.node.name if isinstance(call.node, nodes.Name) else None
            if function not in ("jsonpath", "pointer"):
                continue
            path = call.args[0].value if len(call.args) == 1 and isinstance(call.args[0], nodes.Const) else None
            if not isinstance(path, str):
                example = "'$.a'" if function == "jsonpath" else "'/a'"
                self.problems.append(TemplateProblem(tokens, f"{function}() takes one literal path, as in "
                                                             f"{function}({example})"))
            elif function == "pointer":
                if path and not path.startswith("/"):
                    self.problems.append(TemplateProblem(tokens, f"pointer({path!r}): a JSON Pointer starts with '/'"))
                self._pointers[path] = pointer_getter(path)
            elif path not in self._jsonpaths:
                # imported by the first template that asks for it: the JSONPath parser adds 20-100 ms to a start-up
                from jsonpath_ng.exceptions import JSONPathError
                from jsonpath_ng.ext import parse as parse_jsonpath
                try:
                    self._jsonpaths[path] = parse_jsonpath(path)
                except JSONPathError as exc:
                    self.problems.append(TemplateProblem(tokens, f"jsonpath({path!r}) is not a JSONPath: {exc}"))

    @property
    def uses_sequence(self) -> bool:
        """`sequence` is counted in the store: on Redis, a round trip."""
        return "sequence" in self.used

    # -- request path --------------------------------------------------------------------------------------
    def names(self, ctx: Context, sequence: Callable[[], int]) -> Names:
        """What the templates read for this request, and only that; `uuid` and `sequence` are one fresh id per
        answer, the same wherever the answer uses them (its body's `id`, its `Location`)."""
        request = ctx.request
        body = request.body

        def pointer(path: str) -> Any:
            found = self._pointers[path](body)
            return _ENV.undefined(f"the request body has no value at {path}") if found is MISSING else found

        def jsonpath(path: str) -> list[Any]:
            return [match.value for match in self._jsonpaths[path].find(body)]

        makers: dict[str, Callable[[], Any]] = {
            "path": lambda: request.path, "query": lambda: request.query, "cookie": lambda: request.cookie,
            "header": lambda: {**ctx.headers, **request.header}, "body": lambda: body,
            "caller": lambda: {"id": ctx.caller.id, "tenant": ctx.caller.tenant},
            "requestId": lambda: ctx.request_id, "uuid": lambda: str(uuid.uuid4()), "sequence": sequence,
            "now": lambda: datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "pointer": lambda: pointer, "jsonpath": lambda: jsonpath}
        return {name: makers[name]() for name in self.used if name in makers}

    def render(self, names: Names, status: int, headers: dict[str, str], body: Any) -> tuple[int, dict[str, str], Any]:
        """The answer for a request: the written `status`, `headers` and `body` with their templates rendered; a
        template that fails is the mock's own 500 `mock-fixture-error` naming it."""
        try:
            return self._status(names, status), self._headers(names, headers), self.body(names) if self.body else body
        except _Failed as failed:
            template = failed.template
            raise MockError(500, f"the template {template.source!r} at {template.pointer} of the fixture answer at "
                                 f"{self.origin} {failed.reason}", code="mock-fixture-error",
                            details={"origin": self.origin, "pointer": template.pointer,
                                     "template": template.source}) from None

    def _status(self, names: Names, written: int) -> int:
        if self.status is None:
            return written
        status = self.status(names)
        if isinstance(status, str) and status.strip().isdigit():
            status = int(status)
        if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
            raise _Failed(self.status, f"gives the status {status!r}, not one from 100 to 599")
        return status

    def _headers(self, names: Names, written: dict[str, str]) -> dict[str, str]:
        headers = dict(written)
        for name, value in self.headers.items():
            if isinstance(value, str):
                continue
            rendered = value(names)
            text = rendered if isinstance(rendered, str) else json.dumps(rendered)
            if any(ord(c) < 32 or ord(c) == 127 for c in text):  # a line break would end the header early
                raise _Failed(value, "gives a header value with a control character (a line break?)")
            headers[name] = text
        return headers


def _value(result: Any) -> Any:
    """A whole-value template's result as JSON: its own type when it is one JSON has."""
    if isinstance(result, Undefined):
        raise UndefinedError(result._undefined_message)
    if isinstance(result, _SCALARS) or isinstance(result, float) and math.isfinite(result):
        return result
    return json.loads(json.dumps(result, allow_nan=False))  # a tuple is a list; anything else JSON lacks raises


def _attribute(node: nodes.Node) -> Any:
    """The attribute or key a node reads when it is a literal: `x.name`, `x['name']`, `x | attr('name')`."""
    if isinstance(node, nodes.Getattr):
        return node.attr
    if isinstance(node, nodes.Getitem):
        return getattr(node.arg, "value", None)
    args = getattr(node, "args", None)
    return getattr(args[0], "value", None) if getattr(node, "name", None) == "attr" and args else None

