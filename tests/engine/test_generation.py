"""Tests for schema-driven data generation: every generated value must validate against its schema."""

from __future__ import annotations

import copy
import json
import random
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any
from urllib.parse import urldefrag, urlparse

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from mockserver.pipeline.generation import GenerationError, SchemaGenerator

BASE = "mem://doc"
SEEDS = range(12)

COMPONENTS: dict[str, Any] = {
    "Name": {"type": "string", "minLength": 2, "maxLength": 40},
    "Id": {"type": "string", "format": "uuid"},
    "Pet": {
        "type": "object",
        "required": ["petType", "name"],
        "properties": {"petType": {"type": "string"}, "name": {"$ref": "#/components/schemas/Name"}},
    },
    "Cat": {
        "allOf": [
            {"$ref": "#/components/schemas/Pet"},
            {"type": "object", "required": ["lives"],
             "properties": {"lives": {"type": "integer", "minimum": 1, "maximum": 9}}},
        ],
    },
    "Dog": {
        "allOf": [
            {"$ref": "#/components/schemas/Pet"},
            {"type": "object", "required": ["bark"], "properties": {"bark": {"type": "boolean"}}},
        ],
    },
    "Node": {
        "type": "object",
        "required": ["value", "children"],
        "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
        },
    },
    "LinkedList": {
        "type": "object",
        "required": ["head", "next"],
        "properties": {
            "head": {"type": "string"},
            "next": {"anyOf": [{"$ref": "#/components/schemas/LinkedList"}, {"type": "null"}]},
        },
    },
    "Loop": {
        "type": "object",
        "required": ["self"],
        "properties": {"self": {"$ref": "#/components/schemas/Loop"}},
    },
    "Expr": {
        "oneOf": [
            {"type": "integer"},
            {"type": "object", "required": ["op", "left", "right"], "additionalProperties": False,
             "properties": {"op": {"enum": ["+", "*"]},
                            "left": {"$ref": "#/components/schemas/Expr"},
                            "right": {"$ref": "#/components/schemas/Expr"}}},
        ],
    },
    "Person30": {
        "type": "object",
        "required": ["name", "nickname"],
        "properties": {
            "name": {"type": "string"},
            "nickname": {"type": "string", "nullable": True},
            "age": {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 120,
                    "exclusiveMaximum": True},
            "parent": {"type": "object", "nullable": True, "properties": {"name": {"type": "string"}}},
        },
    },
}


def document(schema: Any) -> dict[str, Any]:
    return {"components": {"schemas": copy.deepcopy(COMPONENTS)}, "x-test": schema}


def resolver(doc: dict[str, Any]):
    """Resolve JSON pointer fragments inside one in-memory document."""

    def resolve(ref: str, base: str) -> tuple[Any, str]:
        uri = urldefrag(base).url + ref if ref.startswith("#") else ref
        doc_uri, fragment = urldefrag(uri)
        assert doc_uri == BASE, uri
        node: Any = doc
        for token in filter(None, fragment.split("/")):
            node = node[token.replace("~1", "/").replace("~0", "~")]
        return node, uri

    return resolve


