"""The fixture format itself, as a JSON Schema: a hand-written file that breaks it is reported with the same
file/line/pointer/rule as a fixture that breaks the API's schema. docs/FIXTURES.md explains it for people."""
from __future__ import annotations

from itertools import combinations
from typing import Any

_REF_KEYS = {"path", "query", "header", "cookie", "caller"}
_REFERENCE = {
    "type": "object",
    "minProperties": 1,
    "properties": {**{k: {"type": "string"} for k in _REF_KEYS}, "split": {"type": "string", "minLength": 1}},
    "additionalProperties": False,
    "oneOf": [{"required": [k]} for k in sorted(_REF_KEYS)],
}
_OPERATORS = ("equals", "notEquals", "in", "startsWith")
_COMPARE_PROPS = {**{op: {} for op in _OPERATORS}, "ignoreCase": {"type": "boolean"}}
_ONE_OPERATOR = {"oneOf": [{"required": [op]} for op in (*_OPERATORS, "present")]}
_ANSWERS = ("list", "item", "respond", "create", "update", "replace", "delete")


def _write(into: str) -> dict[str, Any]:
    """`update`/`replace` (`in`) and `delete` (`from`): the collection, and the rules that find the item."""
    return {"type": "object", "required": [into, "where"], "additionalProperties": False,
            "properties": {into: {"type": "string"}, "where": {"$ref": "#/$defs/filters"}}}


SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "settings": {"$ref": "#/$defs/settings"},
        "collections": {"type": "object", "additionalProperties": {"$ref": "#/$defs/collection"}},
        "operations": {"type": "object", "additionalProperties": {"$ref": "#/$defs/operation"}},
        "scenarios": {"type": "array"},
    },
    "$defs": {
        "settings": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "requestIdHeader": {"type": "string", "minLength": 1},
                "stateful": {"type": "boolean"},
                "errors": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["template"],
                    "properties": {
                        "mediaType": {"type": "string"},
                        "template": {"type": "object"},
                        "codes": {"type": "object", "propertyNames": {"pattern": "^[1-5][0-9][0-9]$"},
                                  "additionalProperties": {"type": "string"}},
                    },
                },
                "auth": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "defaultTenant": {"type": "string"},
                        "tokens": {"type": "object", "additionalProperties": {
                            "type": "object",
                            "required": ["caller"],
                            "additionalProperties": False,
                            "properties": {"caller": {"type": "string"}, "tenant": {"type": "string"},
                                           "expired": {"type": "boolean"}, "revoked": {"type": "boolean"}},
                        }},
                    },
                },
            },
        },
        "collection": {
            "type": "object",
            "additionalProperties": False,
            "required": ["items"],
            "properties": {
                "key": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "private": {"type": "array", "items": {"type": "string"}},
                "schema": {"type": "string"},
                "items": {"type": "array", "items": {"type": "object"}},
            },
        },
        "value": {"anyOf": [{"$ref": "#/$defs/reference"}, {"not": {"type": "object"}}]},
        "reference": _REFERENCE,
        "condition": {
            "type": "object",
            "anyOf": [
                {"required": ["all"], "properties": {"all": {"type": "array", "items": {"$ref": "#/$defs/condition"}}},
                 "maxProperties": 1},
                {"required": ["any"], "properties": {"any": {"type": "array", "items": {"$ref": "#/$defs/condition"}}},
                 "maxProperties": 1},
                {"required": ["not"], "properties": {"not": {"$ref": "#/$defs/condition"}}, "maxProperties": 1},
                {
                    "properties": {**{k: {"type": "string"} for k in _REF_KEYS}, **_COMPARE_PROPS,
                                   "present": {"type": "boolean"}},
                    "additionalProperties": False,
                    "allOf": [{"oneOf": [{"required": [k]} for k in sorted(_REF_KEYS)]}, _ONE_OPERATOR],
                },
            ],
        },
        "filter": {
            "type": "object",
            "required": ["field"],
            "properties": {"field": {"type": "string", "minLength": 1}, **_COMPARE_PROPS,
                           "present": {"type": "boolean"}, "when": {"$ref": "#/$defs/condition"}},
            "additionalProperties": False,
            **_ONE_OPERATOR,
        },
        "filters": {"type": "array", "items": {"$ref": "#/$defs/filter"}},
        "error": {
            "type": "object",
            "required": ["status"],
            "properties": {"status": {"type": "integer", "minimum": 400, "maximum": 599},
                           "code": {"type": "string"}, "message": {"type": "string"},
                           "details": {"type": "object"}},
        },
        "operation": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "require": {"type": "array", "items": {
                    "allOf": [{"$ref": "#/$defs/error"}],
                    "required": ["from", "where"],
                    "properties": {"from": {"type": "string"}, "where": {"$ref": "#/$defs/filters"},
                                   "status": {}, "code": {}, "message": {}, "details": {}},
                    "additionalProperties": False,
                }},
                "reject": {"type": "array", "items": {
                    "allOf": [{"$ref": "#/$defs/error"}],
                    "required": ["when"],
                    "properties": {"when": {"$ref": "#/$defs/condition"},
                                   "status": {}, "code": {}, "message": {}, "details": {}},
                    "additionalProperties": False,
                }},
                "list": {
                    "type": "object",
                    "required": ["from"],
                    "additionalProperties": False,
                    "properties": {
                        "from": {"type": "string"},
                        "where": {"$ref": "#/$defs/filters"},
                        "latest": {
                            "type": "object",
                            "required": ["by", "version"],
                            "additionalProperties": False,
                            "properties": {
                                "by": {"type": "string"},
                                "version": {"type": "object", "required": ["field"], "additionalProperties": False,
                                            "properties": {"field": {"type": "string"},
                                                           "type": {"enum": ["semver", "number", "string"]}}},
                                "prefer": {"$ref": "#/$defs/filter"},
                            },
                        },
                        "filters": {"$ref": "#/$defs/filters"},
                        "order": {"type": "array", "items": {
                            "type": "object", "required": ["by"], "additionalProperties": False,
                            "properties": {"by": {"type": "string"}, "desc": {"type": "boolean"},
                                           "type": {"enum": ["semver", "number", "string"]}},
                        }},
                        "page": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {k: {"type": "string"} for k in
                                           ("items", "hasMore", "nextCursor", "limit", "cursor")},
                        },
                    },
                },
                "item": {
                    "type": "object",
                    "required": ["from", "where"],
                    "additionalProperties": False,
                    "properties": {"from": {"type": "string"}, "where": {"$ref": "#/$defs/filters"},
                                   "status": {"type": "integer"}},
                },
                "create": {"type": "object", "required": ["into"], "additionalProperties": False,
                           "properties": {"into": {"type": "string"}, "key": {"type": "string", "minLength": 1}}},
                "update": _write("in"),
                "replace": _write("in"),
                "delete": _write("from"),
                "respond": {"type": "array", "minItems": 1, "items": {
                    "type": "object",
                    "required": ["status"],
                    "additionalProperties": False,
                    "properties": {"when": {"$ref": "#/$defs/condition"},
                                   "status": {"type": "integer", "minimum": 100, "maximum": 599},
                                   "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                                   "mediaType": {"type": "string"},
                                   "body": {}},
                }},
            },
            # one way to answer: a list, an item, fixed answers, or one write
            "not": {"anyOf": [{"required": list(pair)} for pair in combinations(_ANSWERS, 2)]},
        },
    },
}
