"""Errors in the API's own shape: RFC 7807 when the description says nothing else, else the API's own error body
(its example, or one generated from its schema), carrying the mock's message where the schema takes one."""
from conftest import body
from mockserver import create_app

SPEC = """\
openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /flat:
    get:
      parameters: [$ref: '#/components/parameters/N']
      responses:
        '200': {description: ok}
        '400':
          description: bad
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Flat'}
              example: {id: bad_request, message: some error message}
  /nested:
    get:
      parameters: [$ref: '#/components/parameters/N']
      responses:
        '200': {description: ok}
        4XX:
          description: bad
          content:
            application/json:
              schema:
                type: object
                required: [error]
                properties:
                  error:
                    type: object
                    required: [code, message]
                    properties: {code: {type: integer}, message: {type: string}}
  /fixed:
    get:
      parameters: [$ref: '#/components/parameters/N']
      responses:
        '200': {description: ok}
        '400':
          description: bad
          content:
            application/json:
              schema:
                type: object
                required: [message]
                properties: {message: {enum: [Bad Request]}}
  /plain:
    get:
      parameters: [$ref: '#/components/parameters/N']
      responses: {'200': {description: ok}, '400': {description: bad}}
components:
  parameters:
    N: {name: n, in: query, schema: {type: integer}}
  schemas:
    Flat:
      type: object
      required: [id, message]
      properties: {id: {type: string}, message: {type: string}}
"""
SAYS = "query parameter 'n': 'x' is not of type 'integer'"


def test_the_api_s_own_error_body_carries_the_mock_s_message(write):
    client = create_app(write("spec.yaml", SPEC)).test_client()
    flat = client.get("/flat?n=x")
    assert flat.status_code == 400 and flat.content_type == "application/json"
    assert body(flat)["id"] == "bad_request" and SAYS in body(flat)["message"]
    nested = body(client.get("/nested?n=x"))
    assert isinstance(nested["error"]["code"], int) and SAYS in nested["error"]["message"]


def test_a_message_the_schema_fixes_is_kept(write):
    client = create_app(write("spec.yaml", SPEC)).test_client()
    assert body(client.get("/fixed?n=x")) == {"message": "Bad Request"}


def test_rfc_7807_where_the_description_declares_no_error_body(write):
    client = create_app(write("spec.yaml", SPEC)).test_client()
    plain = client.get("/plain?n=x")
    assert plain.content_type == "application/problem+json"
    problem = body(plain)
    assert problem["status"] == 400 and problem["title"] == "Bad Request" and SAYS in problem["detail"]
    assert problem["details"]["violations"][0]["parameter"] == "n"
