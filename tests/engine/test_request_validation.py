"""Each kind of rule, as a client sees it: 400 in the envelope naming the parameter, where, pointer and rule."""
import pytest

from conftest import body
from mockserver import create_app

KEY = {"X-Api-Key": "reader-key"}


def violation(response):
    assert response.status_code == 400, response.data
    payload = body(response)
    return payload.get("error", payload)["details"]["violations"][0]  # Kindgi's envelope or RFC 7807


@pytest.mark.parametrize("query, parameter, rule", [
    ("limit=abc", "limit", "type"),
    ("limit=0", "limit", "minimum"),
    ("limit=51", "limit", "maximum"),
    ("genre=comic", "genre", "enum"),
    ("tags=a,b,c,d", "tags", "maxItems"),
    ("limit=1&limit=2", "limit", "repeated"),
])
def test_query_rules(library, query, parameter, rule):
    v = violation(library.get(f"/api/v2/books?{query}", headers=KEY))
    assert (v["parameter"], v["in"], v["rule"]) == (parameter, "query", rule)


def test_the_message_names_parameter_and_rule(library):
    response = library.get("/api/v2/books?limit=51", headers=KEY)
    assert body(response)["detail"] == "query parameter 'limit': 51 is greater than the maximum of 50"


def test_header_pattern(library):
    v = violation(library.get("/api/v2/books", headers={**KEY, "X-Trace": "nothex!!"}))
    assert (v["parameter"], v["in"], v["rule"]) == ("X-Trace", "header", "pattern")


def test_path_pattern_and_type(library):
    assert violation(library.get("/api/v2/books/123.json", headers=KEY))["rule"] == "pattern"
    v = violation(library.get("/api/v2/shelves/zero", headers=KEY))
    assert (v["parameter"], v["in"], v["rule"]) == ("shelf", "path", "type")


def test_format_and_required(kindgi):
    headers = {"Authorization": "Bearer demo-token"}
    v = violation(kindgi.get("/v1/agents/acme.drafting/test-set/cases?projectId=not-a-uuid", headers=headers))
    assert (v["parameter"], v["rule"]) == ("projectId", "format")
    v = violation(kindgi.get("/v1/agents/acme.drafting/test-set/cases", headers=headers))
    assert (v["parameter"], v["rule"]) == ("projectId", "required")


def test_defaults_apply_and_valid_values_pass(library):
    response = library.get("/api/v2/books?tags=a,b", headers=KEY)
    assert response.status_code == 200  # limit defaults to 10: all five books on one page
    assert len(body(response)["items"]) == 5


def test_every_violation_is_listed(library):
    response = library.get("/api/v2/books?limit=0&genre=comic", headers=KEY)
    assert {v["parameter"] for v in body(response)["details"]["violations"]} == {"limit", "genre"}


def test_body_schema_pointer(library):
    book = {"isbn": "9780000000010", "title": "", "year": 2000, "author": {"name": "n"}}
    v = violation(library.post("/api/v2/books", json=book, headers=KEY))
    assert (v["in"], v["pointer"], v["rule"]) == ("body", "/title", "minLength")


def test_malformed_json_body(library):
    v = violation(library.post("/api/v2/books", data="{bad", content_type="application/json", headers=KEY))
    assert v["rule"] == "json" and "line 1" in v["message"]


def test_missing_body_and_wrong_content_type(library):
    assert violation(library.post("/api/v2/books", headers=KEY))["rule"] == "required"
    response = library.post("/api/v2/books", data="x", content_type="text/plain", headers=KEY)
    assert response.status_code == 415
    assert body(response)["details"]["accepted"] == ["application/json"]


FASTAPI = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /pools/{name}:
    get:
      parameters: [{name: name, in: path, required: true, schema: {type: string}},
                   {name: limit, in: query, schema: {type: integer}}]
      responses:
        '200': {description: ok}
        '422':
          description: Validation Error
          content: {application/json: {schema: {$ref: '#/components/schemas/HTTPValidationError'}}}
  /both:
    get:
      parameters: [{name: limit, in: query, schema: {type: integer}}]
      responses: {'200': {description: ok}, '400': {description: bad}, '422': {description: unprocessable}}
  /neither:
    get:
      parameters: [{name: limit, in: query, schema: {type: integer}}]
      responses: {'200': {description: ok}}
