"""The three answer sources, in order: fixture, example, generated; and the Prefer header that picks one."""
import json

from conftest import body
from mockserver import create_app

KEY = {"X-Api-Key": "reader-key"}

SPEC = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /pets/{id}:
    get:
      operationId: getPet
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Pet'}
              examples:
                cat: {value: {id: p1, name: Tom, kind: cat}}
                dog: {value: {id: p2, name: Rex, kind: dog}}
        '404': {description: missing}
components:
  schemas:
    Pet:
      type: object
      required: [id, name, kind]
      properties:
        id: {type: string}
        name: {type: string, minLength: 1}
        kind: {enum: [cat, dog]}
        tag: {type: string, format: uuid}
        born: {type: string, format: date-time}
"""


def test_a_fixture_answers_first(library):
    response = library.get("/api/v2/books/9780000000030.json", headers=KEY)
    assert body(response)["title"] == "On Maps"


def test_a_fixed_answer_is_chosen_by_request_values(library):
    assert "books" in body(library.get("/api/v2/shelves/1?verbose=true", headers=KEY))
    assert "books" not in body(library.get("/api/v2/shelves/1", headers=KEY))


def test_an_example_answers_without_fixture(write):
    client = create_app(write("spec.yaml", SPEC)).test_client()
    assert body(client.get("/pets/x")) == {"id": "p1", "name": "Tom", "kind": "cat"}
    assert body(client.get("/pets/x", headers={"Prefer": "example=dog"}))["name"] == "Rex"
    response = client.get("/pets/x", headers={"Prefer": "example=bird"})
    assert response.status_code == 400 and body(response)["details"]["examples"] == ["cat", "dog"]


def test_generated_data_is_valid_realistic_and_deterministic(write):
    path = write("spec.yaml", SPEC)
    client = create_app(path).test_client()
    first = client.get("/pets/x", headers={"Prefer": "dynamic=true"})
    assert first.status_code == 200  # checked against the schema before it left
    again = client.get("/pets/x", headers={"Prefer": "dynamic=true"})
    assert first.data == again.data
    other_seed = create_app(path, seed=7).test_client().get("/pets/x", headers={"Prefer": "dynamic=true"})
    assert other_seed.data != first.data
    pet = body(first)
    assert pet["kind"] in ("cat", "dog") and pet["name"]


def test_generated_when_nothing_else(library):
    response = library.get("/api/v2/authors/someone")
    assert response.status_code == 200
    author = json.loads(response.data)
    assert isinstance(author["name"], str) and author["name"]


def test_prefer_code_answers_a_declared_status_in_the_envelope(kindgi):
    response = kindgi.get("/v1/test-sets", headers={"Authorization": "Bearer demo-token", "Prefer": "code=503"})
    assert response.status_code == 503
    assert response.headers["Retry-After"].isdigit()
    error = body(response)["error"]
    assert error["code"] == "database-busy" and error["requestId"] == response.headers["X-Request-Id"]


def test_prefer_code_of_an_undeclared_status_is_400(kindgi):
    response = kindgi.get("/v1/test-sets", headers={"Authorization": "Bearer demo-token", "Prefer": "code=418"})
    assert response.status_code == 400
    assert body(response)["error"]["details"]["declared"] == ["200", "400", "401", "503"]


def test_preferences_combine_and_unknown_ones_are_ignored(write):
    client = create_app(write("spec.yaml", SPEC)).test_client()
    assert body(client.get("/pets/x", headers={"Prefer": "respond-async, example=dog"}))["name"] == "Rex"
    assert client.get("/pets/x", headers={"Prefer": "example=dog, code=404"}).status_code == 404
    generated = client.get("/pets/x", headers={"Prefer": "dynamic=true; wait=5"})
    assert body(generated) not in ({"id": "p1", "name": "Tom", "kind": "cat"}, {"id": "p2", "name": "Rex", "kind": "dog"})



NO_SUCCESS = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /gone:
    get:
      responses: {'405': {description: not here}}
  /broken:
    get:
      responses:
        5XX:
          description: always failing
          content: {application/json: {example: {reason: down}}}
        4XX:
          description: refused
          content:
            application/json:
              schema: {type: object, required: [reason], properties: {reason: {type: string}}}
"""


def test_an_operation_without_success_answers_one_of_its_declared_responses(write):
    """Only `405`, or only `4XX`/`5XX`: the answer is that response (a range as its first code), never a 500
    for an undeclared 200."""
    client = create_app(write("spec.yaml", NO_SUCCESS)).test_client()
    gone = client.get("/gone")
    assert gone.status_code == 405 and gone.data == b""
    broken = client.get("/broken")
    assert broken.status_code == 400 and isinstance(body(broken)["reason"], str)
