"""Generate realistic JSON values from OpenAPI 3.0/3.1 schemas.

Used when a mock has neither a fixture nor an example for a response. Schemas
follow JSON Schema 2020-12 plus OpenAPI 3.0's `nullable` and boolean exclusive
bounds. All randomness flows from the caller's `random.Random`, so a seeded
rng reproduces the same payload.

Two modes, as Prism has them. Static (the mock's default answer): a schema's
or property's `example`/`examples`/`default` is the value, every optional
property is present, null only where nothing else fits, arrays as short as
they may be. Dynamic: examples used now and then, optional properties and
nulls by chance, arrays of varied length.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import math
import random
import re
import re._parser as sre_parse  # what rstr parses patterns with
import string
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urldefrag, urljoin

import rstr
from jsonschema import Draft202012Validator

from ..base.bounded import BoundedCache
from ..base.pointers import escape_token
from ..spec.patterns import for_generation, matcher
from ..spec.schemas import FORMAT_CHECKER, Validator, json_types, plausible

if TYPE_CHECKING:
    from faker import Faker

Resolve = Callable[[str, str], tuple[Any, str]]

# Chance that an optional property is included (within max_depth; beyond it, none are).
_OPTIONAL_P = 0.6
# Chance that a nullable value is null (within max_depth; beyond it, null always wins).
_NULL_P = 0.1
# Chance of using a schema's own example/default instead of synthesising one (a static run always does).
_EXAMPLE_P = 0.5
# Values a static run makes before it stops adding optional properties: every optional property is present in
# a static answer, and this keeps a wide schema with deep optional nesting from growing without end.
_STATIC_BUDGET = 400
# Retry budgets; generation is cheap, so these trade a little time for validity.
_ONEOF_TRIES = 5
_NOT_TRIES = 10
_STRING_TRIES = 5
_PATTERN_TRIES = 40
_UNIQUE_TRIES = 30
_NUMBER_TRIES = 20
_KEY_TRIES = 5
# Levels a static answer nests a schema inside itself through an optional property (`children: {items: {$ref:
# Node}}`): the tree shows its shape, and stops before the depth limit would make it wide.
_RECURSIVE_LEVELS = 3
# Repeat caps used when sampling regexes (see _Xeger): start short, double every few attempts.
_SHORT_REPEAT = 5
_LONG_REPEAT = 100  # rstr's own limit for `*` and `+`
_ATTEMPTS_PER_CAP = 4

# Fixed window so dates never depend on the wall clock (keeps output reproducible).
_DATE_START = datetime(2020, 1, 1, tzinfo=UTC)
_DATE_END = datetime(2030, 12, 31, tzinfo=UTC)
_ID_ALPHABET = string.ascii_lowercase + string.digits


def _datetime(fake: Faker) -> datetime:
    """Pick a UTC instant without microseconds, so formatted values stay short."""
    return fake.date_time_between_dates(_DATE_START, _DATE_END, tzinfo=UTC).replace(microsecond=0)


def _short_id(fake: Faker) -> str:
    return fake.lexify("?" * 10, letters=_ID_ALPHABET)


_FORMATS: dict[str, Callable[[Faker], str]] = {
    "uuid": lambda f: f.uuid4(),
    "date-time": lambda f: _datetime(f).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "date": lambda f: _datetime(f).date().isoformat(),
    "time": lambda f: _datetime(f).strftime("%H:%M:%SZ"),
    "email": lambda f: f.email(),
    "uri": lambda f: f.url(),
    "url": lambda f: f.url(),
    "uri-reference": lambda f: "/" + f.uri_path(),
    "hostname": lambda f: f.hostname(),
    "ipv4": lambda f: f.ipv4(),
    "ipv6": lambda f: f.ipv6(),
    "byte": lambda f: base64.b64encode(f.binary(length=12)).decode("ascii"),
    "binary": lambda f: f.binary(length=12).hex(),
    "password": lambda f: f.password(length=12),
}

# Plausible strings for well-known property names; keys are the lower-cased name
# without separators, matched on the whole name first, then on its last word.
_NAME_HINTS: dict[str, Callable[[Faker], str]] = {
    "id": _short_id,
    "name": lambda f: f.name(),
    "firstname": lambda f: f.first_name(),
    "lastname": lambda f: f.last_name(),
    "username": lambda f: f.user_name(),
    "email": lambda f: f.email(),
    "phone": lambda f: f.phone_number(),
    "url": lambda f: f.url(),
    "href": lambda f: f.url(),
    "website": lambda f: f.url(),
    "title": lambda f: f.sentence(nb_words=3).rstrip("."),
    "description": lambda f: f.sentence(),
    "summary": lambda f: f.sentence(),
    "message": lambda f: f.sentence(),
    "reason": lambda f: f.sentence(),
    "comment": lambda f: f.sentence(),
    "address": lambda f: f.street_address(),
    "city": lambda f: f.city(),
    "country": lambda f: f.country(),
    "company": lambda f: f.company(),
    "filename": lambda f: f.file_name(),
    "currency": lambda f: f.currency_code(),
    # a version a client parses (`packaging.version`, semver), never a word
    "version": lambda f: f.numerify("%.#.#"),
}

_NUMBER_FORMAT_RANGES: dict[str, tuple[float, float]] = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "float": (-3.4028234663852886e38, 3.4028234663852886e38),
}
# Types an unconstrained schema may take once a `not` rules some out (null would be implausible).
_ANY_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object"})
_INTEGER_FORMATS = {"int32", "int64"}
_NUMBER_FORMATS = {"float", "double"}

# Keywords used to infer a type when a schema omits `type`.
_OBJECT_KEYWORDS = {"properties", "patternProperties", "additionalProperties", "required", "minProperties",
                    "maxProperties"}
_ARRAY_KEYWORDS = {"items", "prefixItems", "minItems", "maxItems", "uniqueItems"}
_STRING_KEYWORDS = {"pattern", "minLength", "maxLength"}
_NUMBER_KEYWORDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}

# Where subschemas live, for inlining `$ref`s before validating with jsonschema.
_SUBSCHEMA = {"not", "additionalProperties", "items", "contains", "propertyNames", "if", "then", "else",
              "unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema"}
_SUBSCHEMA_MAPS = {"properties", "patternProperties", "dependentSchemas"}
_SUBSCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
# Dropped when inlining: references are already expanded, and the rest are OpenAPI-only.
_DEREF_DROP = {"$ref", "$id", "$schema", "$anchor", "$dynamicAnchor", "$dynamicRef", "$defs", "definitions",
               "nullable", "discriminator"}

_MISSING = object()
_VALIDATORS = 4096  # compiled subschema validators (and branch types) cached by a generator, under its lock
_PLANS = 16384  # expansions and facets cached, likewise (one of Discord's messages has some 3,000 places)
_PATTERNS: BoundedCache[str, Any] = BoundedCache(_VALIDATORS)  # patterns parsed for rstr, by every generator
_HINTS: BoundedCache[str | None, Callable[[Faker], str] | None] = BoundedCache(_VALIDATORS)  # by property name


class GenerationError(ValueError):
    """A schema admits no value the generator can build (e.g. `false`, or endless required recursion)."""


class _Xeger(rstr.Rstr):
    """rstr with a per-attempt cap on repeat counts.

    Capping a repeat only narrows the language, so results still match; it keeps `+`/`*`
    short and plausible and makes `maxLength` reachable for patterns like `{0,63}`.
    """

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.repeat_cap = _LONG_REPEAT

    def _handle_repeat(self, start_range: int, end_range: int, value: Any) -> str:
        return super()._handle_repeat(start_range, max(start_range, min(end_range, self.repeat_cap)), value)

    def xeger(self, string_or_regex: str | re.Pattern[str]) -> str:
        """rstr's, with each pattern parsed once (parsing was a third of the cost of a string with a pattern)."""
        pattern = string_or_regex if isinstance(string_or_regex, str) else string_or_regex.pattern
        result = self._build_string(_PATTERNS.made(pattern, lambda: sre_parse.parse(pattern)))
        self._cache.clear()
        return result


