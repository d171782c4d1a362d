"""Matching a request path to an operation, by OpenAPI's rules: a concrete path beats a templated one, and a
template may sit inside a segment (`/Accounts/{Sid}.json`)."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

from ..base.errors import MockError
from ..spec.index import Operation

_PARAM = re.compile(r"\{([^{}/]+)\}")
_PARTIAL_ESCAPE = re.compile(r"%[0-9A-Fa-f]?$")
_NON_ASCII_ESCAPE = re.compile(r"%[89A-Fa-f][0-9A-Fa-f]")
_UNRESERVED = re.compile(r"[A-Za-z0-9._~/-]")  # never percent-encoded by clients in practice ("/" must not be)


@dataclass(frozen=True)
class Route:
    template: str
    pattern: re.Pattern[str]
    names: tuple[str, ...]
    operations: dict[str, list[Operation]]  # by upper-case method; those that ask for query values first
    emptied: re.Pattern[str]  # the same with a parameter's segment left empty (`/pets//toys`)

    @property
    def rank(self) -> tuple[int, int, int]:
        """Fewer templated segments first, then more literal characters, then longer paths."""
        literal = len(_PARAM.sub("", self.template))
        return (len(self.names), -literal, -self.template.count("/"))


@dataclass(frozen=True)
class Match:
    operation: Operation
    path_params: dict[str, str]


class Router:
    def __init__(self, operations: list[Operation], base_path: str = "",
                 fits: Callable[[Operation, dict[str, str]], bool] | None = None) -> None:
        """`fits(operation, path values)`: whether the values fit the operation's path parameters. A method a
        concrete path lacks falls to a less concrete template only where they do (`DELETE /users/me` to
        `/users/{id}`, but `GET /backfills/dry_run` is a 405 where `{backfill_id}` is an integer)."""
        self.base_path = base_path
        self._fits = fits
        by_template: dict[str, dict[str, list[Operation]]] = {}
        for op in operations:
            by_template.setdefault(op.path, {}).setdefault(op.method, []).append(op)
        for methods in by_template.values():
            for ops in methods.values():
                ops.sort(key=lambda o: -len(o.query_match))
        routes = [self._compile(t, ops) for t, ops in by_template.items()]
        self._routes = sorted(routes, key=lambda r: r.rank)

    @staticmethod
    def _compile(template: str, operations: dict[str, list[Operation]]) -> Route:
        names = tuple(_PARAM.findall(template))
        pattern = _pattern(template, named=True) + "/?$" if template != "/" else "/$"
        emptied = _pattern(template, named=True, empty=True) + "/?$" if names else "(?!)"
        return Route(template, re.compile(pattern), names, operations, re.compile(emptied))

    def match(self, method: str, raw_path: str, query: dict[str, list[str]] | None = None) -> Match:
        """The operation for a method and a raw (still percent-encoded) path, or a 404/405 MockError. Where the
        description has path keys that differ only by a query (`/responses?beta=true`), the query decides."""
        path = self._local(raw_path)
        if path is None:
            raise MockError(404, f"no operation at {raw_path}: paths start with {self.base_path}",
                            details={"path": raw_path})
        first: Route | None = None
        for route in self._routes:
            m = route.pattern.match(path)
            if not m:
                continue
            op = _by_query(route.operations.get(method.upper(), []), query or {})
            if op is None:
                first = first or route  # a less concrete template may still have this method
                continue
            try:
                values = {name: unquote(m.group(f"p{i}"), errors="strict") for i, name in enumerate(route.names)}
            except UnicodeDecodeError:
                raise MockError(400, f"the path {raw_path} is not valid UTF-8 once percent-decoded",
                                details={"violations": [{"parameter": "", "in": "path", "pointer": "",
                                                         "rule": "encoding", "message": "not valid UTF-8"}]}) from None
            if first is not None and self._fits is not None and not self._fits(op, values):
                continue  # the path names the concrete route, whose method this is not
            return Match(op, values)
        if first is None and "//" in path:
            emptied = self._emptied(method, path, query or {})
            if emptied is not None:
                return emptied
        if first is not None:
            allow = ", ".join(sorted(first.operations))
            raise MockError(405, f"{method.upper()} is not allowed on {first.template}; allowed: {allow}",
                            details={"path": raw_path, "allowed": sorted(first.operations)},
                            headers={"Allow": allow})
        raise MockError(404, f"no operation at {raw_path}", details={"path": raw_path})

    def _emptied(self, method: str, path: str, query: dict[str, list[str]]) -> Match | None:
        """The operation a path with an empty segment names where a parameter's value goes (`/pets//toys` for
        `/pets/{id}/toys`): the route exists, so it is the request that is wrong (the validator says which
        parameter is missing), not the path that is unknown."""
        for route in self._routes:
            m = route.emptied.match(path)
            op = _by_query(route.operations.get(method.upper(), []), query) if m else None
            if m and op is not None:
                return Match(op, {name: unquote(m.group(f"p{i}")) for i, name in enumerate(route.names)})
        return None

    def _local(self, raw_path: str) -> str | None:
        """The path below the server's base path, or None when it lies outside."""
        if not self.base_path:
            return raw_path
        if raw_path != self.base_path and not raw_path.startswith(self.base_path + "/"):
            return None
        return raw_path[len(self.base_path):] or "/"

    def reaching(self, operation_ids: frozenset[str]) -> Callable[[str, str], bool]:
        """Whether a method and a raw path may reach one of these operations, decided by one pattern per method
        (made here, once): true for every request `match` gives one of them (an empty segment's too), and maybe
        for a few more (it leaves the query and a more concrete path's claim aside), never the other way round."""
        alternatives: dict[str, list[str]] = {}
        for route in self._routes:
            for method, ops in route.operations.items():
                if any(op.id in operation_ids for op in ops):
                    alternatives.setdefault(method, []).append(_pattern(route.template, empty=True))
        patterns = {method: re.compile("(?:" + "|".join(found) + ")/?$") for method, found in alternatives.items()}

        def reaches(method: str, raw_path: str) -> bool:
            pattern = patterns.get(method.upper())
            if pattern is None:
                return False
            path = self._local(raw_path)
            return path is not None and pattern.match(path) is not None

        return reaches

    def guess(self, request_line: str) -> Operation | None:
        """The operation a request line names, for a refusal made before the request is read in full (a line over
        the server's limit, a broken header), so it takes that operation's error shape. A line cut at the limit
        may end inside a percent-escape or a UTF-8 sequence (a partial escape is dropped, and non-ASCII escapes
        stand for a plain letter on a retry), or before the path's last segments (then the first route, by rank,
        whose template the cut path could begin)."""
        method, _, rest = request_line.partition(" ")
        cut = not re.search(r" HTTP/\d(\.\d)?\r?\n?$", request_line)
        path = _NON_ASCII_ESCAPE.sub("x", _PARTIAL_ESCAPE.sub("", rest.split("?")[0].split(" ")[0]))
        try:
            return self.match(method, path).operation
        except MockError:
            return self._beginning_with(method.upper(), path) if cut and "?" not in rest else None

    def _beginning_with(self, method: str, path: str) -> Operation | None:
        if self.base_path:
            if not path.startswith(self.base_path + "/"):
                return None
            path = path[len(self.base_path):]
        given = path.split("/")
        for route in self._routes:
            segments = route.template.split("/")
            ops = route.operations.get(method)
            if not ops or len(segments) < len(given):
                continue
            *whole, last = zip(segments, given)
            if all(re.fullmatch(_pattern(template), text) for template, text in whole) and (
                    "{" in last[0] or last[0].startswith(last[1])):
                return ops[0]
        return None


