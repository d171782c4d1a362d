"""The API's own rules, which no schema states, as Schemathesis checks: they run on every response of every
run (the `mockserver contract` engine and the pytest integration alike), for any description and fixtures.
What each needs to know about an operation comes from its `x-contract` (see `knowledge.py`); an operation
without one (a schema not loaded by `mockserver.contract`) is left alone.

A check returns True when it does not apply to the response (Schemathesis then counts it neither passed nor
failed), None when it passed, and raises `CheckFailed` saying what was expected and what came back."""
from __future__ import annotations

import json
import re
import weakref
from collections import Counter
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

import schemathesis
from schemathesis import Case, CheckContext, Response
from schemathesis.core.failures import Failure, ServerError
from schemathesis.openapi.checks import RejectedPositiveData

from ..pipeline.auth import Caller
from ..pipeline.fixture_values import rule_context
from ..pipeline.query import version_key
from ..pipeline.rules import compile_condition, field_getter
from .force import forced
from .knowledge import KEY, find

MAX_PAGES = 20  # a cursor walk follows at most this many pages
PROBES_PER_OPERATION = 3  # cursor walks (and tampered cursors) per operation and run: each costs requests
_WHOLE_SECONDS = re.compile(r"^\d+$")


class CheckFailed(Failure):
    """A broken rule, with what the contract expects and what the server did; `curl` when the failing request
    is one the check made itself (a later page, a tampered cursor) rather than the generated one."""

    __slots__ = ("expected", "got", "curl")

    def __init__(self, case: Case, title: str, expected: str, got: str, curl: str | None = None) -> None:
        super().__init__(operation=case.operation.label, title=title, message=f"Expected: {expected}\nGot: {got}")
        self.expected, self.got, self.curl = expected, got, curl

    @property
    def _unique_key(self) -> str:
        return self.title  # one finding per operation and rule, not one per class


def contract(case: Case) -> dict[str, Any] | None:
    raw = case.operation.definition.raw
    return raw.get(KEY) if isinstance(raw, dict) else None


def _json(response: Response) -> Any:
    try:
        return json.loads(response.content)
    except ValueError:
        return None


def _header(response: Response, name: str) -> str | None:
    values = response.headers.get(name.lower())
    return values[0] if values else None


