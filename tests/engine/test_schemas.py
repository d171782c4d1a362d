"""The mock's validators read only the `oneOf`/`anyOf` branches a value is not told apart from at a glance (by
type, `const`/`enum`, or a property's `const`/`enum`), and say exactly what jsonschema says."""
import pytest
from jsonschema import Draft202012Validator

from mockserver.spec.schemas import FORMAT_CHECKER, Validator

SHAPES = {
    "$defs": {
        "Kind": {"type": "integer", "oneOf": [{"const": 1}, {"const": 2}, {"const": 3}]},
        "Button": {"type": "object", "required": ["type"],
                   "properties": {"type": {"type": "integer", "enum": [2]}, "label": {"type": "string"}}},
        "Row": {"allOf": [{"$ref": "#/$defs/Base"}],
                "properties": {"type": {"const": 1}, "components": {"type": "array",
                                                                      "items": {"$ref": "#/$defs/Component"}}}},
        "Base": {"type": "object", "required": ["type"], "properties": {"type": {"$ref": "#/$defs/Kind"}}},
        "Text": {"type": "object", "properties": {"type": {"enum": [3, 4]}, "text": {"type": "string"}},
                 "additionalProperties": False},
        "Component": {"oneOf": [{"$ref": "#/$defs/Row"}, {"$ref": "#/$defs/Button"}, {"$ref": "#/$defs/Text"}]},
    },
    "type": "object",
    "properties": {
        "components": {"type": "array", "items": {"$ref": "#/$defs/Component"}},
        "nonce": {"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]},
        "flag": {"anyOf": [{"const": True}, {"const": 1.5}, {"type": "null"}]},
        "either": {"oneOf": [{"type": "number"}, {"type": "integer", "minimum": 5}]},
        "tag": {"oneOf": [{"enum": ["a", {"x": 1}]}, {"type": "string"}]},
    },
}

INSTANCES = [
    {}, {"components": []},
    {"components": [{"type": 1, "components": [{"type": 2, "label": "ok"}, {"type": 3, "text": "hi"}]}]},
    {"components": [{"type": 2, "label": 5}]}, {"components": [{"type": 9}]}, {"components": [{"type": "2"}]},
    {"components": [{"type": 3, "text": "t", "extra": 1}]}, {"components": [{"type": 2.0}]},
    {"components": [{"type": True}]}, {"components": [{"label": "no type"}]}, {"components": [[]]},
    {"components": [{"type": 1, "components": [{"type": 1}]}]},
    {"nonce": 5}, {"nonce": "abc"}, {"nonce": "abcd"}, {"nonce": 5.0}, {"nonce": 5.5}, {"nonce": True},
    {"flag": True}, {"flag": 1}, {"flag": 1.5}, {"flag": None}, {"flag": False},
    {"either": 3}, {"either": 7}, {"either": 7.0}, {"either": 7.5},
    {"tag": "a"}, {"tag": "b"}, {"tag": {"x": 1}}, {"tag": {"x": 2}}, {"tag": 1},
]


@pytest.mark.parametrize("instance", INSTANCES, ids=[str(i) for i in range(len(INSTANCES))])
def test_a_value_is_judged_as_jsonschema_judges_it(instance):
    ours = Validator(SHAPES, format_checker=FORMAT_CHECKER)
    plain = Draft202012Validator(SHAPES, format_checker=FORMAT_CHECKER)
    assert ours.is_valid(instance) == plain.is_valid(instance)
    assert [e.message for e in ours.iter_errors(instance)] == [e.message for e in plain.iter_errors(instance)]
