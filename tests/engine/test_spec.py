"""Bad descriptions stop start-up with one clear problem each (file, line, pointer); legal recursion is served."""
import subprocess
import sys

import pytest

from conftest import body
from mockserver import create_app
from mockserver.base.errors import LoadError

HEAD = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\n"


def problems_of(write, text: str, name: str = "spec.yaml"):
    with pytest.raises(LoadError) as caught:
        create_app(write(name, text))
    return caught.value.problems


def test_an_unresolved_ref(write):
    [problem] = problems_of(write, HEAD + """\
paths:
  /a:
    get:
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Missing'}
""")
    assert problem.rule == "$ref" and problem.line == 11
    assert problem.pointer == "/paths/~1a/get/responses/200/content/application~1json/schema/$ref"


def test_a_ref_to_a_missing_file(write):
    [problem] = problems_of(write, HEAD + "paths:\n  /a: {$ref: 'other.yaml#/A'}\n")
    assert "no file" in problem.message and problem.line == 4


def test_a_circular_ref_chain(write):
    found = problems_of(write, HEAD + "paths: {}\ncomponents:\n  schemas:\n    A: {$ref: '#/components/schemas/B'}\n"
                                      "    B: {$ref: '#/components/schemas/A'}\n")
    assert found and all("loop" in p.message for p in found)


@pytest.mark.parametrize("text, says", [
    ("swagger: '2.0'\ninfo: {title: t, version: '1'}\npaths: {}\n", "Swagger 2.0 is not supported"),
    ("openapi: 4.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n", "unsupported OpenAPI version '4.0.0'"),
    ("info: {title: t}\n", "unsupported OpenAPI version '(missing)'"),
    ("- just\n- a list\n", "must be a mapping"),
    (HEAD + "paths:\n  /a:\n    get: {summary: nothing}\n", "declares no responses"),
    (HEAD + "paths: {/a: {get: {operationId: x, responses: {'200': {description: ok}}}},"
            " /b: {get: {operationId: x, responses: {'200': {description: ok}}}}}\n", "used twice"),
    (HEAD + "paths:\n  /a:\n    get:\n      responses: {'200': {description: ok}}\n    get: {}\n", "duplicate key"),
    (HEAD + "paths: {/a: [oops\n", "not valid YAML"),
])
def test_bad_descriptions(write, text, says):
    found = problems_of(write, text)
    assert any(says in p.message for p in found), found
    assert all(p.file.endswith("spec.yaml") for p in found)


def test_a_legal_recursive_schema_is_served(write):
    app = create_app(write("spec.yaml", HEAD + """\
paths:
  /tree:
    get:
      responses:
        '200':
          description: a tree
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Node'}
components:
  schemas:
    Node:
      type: object
      required: [name]
      properties:
        name: {type: string}
        children: {type: array, items: {$ref: '#/components/schemas/Node'}}
"""))
    client = app.test_client()
    for seed in range(5):
        response = client.get(f"/tree?seed={seed}")
        assert response.status_code == 200 and "name" in body(response)


def test_properties_written_as_a_ref_to_a_mapping_are_those_properties(write):
    """`properties: {$ref: …}` (DigitalOcean writes it) is read as the mapping it points to, with a warning that
    names the place; a real property named `properties` is left alone."""
    write("models/attributes.yml", "droplets:\n  droplet_ids:\n    type: array\n    items: {$ref: 'ids.yml#/id'}\n")
    write("models/ids.yml", "id: {type: integer}\n")
    app = create_app(write("spec.yaml", HEAD + """\
paths:
  /droplets:
    delete:
      operationId: removeDroplets
      requestBody:
        required: true
        content:
          application/json:
            schema:
              required: [droplet_ids]
              properties:
                $ref: 'models/attributes.yml#/droplets'
      responses: {'204': {description: removed}}
  /settings:
    put:
      operationId: putSettings
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                properties: {$ref: '#/components/schemas/Props'}
      responses: {'204': {description: saved}}
components:
  schemas:
    Props: {type: object, properties: {a: {type: string}}}
"""))
    client = app.test_client()
    assert client.delete("/droplets", json={"droplet_ids": [1, 2]}).status_code == 204
    refused = client.delete("/droplets", json={"droplet_ids": ["x"]})
    assert refused.status_code == 400
    assert [v["pointer"] for v in body(refused)["details"]["violations"]] == ["/droplet_ids/0"]
    assert client.put("/settings", json={"properties": {"a": "b"}}).status_code == 204
    assert client.put("/settings", json={"properties": {"a": 1}}).status_code == 400
    warnings = [w for w in app.extensions["mockserver"].pipeline.warnings if w.rule == "properties-ref"]
    assert [(w.pointer, w.line) for w in warnings] == [
        ("/paths/~1droplets/delete/requestBody/content/application~1json/schema/properties/$ref", 14)]


