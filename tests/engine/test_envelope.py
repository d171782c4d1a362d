"""Errors in the API's own shape: RFC 7807 when the description says nothing else, else the API's own error body
(its example, or one generated from its schema), carrying the mock's message where the schema takes one."""
import json
import re
import urllib.error
import urllib.request
from typing import Any

from conftest import ROOT, body
from mockserver import create_app
from mockserver.pipeline import envelope
from mockserver.testing import MockServer

PETS = ROOT / "tests" / "data" / "pets"

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


OWN_DEFAULT = """\
openapi: 3.0.0
info: {title: t, version: '1'}
security: [{bearer: []}]
components:
  securitySchemes: {bearer: {type: http, scheme: bearer}}
  schemas:
    ClientError:
      type: object
      properties:
        type: {type: string, enum: [error]}
        status: {type: integer}
        code: {type: string, enum: [bad_request, unauthorized, not_found]}
        message: {type: string}
paths:
  /files/{id}:
    get:
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: object}}}}
        default:
          description: an error
          content: {application/json: {schema: {$ref: '#/components/schemas/ClientError'}}}
"""


def test_the_mock_s_own_errors_fit_a_declared_default_schema_status_by_status(write):
    """Box declares its errors only under `default`, with `type: error` and an enum of codes: the mock's 401 and
    400 come in that schema, each with its own status and code and the mock's message."""
    client = create_app(write("spec.yaml", OWN_DEFAULT)).test_client()
    anonymous = client.get("/files/1")
    assert anonymous.status_code == 401 and anonymous.content_type == "application/json"
    error = body(anonymous)
    assert (error["type"], error["status"], error["code"]) == ("error", 401, "unauthorized")
    assert "missing Authorization header" in error["message"]
    invalid = body(client.get("/files/x", headers={"Authorization": "Bearer t"}))
    assert (invalid["type"], invalid["status"], invalid["code"]) == ("error", 400, "bad_request")
    assert "'x' is not of type 'integer'" in invalid["message"]


RANGED = """\
openapi: 3.1.0
info: {title: t, version: '1'}
components:
  securitySchemes: {bearer: {type: http, scheme: bearer}}
  schemas:
    Message: {type: object, required: [message], properties: {message: {type: string}}}
paths:
  /things/{id}:
    get:
      security: [{bearer: []}]
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '200':
          description: ok
          headers: {X-Page: {schema: {type: integer}, example: 1}}
          content: {application/json: {schema: {type: object, properties: {id: {type: integer}}}}}
        4XX:
          description: refused
          headers:
            X-Reason: {schema: {type: string}, example: refused}
            X-Trace: {required: true, schema: {type: string, pattern: '^t-[0-9]+$'}}
          content: {application/json: {schema: {$ref: '#/components/schemas/Message'}}}
        default:
          description: anything else
          headers: {X-Other: {schema: {type: integer}, example: 7}}
          content: {application/json: {schema: {$ref: '#/components/schemas/Message'}}}
  /ok:
    get:
      responses:
        2XX:
          description: fine
          headers: {X-Batch: {schema: {type: string}, example: b1}}
"""


def test_headers_of_a_range_or_default_response_come_with_its_answers(write):
    """A `4XX` or `default` response's headers (its examples, a required one generated to fit) are sent with
    every answer it gives: the mock's own refusals (401, 400), `Prefer: code=`, and a status only `default`
    covers; a `2XX` success's too. The body is that response's own, never RFC 7807 beside it."""
    client = create_app(write("spec.yaml", RANGED)).test_client()
    token = {"Authorization": "Bearer t"}
    refusals = [client.get("/things/1"), client.get("/things/x", headers=token),
                client.get("/things/1", headers={**token, "Prefer": "code=404"})]
    assert [r.status_code for r in refusals] == [401, 400, 404]
    for refusal in refusals:
        assert refusal.headers["X-Reason"] == "refused" and re.fullmatch(r"t-[0-9]+", refusal.headers["X-Trace"])
        assert "X-Other" not in refusal.headers and isinstance(body(refusal)["message"], str)
    down = client.get("/things/1", headers={**token, "Prefer": "code=503"})
    assert down.status_code == 503 and down.headers["X-Other"] == "7" and "X-Reason" not in down.headers
    assert down.content_type == "application/json" and isinstance(body(down)["message"], str)
    assert client.get("/things/1", headers=token).headers["X-Page"] == "1"
    assert client.get("/ok").headers["X-Batch"] == "b1"