@dataclass(frozen=True)
class _Loc:
    """A subschema together with what is needed to interpret it and to report errors."""

    schema: Any
    base: str
    refs: tuple[tuple[tuple[int, str], int], ...]  # ((id(target), base), depth) of each $ref followed
    where: str

    def child(self, schema: Any, suffix: str) -> _Loc:
        return _Loc(schema, self.base, self.refs, f"{self.where}/{suffix}")


_LocKey = tuple[int, str, tuple[tuple[tuple[int, str], int], ...], str]


def _key(loc: _Loc) -> _LocKey:
    """What a `_Loc` is, its schema by id: a key of the kept expansions and facets."""
    return id(loc.schema), loc.base, loc.refs, loc.where


@dataclass
class _Choice:
    """An unresolved `oneOf`/`anyOf`; a branch is picked only when the value is built."""

    kind: str
    loc: _Loc


@dataclass
class _Run:
    """State of one `generate` call, kept off the generator so calls stay independent."""

    rng: random.Random
    xeger: _Xeger
    static: bool = False
    made: int = 0  # values made so far (a static run stops adding optional properties past _STATIC_BUDGET)


@dataclass
class _Facets:
    """The keywords of a conjunction of subschemas, merged so the most restrictive wins."""

    where: str
    types: frozenset[str] | None = None
    inferred: set[str] = field(default_factory=set)
    excluded: set[str] = field(default_factory=set)  # from `not: {type: ...}`
    enum: list[Any] | None = None
    examples: list[Any] = field(default_factory=list)
    nots: list[_Loc] = field(default_factory=list)
    fmt: str | None = None
    min_length: int = 0
    max_length: int | None = None
    patterns: list[str] = field(default_factory=list)
    lo: tuple[float, bool] | None = None  # (bound, exclusive)
    hi: tuple[float, bool] | None = None
    multiples: list[int | float] = field(default_factory=list)
    items: list[_Loc] = field(default_factory=list)
    prefix: list[list[_Loc]] = field(default_factory=list)
    min_items: int | None = None
    max_items: int | None = None
    unique: bool = False
    props: dict[str, list[_Loc]] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    pattern_props: list[tuple[str, _Loc]] = field(default_factory=list)
    additional: list[_Loc] | None = None
    names: list[_Loc] = field(default_factory=list)  # `propertyNames`: what every key must be
    # each part of an `allOf` closed by `additionalProperties: false`: the names and patterns it declares, the
    # only keys it lets in (a sibling part's optional property is left out: Kindgi's `MemoryErasureCreated`)
    closed: list[tuple[frozenset[str], list[str]]] = field(default_factory=list)
    min_props: int = 0
    max_props: int | None = None


