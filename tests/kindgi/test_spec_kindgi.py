"""Checks of the Kindgi OpenAPI description (spec/kindgi.yaml).

- the document is a valid OpenAPI 3.1 description;
- every `example` / `examples[*].value` (media types, parameters, headers)
  validates against its schema, with $refs resolved against the document and
  formats checked;
- the four operations, their statuses, headers and error codes are as the
  Kindgi reference pages give them.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPEC_PATH = Path(__file__).resolve().parents[2] / "spec" / "kindgi.yaml"
DOC_URI = "urn:kindgi:spec"
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}

OPERATIONS = {
    ("/v1/test-sets", "get"): {
        "operationId": "listTestSets",
        "summary": "List workspace test sets",
        "statuses": {"200", "400", "401", "503"},
        "codes": {"400": None, "401": None, "503": "database-busy"},
    },
    ("/v1/test-sets/{testSetId}/versions/{version}/cases", "get"): {
        "operationId": "listTestSetVersionCases",
        "summary": "List the cases of a corrections test set version",
        "statuses": {"200", "400", "401", "404", "503"},
        "codes": {"400": None, "401": None, "404": None, "503": "database-busy"},
    },
    ("/v1/agents/{agentId}/test-set/cases", "get"): {
        "operationId": "listAgentTestSetCases",
        "summary": "List a project's cases of an agent's test set",
        "statuses": {"200", "400", "401", "404", "503"},
        "codes": {"400": None, "401": None, "404": "agent-not-found", "503": "database-busy"},
    },
    ("/v1/eval-suites/{suiteId}/versions/{version}/cases", "get"): {
        "operationId": "listEvalSuiteVersionCases",
        "summary": "List the cases of a judged eval suite version",
        "statuses": {"200", "400", "401", "404"},
        "codes": {"400": None, "401": None, "404": None},
    },
}


# --------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def spec() -> dict:
    with SPEC_PATH.open(encoding="utf-8") as fh:
        return yaml.safe_load(fh)


@pytest.fixture(scope="module")
def registry(spec) -> Registry:
    resource = Resource.from_contents(spec, default_specification=DRAFT202012)
    return Registry().with_resource(DOC_URI, resource)


def pointer(parts) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def resolve(spec: dict, node):
    """Follow a local `$ref` (as used for parameters/responses/headers)."""
    seen = 0
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), f"non-local $ref {ref}"
        node = spec
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        seen += 1
        assert seen < 20, "reference loop"
    return node


def iter_examples(spec, node=None, path=()):
    """Yield (schema_path, example_label, value) for every object that has a
    `schema` and an `example` or `examples` next to it (media types,
    parameters, headers), anywhere in the document."""
    if node is None:
        node = spec
    if isinstance(node, dict):
        if "schema" in node and ("example" in node or "examples" in node):
            schema_path = path + ("schema",)
            if "example" in node:
                yield schema_path, pointer(path + ("example",)), node["example"]
            for name, ex in (node.get("examples") or {}).items():
                ex = resolve(spec, ex)
                assert "value" in ex, pointer(path + ("examples", name))
                yield schema_path, pointer(path + ("examples", name)), ex["value"]
        for key, value in node.items():
            if key in ("example", "examples"):
                continue
            yield from iter_examples(spec, value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from iter_examples(spec, value, path + (i,))


def operations(spec):
    for route, item in spec["paths"].items():
        for method, op in item.items():
            if method in HTTP_METHODS:
                yield route, method, op


def first_example_value(spec, media: dict):
    if "example" in media:
        return media["example"]
    examples = media.get("examples") or {}
    assert examples, "no example"
    first = resolve(spec, next(iter(examples.values())))
    return first["value"]


# --------------------------------------------------------------------------- (a)


def test_spec_is_valid_openapi_31(spec):
    assert spec["openapi"] == "3.1.0"
    validate(spec)


def test_info_servers_security(spec):
    assert spec["info"]["title"] == "Kindgi API"
    assert spec["info"]["version"] == "0.5.0"
    assert spec["info"].get("description")
    assert spec["servers"][0]["url"] == "https://api.kindgi.com"
    assert spec["security"] == [{"bearerAuth": []}]
    scheme = spec["components"]["securitySchemes"]["bearerAuth"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
    for route in spec["paths"]:
        assert route.startswith("/v1/")


# --------------------------------------------------------------------------- (b)


def _all_examples(spec):
    return list(iter_examples(spec))


def test_there_are_examples(spec):
    found = _all_examples(spec)
    assert len(found) >= 15
    # every 200 has an example
    for route, method, op in operations(spec):
        media = resolve(spec, op["responses"]["200"])["content"]["application/json"]
        assert "example" in media or media.get("examples"), (route, method)


def test_every_example_validates_against_its_schema(spec, registry):
    failures = []
    for schema_path, label, value in _all_examples(spec):
        schema = {"$ref": DOC_URI + "#" + quote(pointer(schema_path))}
        validator = Draft202012Validator(
            schema,
            registry=registry,
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        )
        for err in validator.iter_errors(value):
            failures.append(f"{label}: {'/'.join(map(str, err.absolute_path))}: {err.message}")
    assert not failures, "\n".join(failures)


def test_example_checker_catches_bad_examples(spec, registry):
    """The walk above really validates: a broken copy of an example fails."""
    media = spec["paths"]["/v1/agents/{agentId}/test-set/cases"]["get"]["responses"]["200"][
        "content"
    ]["application/json"]
    import copy

    bad = copy.deepcopy(media["example"])
    bad["data"][0]["projectId"] = "not-a-uuid"
    bad["data"][1]["expect"] = {}
    del bad["hasMore"]
    schema_path = (
        "paths", "/v1/agents/{agentId}/test-set/cases", "get", "responses", "200",
        "content", "application/json", "schema",
    )
    validator = Draft202012Validator(
        {"$ref": DOC_URI + "#" + quote(pointer(schema_path))},
        registry=registry,
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )
    messages = [e.message for e in validator.iter_errors(bad)]
    assert len(messages) == 3, messages


# --------------------------------------------------------------------------- (c)


def test_operations_ids_and_summaries(spec):
    found = {(route, method): op for route, method, op in operations(spec)}
    assert set(found) == set(OPERATIONS)
    for key, want in OPERATIONS.items():
        op = found[key]
        assert op["operationId"] == want["operationId"]
        assert op["summary"] == want["summary"]
        assert op.get("description")
    assert found[("/v1/eval-suites/{suiteId}/versions/{version}/cases", "get")].get("deprecated") is True
    for key in OPERATIONS:
        if key[0].startswith("/v1/eval-suites"):
            continue
        assert not found[key].get("deprecated", False)


@pytest.mark.parametrize("key", list(OPERATIONS), ids=lambda k: OPERATIONS[k]["operationId"])
def test_statuses(spec, key):
    op = spec["paths"][key[0]][key[1]]
    assert set(op["responses"]) == OPERATIONS[key]["statuses"]
    for status, response in op["responses"].items():
        assert resolve(spec, response).get("description"), status


@pytest.mark.parametrize("key", list(OPERATIONS), ids=lambda k: OPERATIONS[k]["operationId"])
def test_headers_on_every_response(spec, key):
    op = spec["paths"][key[0]][key[1]]
    for status, response in op["responses"].items():
        headers = resolve(spec, response).get("headers") or {}
        assert "X-Request-Id" in headers, status
        request_id = resolve(spec, headers["X-Request-Id"])
        assert request_id["required"] is True
        assert request_id["schema"]["type"] == "string"
        if status == "503":
            assert "Retry-After" in headers
            retry_after = resolve(spec, headers["Retry-After"])
            assert retry_after["required"] is True
            assert retry_after["schema"]["type"] == "integer"
            assert retry_after["schema"]["minimum"] == 0


def stated_code(spec, schema: dict):
    """The `const` a response schema puts on the envelope's code: the Error envelope, `allOf` a code part."""
    parts = schema.get("allOf", [schema])
    assert {"$ref": "#/components/schemas/Error"} in parts, schema
    consts = [resolve(spec, part).get("properties", {}).get("error", {}).get("properties", {}).get("code", {})
              .get("const") for part in parts if part != {"$ref": "#/components/schemas/Error"}]
    assert len(consts) <= 1 and None not in consts, schema
    return consts[0] if consts else None