def test_an_error_on_no_operation_takes_the_api_s_shape_for_that_status(write):
    """A path the description lacks is a 404 in the media type and body the API declares for 404 (a FastAPI
    `{detail}` in application/json; Box's own error body), not a problem+json it never speaks."""
    fastapi = write("fastapi.yaml", """
        openapi: 3.1.0
        info: {title: t, version: '1'}
        paths:
          /dags/{dag_id}:
            get:
              parameters: [{name: dag_id, in: path, required: true, schema: {type: string}}]
              responses:
                '200': {description: ok, content: {application/json: {schema: {type: object}}}}
                '404':
                  description: none
                  content:
                    application/json:
                      schema: {type: object, required: [detail], properties: {detail: {type: string}}}
    """)
    missing = create_app(fastapi).test_client().get("/dags/a/b")
    assert missing.status_code == 404 and missing.content_type == "application/json"
    assert "no operation at /dags/a/b" in body(missing)["detail"]
    box = write("box.yaml", OWN_DEFAULT.replace("        default:", "        '404':\n          description: gone\n"
                                                "          content: {application/json: {schema: {$ref: "
                                                "'#/components/schemas/ClientError'}}}\n        default:"))
    missing = create_app(box).test_client().get("/folders/1", headers={"Authorization": "Bearer t"})
    assert missing.status_code == 404 and missing.content_type == "application/json"
    assert (body(missing)["type"], body(missing)["code"]) == ("error", "not_found")


def test_errors_of_a_kind_are_worked_out_once_and_each_answer_is_its_own(monkeypatch):
    """An item read's 404 and a path's 400 are filled from the envelope as prepared on the first answer of their
    kind: each answer still carries its own request id, details and message, and the fixtures' template is gone
    through once per kind, not once per answer."""
    walked = []  # the whole template, each time it is gone through

    def counted(name: str) -> Any:
        original = getattr(envelope, name)

        def through(template: Any, *rest: Any) -> Any:
            if isinstance(template, dict) and "error" in template:
                walked.append(name)
            return original(template, *rest)
        return through

    with MockServer(PETS / "openapi.yaml", PETS / "fixtures", stateful=True) as server:
        for name in ("fill", "filler"):  # once it has started: its checks at start-up fill the template too
            if hasattr(envelope, name):
                monkeypatch.setattr(envelope, name, counted(name))
        answers = [_get(f"{server.url}/pets/{900 + n}", {"X-Request-Id": f"req-{n}"}) for n in range(10)]
        refused = [_get(f"{server.url}/pets/x{n}", {}) for n in range(10)]
    assert answers == [(404, f"req-{n}", {"error": {
        "code": "not-found", "message": "no such pet", "requestId": f"req-{n}", "details": {"id": 900 + n}}})
        for n in range(10)]
    assert all(status == 400 and body["error"]["requestId"] == request_id and f"'x{n}'" in body["error"]["message"]
               and body["error"]["code"] == "bad-request" for n, (status, request_id, body) in enumerate(refused))
    assert len({request_id for _, request_id, _ in refused}) == 10
    assert len(walked) <= 2, walked  # once for the 404s, once for the 400s


def _get(url: str, headers: dict[str, str]) -> tuple[int, str, Any]:
    """Status, request id header and JSON body of a GET that is answered with an error."""
    try:
        urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10)
    except urllib.error.HTTPError as error:
        return error.code, error.headers["X-Request-Id"], json.loads(error.read())
    raise AssertionError(f"{url} was answered 2xx")
