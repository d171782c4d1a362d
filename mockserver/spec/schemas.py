"""Compiling JSON Schema validators for schemas that live inside OpenAPI documents.

A validator is built for `{"$ref": "<file uri>#<pointer>"}`, so every `$ref` inside the schema resolves against
the document it stands in, across files. OpenAPI 3.0 documents are rewritten to JSON Schema 2020-12 first
(`nullable`, boolean `exclusiveMinimum`), so one validator class serves both versions.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError, best_match
from jsonschema_specifications import REGISTRY as SPECIFICATIONS
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from ..base.bounded import BoundedCache
from ..base.pointers import pointer_join
from .documents import DocumentSet
from .patterns import matcher


def _format_checker() -> FormatChecker:
    """Draft 2020-12's format checks, and OpenAPI's integer formats as the ranges they name (as Prism checks them);
    a copy, so Schemathesis' own checks in the same process are unchanged."""
    checker = FormatChecker(formats=())
    checker.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)
    for name, bits in (("int32", 32), ("int64", 64)):
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        checker.checks(name)(lambda value, low=low, high=high: not isinstance(value, int) or isinstance(value, bool)
                             or low <= value <= high)
    return checker


FORMAT_CHECKER = _format_checker()
Resolve = Callable[[str, str], tuple[Any, str]]


def openapi30_to_jsonschema(node: Any) -> Any:
    """Rewrite 3.0-only schema keywords in place, everywhere in a document."""
    if isinstance(node, dict):
        for value in node.values():
            openapi30_to_jsonschema(value)
        if node.get("nullable") is True:
            _make_nullable(node)
        for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if isinstance(node.get(bound), bool):
                if node.pop(bound) and limit in node:
                    node[bound] = node.pop(limit)
    elif isinstance(node, list):
        for value in node:
            openapi30_to_jsonschema(value)
    return node


def _make_nullable(schema: dict[str, Any]) -> None:
    schema.pop("nullable")
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        schema["type"] = [*kind, "null"]
    if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
        schema["enum"] = [*schema["enum"], None]
    if kind is None:
        moved = {k: schema.pop(k) for k in ("$ref", "allOf", "oneOf", "anyOf") if k in schema}
        if moved:
            schema["anyOf"] = [moved, {"type": "null"}]


class SchemaCompiler:
    """Builds validators over a DocumentSet; all documents share one registry, crawled once."""

    def __init__(self, docs: DocumentSet) -> None:
        self._docs = docs
        resources = [(uri, _resource(doc.data)) for uri, doc in docs.documents.items()]
        # not crawled: refs here are URIs with JSON pointers, and crawling trips on non-schema documents.
        # Combined with the meta-schemas once: jsonschema would redo it for every validator, which costs minutes
        # for a description of thousands of files.
        ours: Registry = Registry(retrieve=self._retrieve).with_resources(resources)  # type: ignore[call-arg]
        self._registry = SPECIFICATIONS.combine(ours)

    def _retrieve(self, uri: str) -> Resource:
        return _resource(self._docs.document(uri).data)

    def validator(self, uri: str, *, response: bool = False) -> Draft202012Validator:
        """A validator for the schema at `uri`; for a response, with OpenAPI's `writeOnly` rules."""
        schema = {"$ref": uri}
        resolver = self._registry.resolver_with_root(DRAFT202012.create_resource(schema))
        kind = ResponseValidator if response else Validator
        return kind(schema, format_checker=FORMAT_CHECKER, _resolver=resolver)


