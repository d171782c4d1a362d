"""`--request-validation warn|off` for descriptions stricter than the server they describe, and the violations
header (`--violations-header`, Prism's `sl-violations` too) that tells the client what was let through."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import body
from mockserver import create_app

DATA = Path(__file__).parent.parent / "data" / "lenient"
ITEMS = DATA / "items.yaml"


def journal(client):
    return body(client.get("/__mock/requests"))["requests"]


def test_strict_refuses_what_breaks_the_description():
    client = create_app(ITEMS).test_client()
    assert client.get("/items?limit=50").status_code == 400
    assert client.post("/items", json={"name": 5}).status_code == 400


def test_warn_answers_as_if_valid_and_keeps_the_violations():
    """The request is answered as a valid one would be; the journal (so the dashboard) says what it broke, and
    coverage counts the call as one that broke the description. No header unless asked for."""
    client = create_app(ITEMS, request_validation="warn").test_client()
    listed = client.get("/items?limit=50")
    assert listed.status_code == 200 and isinstance(body(listed), list)
    assert "X-Mock-Violations" not in listed.headers
    created = client.post("/items", json={"name": 5})
    assert created.status_code == 201 and isinstance(body(created)["name"], str)
    entries = journal(client)
    assert [(v["in"], v["parameter"], v["rule"]) for v in entries[0]["violations"]] == [("query", "limit", "maximum")]
    assert [(v["in"], v["pointer"], v["rule"]) for v in entries[1]["violations"]] == [("body", "/name", "type")]
    coverage = body(client.get("/__mock/coverage"))
    assert coverage["violatingCalls"] == 2
    assert {op["operationId"]: op["violatingCalls"] for op in coverage["operations"]} == {
        "listItems": 1, "createItem": 1, "getItem": 0}
    client.get("/items?limit=5")
    assert journal(client)[-1]["violations"] is None and body(client.get("/__mock/coverage"))["violatingCalls"] == 2


def test_warn_with_a_path_parameter_that_cannot_be_read():
    """`/items/abc` where the id is an integer: answered as a valid read would be (the value kept as sent, so an
    answer that would echo it cannot), its violation kept."""
    client = create_app(ITEMS, request_validation="warn", violations_header="X-Mock-Violations").test_client()
    read = client.get("/items/abc")
    assert read.status_code == 200 and isinstance(body(read)["id"], int)
    assert read.headers["X-Mock-Violations"] == "/path/id type"
    assert journal(client)[0]["violations"][0]["parameter"] == "id"


def test_the_violations_header_lists_pointer_and_rule():
    client = create_app(ITEMS, request_validation="warn", violations_header="X-Mock-Violations").test_client()
    assert client.get("/items?limit=50").headers["X-Mock-Violations"] == "/query/limit maximum"
    both = client.post("/items?x=1", data=json.dumps({"other": "ü"}), content_type="application/json")
    assert both.headers["X-Mock-Violations"] == "/body required"
    typed = client.post("/items", data="name=x", content_type="text/plain")
    assert typed.status_code == 201 and typed.headers["X-Mock-Violations"] == "/body contentType"
    many = client.get("/items?limit=x")
    assert many.headers["X-Mock-Violations"] == "/query/limit type"
    assert "X-Mock-Violations" not in client.get("/items?limit=3").headers
    assert client.get("/items?limit=50").headers["X-Mock-Violations"] == "/query/limit maximum"  # a cached answer


def test_prism_s_name_gives_prism_s_json():
    client = create_app(ITEMS, request_validation="warn", violations_header="sl-violations").test_client()
    said = json.loads(client.post("/items", json={"name": 5}).headers["sl-violations"])
    assert said == [{"location": ["request", "body", "name"], "severity": "Error", "code": "type",
                     "message": "5 is not of type 'string'"}]


def test_off_checks_nothing_and_records_nothing():
    client = create_app(ITEMS, request_validation="off", violations_header="X-Mock-Violations").test_client()
    answers = [client.get("/items?limit=50"), client.post("/items", json={"name": 5}), client.get("/items/abc")]
    assert [a.status_code for a in answers] == [200, 201, 200]
    assert all("X-Mock-Violations" not in a.headers for a in answers)
    assert [e["violations"] for e in journal(client)] == [None, None, None]


def test_off_still_routes_by_the_path_s_types(write):
    """Not checking requests does not change where they go: `GET /items/all` beside `GET /items/{id}` (an
    integer) with only a POST at the concrete path is that path's 405, as in strict mode."""
    spec = write("spec.yaml", """
        openapi: 3.1.0
        info: {title: t, version: '1'}
        paths:
          /items/all:
            post: {responses: {'200': {description: ok}}}
          /items/{id}:
            get:
              parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
              responses: {'200': {description: ok, content: {application/json: {schema: {type: object}}}}}
    """)
    refused = create_app(spec, request_validation="off").test_client().get("/items/all")
    assert refused.status_code == 405 and refused.headers["Allow"] == "POST"


def test_an_unknown_mode_or_header_name_is_refused():
    with pytest.raises(ValueError, match="request_validation='lax'"):
        create_app(ITEMS, request_validation="lax")
    with pytest.raises(ValueError, match="X-Mock-Violations, sl-violations"):
        create_app(ITEMS, violations_header="X-Other")


@pytest.mark.slow
def test_the_command_line_says_which_names_it_takes():
    wrong = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--spec", str(ITEMS), "--violations-header",
                            "X-Other"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "'X-Other' is not X-Mock-Violations or sl-violations" in wrong.stderr
    mode = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--spec", str(ITEMS), "--request-validation",
                           "lax"], capture_output=True, text=True, timeout=60)
    assert mode.returncode == 2 and "invalid choice: 'lax'" in mode.stderr


@pytest.mark.slow  # a redis-server
def test_violations_are_kept_and_counted_in_a_shared_store(redis_url):
    client = create_app(ITEMS, request_validation="warn", state=redis_url).test_client()
    client.get("/items?limit=50")
    client.get("/items?limit=5")
    assert [bool(e["violations"]) for e in journal(client)] == [True, False]
    coverage = body(client.get("/__mock/coverage"))
    assert (coverage["calls"], coverage["violatingCalls"]) == (2, 1)
