"""Recording a real deployment as fixtures in the project's own format, with the description as the judge.

- A successful GET of an operation that lists or looks up a collection (by the base fixtures' `list`/`item`, or a
  page shaped `data` + `hasMore`) adds its entities to that collection, merged by key in the order the deployment
  gave them. The operation keeps the base fixtures' config, less what a recording cannot know (rules about the
  caller, `require`), so a later `serve` filters, orders and pages the recorded entities like any others.
- Any other successful GET becomes a fixed answer (`respond`) chosen by the request's path and query values.
- An error becomes a scenario matched on those values; a 5xx or 429 fires once (it was transient).
- An exchange that breaks the description is never a fixture: it is kept apart with its violations.
- Secrets never reach a file: the credentials the requests carried, and the fields named by `redact`, are replaced
  by pseudonyms of the same shape wherever they appear (same value, same pseudonym: ids still join, UUIDs still
  fit their format; keyed by a secret made per run, so no pseudonym gives its value away).

The folder is self-contained (settings, collections, operations, scenarios): serve it with `--fixtures`. A new
recording into the same folder merges with what is there."""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import string
import threading
import time
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable
from urllib.parse import parse_qs

import yaml

from .documents import unescape_token
from .drift import Exchange, Violation, body_violations
from .envelope import dig, path_to
from .journal import SECRET_HEADERS
from .request_validation import ValidRequest
from .rules import Context, compile_condition
from .spec import Operation

if TYPE_CHECKING:
    from .pipeline import Pipeline

MIN_SECRET = 4  # shorter values are replaced where they stand, but not hunted inside other text
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_HEADER = ("# Written by `mockserver record` (README: \"Learning from a real deployment\"). A new recording into this\n"
           "# folder merges with it; keep settings of your own (auth tokens) in a file of your own beside it.\n")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in text)[:48]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:8]


def _mentions_caller(value: Any) -> bool:
    if isinstance(value, dict):
        return "caller" in value or any(_mentions_caller(v) for v in value.values())
    return isinstance(value, list) and any(_mentions_caller(v) for v in value)