def _intersect_types(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    """Intersect type sets, treating `integer` as a subset of `number`."""
    out = set(a & b)
    if ("integer" in a and "number" in b) or ("integer" in b and "number" in a):
        out.add("integer")
    return frozenset(out)


def _is_type(value: Any, kind: str) -> bool:
    match kind:
        case "null":
            return value is None
        case "boolean":
            return isinstance(value, bool)
        case "integer":
            return (isinstance(value, int) and not isinstance(value, bool)) or (
                isinstance(value, float) and value.is_integer())
        case "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
        case "string":
            return isinstance(value, str)
        case "array":
            return isinstance(value, list)
        case "object":
            return isinstance(value, dict)
    return False


def _canonical(value: Any) -> str:
    """A comparable form for JSON equality (enum intersection, uniqueItems)."""
    return json.dumps(value, sort_keys=True, default=str)


def _tighter(current: tuple[float, bool] | None, new: tuple[float, bool], lower: bool) -> tuple[float, bool]:
    """Keep the more restrictive of two bounds; on a tie the exclusive one."""
    if current is None:
        return new
    if new[0] == current[0]:
        return new if new[1] else current
    return new if (new[0] > current[0]) == lower else current


def _join(base: str, ref: str) -> str:
    """Like urljoin, but keeps the base for `#fragment` refs under schemes urllib does not know (e.g. mem://)."""
    return urldefrag(base).url + ref if ref.startswith("#") else urljoin(base, ref)


def _search(regex: str, text: str, where: str) -> bool:
    """Whether `text` matches `regex` as the validators read it (ECMA-only `\\p{L}` too: spec/patterns.py); one
    that cannot be read at all is a GenerationError."""
    compiled = matcher(regex)
    if compiled is None:
        raise GenerationError(f"unsupported pattern {regex!r} at {where}")
    return compiled.search(text) is not None


def _sample(run: _Run, regex: str, cap: int, where: str) -> str:
    """A string matching `regex`, with repeats capped at `cap` (see _Xeger)."""
    run.xeger.repeat_cap = cap
    try:
        return run.xeger.xeger(for_generation(regex))
    except re.error as exc:
        raise GenerationError(f"unsupported pattern {regex!r} at {where}: {exc}") from exc


def _name_words(name: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)]


def _hint_for(name: str | None) -> Callable[[Faker], str] | None:
    """The maker a property's name calls for; cached per name (splitting it into words was a tenth of a string)."""
    return _HINTS.made(name, lambda: _hint_of(name))


def _hint_of(name: str | None) -> Callable[[Faker], str] | None:
    if not name:
        return None
    words = _name_words(name)
    if not words:
        return None
    return _NAME_HINTS.get("".join(words)) or _NAME_HINTS.get(words[-1])


def _merge(parts: list[_Loc], where: str) -> _Facets:
    """Fold the expanded parts of an `allOf`/`$ref` conjunction into one set of facets."""
    f = _Facets(where)
    for loc in parts:
        s = loc.schema
        if not isinstance(s, dict):
            continue
        if "type" in s:
            declared = frozenset([s["type"]] if isinstance(s["type"], str) else s["type"])
            if s.get("nullable") is True:
                declared |= {"null"}
            f.types = declared if f.types is None else _intersect_types(f.types, declared)
        for keyword_group, kind in ((_OBJECT_KEYWORDS, "object"), (_ARRAY_KEYWORDS, "array"),
                                    (_STRING_KEYWORDS, "string"), (_NUMBER_KEYWORDS, "number")):
            if keyword_group & s.keys():
                f.inferred.add(kind)
        allowed = [s["const"]] if "const" in s else s.get("enum")
        if isinstance(allowed, list):
            if f.enum is None:
                f.enum = list(allowed)
            else:
                keep = {_canonical(v) for v in allowed}
                f.enum = [v for v in f.enum if _canonical(v) in keep]
        if "example" in s:
            f.examples.append(s["example"])
        if isinstance(s.get("examples"), list):
            f.examples.extend(s["examples"])
        if "default" in s:
            f.examples.append(s["default"])
        if "not" in s:
            f.nots.append(loc.child(s["not"], "not"))
            negated = s["not"]
            if isinstance(negated, dict) and negated.keys() == {"type"}:
                f.excluded.update([negated["type"]] if isinstance(negated["type"], str) else negated["type"])
        if isinstance(s.get("format"), str) and f.fmt is None:
            f.fmt = s["format"]
            if f.fmt in _INTEGER_FORMATS:
                f.inferred.add("integer")
            elif f.fmt in _NUMBER_FORMATS:
                f.inferred.add("number")
            else:
                f.inferred.add("string")
        _merge_string(f, s)
        _merge_number(f, s)
        _merge_array(f, s, loc)
        _merge_object(f, s, loc)
    return f


def _merge_string(f: _Facets, s: dict[str, Any]) -> None:
    if "minLength" in s:
        f.min_length = max(f.min_length, s["minLength"])
    if "maxLength" in s:
        f.max_length = s["maxLength"] if f.max_length is None else min(f.max_length, s["maxLength"])
    if isinstance(s.get("pattern"), str):
        f.patterns.append(s["pattern"])


def _merge_number(f: _Facets, s: dict[str, Any]) -> None:
    # OpenAPI 3.0 spells exclusivity as a boolean next to minimum/maximum; 3.1 as the bound itself.
    for bound, excl, lower in (("minimum", "exclusiveMinimum", True), ("maximum", "exclusiveMaximum", False)):
        flag = s.get(excl)
        candidates = []
        if bound in s:
            candidates.append((s[bound], flag is True))
        if isinstance(flag, int | float) and not isinstance(flag, bool):
            candidates.append((flag, True))
        for candidate in candidates:
            if lower:
                f.lo = _tighter(f.lo, candidate, True)
            else:
                f.hi = _tighter(f.hi, candidate, False)
    if isinstance(s.get("multipleOf"), int | float):
        f.multiples.append(s["multipleOf"])


def _merge_array(f: _Facets, s: dict[str, Any], loc: _Loc) -> None:
    if "items" in s:
        f.items.append(loc.child(s["items"], "items"))
    for i, sub in enumerate(s.get("prefixItems", [])):
        if i == len(f.prefix):
            f.prefix.append([])
        f.prefix[i].append(loc.child(sub, f"prefixItems/{i}"))
    if "minItems" in s:
        f.min_items = max(f.min_items or 0, s["minItems"])
    if "maxItems" in s:
        f.max_items = s["maxItems"] if f.max_items is None else min(f.max_items, s["maxItems"])
    f.unique = f.unique or s.get("uniqueItems") is True