@schemathesis.check
def request_id_header(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """Every response carries the request id header; on an error it equals the envelope's `requestId`."""
    known = contract(case)
    if known is None or known["requestIdHeader"] is None:
        return True
    name = known["requestIdHeader"]
    value = _header(response, name)
    if value is None:
        raise CheckFailed(case, f"{name} missing", f"the {name} header on every response",
                          f"{response.status_code} without {name}")
    if response.status_code >= 400:
        request_id = find(_json(response), "requestId", known["envelope"])
        if request_id is not None and request_id != value:
            raise CheckFailed(case, f"{name} differs from the envelope's requestId",
                              f"{name} equal to the envelope's requestId", f"{name}: {value}, requestId: {request_id}")
    return None


@schemathesis.check
def error_code_documented(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """An error carries one of the codes the description allows for its status, where its schema states them as
    an `enum` or `const` (examples bind no server)."""
    known = contract(case)
    documented = known["codes"].get(str(response.status_code)) if known else None
    if not documented or known is None:
        return True
    code = find(_json(response), "code", known["envelope"])
    if code not in documented:
        raise CheckFailed(case, f"Undocumented error code for {response.status_code}",
                          f"a {response.status_code} code among {', '.join(documented)}",
                          f"{response.status_code} with code {code!r}")
    return None


@schemathesis.check
def retry_after_seconds(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """Where the answer's status declares `Retry-After`, it is there (when required) and written as its schema
    says: whole seconds, or (a string schema) seconds or an HTTP-date."""
    known = contract(case)
    declared = known.get("retryAfter", {}).get(str(response.status_code)) if known else None
    if declared is None:
        return True
    value = _header(response, "Retry-After")
    if value is None and not declared["required"]:
        return True
    form = "whole seconds" if declared["form"] == "seconds" else "whole seconds or an HTTP-date"
    if value is None or not _retry_after_ok(value.strip(), declared["form"]):
        raise CheckFailed(case, "Retry-After missing or malformed",
                          f"{response.status_code} with Retry-After in {form}",
                          f"Retry-After: {value}" if value is not None
                          else f"{response.status_code} without Retry-After")
    return None


def _retry_after_ok(value: str, form: str) -> bool:
    if _WHOLE_SECONDS.match(value):
        return True
    if form == "seconds":
        return False
    try:
        return parsedate_to_datetime(value) is not None
    except (TypeError, ValueError):
        return False


def _page(case: Case, response: Response) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The operation's contract and the page, when this is a list's successful answer (`known["page"]` names
    its fields)."""
    known = contract(case)
    names = known["page"] if known else None
    body = _json(response) if names and 200 <= response.status_code < 300 else None
    if known is None or names is None or not isinstance(body, dict) or not isinstance(body.get(names["hasMore"]), bool):
        return None
    return known, body


@schemathesis.check
def next_cursor_when_has_more(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """A page gives `nextCursor` exactly when `hasMore` is true."""
    found = _page(case, response)
    if found is None:
        return True
    names, body = found[0]["page"], found[1]
    has_more, cursor = body[names["hasMore"]], body.get(names["nextCursor"])
    if has_more != (cursor not in (None, "")):
        raise CheckFailed(case, f"{names['nextCursor']} and {names['hasMore']} disagree",
                          f"{names['nextCursor']} present exactly when {names['hasMore']} is true",
                          f"{names['hasMore']}: {json.dumps(has_more)}, {names['nextCursor']}: {json.dumps(cursor)}")
    return None


_probes: dict[int, Counter[tuple[str, str]]] = {}  # by id of the schema of a run, while it lives


def _may_probe(case: Case, kind: str) -> bool:
    """Whether this run may still spend requests on a `kind` probe of the operation (bounded per schema)."""
    schema = case.operation.schema
    if id(schema) not in _probes:
        _probes[id(schema)] = Counter()
        weakref.finalize(schema, _probes.pop, id(schema), None)
    spent = _probes[id(schema)]
    key = (case.operation.label, kind)
    spent[key] += 1
    return spent[key] <= PROBES_PER_OPERATION


def _first_page_with_more(case: Case, response: Response, kind: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A list's first page that has a next one, while the run may still spend requests on a `kind` probe."""
    found = _page(case, response)
    if found is None:
        return None
    names = found[0]["page"]
    if case.query.get(names["cursor"]) is not None or not found[1].get(names["nextCursor"]):
        return None
    return found if _may_probe(case, kind) else None


def _follow(case: Case, cursor_param: str, cursor: str) -> tuple[Response, str]:
    """The same request with a cursor, sent with the run's headers; the answer and a curl that repeats it."""
    query = {**case.query, cursor_param: cursor}
    follow = case.derive(query=query, keep_auth=True)
    headers = case.operation.schema.config.headers_for(operation=case.operation)
    return follow.call(headers=headers), follow.as_curl_command(headers=headers)


@schemathesis.check
def cursor_walk(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """Following `nextCursor` from a first page walks the list with no item twice, in the documented order."""
    found = _first_page_with_more(case, response, "walk")
    if found is None:
        return True
    known, body = found
    names = known["page"]
    items: list[Any] = list(body.get(names["items"]) or [])
    seen: dict[str, int] = {}
    in_order = _comparator(known["order"])
    curl: str | None = None  # of the last page followed: the request that shows a problem
    for _ in range(MAX_PAGES):
        for item in items[len(seen):]:
            identity = json.dumps(item, sort_keys=True)
            if identity in seen:
                raise CheckFailed(case, "A cursor walk repeats an item", "no item twice across the pages",
                                  f"item {_brief(item)} at positions {seen[identity] + 1} and {len(seen) + 1}", curl)
            if seen and in_order is not None and not in_order(items[len(seen) - 1], item):
                raise CheckFailed(case, "A cursor walk breaks the documented order",
                                  f"items ordered by {_describe(known['order'])}",
                                  f"item {len(seen)} ({_sort_keys(items[len(seen) - 1], known['order'])}) before "
                                  f"item {len(seen) + 1} ({_sort_keys(item, known['order'])})", curl)
            seen[identity] = len(seen)
        if not body.get(names["hasMore"]):
            return None
        response, curl = _follow(case, names["cursor"], str(body.get(names["nextCursor"])))
        body = _json(response)
        if response.status_code != 200 or not isinstance(body, dict):
            raise CheckFailed(case, "Following nextCursor failed", "200 with the next page",
                              f"{response.status_code} {response.content[:200]!r}", curl)
        items += list(body.get(names["items"]) or [])
    return None


def _comparator(order: list[dict[str, Any]]) -> Callable[[Any, Any], bool] | None:
    """Whether two items stand in the documented order (`by`, `desc`, `type`; an absent value sorts last)."""
    if not order:
        return None
    keys = [(field_getter(rule["by"]), version_key(rule.get("type")), bool(rule.get("desc"))) for rule in order]

    def in_order(before: Any, after: Any) -> bool:
        for get, key, desc in keys:
            a, b = (get(x) if isinstance(x, dict) else None for x in (before, after))
            a_present, b_present = (isinstance(v, (str, int, float, bool)) for v in (a, b))
            if a_present != b_present:
                return a_present
            if not a_present or key(a) == key(b):
                continue
            return (key(a) > key(b)) if desc else (key(a) < key(b))
        return True

    return in_order


def _describe(order: list[dict[str, Any]]) -> str:
    return ", ".join(f"{rule['by']}{' descending' if rule.get('desc') else ''}" for rule in order)


def _sort_keys(item: Any, order: list[dict[str, Any]]) -> str:
    """An item as the order sees it: its sort key values (and its `id`, to find it)."""
    keys = [rule["by"] for rule in order]
    shown = []
    for name in keys + ([] if "id" in keys else ["id"]):
        value = field_getter(name)(item) if isinstance(item, dict) else None
        present = value is None or isinstance(value, (str, int, float, bool))
        if present or name in keys:
            shown.append(f"{name}: {json.dumps(value, ensure_ascii=False) if present else 'absent'}")
    return ", ".join(shown)


def _brief(item: Any) -> str:
    text = json.dumps(item, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "…"


def tamper(cursor: str) -> str:
    """The cursor with one character near its middle changed, as an attacker (or a buggy client) would."""
    middle = len(cursor) // 2
    index = next((i for i in [*range(middle, len(cursor)), *range(middle)] if cursor[i].isalnum()), middle)
    swapped = "B" if cursor[index:index + 1] == "A" else "A"
    return cursor[:index] + swapped + cursor[index + 1:]


@schemathesis.check
def tampered_cursor_rejected(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """Where the description says cursors are sealed, a cursor changed by the client answers 400 (with a code the
    description allows for 400, where it states them)."""
    known = contract(case)
    found = _first_page_with_more(case, response, "tamper") if known and known.get("sealed") else None
    if found is None:
        return True
    known, body = found
    answer, curl = _follow(case, known["page"]["cursor"], tamper(str(body[known["page"]["nextCursor"]])))
    documented = known["codes"].get("400") or []
    code = find(_json(answer), "code", known["envelope"])
    if answer.status_code != 400 or (documented and code not in documented):
        expected = f"400 with a code among {', '.join(documented)}" if documented else "400"
        raise CheckFailed(case, "Tampered cursor not rejected", expected,
                          f"{answer.status_code} with code {code!r}", curl)
    return None


def _responses(case: Case) -> dict[str, Any]:
    raw = case.operation.definition.raw
    responses = raw.get("responses") if isinstance(raw, dict) else None
    return {str(key): value for key, value in responses.items()} if isinstance(responses, dict) else {}


def filter_failure(context: Any, failure: Failure, case: Case, response: Response) -> bool:
    """Schemathesis hook: keep every failure but a rejection of schema-valid data that the contract explains, so
    the API is not blamed for rules its description states in words: a 400 for a cursor it did not issue for
    this very list (a cursor's validity is beyond any schema; the cursor checks above test cursors), or the
    status of a fixture `reject` rule the request meets (`scopeId` without `scopeKind` …); nor a rejection with a
    status the operation documents (`DELETE /pools/default_pool` → its documented 400 "can't be deleted"); nor a
    rejection or a server error the run asked for with `Prefer: code=`."""
    if isinstance(failure, (RejectedPositiveData, ServerError)) and forced(response):
        return False  # the run asked for this status with `Prefer: code=`: no fault of the server's
    if isinstance(failure, RejectedPositiveData) and str(response.status_code) in _responses(case):
        return False  # an answer the operation documents is no failure (one that never succeeds fails the gate)
    known = contract(case)
    if known is None or not isinstance(failure, RejectedPositiveData):
        return True
    status = response.status_code
    if status == 400 and known["page"] and case.query.get(known["page"]["cursor"]) is not None:
        return False
    sent = {(location, name): value for location, values in (("path", case.path_parameters), ("query", case.query),
                                                             ("header", case.headers), ("cookie", case.cookies))
            for name, value in (values or {}).items()}
    ctx = rule_context(sent, Caller(known["caller"]["id"], known["caller"]["tenant"], True, ""))
    return not any(rule["status"] == status and compile_condition(rule["when"])(ctx) for rule in known["rejects"])


OURS = [check.__name__ for check in (request_id_header, error_code_documented, retry_after_seconds,
                                     next_cursor_when_has_more, cursor_walk, tampered_cursor_rejected)]


def _lists(known: dict[str, Any]) -> bool:
    return known.get("page") is not None


def _sealed(known: dict[str, Any]) -> bool:
    return _lists(known) and bool(known.get("sealed"))


# Checks that must apply at least once to an operation that answered with success, where its `x-contract` makes
# them relevant (the run fails closed otherwise), with what they need, for the report.
MUST_APPLY: dict[str, tuple[Callable[[dict[str, Any]], bool], str]] = {
    "next_cursor_when_has_more": (_lists, "a success page with a boolean hasMore"),
    "cursor_walk": (_lists, "a first page with a next one (more items than the smallest limit)"),
    "tampered_cursor_rejected": (_sealed, "a first page with a next one (more items than the smallest limit)"),
}


def must_apply(known: dict[str, Any] | None, enabled: list[str]) -> list[str]:
    """The checks among `enabled` that must apply to the operation `known` describes, once it answers 2xx."""
    if known is None:
        return []
    return [name for name, (relevant, _) in MUST_APPLY.items() if name in enabled and relevant(known)]