@pytest.mark.parametrize("key", list(OPERATIONS), ids=lambda k: OPERATIONS[k]["operationId"])
def test_error_codes(spec, key):
    """A code the pages name for a whole status is a `const` of the envelope's code, and its example carries it.
    Where they name none (a 401, the 404 of a test set or eval suite), the description claims none: no `const`,
    and no example that would read as one. A 400 has several causes and the pages name a code for some only
    (`bad-input` for a cursor, `scope-invalid`), so its schema states none either; its examples show those."""
    op = spec["paths"][key[0]][key[1]]
    for status, code in OPERATIONS[key]["codes"].items():
        response = resolve(spec, op["responses"][status])
        media = response["content"]["application/json"]
        assert stated_code(spec, media["schema"]) == code, status
        if code is not None:
            value = first_example_value(spec, media)
            assert value["error"]["code"] == code, (status, value)
            assert value["error"]["requestId"].startswith("req_")
        elif status != "400":
            assert "example" not in media and "examples" not in media, status


def test_documented_order_keys(spec):
    """The order each page states, and no more: test sets by id; an agent's cases newest added first, with no
    tie-break (the pages state none). The cases of a version are in stored order: no key to state."""
    paths = spec["paths"]
    assert paths["/v1/test-sets"]["get"]["x-order"] == [{"by": "id"}]
    assert paths["/v1/agents/{agentId}/test-set/cases"]["get"]["x-order"] == [{"by": "addedAt", "desc": True}]
    for path in ("/v1/test-sets/{testSetId}/versions/{version}/cases",
                 "/v1/eval-suites/{suiteId}/versions/{version}/cases"):
        assert "x-order" not in paths[path]["get"]


