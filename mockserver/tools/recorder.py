"""Learning fixtures from a real deployment's answers, in the project's own format, with the description as the
judge. Pure: it returns fixture data (`Learnt`); `web/recording.py` keeps it in files.

- A successful GET of an operation that lists or looks up a collection (by the base fixtures' `list`/`item`, or a
  page shaped `data` + `hasMore`) adds its entities to that collection, merged by key in the order the deployment
  gave them. The operation keeps the base fixtures' config, less what a recording cannot know (rules about the
  caller, `require`), so a later `serve` filters, orders and pages the recorded entities like any others.
- Any other successful GET becomes a fixed answer (`respond`) chosen by the request's path and query values.
- An error becomes a scenario matched on those values; a 5xx or 429 fires once (it was transient).
- An exchange that breaks the description is never a fixture: it is kept apart with its violations.
- Secrets never reach a file: `redaction.Redactor` replaces them before anything is learnt.

The documents make a self-contained folder (settings, collections, operations, scenarios): serve it with
`--fixtures`. A new recording into the same folder merges with what is there."""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from ..pipeline.envelope import dig, path_to
from ..pipeline.query import page_names
from ..pipeline.request_validation import ValidRequest
from ..pipeline.rules import MISSING, Context, compile_condition, field_getter
from ..spec.index import Operation
from .drift import Exchange, Violation, body_violations
from .redaction import Redactor

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline



def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in text)[:48]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:8]


def _mentions_caller(value: Any) -> bool:
    if isinstance(value, dict):
        return "caller" in value or any(_mentions_caller(v) for v in value.values())
    return isinstance(value, list) and any(_mentions_caller(v) for v in value)


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


@dataclass
class Learnt:
    """What one exchange taught: what became of it (for the log), the fixture documents it changed (by their path
    in the recording's folder), and an answer kept apart because it breaks the description (file name, document)."""

    outcome: str
    documents: dict[str, Any] = field(default_factory=dict)
    rejected: tuple[str, dict[str, Any]] | None = None
    warnings: list[str] = field(default_factory=list)  # what the recording cannot replay, said once each