def _write_only(validator: Any, value: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if value is True:
        yield ValidationError("a writeOnly value must not be in a response")


def _required_unless_write_only(validator: Any, required: Any, instance: Any,
                                schema: dict[str, Any]) -> Iterator[ValidationError]:
    """`required`, except for the properties declared `writeOnly` beside it: a response leaves them out."""
    if isinstance(required, list) and isinstance(instance, dict):
        properties = schema.get("properties") or {}
        required = [name for name in required if name in instance or not _declared_write_only(validator,
                                                                                             properties.get(name))]
    yield from _REQUIRED(validator, required, instance, schema)


def _declared_write_only(validator: Any, node: Any) -> bool:
    for _ in range(8):  # a chain of `$ref`s
        if not isinstance(node, dict):
            return False
        if node.get("writeOnly") is True:
            return True
        if not isinstance(node.get("$ref"), str):
            return False
        try:
            node = validator._resolver.lookup(node["$ref"]).contents
        except Unresolvable:
            return False
    return False


_REQUIRED = Draft202012Validator.VALIDATORS["required"]
_ONE_OF = Draft202012Validator.VALIDATORS["oneOf"]
_ANY_OF = Draft202012Validator.VALIDATORS["anyOf"]
_SCALARS = (str, int, float, bool, type(None))
_MAX_HOPS = 64  # `$ref`s `direct` follows from one to the next (a loop of them stays as it is)
_BRANCH_FACTS = 65536  # branches whose facts are cached (each entry holds its branch, so its id is never reused)


@dataclass(frozen=True)
class _Facts:
    """What a `oneOf`/`anyOf` branch says, through its `$ref`s and `allOf`, that a value can be told apart by at a
    glance: the JSON types it allows, the values (`const`/`enum`, scalars only) and the values of properties."""

    types: frozenset[str] | None = None
    values: frozenset[tuple[str, Any]] | None = None
    properties: tuple[tuple[str, frozenset[tuple[str, Any]]], ...] = ()


_facts: BoundedCache[int, tuple[Any, _Facts]] = BoundedCache(_BRANCH_FACTS)


def _scalar_key(value: Any) -> tuple[str, Any] | None:
    """A key equal for values JSON Schema holds equal (1 and 1.0, not 1 and true); None for arrays and objects."""
    if isinstance(value, bool):
        return "boolean", value
    if isinstance(value, int | float):
        return "number", value
    return (type(value).__name__, value) if isinstance(value, _SCALARS) else None


def _allowed(schema: dict[str, Any]) -> frozenset[tuple[str, Any]] | None:
    listed = [schema["const"]] if "const" in schema else schema.get("enum")
    if not isinstance(listed, list):
        return None
    keys = [_scalar_key(value) for value in listed]
    return None if None in keys else frozenset(key for key in keys if key is not None)


def _and(a: frozenset[Any] | None, b: frozenset[Any] | None) -> frozenset[Any] | None:
    return b if a is None else a if b is None else a & b


def _branch_facts(validator: Any, branch: Any) -> _Facts:
    """A branch's facts, found once per branch and cached."""
    return _facts.made(id(branch), lambda: (branch, _found_facts(validator, branch)))[1]


def _found_facts(validator: Any, branch: Any) -> _Facts:
    types: frozenset[str] | None = None
    values: frozenset[tuple[str, Any]] | None = None
    properties: dict[str, frozenset[tuple[str, Any]]] = {}
    pending, seen = [(branch, validator._resolver)], 0
    while pending and seen < 16:  # the branch, its `$ref` chain and `allOf` parts
        node, resolver = pending.pop()
        seen += 1
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("$id"), str):  # its `$ref`s are read from where it says it is
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        declared = node.get("type")
        if isinstance(declared, str | list):
            names = {declared} if isinstance(declared, str) else set(declared)
            types = _and(types, frozenset(names | ({"integer"} if "number" in names else set())))
        values = _and(values, _allowed(node))
        for name, sub in (node.get("properties") or {}).items():
            fixed = _allowed(sub) if isinstance(sub, dict) else None
            if fixed is not None:
                properties[name] = fixed & properties[name] if name in properties else fixed
        if isinstance(node.get("$ref"), str):
            try:
                found = resolver.lookup(node["$ref"])
            except Unresolvable:
                continue
            pending.append((found.contents, found.resolver))
        if isinstance(node.get("allOf"), list):
            pending += [(sub, resolver) for sub in node["allOf"]]
    return _Facts(types, values, tuple(properties.items()))


def json_types(instance: Any) -> frozenset[str]:
    """The JSON Schema types a value has (an integral number is both `integer` and `number`)."""
    if isinstance(instance, bool):
        return frozenset({"boolean"})
    if isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer()):
        return frozenset({"integer", "number"})
    if isinstance(instance, float):
        return frozenset({"number"})
    if isinstance(instance, str):
        return frozenset({"string"})
    if instance is None:
        return frozenset({"null"})
    return frozenset({"array"} if isinstance(instance, list) else {"object"})


def _excludes(validator: Any, branch: Any, instance: Any) -> bool:
    """Whether a branch surely refuses the value: a type, a value or a property's value it does not allow."""
    facts = _branch_facts(validator, branch)
    if facts.types is not None and not facts.types & json_types(instance):
        return True
    if facts.values is not None and _scalar_key(instance) not in facts.values:
        return True
    return isinstance(instance, dict) and any(
        name in instance and _scalar_key(instance[name]) not in allowed for name, allowed in facts.properties)


def plausible(validator: Any, branches: list[Any], instance: Any) -> int:
    """How many branches of a `oneOf`/`anyOf` a value is not told apart from at a glance."""
    return sum(not _excludes(validator, branch, instance) for branch in branches)


def _holds(validator: Any, branch: Any, index: int, instance: Any) -> bool:
    return not _excludes(validator, branch, instance) and next(
        validator.descend(instance, branch, schema_path=index), None) is None


class _Choosing(threading.local):
    """The choices (`oneOf`/`anyOf`, by id) each value (by id) is being checked against now, in this thread."""

    def __init__(self) -> None:
        self.now: set[tuple[int, int]] = set()


_CHOOSING = _Choosing()


