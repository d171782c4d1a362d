"""`writeOnly` properties: taken in requests, never answered (examples, generated data, fixtures)."""
import pytest

from conftest import body
from mockserver import create_app
from mockserver.base.errors import LoadError

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
    assert problem.rule == "writeOnly"
    assert problem.pointer == "/operations/createDomain/respond/0/body/domain/ip_address"


def test_cut_follows_refs_allof_anyof_and_arrays_and_names_each_place():
    from mockserver.spec.write_only import WriteOnly

    components = {
        "Secret": {"type": "string", "writeOnly": True},
        "User": {"allOf": [{"properties": {"name": {"type": "string"}}},
                           {"properties": {"pass/word": {"$ref": "#/Secret"}}}]},
    }

    def resolve(ref: str, base: str):
        return components[ref.removeprefix("#/")], "mem:#" + ref[1:]

    schema = {"type": "object", "properties": {
        "users": {"type": "array", "items": {"$ref": "#/User"}},
        "owner": {"anyOf": [{"$ref": "#/User"}, {"type": "null"}]},
        "plain": {"type": "string"}}}
    cut, places = WriteOnly(resolve).cut(
        {"users": [{"name": "a", "pass/word": "x"}, {"name": "b"}], "owner": {"name": "c", "pass/word": "y"},
         "plain": "kept"}, schema, "mem:#/root")
    assert cut == {"users": [{"name": "a"}, {"name": "b"}], "owner": {"name": "c"}, "plain": "kept"}
    assert places == ["/users/0/pass~1word", "/owner/pass~1word"]
    untouched = {"plain": "x"}
    assert WriteOnly(resolve).cut(untouched, {"properties": {"plain": {"type": "string"}}}, "mem:#/other") == (
        untouched, [])