def to_jsonschema(node: Any) -> Any:
    """Translate OpenAPI 3.0 `nullable` and boolean exclusive bounds, for validation only."""
    if isinstance(node, list):
        return [to_jsonschema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: to_jsonschema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    for bound, excl in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if isinstance(out.get(excl), bool):
            if out.pop(excl) and bound in out:
                out[excl] = out.pop(bound)
    return out


def validator_for(doc: dict[str, Any]) -> Draft202012Validator:
    registry = Registry().with_resource(BASE, DRAFT202012.create_resource(to_jsonschema(doc)))
    return Draft202012Validator({"$ref": f"{BASE}#/x-test"}, registry=registry,
                                format_checker=Draft202012Validator.FORMAT_CHECKER)


def generate_all(schema: Any, seeds=SEEDS, max_depth: int = 5, static: bool = False) -> list[Any]:
    """Generate one value per seed and assert each validates and is JSON-serialisable."""
    doc = document(schema)
    gen = SchemaGenerator(resolver(doc), max_depth=max_depth)
    validator = validator_for(doc)
    values = []
    for seed in seeds:
        value = gen.generate(doc["x-test"], BASE, random.Random(seed), static=static)
        errors = [e.message for e in validator.iter_errors(value)]
        assert not errors, (seed, value, errors)
        json.dumps(value)
        values.append(value)
    return values


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


SCHEMAS: dict[str, Any] = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "null": {"type": "null"},
    "type list": {"type": ["integer", "string", "null"]},
    "enum": {"type": "string", "enum": ["red", "green", "blue"]},
    "enum mixed": {"enum": [1, "one", None, {"a": 1}]},
    "const": {"const": {"fixed": [1, 2]}},
    "nullable 3.0": {"type": "string", "nullable": True, "maxLength": 4},
    "string bounds": {"type": "string", "minLength": 30, "maxLength": 35},
    "string short": {"type": "string", "maxLength": 2},
    "slug pattern": {"type": "string", "pattern": r"^[a-z][a-z0-9_-]{0,63}$", "maxLength": 10},
    "semver pattern": {"type": "string", "pattern": r"^\d+\.\d+\.\d+$"},
    "pattern min length": {"type": "string", "pattern": r"^[A-Z]+$", "minLength": 12},
    "two patterns": {"allOf": [{"pattern": r"^[a-c]{1,6}$"}, {"pattern": "b"}], "type": "string"},
    "int bounds": {"type": "integer", "minimum": -5, "maximum": 5},
    "int exclusive 3.1": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 3},
    "number exclusive 3.0": {"type": "number", "minimum": 0, "maximum": 1, "exclusiveMinimum": True,
                             "exclusiveMaximum": True},
    "int multipleOf": {"type": "integer", "multipleOf": 7, "minimum": 10, "maximum": 100},
    "number multipleOf": {"type": "number", "multipleOf": 0.25, "maximum": 3},
    "cents": {"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 50},
    "only maximum": {"type": "integer", "exclusiveMaximum": 1},
    "int32": {"type": "integer", "format": "int32", "minimum": 2147483000},
    "int64": {"type": "integer", "format": "int64", "maximum": -9223372036854775000},
    "float": {"type": "number", "format": "float"},
    "array": {"type": "array", "items": {"type": "integer"}},
    "array bounds": {"type": "array", "items": {"type": "string"}, "minItems": 4, "maxItems": 6},
    "array max zero": {"type": "array", "items": {"type": "string"}, "maxItems": 0},
    "unique": {"type": "array", "uniqueItems": True, "minItems": 3, "items": {"enum": ["a", "b", "c", "d"]}},
    "tuple": {"type": "array", "prefixItems": [{"type": "string", "format": "date"}, {"type": "integer"}],
              "items": False},
    "tuple open": {"type": "array", "prefixItems": [{"const": "x"}], "items": {"type": "boolean"}, "minItems": 3},
    "object": {"type": "object", "required": ["id", "count"],
               "properties": {"id": ref("Id"), "count": {"type": "integer", "minimum": 0},
                              "tags": {"type": "array", "items": {"type": "string"}}}},
    "inferred object": {"properties": {"a": {"type": "string"}}, "required": ["a"]},
    "inferred array": {"items": {"type": "boolean"}},
    "additional schema": {"type": "object", "additionalProperties": {"type": "integer", "maximum": 3}},
    "additional true": {"type": "object", "additionalProperties": True, "minProperties": 1},
    "closed object": {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}},
                      "minProperties": 1},
    "max properties": {"type": "object", "maxProperties": 2,
                       "properties": {k: {"type": "string"} for k in "abcdef"}},
    "pattern properties": {"type": "object", "patternProperties": {"^x-[a-z]+$": {"type": "integer"}},
                           "additionalProperties": False, "minProperties": 2},
    "required without property": {"type": "object", "required": ["x-a"],
                                   "patternProperties": {"^x-": {"type": "boolean"}}},
    "nested refs": {"type": "array", "items": ref("Cat"), "minItems": 1},
    "ref with siblings 3.1": {"$ref": "#/components/schemas/Name", "maxLength": 5},
    "allOf merge": {"allOf": [{"type": "integer", "minimum": 3}, {"type": "number", "maximum": 8},
                              {"multipleOf": 2}]},
    "allOf objects": {"allOf": [ref("Pet"), {"required": ["owner"], "properties": {"owner": ref("Name")}}]},
    "oneOf exclusive": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
    "oneOf discriminator": {"oneOf": [ref("Cat"), ref("Dog")],
                            "discriminator": {"propertyName": "petType",
                                              "mapping": {"cat": "#/components/schemas/Cat", "dog": "Dog"}}},
    "anyOf": {"anyOf": [{"type": "string", "format": "email"}, {"type": "integer", "minimum": 1000}]},
    "nested oneOf in allOf": {"allOf": [{"oneOf": [{"type": "string"}, {"type": "boolean"}]},
                                        {"not": {"type": "boolean"}}]},
    "not enum": {"type": "string", "enum": ["a", "b", "c"], "not": {"const": "a"}},
    "not type": {"not": {"type": ["string", "object"]}},
    "empty": {},
    "true": True,
    "array of anything": {"type": "array", "items": True, "minItems": 5},
    "recursive tree": ref("Node"),
    "recursive list": ref("LinkedList"),
    "recursive expression": ref("Expr"),
    "openapi 3.0 object": ref("Person30"),
    "read/write only": {"type": "object", "required": ["a", "b"], "properties": {
        "a": {"type": "string", "readOnly": True}, "b": {"type": "string", "writeOnly": True}}},
    "with examples": {"type": "string", "maxLength": 3, "examples": ["ok", "far too long"], "example": "abc",
                      "default": "x"},
    "$id base": {"$id": "mem://doc", "properties": {"n": {"$ref": "#/components/schemas/Name"}}, "required": ["n"]},
}

