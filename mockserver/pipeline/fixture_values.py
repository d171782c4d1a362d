"""Request values the fixtures can answer: for an operation, combinations of path and query values for which every
rule of its fixture (the `where` of its `list` or `item`, its `require` rules) finds an item, judged by the
engine's own rule code for a caller. The contract sends them as examples (so generated calls reach real `200`
answers), and the dashboard fills its "Try" forms with them (ids that exist, not the description's examples)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..fixtures.loading import FixtureSet
from .auth import Authenticator, Caller
from .request_validation import ValidRequest
from .rules import LOCATIONS, Context, Filter, field_getter


def rule_context(sent: dict[tuple[str, str], Any], caller: Caller) -> Context:
    """A request as the fixtures' rules read it: the values sent, by (location, name), and the caller."""
    request = ValidRequest()
    for (location, name), value in sent.items():
        key = name.lower() if location == "header" else name
        getattr(request, location)[key] = value
        request.sent.add((location, key))
    return Context(request, caller)


PER_OPERATION = 3  # request value combinations per operation: enough to vary, few enough to stay quick
Binding = tuple[tuple[tuple[str, str], Any], ...]  # ((location, name), value) pairs, hashable to keep them unique


def caller_for(auth: Authenticator, token: str | None) -> Caller:
    """Who the run's token is, per the tokens the fixtures declare (an undeclared token is a caller of the default
    tenant, as the mock treats it)."""
    declared = auth.tokens.get(token) if token else None
    if declared:
        return Caller(declared.caller, declared.tenant, True, "")
    return Caller("anonymous", auth.default_tenant, False, "")


def usable_token(auth: Authenticator) -> str | None:
    """The first token the fixtures declare that is neither expired nor revoked (the in-process mock's caller)."""
    return next((name for name, t in auth.tokens.items() if not t.expired and not t.revoked), None)


@dataclass
class _Rule:
    """One set of filters an item of one collection must pass, and the request values its `equals` bind."""

    items: list[dict[str, Any]]
    filters: list[Filter]
    binds: list[tuple[tuple[str, str], Any]]  # ((location, name), getter of the item's field)

    @classmethod
    def parse(cls, fixtures: FixtureSet, spec: dict[str, Any]) -> _Rule | None:
        collection = fixtures.collections.get(spec.get("from", ""))
        if collection is None:
            return None
        where = spec.get("where") or []
        binds = [((loc, f["equals"][loc]), field_getter(f["field"])) for f in where if "when" not in f
                 for loc in LOCATIONS if loc != "caller" and isinstance(f.get("equals"), dict)
                 and isinstance(f["equals"].get(loc), str)]
        return cls(collection.items, [Filter(f) for f in where], binds)

    def extend(self, binding: Binding, caller: Caller) -> Counter[Binding]:
        """Every binding this rule allows on top of `binding`, with how many items pass under it."""
        found: Counter[Binding] = Counter()
        fixed: dict[tuple[str, str], Any] = dict(binding)
        for item in self.items:
            values = dict(fixed)
            for key, get in self.binds:
                value = get(item)
                if key not in values and isinstance(value, (str, int, float, bool)):
                    values[key] = value
            if _passes(item, self.filters, values, caller):
                found[tuple(values.items())] += 1
        return found


def _passes(item: dict[str, Any], filters: list[Filter], values: dict[tuple[str, str], Any], caller: Caller) -> bool:
    ctx = rule_context(values, caller)
    tests = [f.bind(ctx) for f in filters]
    return all(test is None or test(item) for test in tests)


def derive(fixtures: FixtureSet, operation_id: str, caller: Caller) -> list[dict[tuple[str, str], Any]]:
    """Up to PER_OPERATION combinations of request values for which every rule of the operation finds an item.
    The list's (or item's) rule comes first and its combinations are ranked by how many items they select, so
    the longest lists come first: their pages have a next page, and the cursor checks get to walk them."""
    located = fixtures.operations.get(operation_id)
    config = located.value if located else {}
    specs = [config[k] for k in ("list", "item") if isinstance(config.get(k), dict)] + list(config.get("require") or [])
    rules = [rule for rule in (_Rule.parse(fixtures, s) for s in specs) if rule is not None]
    if not any(rule.binds for rule in rules):
        return []
    ranked = [binding for binding, _ in rules[0].extend((), caller).most_common()]
    for rule in rules[1:]:  # the others only need one item each to agree
        ranked = [extended for binding in ranked for extended in list(rule.extend(binding, caller))[:1]]
    return [dict(binding) for binding in ranked if binding][:PER_OPERATION]


