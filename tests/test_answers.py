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


WRITE_ONLY = """\
openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /domains:
    post:
      operationId: createDomain
      requestBody:
        content: {application/json: {schema: {$ref: 'domain.yml'}}}
      responses:
        '201':
          description: created
          content:
            application/json:
              schema:
                type: object
                properties: {domain: {$ref: 'domain.yml'}}
              example: {domain: {name: example.com, ip_address: 192.0.2.1}}
  /domains/list:
    get:
      operationId: listDomains
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {type: array, minItems: 3, items: {allOf: [{$ref: 'domain.yml'}]}}
"""
DOMAIN = """\
type: object
required: [name, ip_address]
properties:
  name: {type: string}
  ip_address: {type: string, writeOnly: true}
"""


def test_write_only_properties_are_taken_but_never_answered(write):
    """A writeOnly property (here in another file, required in requests) is not in an example as served nor in
    generated data; the example's author hears about it once."""
    write("domain.yml", DOMAIN)
    app = create_app(write("spec.yaml", WRITE_ONLY))
    client = app.test_client()
    created = client.post("/domains", json={"name": "example.com", "ip_address": "192.0.2.1"})
    assert created.status_code == 201 and body(created) == {"domain": {"name": "example.com"}}
    assert client.post("/domains", json={"name": "example.com"}).status_code == 400  # still required in requests
    listed = body(client.get("/domains/list"))
    assert len(listed) >= 3 and all("name" in item and "ip_address" not in item for item in listed)
    warnings = [str(w) for w in app.extensions["mockserver"].pipeline.warnings]
    assert any("createDomain has writeOnly properties (/domain/ip_address)" in w for w in warnings), warnings


def test_a_fixture_answer_with_a_write_only_property_is_refused_at_start_up(write):
    import pytest
    from mockserver.core.errors import LoadError

    write("domain.yml", DOMAIN)
    fixtures = write("fx/domains.yaml", """\
        operations:
          createDomain:
            respond:
              - status: 201
                body: {domain: {name: example.com, ip_address: 192.0.2.1}}
        """)
    with pytest.raises(LoadError) as caught:
        create_app(write("spec.yaml", WRITE_ONLY), fixtures.parent)
    [problem] = caught.value.problems
    assert problem.rule == "writeOnly" and problem.pointer == "/operations/createDomain/respond/0/body/domain/ip_address"
