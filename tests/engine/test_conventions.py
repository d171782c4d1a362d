"""Pages and errors that hold together without fixtures (issue 31.7, 31.4): the mock's own errors in the API's
error convention, learned from the description's other operations, with the request's id; FastAPI's 422 listing
the request's real violations; generated pages that do not contradict themselves."""
from pathlib import Path

from conftest import body
from mockserver import create_app

DATA = Path(__file__).parent.parent / "data" / "lenient"
ID = {"X-Request-Id": "req_0123"}


def test_an_operation_that_declares_no_error_answers_in_the_api_s_envelope():
    """`listRuns` declares no 400: its validation error comes in the `{"error": {…}}` most operations declare,
    as application/json, its requestId the X-Request-Id sent back."""
    client = create_app(DATA / "envelope.yaml").test_client()
    refused = client.get("/agents/a1/runs?limit=x", headers=ID)
    assert refused.status_code == 400 and refused.content_type == "application/json"
    assert body(refused) == {"error": {"code": "bad_request", "requestId": "req_0123",
                                       "message": "query parameter 'limit': 'x' is not of type 'integer'"}}


def test_the_request_id_in_a_declared_error_is_the_header_s():
    client = create_app(DATA / "envelope.yaml").test_client()
    declared = client.get("/agents?limit=0", headers=ID)
    assert declared.status_code == 400 and body(declared)["error"]["requestId"] == "req_0123"
    made = client.get("/agents?limit=0")
    assert body(made)["error"]["requestId"] == made.headers["X-Request-Id"]


def test_the_mock_s_own_404_and_500_come_in_the_api_s_envelope():
    client = create_app(DATA / "envelope.yaml").test_client()
    missing = client.get("/nowhere", headers=ID)
    assert missing.status_code == 404 and missing.content_type == "application/json"
    assert body(missing) == {"error": {"code": "not_found", "message": "no operation at /nowhere",
                                       "requestId": "req_0123"}}
    broken = client.get("/broken", headers=ID)
    assert broken.status_code == 500 and broken.content_type == "application/json"
    error = body(broken)["error"]
    assert (error["code"], error["requestId"]) == ("mock-contract-violation", "req_0123")
    assert "the generated answer breaks the getBroken 200 schema" in error["message"]


def test_problem_json_where_the_description_has_no_convention():
    """FastAPI's description declares only its 422s: that is no convention for a 404."""
    missing = create_app(DATA / "fastapi.yaml").test_client().get("/nowhere")
    assert missing.status_code == 404 and missing.content_type == "application/problem+json"
    assert body(missing)["title"] == "Not Found"


def test_a_fastapi_422_lists_the_real_violations():
    """Where each violation is as FastAPI writes it, its message, its rule as `type`, the value as `input`."""
    client = create_app(DATA / "fastapi.yaml").test_client()
    created = client.post("/items/", json={"tags": ["a", 3]})
    assert created.status_code == 422 and created.content_type == "application/json"
    assert sorted(body(created)["detail"], key=lambda d: d["loc"]) == [
        {"loc": ["body", "name"], "msg": "'name' is a required property", "type": "required",
         "input": {"tags": ["a", 3]}},
        {"loc": ["body", "tags", 1], "msg": "3 is not of type 'string'", "type": "type", "input": 3}]
    listed = client.get("/items/?limit=500")
    assert body(listed) == {"detail": [{"loc": ["query", "limit"], "msg": "500 is greater than the maximum of 100",
                                        "type": "maximum", "input": 500}]}


def test_a_generated_page_does_not_contradict_itself():
    """`hasMore` false exactly when there is no next cursor, beside the list or in `pagination`, whatever the
    seed; a list asked for by its items' `id` holds no item twice."""
    for seed in range(6):
        client = create_app(DATA / "pages.yaml", seed=seed).test_client()
        for url in ("/cases", "/cases?limit=3", "/cases?limit=50&cursor=abc"):
            page = body(client.get(url))
            assert page["hasMore"] == (page.get("nextCursor") is not None), (seed, url, page)
        for url in ("/runs", "/runs?limit=50"):
            paging = body(client.get(url))["pagination"]
            assert paging["has_more"] == (paging["next_cursor"] is not None), (seed, url, paging)
        things = body(client.get("/things?id=x"))
        assert [thing["id"] for thing in things] == ["x"], (seed, things)


def test_a_fault_of_the_mock_s_own_is_never_dressed_as_one_of_the_api_s(write):
    """Where the API's error codes are an enum, the mock's own 500 cannot say `mock-contract-violation` in them:
    it comes as RFC 7807 with its code (in the media type the operation declares), not as one of the API's errors
    with a code of the API's."""
    spec = write("spec.yaml", """
        openapi: 3.1.0
        info: {title: t, version: '1'}
        components:
          schemas:
            ClientError:
              type: object
              required: [code, message]
              properties:
                code: {enum: [bad_request, not_found, internal_server_error]}
                message: {type: string}
        paths:
          /broken:
            get:
              responses:
                '200':
                  description: no value fits
                  content: {application/json: {schema: {oneOf: [{type: integer}, {type: integer}]}}}
                default:
                  description: an error
                  content: {application/json: {schema: {$ref: '#/components/schemas/ClientError'}}}
    """)
    client = create_app(spec).test_client()
    broken = client.get("/broken")
    assert broken.status_code == 500
    assert (body(broken)["code"], body(broken)["title"]) == ("mock-contract-violation", "Internal Server Error")