FORMATS = ["uuid", "date-time", "date", "time", "email", "uri", "url", "uri-reference", "hostname", "ipv4", "ipv6",
           "byte", "binary", "password", "made-up-format"]


@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
@pytest.mark.parametrize("name", SCHEMAS)
def test_values_validate(name: str, static: bool) -> None:
    generate_all(SCHEMAS[name], static=static)


@pytest.mark.parametrize("fmt", FORMATS)
def test_formats_validate(fmt: str) -> None:
    generate_all({"type": "string", "format": fmt})


def test_format_values_are_realistic() -> None:
    def one(fmt: str, seed: int) -> str:
        return generate_all({"type": "string", "format": fmt}, seeds=[seed])[0]

    for seed in range(5):
        assert str(uuid.UUID(one("uuid", seed))) == one("uuid", seed)
        moment = datetime.fromisoformat(one("date-time", seed))
        assert moment.tzinfo is not None
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", one("date-time", seed))
        assert urlparse(one("uri", seed)).scheme in {"http", "https"}
        assert one("uri-reference", seed).startswith("/")
        assert "@" in one("email", seed)
        assert " " in one("made-up-format", seed) or one("made-up-format", seed).isalpha()


def test_pattern_with_length_bounds_is_honoured() -> None:
    values = generate_all({"type": "string", "pattern": r"^[a-z][a-z0-9_-]{0,63}$", "minLength": 3,
                           "maxLength": 8}, seeds=range(40))
    assert all(3 <= len(v) <= 8 for v in values)


def test_property_names_suggest_values() -> None:
    schema = {"type": "object", "required": ["name", "email", "userId", "description", "url"],
              "properties": {k: {"type": "string"} for k in ("name", "email", "userId", "description", "url")}}
    for value in generate_all(schema, seeds=range(5)):
        assert " " in value["name"]
        assert "@" in value["email"]
        assert re.fullmatch(r"[a-z0-9]+", value["userId"])
        assert value["description"].endswith(".")
        assert value["url"].startswith("http")


def test_discriminator_names_the_branch() -> None:
    values = generate_all(SCHEMAS["oneOf discriminator"], seeds=range(20))
    for value in values:
        assert value["petType"] == ("cat" if "lives" in value else "dog")
    assert {v["petType"] for v in values} == {"cat", "dog"}


def test_oneof_prefers_a_value_matching_one_branch() -> None:
    values = generate_all(SCHEMAS["oneOf exclusive"], seeds=range(20))
    assert all(isinstance(v, float) and not v.is_integer() for v in values)


def test_nullable_is_sometimes_null_and_always_null_beyond_depth() -> None:
    values = generate_all({"type": ["string", "null"]}, seeds=range(60))
    assert None in values and any(isinstance(v, str) for v in values)
    deep = generate_all({"type": "array", "items": {"type": "string", "nullable": True}, "minItems": 2},
                        max_depth=0, seeds=range(5))
    assert all(len(v) >= 2 and set(v) == {None} for v in deep)


def test_optional_properties_are_sometimes_present() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    values = generate_all(schema, seeds=range(30))
    assert {} in values or any(len(v) < 2 for v in values)
    assert any(len(v) == 2 for v in values)