ODD = HEAD + """\
paths:
  /a:
    get:
      security: [bearer]
      responses:
        '200':
          description: ok
          content:
            description: ok
            application/json:
              schema: {type: object, required: [n], properties: {n: {type: integer, example: 7}}}
          headers:
            X-Stray: just a string
        description: not a status
        x-extension: {fine: true}
  /b:
    parameters: not a list
    post:
      requestBody: {content: {application/json: {schema: integer}}}
      responses: {'204': {description: done, content: []}}
"""


def test_a_slightly_malformed_description_is_served_with_warnings(write):
    """Stray keys inside `content`, a header or schema written as a string, a key of `responses` that is no
    status: each is left out with a warning naming file, line and pointer (Prism tolerates them); the rest is
    served, and `validate` says so without a traceback."""
    spec = write("spec.yaml", ODD)
    app = create_app(spec)
    client = app.test_client()
    assert body(client.get("/a")) == {"n": 7}
    assert client.post("/b", json="anything").status_code == 204
    warnings = {w.pointer: w for w in app.extensions["mockserver"].pipeline.warnings if w.rule == "ignored"}
    assert set(warnings) == {
        "/paths/~1a/get/security/0", "/paths/~1a/get/responses/200/content/description",
        "/paths/~1a/get/responses/200/headers/X-Stray", "/paths/~1a/get/responses/description",
        "/paths/~1b/parameters", "/paths/~1b/post/requestBody/content/application~1json/schema",
        "/paths/~1b/post/responses/204/content"}
    stray = warnings["/paths/~1a/get/responses/200/content/description"]
    assert stray.line == 11 and stray.file == str(spec) and "must be a mapping" in stray.message
    result = subprocess.run([sys.executable, "-m", "mockserver", "validate", "--spec", str(spec)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "spec.yaml:11: /paths/~1a/get/responses/200/content/description" in result.stderr


BAD_SCHEMAS = """\
openapi: 3.1.0
info: just a title
servers: [{url: /, variables: none}]
paths:
  /a:
    get:
      parameters: [{name: q, in: query, schema: {type: integr}}]
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Thing'}
components:
  schemas:
    Thing:
      type: object
      required: n
      properties:
        n: {type: integer, minimum: one}
        tags: {type: array, items: string}
        kind: {enum: cat}
        odd: three
"""


def test_schema_keywords_of_the_wrong_shape_are_left_out_with_warnings(write):
    """`type: integr`, `items: string`, `enum: cat`, `required: n`: jsonschema fails on the first value it checks
    against them, so every call was a 500; each is left out with a warning, as are `info` and server variables
    that are no mappings."""
    app = create_app(write("spec.yaml", BAD_SCHEMAS))
    client = app.test_client()
    for query in ("", "?q=1", "?q=x"):
        answer = client.get("/a" + query)
        assert answer.status_code == 200 and isinstance(body(answer), dict)
    warnings = {w.pointer: w.line for w in app.extensions["mockserver"].pipeline.warnings if w.rule == "ignored"}
    base = "/components/schemas/Thing"
    assert warnings == {
        "/info": 2, "/paths/~1a/get/parameters/0/schema/type": 7, f"{base}/required": 18,
        f"{base}/properties/n/minimum": 20, f"{base}/properties/tags/items": 21, f"{base}/properties/kind/enum": 22,
        f"{base}/properties/odd": 23}