def _choice(check: Callable[[], Iterator[ValidationError]], branches: Any,
            instance: Any) -> Iterator[ValidationError]:
    """A choice's errors, unless the value is being checked against this very choice already, through `$ref`s and
    `allOf`s alone (Pet: oneOf [Cat], Cat: allOf [Pet, …]): then the value is the branch that leads back, as the
    generator takes it, and holds, where checking it again would recurse until the stack is gone. Nested values
    are other objects, so only such a loop meets the same pair again."""
    key = (id(branches), id(instance))
    if key in _CHOOSING.now:
        return
    _CHOOSING.now.add(key)
    try:
        yield from check()
    finally:
        _CHOOSING.now.discard(key)


def _one_of(validator: Any, branches: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    """`oneOf`, reading only the branches a value is not told apart from at a glance (one branch in seven, for a
    component told by its `type`); for a value it does not fit, jsonschema's own errors."""
    def check() -> Iterator[ValidationError]:
        if sum(_holds(validator, branch, i, instance) for i, branch in enumerate(branches)) != 1:
            yield from _ONE_OF(validator, branches, instance, schema)
    return _choice(check, branches, instance)


def _any_of(validator: Any, branches: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    """`anyOf`, as `oneOf` above."""
    def check() -> Iterator[ValidationError]:
        if not any(_holds(validator, branch, i, instance) for i, branch in enumerate(branches)):
            yield from _ANY_OF(validator, branches, instance, schema)
    return _choice(check, branches, instance)


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    """`pattern`, read as ECMA-262 reads it where Python's `re` cannot (`\\p{L}`: spec/patterns.py)."""
    if validator.is_type(instance, "string"):
        compiled = matcher(pattern)
        if compiled is not None and compiled.search(instance) is None:
            yield ValidationError(f"{instance!r} does not match {pattern!r}")


# Draft 2020-12 with branches told apart at a glance and ECMA-262 patterns: what every validator of the mock is
Validator = validators.extend(Draft202012Validator, {"oneOf": _one_of, "anyOf": _any_of, "pattern": _pattern})
# OpenAPI: a `writeOnly` property is sent in requests only, so a response neither holds nor requires it
ResponseValidator = validators.extend(Validator, {"writeOnly": _write_only, "required": _required_unless_write_only})


def _resource(contents: Any) -> Resource:
    """A document as a JSON Schema resource; one that is not a mapping (a file holding a Markdown string, say)
    can still be pointed into, but holds no schema keywords."""
    if isinstance(contents, (dict, bool)):
        return DRAFT202012.create_resource(contents)
    return Resource.opaque(contents)


def iter_errors(validator: Draft202012Validator, instance: Any) -> Iterator[ValidationError]:
    """Errors leaf-first: for `oneOf`/`anyOf` the most specific sub-error says more than the umbrella one. A value
    nested deeper than a recursive schema can be followed in Python (jsonschema takes about four frames a level)
    is one error of its own, rule `depth`, not a RecursionError."""
    try:
        for error in validator.iter_errors(instance):
            yield _deepest(error)
    except RecursionError:
        yield ValidationError("nested too deeply to be checked against its schema (see --max-depth)",
                              validator="depth", instance=instance)


def fits(validator: Any, instance: Any) -> bool:
    """Whether a value is valid, for a quick check (`direct`'s validators): a value nested deeper than Python can
    follow is "not known to fit", so the full validator then says so (`iter_errors`' `depth`)."""
    try:
        return bool(validator.is_valid(instance))
    except RecursionError:
        return False


def direct(validator: Any) -> Any:
    """The validator rooted at the schema its chain of `$ref`s leads to, followed once at start-up: the same
    verdicts without a walk of the document's pointers on every call. Its errors' schema paths start below that
    chain, so an error is still told by the validator it was made from."""
    schema, resolver = validator.schema, validator._resolver
    for _ in range(_MAX_HOPS):
        if not (isinstance(schema, dict) and schema.keys() == {"$ref"} and isinstance(schema["$ref"], str)):
            break
        try:
            resolved = resolver.lookup(schema["$ref"])
        except Unresolvable:
            break  # said when the validator runs, as before
        schema, resolver = resolved.contents, resolved.resolver
    return validator.evolve(schema=schema, _resolver=resolver)


def _deepest(error: ValidationError) -> ValidationError:
    if error.context:
        return _deepest(best_match(error.context))
    return error


def instance_pointer(error: ValidationError) -> str:
    return pointer_join("", *error.absolute_path)


def schema_types(node: Any, uri: str, resolve: Resolve, depth: int = 0) -> set[str]:
    """The JSON types a schema admits, looking through `$ref`, `allOf`, `anyOf` and `oneOf`."""
    if not isinstance(node, dict) or depth > 10:
        return set()
    if isinstance(node.get("$ref"), str):
        target, target_uri = resolve(node["$ref"], uri)
        return schema_types(target, target_uri, resolve, depth + 1)
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return set(kind)
    found: set[str] = set()
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(key) or []:
            found |= schema_types(sub, uri, resolve, depth + 1)
    if not found:
        if "properties" in node:
            found.add("object")
        elif "items" in node:
            found.add("array")
    return found