class Recording:
    """What a recording session has learnt so far, as fixture data; `earlier` is a recording it merges with
    (the documents of its folder by path, as `Learnt.documents` names them). Not thread-safe: one exchange at a
    time."""

    def __init__(self, earlier: dict[str, Any] | None = None, redact: Iterable[str] = ()) -> None:
        self.redactor = Redactor(redact)
        self.collections: dict[str, _Collection] = {}
        self.responds: dict[str, dict[str, dict[str, Any]]] = {}  # operation -> its `when`, as JSON -> entry
        earlier = earlier or {}
        for path, document in sorted(earlier.items()):
            if path.startswith("collections/"):
                for name, raw in (document.get("collections") or {}).items():
                    self.collections[name] = _Collection(raw.get("key"), set(raw.get("private", [])),
                                                         raw.get("schema"), raw.get("items", []))
        self.operations: dict[str, dict[str, Any]] = (earlier.get("operations.yaml") or {}).get("operations") or {}
        for op_id, config in self.operations.items():
            if "respond" in config:
                self.responds[op_id] = {_when_key(e.get("when")): e for e in config["respond"]}
        self.scenarios: dict[str, dict[str, Any]] = {
            s["id"]: s for s in (earlier.get("scenarios.yaml") or {}).get("scenarios") or []}
        self.warned: set[tuple[str, str]] = set()  # (operation, field) said unreplayable already
        self.warnings: list[str] = []  # of the exchange being learnt

    def observe(self, pipeline: Pipeline, exchange: Exchange) -> Learnt:
        """What one exchange teaches."""
        self.warnings = []
        learnt = self._observe(pipeline, exchange)
        learnt.warnings = self.warnings
        return learnt

    def _observe(self, pipeline: Pipeline, exchange: Exchange) -> Learnt:
        op = exchange.operation
        self.redactor.learn(exchange.request, pipeline.secrets)
        if op is None or exchange.request.method != "GET":
            return Learnt("not recorded (only GETs of the description's operations are)")
        if exchange.status in (401, 403):
            return Learnt("not recorded (it depends on the credential, which is never kept)")
        if exchange.status // 100 not in (2, 4, 5):
            return Learnt(f"not recorded (status {exchange.status})")
        if any(v.side == "response" for v in exchange.violations) or (exchange.violations and exchange.status < 400):
            return self._reject(pipeline, op, exchange, exchange.violations)
        if exchange.violations:
            return Learnt("not recorded (the request breaks the description: the mock refuses it on its own)")
        assert exchange.valid is not None  # a request with no violation was validated
        payload = self.redactor.body(exchange.payload)  # first: values it names are secrets in the request too
        valid = self._redacted(exchange.valid)
        broken = body_violations(op, exchange.status, exchange.media_type, payload) if exchange.media_type else []
        if broken:
            return self._reject(pipeline, op, exchange, [
                Violation(v.side, v.pointer, v.rule, "once redacted: " + v.message) for v in broken])
        touched: list[str] = []
        if exchange.status >= 400:
            outcome = self._scenario(pipeline, op, exchange, payload)
        else:
            outcome, touched = self._answer(pipeline, op, exchange, valid, payload)
        return Learnt(outcome, {**self._collection_documents(touched), **self._shared_documents(pipeline)})

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
            items = _page_items(payload, page_names(spec)["items"]) if kind == "list" else (
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
            self._unreplayable(op, spec, collection)
            return f"{len(items)} item(s) into collection {spec['from']}", [spec["from"]]
        names = page_names({})  # a page no fixture describes: is it shaped as the fixtures' pages are by default?
        items = _page_items(payload, names["items"]) if isinstance(payload, dict) and names["hasMore"] in payload \
            else None
        if items is not None:
            return self._generic_list(pipeline, op, valid, items), [op.id]
        return self._respond(pipeline, op, exchange, valid, payload), []

    def _unreplayable(self, op: Operation, spec: dict[str, Any], collection: _Collection) -> None:
        """A filter the recording keeps that reads a field no recorded item carries can never match when the
        recording is served (a private field the deployment never answers, say): said once per list and field."""
        for rule in spec.get("filters", []):
            name = rule.get("field")
            if not isinstance(name, str) or rule.get("present") is False or "notEquals" in rule \
                    or (op.id, name) in self.warned:
                continue  # a filter that takes items without the field can match them
            get = field_getter(name)
            if any(get(item) not in (MISSING, None) for item in collection.items):
                continue
            self.warned.add((op.id, name))
            when = f" (when {json.dumps(rule['when'], sort_keys=True)})" if "when" in rule else ""
            self.warnings.append(f"{op.id} keeps the filter on {name}{when}, but none of the "
                                 f"{len(collection.items)} recorded item(s) of {spec['from']} carries {name}: served "
                                 f"from the recording, that filter answers nothing; record a call that fills it in "
                                 f"(its request value), or add {name} to the items")

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
        names = page_names({})
        skip = {names["limit"], names["cursor"]} | pipeline.secrets.query
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
        skip = pipeline.secrets.query
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
        skip = {page_names(_listing(pipeline, exchange))["cursor"]} | pipeline.secrets.query
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
                   if h.name.lower() not in (pipeline.request_id_header.lower(), *pipeline.secrets.headers)
                   and exchange.header(h.name) is not None}
        if headers:
            spec["responseHeaders"] = {k: self.redactor.text(str(v)) for k, v in headers.items()}
        if status >= 500 or status == 429:
            spec["times"] = 1  # transient: the next matching call fails, later ones answer (reset brings it back)
        ident = f"rec-{_slug(op.id)}-{status}-{_digest([path, query])}"
        described = f"recorded {time.strftime('%Y-%m-%d')}: GET {op.path} answered {status}"
        self.scenarios[ident] = {"id": ident, "description": described, **spec}
        return f"scenario {ident}"

    def _reject(self, pipeline: Pipeline, op: Operation, exchange: Exchange, violations: list[Violation]) -> Learnt:
        path, query = self._request_values(pipeline, exchange)
        kinds = sorted({(v.side, v.place, v.rule) for v in violations})
        name = f"{_slug(op.id)}-{exchange.status}-{_digest(kinds)}.yaml"
        headers = {k: self.redactor.text(v) for k, v in exchange.headers.items()
                   if k.lower() not in pipeline.secrets.headers}
        payload = exchange.payload
        if payload is not None:  # it breaks the description: a `writeOnly` value may be what is wrong with it
            payload = pipeline.secrets.write_only(payload, exchange.media_type, op.id, exchange.status)
        body = self.redactor.body(payload) if payload is not None else (
            self.redactor.text(exchange.body.decode("utf-8", "replace")) or None)
        document = {
            "operationId": op.id,
            "request": {"method": exchange.request.method, "path": op.path, "pathParams": path, "query": query},
            "response": {"status": exchange.status, "headers": headers, "body": body},
            "violations": [{"in": v.side, "pointer": v.pointer, "rule": v.rule,
                            "message": self.redactor.text(v.message)} for v in violations],
        }
        return Learnt(f"kept apart as {name}", rejected=(name, document))

    # -- fixture documents ---------------------------------------------------------------------------------
    def _collection_documents(self, names: list[str]) -> dict[str, Any]:
        return {f"collections/{_slug(name)}.yaml": {"collections": {name: self.collections[name].as_fixture()}}
                for name in names}

    def _shared_documents(self, pipeline: Pipeline) -> dict[str, Any]:
        documents: dict[str, Any] = {}
        settings = {k: v for k, v in pipeline.fixtures.settings.items() if k in ("requestIdHeader", "errors")}
        if settings:  # the API's envelope, so errors served from the recording look the same; never its tokens
            documents["settings.yaml"] = {"settings": settings}
        if self.operations:
            documents["operations.yaml"] = {"operations": self.operations}
        if self.scenarios:
            documents["scenarios.yaml"] = {"scenarios": list(self.scenarios.values())}
        return documents


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


def _when_key(when: Any) -> str:
    return json.dumps(when, sort_keys=True, default=str)


def _conditions(when: Any) -> int:
    return 0 if when is None else len(when["all"]) if "all" in when else 1


def _listing(pipeline: Pipeline, exchange: Exchange) -> dict[str, Any]:
    """The fixtures' `list` of the exchange's operation (its page names), or none."""
    base = pipeline.fixtures.operations.get(exchange.operation.id) if exchange.operation else None
    return (base.value.get("list") or {}) if base is not None else {}