def _merge_object(f: _Facets, s: dict[str, Any], loc: _Loc) -> None:
    for name, sub in (s.get("properties") or {}).items():
        f.props.setdefault(name, []).append(loc.child(sub, f"properties/{escape_token(name)}"))
    for name in s.get("required", []):
        if name not in f.required:
            f.required.append(name)
    for regex, sub in (s.get("patternProperties") or {}).items():
        f.pattern_props.append((regex, loc.child(sub, f"patternProperties/{escape_token(regex)}")))
    if "additionalProperties" in s:
        f.additional = (f.additional or []) + [loc.child(s["additionalProperties"], "additionalProperties")]
        if s["additionalProperties"] is False:
            f.closed.append((frozenset(s.get("properties") or {}), list(s.get("patternProperties") or {})))
    if "propertyNames" in s:
        f.names.append(loc.child(s["propertyNames"], "propertyNames"))
    if "minProperties" in s:
        f.min_props = max(f.min_props, s["minProperties"])
    if "maxProperties" in s:
        f.max_props = s["maxProperties"] if f.max_props is None else min(f.max_props, s["maxProperties"])


class SchemaGenerator:
    """Builds plausible instances of a schema; one instance is meant to be reused for many calls."""

    def __init__(self, resolve: Resolve, *, max_depth: int = 5, locale: str = "en_US") -> None:
        self._resolve = resolve
        self._max_depth = max_depth
        self._locale = locale
        self._made: Faker | None = None
        # The shared Faker is reseeded per call, so concurrent calls would interleave its state.
        self._lock = threading.Lock()
        # Validators of the subschemas a choice is checked against, kept across calls (a list of 50 items checks
        # the same `oneOf` branches 50 times): compiling one inlines its `$ref`s, the bulk of a big item's cost.
        self._validators: BoundedCache[tuple[tuple[int, str], ...], tuple[Any, Draft202012Validator]] = \
            BoundedCache(_VALIDATORS)
        self._types: BoundedCache[tuple[tuple[int, str], ...], tuple[Any, list[frozenset[str] | None]]] = \
            BoundedCache(_VALIDATORS)  # likewise
        self._expansions: BoundedCache[tuple[_LocKey, int], tuple[list[_Loc], list[_Choice]]] = \
            BoundedCache(_PLANS)  # and these
        self._merged: BoundedCache[tuple[_LocKey, ...], tuple[list[_Loc], _Facets]] = BoundedCache(_PLANS)

    @property
    def _faker(self) -> Faker:
        """Made once, on the first generated value (under the lock): importing Faker alone is 0.13 s of a
        start-up that often generates nothing (fixtures and examples answer); reseeding it is cheap. Names and
        words drawn evenly, not by how common they are: weighing a draw among thousands of names made a name or
        a URL ten times dearer (a third of the cost of a big generated answer), for no plausibility a mock needs."""
        if self._made is None:
            from faker import Faker

            self._made = Faker(self._locale, use_weighting=False)
        return self._made

    def generate(self, schema: Any, base_uri: str, rng: random.Random, *, static: bool = False,
                 name: str | None = None) -> Any:
        """Deterministic for the same schema and rng state; `static` as the module says; `name` is what the
        value is called (a plain string answered by `GET /version` is a version), as a property's name is."""
        with self._lock:
            self._faker.seed_instance(rng.getrandbits(64))
            run = _Run(rng, _Xeger(rng), static)
            return self._gen([_Loc(schema, base_uri, (), "#")], run, 0, name)

    # -- conjunctions and choices ------------------------------------------------

    def _gen(self, parts: list[_Loc], run: _Run, depth: int, name: str | None) -> Any:
        run.made += 1
        return self._choose(*self._expanded(parts, depth), run, depth, name)

    def _expanded(self, parts: list[_Loc], depth: int) -> tuple[list[_Loc], list[_Choice]]:
        """`_expand` of each part, kept (with `_facets`, this halves the cost of a value): every item of a list,
        and every answer of an operation, expands the same subschemas at the same places."""
        flat: list[_Loc] = []
        choices: list[_Choice] = []
        for loc in parts:
            def expand(loc: _Loc = loc) -> tuple[list[_Loc], list[_Choice]]:
                more_flat: list[_Loc] = []
                more_choices: list[_Choice] = []
                self._expand(loc, depth, more_flat, more_choices)
                return more_flat, more_choices

            more = self._expansions.made((_key(loc), depth), expand)
            flat += more[0]
            choices += more[1]
        return flat, choices

    def _facets(self, flat: list[_Loc]) -> _Facets:
        """`_merge`, kept: see `_expanded`. The facets are read, never changed."""
        return self._merged.made(tuple(_key(loc) for loc in flat),
                    lambda: (flat, _merge(flat, flat[0].where if flat else "#")))[1]

    def _expand(self, loc: _Loc, depth: int, flat: list[_Loc], choices: list[_Choice]) -> None:
        """Flatten `$ref` and `allOf` into `flat`; collect `oneOf`/`anyOf` to decide later."""
        s = loc.schema
        if s is True:
            return
        if s is False:
            raise GenerationError(f"schema at {loc.where} is `false`: no value satisfies it")
        if not isinstance(s, dict):
            raise GenerationError(f"schema at {loc.where} is not an object or boolean: {s!r}")
        if isinstance(s.get("$id"), str):
            loc = _Loc(s, _join(loc.base, s["$id"]), loc.refs, loc.where)
        flat.append(loc)
        if isinstance(s.get("$ref"), str) and (target := self._follow(s["$ref"], loc, depth)) is not None:
            self._expand(target, depth, flat, choices)
        for i, sub in enumerate(s.get("allOf", [])):
            self._expand(loc.child(sub, f"allOf/{i}"), depth, flat, choices)
        choices.extend(_Choice(kind, loc) for kind in ("oneOf", "anyOf") if isinstance(s.get(kind), list))

    def _follow(self, ref: str, loc: _Loc, depth: int) -> _Loc | None:
        """Resolve a `$ref`; None if its target is already part of this value's constraints.

        Raises on cycles that would never produce a finite value.
        """
        target, target_base = self._resolve(ref, loc.base)
        key = (id(target), target_base)
        where = _join(loc.base, ref)
        beyond = depth > self._max_depth
        for seen, seen_depth in loc.refs:
            if seen != key:
                continue
            if seen_depth == depth:
                # Reached again without nesting (e.g. Pet: oneOf [Cat], Cat: allOf [Pet]): the target
                # already constrains this very value, and X and X is X, so expanding it again adds nothing.
                return None
            if beyond and seen_depth > self._max_depth:
                raise GenerationError(
                    f"required recursion through {where} never ends: it is reached again beyond "
                    f"max_depth={self._max_depth} (via {loc.where})")
        return _Loc(target, target_base, loc.refs + ((key, depth),), where)

    def _choose(self, flat: list[_Loc], choices: list[_Choice], run: _Run, depth: int, name: str | None) -> Any:
        """Resolve the first pending `oneOf`/`anyOf` by trying branches in random order."""
        if not choices:
            return self._gen_flat(flat, run, depth, name)
        choice, rest = choices[0], choices[1:]
        branches = choice.loc.schema[choice.kind]
        order = list(range(len(branches)))
        run.rng.shuffle(order)
        if choice.kind == "oneOf" and order:
            order = [order[i % len(order)] for i in range(max(len(order), _ONEOF_TRIES))]
        fallback: Any = _MISSING
        error: GenerationError | None = None
        failed: set[int] = set()
        for i in order:
            if i in failed:
                continue
            extra = [choice.loc.child(branches[i], f"{choice.kind}/{i}"), *self._discriminator(choice, branches[i])]
            try:
                sub_flat, sub_choices = self._expanded(extra, depth)
                value = self._choose(flat + sub_flat, rest + sub_choices, run, depth, name)
            except GenerationError as exc:
                error = exc
                failed.add(i)
                continue
            if choice.kind == "anyOf" or self._matches_one(value, choice):
                return value
            if fallback is _MISSING:
                fallback = value
        if fallback is not _MISSING:
            return self._exclusive(fallback, choice, flat, run)
        raise error or GenerationError(f"{choice.kind} at {choice.loc.where} has no branches")

    def _exclusive(self, value: Any, choice: _Choice, flat: list[_Loc], run: _Run) -> Any:
        """A `oneOf` value that fits several branches (object shapes that do not forbid each other's properties:
        `{name, meow?}` and `{name, bark?}`) made to fit one: a property another branch declares, and this value
        lacks, set to null (or a text, a number), which that branch refuses and the others take as an extra. As
        it is, if nothing makes it exclusive (the branches are the same), and the response check has the last
        word."""
        if not isinstance(value, dict):
            return value
        branches = choice.loc.schema[choice.kind]
        for i, branch in enumerate(branches):
            parts: list[_Loc] = []
            try:
                self._expand(choice.loc.child(branch, f"{choice.kind}/{i}"), 0, parts, [])
            except GenerationError:
                continue
            for name in _merge(parts, choice.loc.where).props:
                if name in value:
                    continue
                for filler in (None, "", 0):
                    candidate = {**value, name: filler}
                    if self._matches_one(candidate, choice) and self._valid(candidate, flat):
                        return candidate
        return value

    def _discriminator(self, choice: _Choice, branch: Any) -> list[_Loc]:
        """Pin the discriminator property to the value that selects `branch`."""
        disc = choice.loc.schema.get("discriminator")
        if not (isinstance(disc, dict) and isinstance(disc.get("propertyName"), str)
                and isinstance(branch, dict) and isinstance(branch.get("$ref"), str)):
            return []
        ref = branch["$ref"]
        target = _join(choice.loc.base, ref)
        value = next((key for key, mapped in (disc.get("mapping") or {}).items()
                      if mapped == ref or _join(choice.loc.base, mapped) == target
                      or mapped == ref.rsplit("/", 1)[-1]), None)
        prop = disc["propertyName"]
        if value is None:
            # no explicit mapping: the implicit value is the schema's name, unless the branch itself says which
            # values its property takes (openai's `type: {enum: [local_shell]}`): then the branch decides
            if self._fixes_values(branch, choice.loc.base, prop, 0):
                return []
            value = ref.rsplit("/", 1)[-1]
        pinned = {"properties": {prop: {"const": value}}, "required": [prop]}
        return [choice.loc.child(pinned, "discriminator")]

    def _fixes_values(self, schema: Any, base: str, prop: str, depth: int) -> bool:
        """Whether a schema (through `$ref` and `allOf`) gives its property `prop` an `enum` or `const`."""
        if not isinstance(schema, dict) or depth > 8:
            return False
        if isinstance(schema.get("$ref"), str):
            target, target_base = self._resolve(schema["$ref"], base)
            if self._fixes_values(target, target_base, prop, depth + 1):
                return True
        node = (schema.get("properties") or {}).get(prop)
        if isinstance(node, dict) and ("enum" in node or "const" in node):
            return True
        return any(self._fixes_values(sub, base, prop, depth + 1) for sub in schema.get("allOf") or [])

    def _matches_one(self, value: Any, choice: _Choice) -> bool:
        admitting = [types for types in self._branch_types(choice) if types is None or json_types(value) & types]
        if len(admitting) == 1:  # `oneOf: [{type: 'null'}, {$ref: Thing}]`: the value's type fits one branch only,
            return True          # the one it was made from (validating a big object per choice was most of its cost)
        loc = choice.loc

        def compiled() -> tuple[Any, Draft202012Validator]:
            # the `oneOf` alone, checked at once: its validator reads only the branches the value may fit
            branches = [self._deref(branch, loc.base, frozenset()) for branch in loc.schema[choice.kind]]
            return loc.schema, Validator({"oneOf": branches}, format_checker=FORMAT_CHECKER)

        validator = self._validators.made(((id(loc.schema), loc.base), (0, choice.kind)), compiled)[1]
        # likewise when its type, `const` or a property's `const` (a component's `type: 2`) tells the branch
        return plausible(validator, validator.schema["oneOf"], value) == 1 or validator.is_valid(value)

    def _branch_types(self, choice: _Choice) -> list[frozenset[str] | None]:
        """The JSON types each branch of a choice admits (None: any), through `$ref`s and `allOf`; kept."""
        loc = choice.loc
        return self._types.made(((id(loc.schema), loc.base),),
                    lambda: (loc.schema, [self._types_of(b, loc.base, 0) for b in loc.schema[choice.kind]]))[1]

    def _types_of(self, schema: Any, base: str, depth: int) -> frozenset[str] | None:
        if schema is False:
            return frozenset()
        if not isinstance(schema, dict) or depth > 8:
            return None
        found: frozenset[str] | None = None
        declared = schema.get("type")
        if isinstance(declared, (str, list)):
            names = {declared} if isinstance(declared, str) else {t for t in declared if isinstance(t, str)}
            if "number" in names:
                names.add("integer")
            if schema.get("nullable") is True:
                names.add("null")
            found = frozenset(names)
        parts = [*schema.get("allOf", [])] if isinstance(schema.get("allOf"), list) else []
        if isinstance(schema.get("$ref"), str):
            parts.append(self._resolve(schema["$ref"], base))
        for part in parts:
            target, target_base = part if isinstance(part, tuple) else (part, base)
            types = self._types_of(target, target_base, depth + 1)
            if types is not None:
                found = types if found is None else found & types
        return found

    # -- validation ----------------------------------------------------------------

    def _valid(self, value: Any, locs: list[_Loc]) -> bool:
        def compiled() -> tuple[list[_Loc], Draft202012Validator]:
            schema = {"allOf": [self._deref(loc.schema, loc.base, frozenset()) for loc in locs]}
            return locs, Validator(schema, format_checker=FORMAT_CHECKER)

        key = tuple((id(loc.schema), loc.base) for loc in locs)
        return self._validators.made(key, compiled)[1].is_valid(value)

    def _deref(self, schema: Any, base: str, seen: frozenset[tuple[int, str]]) -> Any:
        """Inline `$ref`s and translate OpenAPI 3.0 keywords so plain jsonschema can validate.

        A reference already being inlined on the current path becomes `true`, which keeps
        the result finite at the cost of accepting more than the original schema.
        """
        if not isinstance(schema, dict):
            return schema
        if isinstance(schema.get("$id"), str):
            base = _join(base, schema["$id"])
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _DEREF_DROP:
                continue
            if key in _SUBSCHEMA:
                out[key] = ([self._deref(v, base, seen) for v in value] if isinstance(value, list)
                            else self._deref(value, base, seen))
            elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
                out[key] = {k: self._deref(v, base, seen) for k, v in value.items()}
            elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
                out[key] = [self._deref(v, base, seen) for v in value]
            else:
                out[key] = value
        if schema.get("nullable") is True and "type" in out:
            types = [out["type"]] if isinstance(out["type"], str) else list(out["type"])
            out["type"] = types if "null" in types else [*types, "null"]
        for bound, excl in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
            if isinstance(out.get(excl), bool):
                if out.pop(excl) and bound in out:
                    out[excl] = out.pop(bound)
        if isinstance(schema.get("$ref"), str):
            target, target_base = self._resolve(schema["$ref"], base)
            key = (id(target), target_base)
            inlined = True if key in seen else self._deref(target, target_base, seen | {key})
            return {"allOf": [inlined, out]} if out else inlined
        return out

    # -- values ------------------------------------------------------------------------

    def _gen_flat(self, flat: list[_Loc], run: _Run, depth: int, name: str | None) -> Any:
        facets = self._facets(flat)
        # `not` is honoured by rejection; raising lets an enclosing oneOf/anyOf try another branch.
        for _ in range(_NOT_TRIES):
            value = self._gen_value(facets, flat, run, depth, name)
            if not any(self._valid(value, [loc]) for loc in facets.nots):
                return value
        raise GenerationError(f"could not generate a value avoiding `not` at {facets.where}")

    def _gen_value(self, f: _Facets, flat: list[_Loc], run: _Run, depth: int, name: str | None) -> Any:
        if f.enum is not None:
            options = [v for v in f.enum if f.types is None or any(_is_type(v, t) for t in f.types)]
            if not options:
                raise GenerationError(f"enum/const at {f.where} has no value of an allowed type")
            return copy.deepcopy(run.rng.choice(options))
        if run.static:
            example = next((e for e in f.examples if self._valid(e, flat)), _MISSING)
            if example is not _MISSING:
                return copy.deepcopy(example)
        elif f.examples and run.rng.random() < _EXAMPLE_P:
            example = run.rng.choice(f.examples)
            if self._valid(example, flat):
                return copy.deepcopy(example)
        kind = self._pick_type(f, run, depth)
        match kind:
            case "null":
                return None
            case "boolean":
                return run.rng.random() < 0.5
            case "integer" | "number":
                return self._gen_number(f, run, kind == "integer")
            case "string":
                return self._gen_string(f, run, name)
            case "array":
                return self._gen_array(f, run, depth)
            case "object":
                return self._gen_object(f, run, depth)
        return self._gen_any(run, depth)

    def _pick_type(self, f: _Facets, run: _Run, depth: int) -> str | None:
        """Choose the JSON type to build; None means unconstrained."""
        if f.types is not None:
            candidates = set(f.types)
        elif f.inferred:
            candidates = set(f.inferred)
        elif f.excluded:
            candidates = set(_ANY_TYPES)
        else:
            return None
        candidates -= f.excluded | ({"integer"} if "number" in f.excluded else set())
        if not candidates:
            raise GenerationError(f"no JSON type satisfies every subschema at {f.where}")
        concrete = sorted(candidates - {"null"})  # sorted: set order varies between processes
        if "null" in candidates and (not concrete or depth > self._max_depth
                                     or (not run.static and run.rng.random() < _NULL_P)):
            return "null"
        return run.rng.choice(concrete)

    def _gen_any(self, run: _Run, depth: int) -> Any:
        """A small plausible value for a schema that constrains nothing."""
        fake = self._faker
        if depth > self._max_depth:
            return fake.word()
        makers: list[Callable[[], Any]] = [fake.word, lambda: run.rng.randint(0, 100),
                                           lambda: {fake.word(): fake.word()}]
        return run.rng.choice(makers)()

    def _gen_number(self, f: _Facets, run: _Run, integer: bool) -> int | float:
        given_lo, lo_excl = f.lo if f.lo is not None else (None, False)
        given_hi, hi_excl = f.hi if f.hi is not None else (None, False)
        # Unbounded sides get a human-sized window rather than the whole int64/float range.
        lo: float
        hi: float
        if given_lo is None and given_hi is None:
            lo, hi = (1, 1000) if integer else (0, 1000)
        elif given_lo is None:
            assert given_hi is not None
            hi, lo = given_hi, (0 if given_hi > 1 else given_hi - 1000)
        elif given_hi is None:
            lo, hi = given_lo, max(given_lo, 0) + 1000
        else:
            lo, hi = given_lo, given_hi
        if f.fmt in _NUMBER_FORMAT_RANGES:
            fmt_lo, fmt_hi = _NUMBER_FORMAT_RANGES[f.fmt]
            lo, lo_excl = (fmt_lo, False) if lo < fmt_lo else (lo, lo_excl)
            hi, hi_excl = (fmt_hi, False) if hi > fmt_hi else (hi, hi_excl)
        if integer or f.multiples:
            return self._gen_stepped(f, run, (lo, lo_excl), (hi, hi_excl), integer)
        for _ in range(_NUMBER_TRIES):
            value = run.rng.uniform(lo, hi)
            rounded = round(value, 2)
            for candidate in (rounded, value):
                if (candidate > lo or (not lo_excl and candidate == lo)) and (
                        candidate < hi or (not hi_excl and candidate == hi)):
                    return candidate
        raise GenerationError(f"no number fits the bounds at {f.where}")

    def _gen_stepped(self, f: _Facets, run: _Run, lo: tuple[float, bool], hi: tuple[float, bool],
                     integer: bool) -> int | float:
        """Pick k * step inside the bounds, step being the lcm of every multipleOf (and 1 for integers)."""
        if integer and not f.multiples:  # most numbers: the same draw as below, without fractions (a third dearer)
            low = math.ceil(lo[0]) + (1 if lo[1] and math.ceil(lo[0]) == lo[0] else 0)
            high = math.floor(hi[0]) - (1 if hi[1] and math.floor(hi[0]) == hi[0] else 0)
            if low > high:
                raise GenerationError(f"no integer fits the bounds at {f.where}")
            return run.rng.randint(low, high)
        step = Fraction(1) if integer else None
        for m in f.multiples:
            frac = Fraction(repr(m)) if isinstance(m, float) else Fraction(m)
            if frac <= 0:
                raise GenerationError(f"multipleOf must be positive at {f.where}")
            step = frac if step is None else Fraction(math.lcm(step.numerator, frac.numerator),
                                                      math.gcd(step.denominator, frac.denominator))
        assert step is not None
        lo_f, hi_f = Fraction(lo[0]), Fraction(hi[0])
        k_lo = math.ceil(lo_f / step)
        if lo[1] and k_lo * step == lo_f:
            k_lo += 1
        k_hi = math.floor(hi_f / step)
        if hi[1] and k_hi * step == hi_f:
            k_hi -= 1
        if k_lo > k_hi:
            raise GenerationError(f"no {'integer' if integer else 'multiple'} fits the bounds at {f.where}")
        value: int | float = 0
        for _ in range(_NUMBER_TRIES):
            exact = run.rng.randint(k_lo, k_hi) * step
            value = int(exact) if exact.denominator == 1 else float(exact)
            # Validators commonly test multipleOf with float division; prefer values that survive it.
            if all(isinstance(value, int) and isinstance(m, int) or (value / m).is_integer() for m in f.multiples):
                return value
        return value

    def _gen_string(self, f: _Facets, run: _Run, name: str | None) -> str:
        if f.patterns:
            return self._gen_pattern(f, run)
        fake = self._faker
        maker = _FORMATS.get(f.fmt or "") or _hint_for(name) or (lambda fk: fk.word())
        value = maker(fake)
        for _ in range(_STRING_TRIES):
            if f.min_length <= len(value) and (f.max_length is None or len(value) <= f.max_length):
                return value
            value = maker(fake)
        if len(value) < f.min_length:
            value += fake.lexify("?" * (f.min_length - len(value)), letters=string.ascii_lowercase)
        if f.max_length is not None:
            value = value[:f.max_length]
            if len(value.rstrip()) >= f.min_length:
                value = value.rstrip()
        return value

    def _gen_pattern(self, f: _Facets, run: _Run) -> str:
        """Sample the first pattern until a string also fits the other patterns and length bounds."""
        best: str | None = None
        for attempt in range(_PATTERN_TRIES):
            # Short repeats first for realism, growing only as far as a minLength needs.
            cap = min(_SHORT_REPEAT << (attempt // _ATTEMPTS_PER_CAP), _LONG_REPEAT)
            value = _sample(run, f.patterns[0], cap if f.max_length is None else min(cap, f.max_length), f.where)
            if not all(_search(p, value, f.where) for p in f.patterns):
                continue
            if f.min_length <= len(value) and (f.max_length is None or len(value) <= f.max_length):
                return value
            if best is None or self._length_gap(value, f) < self._length_gap(best, f):
                best = value
        if best is None:
            raise GenerationError(f"could not produce a string matching every pattern at {f.where}")
        return best

    @staticmethod
    def _length_gap(value: str, f: _Facets) -> int:
        over = len(value) - f.max_length if f.max_length is not None else 0
        return max(f.min_length - len(value), over, 0)

    def _gen_array(self, f: _Facets, run: _Run, depth: int) -> list[Any]:
        n_prefix = len(f.prefix)
        closed = any(loc.schema is False for loc in f.items)
        if depth > self._max_depth:
            lo = hi = f.min_items or 0
        else:
            default_hi = n_prefix if n_prefix and not f.items else 3
            hi = f.max_items if f.max_items is not None else max(f.min_items or 0, default_hi)
            if closed:
                hi = min(hi, n_prefix)
            lo = f.min_items if f.min_items is not None else min(n_prefix or 1, hi)
        if lo > hi:
            raise GenerationError(f"array at {f.where} cannot satisfy minItems={lo} with at most {hi} items")
        count = lo if run.static else run.rng.randint(lo, hi)
        result: list[Any] = []
        seen: set[str] = set()
        static = run.static
        for i in range(count):
            parts = f.prefix[i] if i < n_prefix else f.items
            for attempt in range(_UNIQUE_TRIES if f.unique else 1):
                # a static item is its example, the same each time: once taken, unique items are made varied
                run.static = static and attempt == 0
                try:
                    value = self._gen(parts, run, depth + 1, None)
                finally:
                    run.static = static
                if not f.unique or _canonical(value) not in seen:
                    break
            else:
                if len(result) >= lo:
                    break
                raise GenerationError(f"array at {f.where} cannot hold {lo} unique items")
            seen.add(_canonical(value))
            result.append(value)
        return result

    def _gen_object(self, f: _Facets, run: _Run, depth: int) -> dict[str, Any]:
        minimal = depth > self._max_depth
        names = list(f.required)
        optional = [n for n in f.props if n not in names and all(loc.schema is not False for loc in f.props[n])
                    and all(n in declared or any(_search(r, n, f.where) for r in regexes) for declared, regexes in
                            f.closed)]
        if minimal:  # past the depth limit, the declared properties that end there still fill the object
            optional = [n for n in optional if self._leaf(self._key_parts(n, f), depth + 1)]
        if run.static:
            names += [n for n in optional if run.made < _STATIC_BUDGET
                      and not any(self._circular(loc) for loc in f.props[n])]
        else:
            names += [n for n in optional if run.rng.random() < _OPTIONAL_P]
        # Sources of undeclared keys: each patternProperties regex, and if additionalProperties allows, words (or
        # values of `propertyNames`, which every key must fit).
        pattern_makers: list[Callable[[], Any]] = [
            partial(_sample, run, regex, _SHORT_REPEAT, f.where) for regex, _ in f.pattern_props]
        word_makers: list[Callable[[], Any]] = (
            [] if any(loc.schema is False for loc in f.additional or [])
            else [partial(self._gen, f.names, run, depth + 1, None)] if f.names else [self._faker.word])

        def add_key(make: Callable[[], Any]) -> None:
            for _ in range(_KEY_TRIES):
                key = make()
                if (isinstance(key, str) and key not in names and key not in f.props
                        and (not f.names or self._valid(key, f.names))):
                    names.append(key)
                    return

        if not minimal and not f.props:
            # Only an explicit additionalProperties invites invented keys.
            for make in pattern_makers + (word_makers if f.additional is not None else []):
                for _ in range(run.rng.randint(0, 2)):
                    add_key(make)
        # minProperties: optional declared names first, then invented keys.
        names += [n for n in optional if n not in names][:max(f.min_props - len(names), 0)]
        fillers = pattern_makers + word_makers
        for make in itertools.islice(itertools.cycle(fillers), f.min_props * _KEY_TRIES):
            if len(names) >= f.min_props:
                break
            add_key(make)
        if len(names) < f.min_props:
            raise GenerationError(f"object at {f.where} cannot reach minProperties={f.min_props}")
        if f.max_props is not None and len(names) > f.max_props:
            if len(f.required) > f.max_props:
                raise GenerationError(f"object at {f.where} requires more properties than maxProperties allows")
            names = names[:f.max_props]
        return {n: self._gen(self._key_parts(n, f), run, depth + 1, n) for n in names}

    def _circular(self, loc: _Loc) -> bool:
        """Whether an optional property leads straight back to a schema this value is already inside
        `_RECURSIVE_LEVELS` times (`parent: {$ref: Node}`, `children: {items: {$ref: Node}}`): a static answer
        nests a tree that deep, to show its shape, and leaves the property out below, rather than nest it to the
        depth limit."""
        schema = loc.schema
        if not isinstance(schema, dict):
            return False
        candidates = [schema, schema.get("items")] + [b for k in ("anyOf", "oneOf") for b in schema.get(k) or []]
        inside = [key for key, _ in loc.refs]
        for node in candidates:
            if isinstance(node, dict) and isinstance(node.get("$ref"), str):
                target, base = self._resolve(node["$ref"], loc.base)
                if inside.count((id(target), base)) >= _RECURSIVE_LEVELS:
                    return True
        return False

    def _leaf(self, parts: list[_Loc], depth: int) -> bool:
        """Whether a value ends where it is (a text, a number, a boolean: no object or array, nor a choice that
        may be one), so the depth limit need not leave it out."""
        try:
            flat, choices = self._expanded(parts, depth)
        except GenerationError:
            return False
        f = self._facets(flat)
        if choices:
            return False
        if f.enum is not None:
            return not any(isinstance(value, dict | list) for value in f.enum)
        kinds = f.types if f.types is not None else f.inferred
        return not {"object", "array"} & kinds if kinds else f.types is None

    @staticmethod
    def _key_parts(name: str, f: _Facets) -> list[_Loc]:
        """Every subschema a property value must satisfy, as JSON Schema applies them."""
        parts = list(f.props.get(name, []))
        matched = bool(parts)
        for regex, loc in f.pattern_props:
            if _search(regex, name, loc.where):
                parts.append(loc)
                matched = True
        if not matched:
            parts.extend(f.additional or [])
        return parts