components:
  schemas:
    HTTPValidationError:
      type: object
      properties:
        detail:
          type: array
          items:
            type: object
            required: [loc, msg, type]
            properties: {loc: {type: array, items: {type: string}}, msg: {type: string}, type: {type: string}}
"""


def test_an_invalid_request_gets_the_status_the_description_declares_for_it(write):
    """FastAPI services declare 422 (HTTPValidationError) and no 400: the mock answers 422 in that schema, with
    its message; a declared 400 wins; with neither, 400 in the envelope."""
    client = create_app(write("spec.yaml", FASTAPI)).test_client()
    fastapi = client.get("/pools/p1?limit=many")
    assert fastapi.status_code == 422
    [detail] = body(fastapi)["detail"]
    assert "'many' is not of type 'integer'" in detail["msg"] and isinstance(detail["loc"], list)
    assert client.get("/both?limit=many").status_code == 400
    neither = client.get("/neither?limit=many")
    assert neither.status_code == 400 and body(neither)["details"]["violations"][0]["parameter"] == "limit"


OBJECTS = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /spread:
    get:
      parameters:
        - {name: page, in: query, schema: {$ref: '#/components/schemas/Page'}}
      responses: {'204': {description: ok}}
  /flat:
    get:
      parameters:
        - {name: pagination, in: query, style: form, explode: false, schema: {$ref: '#/components/schemas/Page'}}
      responses: {'204': {description: ok}}
  /deep:
    get:
      parameters:
        - {name: filter, in: query, style: deepObject, schema: {$ref: '#/components/schemas/Page'}}
      responses: {'204': {description: ok}}
  /color/{rgb}:
    get:
      parameters:
        - name: rgb
          in: path
          required: true
          explode: true
          schema: {type: object, properties: {R: {type: integer}, G: {type: integer}}}
      responses: {'204': {description: ok}}
components:
  schemas:
    Page:
      type: object
      additionalProperties: false
      properties: {offset: {type: integer, minimum: 0}, limit: {type: integer, maximum: 100}, kind: {type: string}}
"""


@pytest.mark.parametrize("url, status", [
    ("/spread?offset=1&limit=2", 204), ("/spread", 204), ("/spread?offset=1&limit=200", 400),
    ("/flat?pagination=offset,0,limit,123", 400), ("/flat?pagination=offset,0,limit,12,kind,x", 204),
    ("/flat?pagination=offset,0,limit", 400), ("/flat?pagination=offset,x", 400),
    ("/deep?filter[offset]=3&filter[kind]=a", 204), ("/deep?filter[offset]=-1", 400),
    ("/color/R=100,G=200", 204), ("/color/R=x", 400),
])
def test_object_parameters_are_read_by_their_style(write, url, status):
    """Form objects spread over the query (`explode: true`) or as name,value pairs (`explode: false`), deepObject
    and simple objects in a path are read, coerced and checked property by property."""
    response = create_app(write("spec.yaml", OBJECTS)).test_client().get(url)
    assert response.status_code == status, response.data


def test_a_violation_inside_an_object_parameter_points_at_its_property(write):
    response = create_app(write("spec.yaml", OBJECTS)).test_client().get("/flat?pagination=offset,0,limit,123")
    assert violation(response)["pointer"] == "/limit" and violation(response)["rule"] == "maximum"


ACCEPT_PARAMETER = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /logs:
    get:
      parameters:
        - name: accept
          in: header
          schema: {type: string, enum: [application/json, application/x-ndjson, '*/*'], default: '*/*'}
        - {name: Authorization, in: header, required: true, schema: {type: string, pattern: '^never$'}}
      responses:
        '200':
          description: ok
          content:
            application/json: {schema: {type: object}, example: {lines: 1}}
            application/x-ndjson: {schema: {type: string}, example: '{"line": 1}'}
        '422':
          description: invalid
          content:
            application/json:
              schema:
                type: object
                properties: {detail: {type: array, items: {type: object, properties: {msg: {type: string}}}}}
