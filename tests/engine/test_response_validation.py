"""A response that would break the contract is never sent as if it were fine."""
import json
import logging

from conftest import body
from mockserver import create_app, pipeline_of

SPEC = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /thing:
    get:
      operationId: getThing
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                type: object
                required: [id]
                properties: {id: {type: integer}}
              example: {id: not-a-number}
"""


def test_a_broken_example_is_not_served_unless_asked_for(write):
    app = create_app(write("spec.yaml", SPEC))
    warnings = pipeline_of(app).warnings
    assert any("the example 'example' of getThing breaks its schema at /id" in str(w) for w in warnings)
    response = app.test_client().get("/thing")
    assert response.status_code == 200 and isinstance(json.loads(response.data)["id"], int)  # generated instead


def test_a_broken_example_asked_for_becomes_a_mock_contract_violation(write, caplog):
    app = create_app(write("spec.yaml", SPEC))
    with caplog.at_level(logging.ERROR, logger="mockserver"):
        response = app.test_client().get("/thing", headers={"Prefer": "example=example"})
    assert response.status_code == 500
    problem = body(response)
    assert problem["code"] == "mock-contract-violation"
    assert "example" in problem["detail"] and problem["details"]["rule"] == "type"
    assert problem["details"]["pointer"] == "/id"
    assert any("CONTRACT VIOLATION" in r.getMessage() for r in caplog.records)


def test_validation_can_be_turned_off_for_load(write):
    app = create_app(write("spec.yaml", SPEC), validate_responses=False)
    response = app.test_client().get("/thing", headers={"Prefer": "example=example"})
    assert response.status_code == 200 and json.loads(response.data) == {"id": "not-a-number"}


AMBIGUOUS = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /things:
    get:
      operationId: listThings
      parameters:
        - {name: limit, in: query, schema: {type: integer}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                type: array
                items: {oneOf: [{type: string}, {type: string, maxLength: 1000}]}
"""


def test_a_generated_answer_that_cannot_fit_its_schema_is_a_contract_violation(write):
    # every string fits both branches: the generator cannot make the `oneOf` hold, and the check still says so,
    # for the answer as generated and for the page as long as `limit` asks
    client = create_app(write("spec.yaml", AMBIGUOUS)).test_client()
    for url in ("/things", "/things?limit=5"):
        response = client.get(url)
        assert response.status_code == 500 and body(response)["code"] == "mock-contract-violation", url