def test_cursors_are_not_claimed_sealed(spec):
    """The pages: "A runtime that seals cursors …": sealing is a runtime's choice, so the cursor is no `x-sealed`."""
    assert "x-sealed" not in spec["components"]["parameters"]["Cursor"]


def test_list_test_sets_400_examples(spec):
    media = spec["paths"]["/v1/test-sets"]["get"]["responses"]["400"]["content"]["application/json"]
    examples = media["examples"]
    assert list(examples) == ["badInput", "scopeInvalid"]
    assert examples["badInput"]["value"]["error"]["code"] == "bad-input"
    assert examples["scopeInvalid"]["value"]["error"]["code"] == "scope-invalid"


def _params(spec, op):
    return {(p["name"], p["in"]): p for p in (resolve(spec, p) for p in op.get("parameters", []))}


def test_shared_pagination_parameters(spec):
    components = spec["components"]["parameters"]
    limit = components["Limit"]
    assert (limit["name"], limit["in"]) == ("limit", "query")
    assert limit["schema"] == {"type": "integer", "minimum": 1, "maximum": 100, "default": 25}
    cursor = components["Cursor"]
    assert (cursor["name"], cursor["in"]) == ("cursor", "query")
    assert cursor["schema"] == {"type": "string"}
    for route, _method, op in operations(spec):
        refs = [p.get("$ref") for p in op["parameters"]]
        assert "#/components/parameters/Limit" in refs, route
        assert "#/components/parameters/Cursor" in refs, route


def test_parameters(spec):
    ts = _params(spec, spec["paths"]["/v1/test-sets"]["get"])
    assert ts[("includeRetired", "query")]["schema"] == {"type": "boolean", "default": False}
    assert ts[("inherit", "query")]["schema"] == {"type": "boolean", "default": True}
    assert ts[("scopeKind", "query")]["schema"]["enum"] == ["tenant", "org", "project"]
    assert ts[("scopeId", "query")]["schema"]["minLength"] == 1
    kind = resolve(spec, ts[("kind", "query")]["schema"])
    assert kind["enum"] == [
        "accuracy", "pairwise", "regression", "human-review", "benchmark", "custom", "corrections",
    ]
    assert ts[("name", "query")]["schema"] == {"type": "string"}

    agent = _params(spec, spec["paths"]["/v1/agents/{agentId}/test-set/cases"]["get"])
    project = agent[("projectId", "query")]
    assert project["required"] is True
    assert project["schema"] == {"type": "string", "format": "uuid"}
    assert agent[("include", "query")]["schema"]["enum"] == ["retired"]
    assert agent[("kind", "query")]["schema"]["pattern"] == "^(correction|hand)(,(correction|hand))*$"
    assert agent[("agentId", "path")]["required"] is True

    for route, id_name in (
        ("/v1/test-sets/{testSetId}/versions/{version}/cases", "testSetId"),
        ("/v1/eval-suites/{suiteId}/versions/{version}/cases", "suiteId"),
    ):
        params = _params(spec, spec["paths"][route]["get"])
        assert params[(id_name, "path")]["schema"]["minLength"] == 1
        version = resolve(spec, params[("version", "path")]["schema"])
        assert version["pattern"] == r"^\d+\.\d+\.\d+$"