"""


def test_a_declared_accept_parameter_is_checked_as_declared(write):
    """FastAPI declares `accept` as an enum header, and its server refuses other values: so does the mock (in the
    422 it declares); Authorization stays ignored, as OpenAPI says."""
    client = create_app(write("spec.yaml", ACCEPT_PARAMETER)).test_client()
    auth = {"Authorization": "Bearer t"}
    assert body(client.get("/logs", headers=auth)) == {"lines": 1}
    assert client.get("/logs", headers={**auth, "Accept": "application/x-ndjson"}).data == b'{"line": 1}'
    for refused in ("AAA", "", "text/html, */*"):
        response = client.get("/logs", headers={**auth, "Accept": refused})
        assert response.status_code == 422, refused
        assert "header parameter 'accept'" in body(response)["detail"][0]["msg"]


READINGS = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /things:
    get:
      parameters:
        - {name: accept, in: header, schema: {type: string, enum: [application/json]}}
        - name: tag
          in: query
          schema: {oneOf: [{type: string}, {type: array, items: {type: integer}, minItems: 2}]}
        - {name: ids, in: query, schema: {type: array, items: {type: [string, 'null'], pattern: '^[0-9]+$'}}}
        - {name: name, in: query, schema: {type: [string, 'null'], minLength: 5}}
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: object}, example: {ok: true}}}}
"""


@pytest.mark.parametrize(("query", "accepted"), [
    ("tag=00", True), ("tag=1&tag=2", True),  # one value of oneOf [string, array] is the string; two the array
    ("ids=null&ids=12", True), ("ids=x", False),  # `null` is null where a string would break the schema
    ("name=null", True), ("name=abc", False),
])
def test_a_value_is_read_the_way_its_schema_admits(write, query, accepted):
    """Discord's parameters: the text of a query value can be read several ways; the first reading that fits the
    schema is the value, and only when none fits is it a 400."""
    client = create_app(write("spec.yaml", READINGS)).test_client()
    assert client.get(f"/things?{query}").status_code == (200 if accepted else 400)


def test_an_accept_of_any_type_is_not_checked_against_a_declared_accept_parameter(write):
    """`*/*` is what an HTTP client sends when nobody chose: as if the optional parameter were left out
    (DigitalOcean's `POST /v2/apps`); a concrete value outside its enum is still refused."""
    client = create_app(write("spec.yaml", READINGS)).test_client()
    assert client.get("/things", headers={"Accept": "*/*"}).status_code == 200
    assert client.get("/things", headers={"Accept": "text/html"}).status_code == 400


def test_openapi_integer_formats_are_the_ranges_they_name(write):
    """`format: int32` / `int64` bound a value as Prism checks them (Schemathesis' negative data sends 2**31)."""
    client = create_app(write("spec.yaml", """\
openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /things:
    get:
      parameters:
        - {name: limit, in: query, schema: {type: integer, format: int32}}
        - {name: since, in: query, schema: {type: integer, format: int64}}
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: object}, example: {ok: true}}}}
""")).test_client()
    for query, status in (("limit=2147483647", 200), ("limit=2147483648", 400), ("limit=-2147483649", 400),
                          ("since=9223372036854775807", 200), ("since=9223372036854775808", 400)):
        assert client.get(f"/things?{query}").status_code == status, query


def test_an_empty_form_is_an_object_without_fields(write):
    """`{}` sent as application/x-www-form-urlencoded is an empty body (Discord's moderation metadata): it is
    checked as `{}`, not refused as a missing body; with no Content-Type an empty body is still missing."""
    client = create_app(write("spec.yaml", """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /meta:
    put:
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded: {schema: {type: object, additionalProperties: {type: string}}}
      responses:
        '204': {description: done}
  /strict:
    put:
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded: {schema: {type: object, required: [name]}}
      responses:
        '204': {description: done}
""")).test_client()
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    assert client.put("/meta", headers=form).status_code == 204
    assert client.put("/meta").status_code == 400
    refused = client.put("/strict", headers=form)
    assert refused.status_code == 400 and "'name' is a required property" in refused.get_data(as_text=True)