def _pattern(template: str, *, named: bool = False, empty: bool = False) -> str:
    """A template (or one segment of it) as a pattern: literal parts in either spelling, each parameter one
    segment's text (a group `p0`, `p1`, … when `named`; possibly empty text when `empty`)."""
    parts = _PARAM.split(template)  # literal, name, literal, name, …, literal
    text = "[^/]*" if empty else "[^/]+"
    return "".join(_literal(part) if i % 2 == 0 else (f"(?P<p{i // 2}>{text})" if named else text)
                   for i, part in enumerate(parts))


def _literal(text: str) -> str:
    """A literal part of a template as a pattern that also matches its percent-encoded spelling: a client sends
    `/<upload_url>` as `/%3Cupload_url%3E`, and RFC 3986 makes the two the same path."""
    return "".join(re.escape(char) if _UNRESERVED.match(char) else
                   "(?:" + re.escape(char) + "|" + "".join(f"%{_hex(byte)}" for byte in char.encode()) + ")"
                   for char in text)


def _hex(byte: int) -> str:
    """A byte's two hex digits as a pattern of either case."""
    return "".join(f"[{d}{d.lower()}]" if d.isalpha() else d for d in f"{byte:02X}")


def _by_query(operations: list[Operation], query: dict[str, list[str]]) -> Operation | None:
    for op in operations:
        if all(value in query.get(name, []) for name, value in op.query_match.items()):
            return op
    return None