def test_additional_keys_only_without_declared_properties() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True}
    assert all(set(v) <= {"a"} for v in generate_all(schema, seeds=range(20)))
    extra = generate_all(SCHEMAS["additional schema"], seeds=range(20))
    assert any(extra) and all(len(v) <= 2 for v in extra)


def test_invalid_examples_are_never_used() -> None:
    values = generate_all(SCHEMAS["with examples"], seeds=range(40))
    assert "far too long" not in values
    assert {"ok", "abc", "x"} & set(values)


def test_deterministic_per_seed() -> None:
    schema = {"type": "object", "required": ["id", "at", "items", "pet"],
              "properties": {"id": ref("Id"), "at": {"type": "string", "format": "date-time"},
                             "items": {"type": "array", "items": {"type": "number"}},
                             "pet": SCHEMAS["oneOf discriminator"], "name": {"type": "string"}}}
    doc = document(schema)
    gen = SchemaGenerator(resolver(doc))
    first = [gen.generate(doc["x-test"], BASE, random.Random(seed)) for seed in range(5)]
    # Interleaved calls on the same instance, and a fresh instance, must not change the outcome.
    again = [gen.generate(doc["x-test"], BASE, random.Random(seed)) for seed in reversed(range(5))][::-1]
    fresh = SchemaGenerator(resolver(doc))
    assert first == again == [fresh.generate(doc["x-test"], BASE, random.Random(s)) for s in range(5)]
    assert len({json.dumps(v, sort_keys=True) for v in first}) == 5


def test_uses_only_the_given_rng() -> None:
    doc = document(SCHEMAS["object"])
    gen = SchemaGenerator(resolver(doc))
    random.seed(1)
    a = gen.generate(doc["x-test"], BASE, random.Random(7))
    random.seed(2)
    assert gen.generate(doc["x-test"], BASE, random.Random(7)) == a


def test_concurrent_calls_stay_deterministic() -> None:
    doc = document(SCHEMAS["object"])
    gen = SchemaGenerator(resolver(doc))
    expected = [gen.generate(doc["x-test"], BASE, random.Random(seed)) for seed in range(20)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda seed: gen.generate(doc["x-test"], BASE, random.Random(seed)), range(20)))
    assert got == expected


def test_deep_recursion_terminates() -> None:
    values = generate_all(ref("Node"), max_depth=8, seeds=range(5))

    def depth(node: dict[str, Any]) -> int:
        return 1 + max((depth(c) for c in node["children"]), default=0)

    assert all(depth(v) <= 10 for v in values)
    assert any(depth(v) > 2 for v in values)
    lists = generate_all(ref("LinkedList"), max_depth=2, seeds=range(5))
    assert all(v["next"] is None or v["next"]["next"] is None or v["next"]["next"]["next"] is None for v in lists)


def test_recursion_with_max_depth_zero() -> None:
    assert all(v["children"] == [] for v in generate_all(ref("Node"), max_depth=0))
    for value in generate_all(ref("Expr"), max_depth=0):
        assert isinstance(value, int) or (isinstance(value["left"], int) and isinstance(value["right"], int))


def test_endless_required_recursion_raises_with_location() -> None:
    doc = document(ref("Loop"))
    with pytest.raises(GenerationError, match=r"#/components/schemas/Loop"):
        SchemaGenerator(resolver(doc)).generate(doc["x-test"], BASE, random.Random(0))


def test_parent_with_oneof_of_children_that_extend_it() -> None:
    """Pet: oneOf [Cat, Dog] where Cat and Dog are allOf [Pet, ...]: a common, self-referencing pattern."""
    doc = document(ref("Animal"))
    schemas = doc["components"]["schemas"]
    schemas["Animal"] = {"type": "object", "required": ["kind"], "properties": {"kind": {"type": "string"}},
                         "oneOf": [ref("Fish"), ref("Bird")],
                         "discriminator": {"propertyName": "kind"}}
    schemas["Fish"] = {"allOf": [ref("Animal"), {"required": ["fins"], "properties": {"fins": {"type": "integer"}}}]}
    schemas["Bird"] = {"allOf": [ref("Animal"), {"required": ["wings"], "properties": {"wings": {"type": "integer"}}}]}
    gen = SchemaGenerator(resolver(doc))
    values = [gen.generate(doc["x-test"], BASE, random.Random(seed)) for seed in range(10)]
    assert {v["kind"] for v in values} == {"Fish", "Bird"}
    assert all(("fins" in v) == (v["kind"] == "Fish") and ("wings" in v) == (v["kind"] == "Bird") for v in values)