def test_patterns_and_bounds(spec, registry):
    def validator_for(name):
        return Draft202012Validator(
            {"$ref": f"{DOC_URI}#/components/schemas/{name}"},
            registry=registry,
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        )

    segment = validator_for("Segment")
    assert segment.is_valid({"key": "contact-role", "value": "logistics"})
    assert not segment.is_valid({"key": "Contact", "value": "x"})
    assert not segment.is_valid({"key": "a" * 65, "value": "x"})
    assert not segment.is_valid({"key": "company", "value": ""})
    assert not segment.is_valid({"key": "company", "value": "x" * 257})

    call = validator_for("ToolCallExpectation")
    assert call.is_valid({"tool": "acme.orders-lookup", "args": {}})
    assert not call.is_valid({"tool": "", "args": {}})
    assert not call.is_valid({"tool": "t" * 201, "args": {}})
    assert not call.is_valid({"tool": "t", "args": {f"k{i}": i for i in range(101)}})

    correction = validator_for("CaseCorrection")
    assert not correction.is_valid(
        {"correctionId": "c", "calls": [{"tool": "t", "args": {}}] * 51, "notCalled": []}
    )
    assert not correction.is_valid({"correctionId": "c", "calls": [], "notCalled": ["t"] * 51})

    semver = validator_for("SemVer")
    assert semver.is_valid("1.2.0")
    assert not semver.is_valid("1.2")

    agent_case = spec["components"]["schemas"]["AgentTestSetCase"]
    assert agent_case["properties"]["expect"]["minProperties"] == 1
    assert "expect" in agent_case["required"]

    # values with no type accept any JSON value, including null
    for name in ("TestSetCase", "EvalSuiteCase"):
        props = spec["components"]["schemas"][name]["properties"]
        for field in ("input", "output"):
            assert "type" not in props[field]


def test_error_schema(spec):
    error = spec["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    inner = error["properties"]["error"]
    assert set(inner["required"]) == {"code", "message", "requestId"}
    assert inner["properties"]["details"]["type"] == "object"
    assert inner["properties"]["details"].get("additionalProperties", True) is not False


EVAL_SUITE_CASES = ("/v1/eval-suites/{suiteId}/versions/{version}/cases", "get")
# every object of a page of eval suite cases, which the official description closes (`additionalProperties: false`)
CLOSED = ["", "/data/0", "/data/0/subject", "/data/0/context", "/data/0/context/sessionApproval",
          "/data/0/context/flow", "/data/0/context/flow/calls/0", "/data/0/context/flow/steps/0", "/data/0/items/0",
          "/data/0/items/0/restricted", "/data/0/items/0/reasons/0"]


def test_eval_suite_cases_are_as_closed_and_bounded_as_the_official_description(spec, registry):
    """Kindgi's published description (in the `kindgi-cli` wheel) closes every object of this page and bounds its
    counts, and the reference page agrees (it shows "additional properties" only on `toolEnv` and `details`): a
    page the real API could not send is not one the mock serves either."""
    page = Draft202012Validator({"$ref": f"{DOC_URI}#/components/schemas/EvalSuiteCasePage"}, registry=registry)
    media = spec["paths"][EVAL_SUITE_CASES[0]][EVAL_SUITE_CASES[1]]["responses"]["200"]["content"]
    example = first_example_value(spec, media["application/json"])
    example["data"][0]["context"]["flow"] = {"calls": [{"runId": "run_1", "toolId": "acme.lookup"}],
                                             "steps": [{"runId": "run_2", "agentId": "a", "agentVersion": "1.0.0"}]}
    assert page.is_valid(example)

    def changed(where: str, key: str, value) -> dict:
        copy = yaml.safe_load(yaml.safe_dump(example))
        node = copy
        for part in where.strip("/").split("/") if where else []:
            node = node[int(part) if part.isdigit() else part]
        node[key] = value
        return copy

    for where in CLOSED:
        assert not page.is_valid(changed(where, "unknown", 1)), f"{where or '/'} takes an unknown field"
    for field in ("rank", "yes", "no"):
        assert not page.is_valid(changed("/data/0/items/0", field, -1)), f"{field} takes -1"
    assert not page.is_valid(changed("/data/1", "erased", False))
    # still open, as on the page: the env values by tool, and what a run's input and output hold
    assert page.is_valid(changed("/data/0/context/toolEnv", "acme.other", {"REGION": "eu"}))
    assert page.is_valid(changed("/data/0/input", "anything", {"at": ["all"]}))

    envelope = Draft202012Validator({"$ref": f"{DOC_URI}#/components/schemas/Error"}, registry=registry)
    error = {"error": {"code": "bad-input", "message": "m", "requestId": "r", "details": {"any": 1}}}
    assert envelope.is_valid(error)
    assert not envelope.is_valid({**error, "unknown": 1})
    assert not envelope.is_valid({"error": {**error["error"], "unknown": 1}})