class Redactor:
    """Replaces secrets by same-shaped pseudonyms: credentials wherever they appear, named fields where they stand
    (names, or JSON pointers into an answer's body where `*` is any key or index)."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        names = list(names)
        self.fields = frozenset(n for n in names if not n.startswith("/"))
        self.pointers = [tuple(unescape_token(t) for t in n.split("/")[1:]) for n in names if n.startswith("/")]
        self._secrets: set[str] = set()
        self._key = secrets.token_bytes(32)

    def learn(self, request: Any, schemes: dict[str, dict[str, Any]]) -> None:
        """Remember the credentials a request carries, to replace them wherever an answer repeats them."""
        found = [request.header("authorization") or ""]
        found.append(found[0].partition(" ")[2].strip())
        try:
            found += [m.value for m in SimpleCookie(request.header("cookie") or "").values()]
        except CookieError:
            found.append(request.header("cookie") or "")
        query = parse_qs(request.query_string)
        for scheme in schemes.values():
            if str(scheme.get("type", "")).lower() == "apikey":
                name = str(scheme.get("name", ""))
                found += query.get(name, []) if scheme.get("in") == "query" else [request.header(name) or ""]
        self._secrets.update(s for s in found if len(s) >= MIN_SECRET)

    def body(self, value: Any) -> Any:
        """A copy with named fields replaced, and every known secret replaced inside every string."""
        self._collect(value, ())
        return self._walk(value, ())

    def params(self, values: dict[str, Any]) -> dict[str, Any]:
        """Request values (path or query) by name: named ones replaced, secrets replaced inside the others."""
        self._secrets.update(str(v) for k, v in values.items() if k in self.fields and len(str(v)) >= MIN_SECRET)
        return {k: self._pseudonym(v) if k in self.fields else self._walk(v, ()) for k, v in values.items()}

    def text(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, self._shape(secret))
        return text

    def _named(self, path: tuple[str, ...]) -> bool:
        if path and path[-1] in self.fields:
            return True
        return any(len(p) == len(path) and all(t in ("*", s) for t, s in zip(p, path)) for p in self.pointers)

    def _collect(self, value: Any, path: tuple[str, ...]) -> None:
        """Values of named fields become secrets too: a message that repeats one gets it replaced as well."""
        if self._named(path):
            self._secrets.update(s for s in _leaves(value) if len(s) >= MIN_SECRET)
        elif isinstance(value, dict):
            for key, sub in value.items():
                self._collect(sub, (*path, str(key)))
        elif isinstance(value, list):
            for index, sub in enumerate(value):
                self._collect(sub, (*path, str(index)))

    def _walk(self, value: Any, path: tuple[str, ...]) -> Any:
        if self._named(path):
            return self._pseudonym(value)
        if isinstance(value, dict):
            return {key: self._walk(sub, (*path, str(key))) for key, sub in value.items()}
        if isinstance(value, list):
            return [self._walk(sub, (*path, str(index))) for index, sub in enumerate(value)]
        return self.text(value) if isinstance(value, str) else value

    def _pseudonym(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {key: self._pseudonym(sub) for key, sub in value.items()}
        if isinstance(value, list):
            return [self._pseudonym(sub) for sub in value]
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float)):
            return type(value)(self._shape(repr(value), letters=False))
        return self._shape(str(value))

    def _shape(self, text: str, letters: bool = True) -> str:
        """Digits stay digits, hex letters stay hex, letters stay letters of the same case; the rest is kept."""
        noise = hashlib.shake_256(self._key + text.encode()).digest(len(text))
        out = []
        for c, n in zip(text, noise):
            for alphabet in (string.digits, "abcdef", string.ascii_lowercase, "ABCDEF", string.ascii_uppercase):
                if c in alphabet and (letters or alphabet is string.digits):
                    c = alphabet[n % len(alphabet)]
                    break
            out.append(c)
        return "".join(out)


def _leaves(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for sub in value.values():
            yield from _leaves(sub)
    elif isinstance(value, list):
        for sub in value:
            yield from _leaves(sub)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


@dataclass
class _Collection:
    key: list[str] | None  # None: the private scope fields and `id` (a collection the recording made up)
    private: set[str]
    schema: str | None = None
    items: list[dict[str, Any]] = field(default_factory=list)

    def identity(self, item: dict[str, Any]) -> str:
        if self.key:
            return json.dumps([item.get(k) for k in self.key], default=str)
        scope = [item.get(k) for k in sorted(self.private)]
        return json.dumps([*scope, item["id"]] if "id" in item else [*scope, item], sort_keys=True, default=str)

    def merge(self, page: list[dict[str, Any]]) -> None:
        """Known items are updated in place; new ones go after the known item before them in the page (or before
        the one after them), so an order seen in pieces (a filtered list, then the whole) comes out whole."""
        index = self._index()
        run: dict[str, dict[str, Any]] = {}  # new items since the last known one
        anchor: int | None = None  # where the last known item stands
        for item in page:
            ident = self.identity(item)
            if ident not in index:
                run[ident] = item
                continue
            self.items[index[ident]] = item
            if run:
                at = anchor + 1 if anchor is not None else index[ident]
                self.items[at:at] = run.values()
                index, run = self._index(), {}
            anchor = index[ident]
        if run:
            at = anchor + 1 if anchor is not None else len(self.items)
            self.items[at:at] = run.values()

    def _index(self) -> dict[str, int]:
        return {self.identity(item): i for i, item in enumerate(self.items)}

    def as_fixture(self) -> dict[str, Any]:
        key = self.key
        if key is None and self.items and all("id" in item for item in self.items):
            key = [*sorted(self.private), "id"]
        raw: dict[str, Any] = {"key": key} if key else {}
        if self.private:
            raw["private"] = sorted(self.private)
        if self.schema:
            raw["schema"] = self.schema
        return {**raw, "items": self.items}


class Recorder:
    """What a recording session has learnt, written to `out` (and `rejected`) after every exchange."""

    def __init__(self, out: Path, rejected: Path, redact: Iterable[str] = ()) -> None:
        self.out, self.rejected = out, rejected
        self.redactor = Redactor(redact)
        self.collections: dict[str, _Collection] = {}
        self.operations: dict[str, dict[str, Any]] = {}
        self.responds: dict[str, dict[str, dict[str, Any]]] = {}  # operation -> its `when`, as JSON -> entry
        self.scenarios: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._load()

    def _load(self) -> None:
        """Start from an earlier recording in the same folder, so the new one merges with it."""
        for path in sorted((self.out / "collections").glob("*.yaml")):
            for name, raw in (_read(path).get("collections") or {}).items():
                self.collections[name] = _Collection(raw.get("key"), set(raw.get("private", [])), raw.get("schema"),
                                                     raw.get("items", []))
        self.operations = _read(self.out / "operations.yaml").get("operations") or {}
        for op_id, config in self.operations.items():
            if "respond" in config:
                self.responds[op_id] = {_when_key(e.get("when")): e for e in config["respond"]}
        self.scenarios = {s["id"]: s for s in _read(self.out / "scenarios.yaml").get("scenarios") or []}

    def observe(self, pipeline: Pipeline, exchange: Exchange) -> str:
        """Save what one exchange teaches; says what became of it, for the log."""
        op = exchange.operation
        with self._lock:
            self.redactor.learn(exchange.request, pipeline.spec.security_schemes)
            if op is None or exchange.request.method != "GET":
                return "not recorded (only GETs of the description's operations are)"
            if exchange.status in (401, 403):
                return "not recorded (it depends on the credential, which is never kept)"
            if exchange.status // 100 not in (2, 4, 5):
                return f"not recorded (status {exchange.status})"
            if any(v.side == "response" for v in exchange.violations) or (exchange.violations and
                                                                          exchange.status < 400):
                return self._reject(pipeline, op, exchange, exchange.violations)
            if exchange.violations:
                return "not recorded (the request breaks the description: the mock refuses it on its own)"
            assert exchange.valid is not None  # a request with no violation was validated
            payload = self.redactor.body(exchange.payload)  # first: values it names are secrets in the request too
            valid = self._redacted(exchange.valid)
            broken = body_violations(op, exchange.status, exchange.media_type, payload) if exchange.media_type else []
            if broken:
                return self._reject(pipeline, op, exchange, [
                    Violation(v.side, v.pointer, v.rule, "once redacted: " + v.message) for v in broken])
            if exchange.status >= 400:
                outcome = self._scenario(pipeline, op, exchange, payload)
            else:
                outcome, touched = self._answer(pipeline, op, exchange, valid, payload)
                self._write_collections(touched)
            self._write_shared(pipeline)
            return outcome

    def _redacted(self, valid: ValidRequest) -> ValidRequest:
        """The request's values as a recording may keep them: every later use (scoping fields, conditions) reads
        these."""
        return ValidRequest(self.redactor.params(valid.path), self.redactor.params(valid.query),
                            self.redactor.params(valid.header), {}, valid.sent)

    # -- success answers -----------------------------------------------------------------------------------
    def _answer(self, pipeline: Pipeline, op: Operation, exchange: Exchange, valid: ValidRequest,
                payload: Any) -> tuple[str, list[str]]:
        base = pipeline.fixtures.operations.get(op.id)
        config = base.value if base is not None else {}
        kind = next((k for k in ("list", "item") if k in config), None)
        if kind is not None:
            spec = _without_caller(config[kind])
            items = _page_items(payload, spec.get("page", {}).get("items", "data")) if kind == "list" else (
                [payload] if isinstance(payload, dict) else None)
            if items is None:
                return f"not recorded (the answer is not the {kind} the fixtures serve)", []
            ctx = Context(valid, pipeline.auth.anonymous)
            rules = [*spec.get("where", []), *spec.get("filters", [])]
            known = pipeline.fixtures.collections.get(spec["from"])
            collection = self.collections.setdefault(spec["from"], _Collection(
                known.key if known else None, set(known.private) if known else set(), known.schema if known else None))
            collection.private |= _fill(items, rules, ctx)
            collection.merge(items)
            rejects = [r for r in config.get("reject", []) if not _mentions_caller(r)]
            self.operations[op.id] = {**({"reject": rejects} if rejects else {}), kind: spec}
            return f"{len(items)} item(s) into collection {spec['from']}", [spec["from"]]
        items = _page_items(payload, "data") if isinstance(payload, dict) and "hasMore" in payload else None
        if items is not None:
            return self._generic_list(pipeline, op, valid, items), [op.id]
        return self._respond(pipeline, op, exchange, valid, payload), []

    def _generic_list(self, pipeline: Pipeline, op: Operation, valid: ValidRequest, items: list[dict[str, Any]]) -> str:
        """A page no fixture describes: scoped by its path and required query values (kept in private fields),
        filtered by optional query values that name a field of its items."""
        scope = [(p.location, p.name) for p in op.parameters
                 if p.location == "path" or (p.location == "query" and p.required)]
        for item in items:
            item.update({f"_{loc}_{name}": valid.get(loc, name) for loc, name in scope})
        collection = self.collections.setdefault(op.id, _Collection(None, set()))
        collection.private |= {f"_{loc}_{name}" for loc, name in scope}
        collection.merge(items)
        fields = {name for item in collection.items for name in item}
        skip = {"limit", "cursor"} | _secret_query_names(pipeline)
        filters = [{"field": p.spec.name, "equals": {"query": p.spec.name}, "when": {"query": p.spec.name,
                                                                                       "present": True}}
                   for p in pipeline.validators[op.id].params
                   if p.spec.location == "query" and not p.spec.required and p.spec.name in fields
                   and p.spec.name not in skip and "array" not in p.kinds]
        listing: dict[str, Any] = {"from": op.id}
        if scope:
            listing["where"] = [{"field": f"_{loc}_{name}", "equals": {loc: name}} for loc, name in scope]
        if filters:
            listing["filters"] = filters
        self.operations[op.id] = {"list": listing}
        return f"{len(items)} item(s) into collection {op.id}"

    def _respond(self, pipeline: Pipeline, op: Operation, exchange: Exchange, valid: ValidRequest,
                 payload: Any) -> str:
        skip = _secret_query_names(pipeline)
        conditions = [{loc: name, "equals": valid.get(loc, name)} for loc, name in sorted(valid.sent)
                      if loc in ("path", "query") and name not in skip]
        when = conditions[0] if len(conditions) == 1 else {"all": conditions} if conditions else None
        entry: dict[str, Any] = {"when": when} if when else {}
        entry.update(status=exchange.status, body=payload)
        if exchange.media_type and exchange.media_type != "application/json":
            entry["mediaType"] = exchange.media_type
        entries = self.responds.setdefault(op.id, {})
        entries[_when_key(when)] = entry
        self.operations[op.id] = {"respond": sorted(entries.values(), key=lambda e: -_conditions(e.get("when")))}
        return f"a fixed answer of {op.id} ({len(entries)} in all)"

    # -- errors and rejects --------------------------------------------------------------------------------
    def _request_values(self, pipeline: Pipeline, exchange: Exchange) -> tuple[dict[str, Any], dict[str, Any]]:
        """The path and query values as sent (redacted), less the cursor (the deployment's own) and API keys."""
        skip = {"cursor"} | _secret_query_names(pipeline)
        query = {k: v[-1] for k, v in parse_qs(exchange.request.query_string, keep_blank_values=True).items()
                 if k not in skip}
        return self.redactor.params(exchange.path_params), self.redactor.params(query)

    def _scenario(self, pipeline: Pipeline, op: Operation, exchange: Exchange, payload: Any) -> str:
        status = exchange.status
        if not op.declares(status):
            return f"not recorded ({op.id} declares {status} only through `default`, which a scenario cannot use)"
        path, query = self._request_values(pipeline, exchange)
        spec: dict[str, Any] = {"operationId": op.id}
        if path:
            spec["pathParams"] = path
        if query:
            spec["query"] = query
        spec["status"] = status
        template = (pipeline.fixtures.settings.get("errors") or {}).get("template")
        code, message = (dig(payload, path_to(template, "{{" + n + "}}") or []) if template else None
                         for n in ("code", "message"))
        if isinstance(code, str) and isinstance(message, str):
            spec.update(code=code, message=message)  # the envelope is the mock's: a fresh request id every time
        elif payload is not None:
            spec["body"] = payload
        response = op.response(status)
        headers = {h.name: exchange.header(h.name) for h in (response.headers.values() if response else ())
                   if h.name.lower() != pipeline.request_id_header.lower() and exchange.header(h.name) is not None}
        if headers:
            spec["responseHeaders"] = {k: self.redactor.text(str(v)) for k, v in headers.items()}
        if status >= 500 or status == 429:
            spec["times"] = 1  # transient: the next matching call fails, later ones answer (reset brings it back)
        ident = f"rec-{_slug(op.id)}-{status}-{_digest([path, query])}"
        described = f"recorded {time.strftime('%Y-%m-%d')}: GET {op.path} answered {status}"
        self.scenarios[ident] = {"id": ident, "description": described, **spec}
        return f"scenario {ident}"

    def _reject(self, pipeline: Pipeline, op: Operation, exchange: Exchange, violations: list[Violation]) -> str:
        path, query = self._request_values(pipeline, exchange)
        kinds = sorted({(v.side, v.place, v.rule) for v in violations})
        name = f"{_slug(op.id)}-{exchange.status}-{_digest(kinds)}.yaml"
        headers = {k: self.redactor.text(v) for k, v in exchange.headers.items()
                   if k.lower() not in SECRET_HEADERS and k.lower() != "set-cookie"}
        body = self.redactor.body(exchange.payload) if exchange.payload is not None else (
            self.redactor.text(exchange.body.decode("utf-8", "replace")) or None)
        document = {
            "operationId": op.id,
            "request": {"method": exchange.request.method, "path": op.path, "pathParams": path, "query": query},
            "response": {"status": exchange.status, "headers": headers, "body": body},
            "violations": [{"in": v.side, "pointer": v.pointer, "rule": v.rule,
                            "message": self.redactor.text(v.message)} for v in violations],
        }
        _write(self.rejected / name, document, "# Not saved as a fixture: it breaks the description (violations "
                                               "below). For a person to judge.\n")
        return f"kept apart in {self.rejected / name}"

    # -- files ---------------------------------------------------------------------------------------------
    def _write_collections(self, names: list[str]) -> None:
        for name in names:
            _write(self.out / "collections" / f"{_slug(name)}.yaml",
                   {"collections": {name: self.collections[name].as_fixture()}})

    def _write_shared(self, pipeline: Pipeline) -> None:
        settings = {k: v for k, v in pipeline.fixtures.settings.items() if k in ("requestIdHeader", "errors")}
        if settings:  # the API's envelope, so errors served from the recording look the same; never its tokens
            _write(self.out / "settings.yaml", {"settings": settings})
        if self.operations:
            _write(self.out / "operations.yaml", {"operations": self.operations})
        if self.scenarios:
            _write(self.out / "scenarios.yaml", {"scenarios": list(self.scenarios.values())})


def _without_caller(config: dict[str, Any]) -> dict[str, Any]:
    """A list/item config less the rules about the caller: a recording is one caller's view, whose tenant the
    mock cannot know."""
    result = dict(config)
    for section in ("where", "filters"):
        if section in result:
            result[section] = [r for r in result[section] if not _mentions_caller(r)]
            if not result[section]:
                del result[section]
    return result


def _fill(items: list[dict[str, Any]], rules: list[dict[str, Any]], ctx: Context) -> set[str]:
    """Facts the answer implies: an item listed under `agentId=x` has agentId x, though the API never serves it.
    Filled fields (those `equals` a request value) become private: they only scope."""
    filled = set()
    for rule in rules:
        ref = rule.get("equals")
        if not (isinstance(ref, dict) and len(ref) == 1) or "." in rule["field"]:
            continue
        (location, name), = ref.items()
        if "when" in rule and not compile_condition(rule["when"])(ctx):
            continue
        value = ctx.request.get(location, name)
        missing = [item for item in items if rule["field"] not in item]
        if value is None or not missing:
            continue
        for item in missing:
            item[rule["field"]] = value
        filled.add(rule["field"])
    return filled


def _page_items(payload: Any, field_name: str) -> list[dict[str, Any]] | None:
    items = payload.get(field_name) if isinstance(payload, dict) else None
    return items if isinstance(items, list) and all(isinstance(i, dict) for i in items) else None


def _secret_query_names(pipeline: Pipeline) -> set[str]:
    return {str(s.get("name")) for s in pipeline.spec.security_schemes.values()
            if str(s.get("type", "")).lower() == "apikey" and s.get("in") == "query"}


def _when_key(when: Any) -> str:
    return json.dumps(when, sort_keys=True, default=str)


def _conditions(when: Any) -> int:
    return 0 if when is None else len(when["all"]) if "all" in when else 1


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    return yaml.safe_load(path.read_text()) or {}


def _write(path: Path, data: Any, header: str = _HEADER) -> None:
    """Whole or not at all: a reader (or a `serve --watch`) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(header + yaml.dump(data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=120,
                                                  default_flow_style=None))
    os.replace(temporary, path)