@pytest.mark.parametrize("schema", [
    False,
    {"type": "object", "required": ["a"], "properties": {"a": False}},
    {"allOf": [{"type": "string"}, {"type": "integer"}]},
    {"enum": ["a"], "type": "integer"},
    {"type": "integer", "minimum": 5, "maximum": 4},
    {"type": "array", "minItems": 3, "maxItems": 1},
    {"type": "object", "additionalProperties": False, "minProperties": 1},
    {"type": "string", "pattern": r"^[a-"},  # no regular expression at all (ECMA's `\p{L}` is read: test_prism_classes)
    {"type": "object", "patternProperties": {r"^[a-": {"type": "string"}}, "minProperties": 1},
])
def test_unsatisfiable_schemas_raise(schema: Any) -> None:
    doc = document(schema)
    with pytest.raises(GenerationError):
        SchemaGenerator(resolver(doc)).generate(doc["x-test"], BASE, random.Random(0))


def test_false_names_the_location() -> None:
    doc = document({"type": "object", "required": ["a"], "properties": {"a": False}})
    with pytest.raises(GenerationError, match="properties/a"):
        SchemaGenerator(resolver(doc)).generate(doc["x-test"], BASE, random.Random(0))


def test_static_values_are_the_schema_s_examples_first() -> None:
    """Static (the mock's default): `example`, then `examples`, then `default`, the first that fits, every time."""
    assert set(generate_all(SCHEMAS["with examples"], static=True)) == {"abc"}
    fitting = generate_all({"type": "string", "maxLength": 3, "examples": ["far too long", "ok"]}, static=True)
    assert set(fitting) == {"ok"}
    assert set(generate_all({"type": "integer", "default": 3}, static=True)) == {3}
    person = {"type": "object", "required": ["honey"],
              "properties": {"honey": {"type": "string", "example": "killer bees"},
                             "hive": {"type": "integer", "minimum": 1}, "queen": {"type": "string", "default": "Bea"},
                             "nick": {"type": ["string", "null"]}}}
    for value in generate_all(person, seeds=range(20), static=True):
        assert value["honey"] == "killer bees" and value["queen"] == "Bea"
        assert value["hive"] >= 1 and isinstance(value["nick"], str)  # optional: present; nullable: not null


def test_static_values_nest_optional_recursion_three_levels_and_keep_arrays_short() -> None:
    tree = {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "parent": ref("Node"),
                           "kids": {"type": "array", "items": ref("Node")},
                           "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2}}}
    doc = document(tree)
    doc["components"]["schemas"]["Node"] = tree
    gen = SchemaGenerator(resolver(doc))

    def check(node: dict[str, Any], level: int) -> None:
        inner = level < 3  # the tree shows its shape, three levels deep, then stops
        assert set(node) == ({"name", "tags", "parent", "kids"} if inner else {"name", "tags"})
        assert len(node["tags"]) == 2
        if inner:
            assert len(node["kids"]) == 1
            check(node["parent"], level + 1)
            check(node["kids"][0], level + 1)

    for seed in range(5):
        check(gen.generate(ref("Node"), BASE, random.Random(seed), static=True), 1)


def test_a_wide_deep_static_value_stays_bounded() -> None:
    """Every optional property of a wide schema nested deep would be thousands of values: a static answer stops
    adding optional properties past a budget, and stays valid."""
    level: Any = {"type": "string"}
    for _ in range(5):
        level = {"type": "object", "properties": {f"p{i}": copy.deepcopy(level) for i in range(8)}}
    [value] = generate_all(level, seeds=[0], static=True)
    assert 50 < len(json.dumps(value)) < 40_000


@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
@pytest.mark.parametrize("shapes", [
    [{"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "meow": {"type": "boolean"}}},
     {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "bark": {"type": "boolean"}}}],
    [{"type": "object", "properties": {"a": {"type": "string"}}},
     {"type": "object", "properties": {"b": {"type": "integer"}}}],
], ids=["pets", "optional only"])
def test_oneof_of_overlapping_object_shapes_fits_exactly_one(shapes: list[Any], static: bool) -> None:
    """Neither shape forbids the other's properties, so most values fit both: the value is made to fit one (the
    other branch's property it lacks is null, which that branch refuses)."""
    branches = [Draft202012Validator(b) for b in shapes]
    for value in generate_all({"oneOf": shapes}, seeds=range(20), static=static):  # validates the oneOf too
        assert sum(b.is_valid(value) for b in branches) == 1
