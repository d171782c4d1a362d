"""Issue 32: any description served the way its users expect. Each class has a small description under
tests/data/served/: security failures answered with the description's own (non-object) bodies and credentials
each scheme takes as given; the request checks a body, a form field or an empty path segment needs; a named
example completed from its schema."""
import pytest

from conftest import ROOT, body
from mockserver import create_app, pipeline_of
from mockserver.pipeline.router import Router

SERVED = ROOT / "tests" / "data" / "served"


@pytest.fixture(scope="module")
def security():
    return create_app(SERVED / "security.yaml").test_client(use_cookies=False)  # a Cookie header sent as it is


def test_a_declared_error_example_that_is_no_object_is_answered_as_it_is(security):
    refused = security.get("/notes")
    assert refused.status_code == 401 and body(refused) == "unauthorized"
    assert refused.headers["WWW-Authenticate"].startswith("ApiKey")
    invalid = security.get("/notes?apiKey=k&limit=x")
    assert invalid.status_code == 422 and body(invalid) == ["bad request"]
    text = security.get("/diary")
    assert text.status_code == 401 and text.mimetype == "text/plain" and text.data == b"go away"


@pytest.mark.parametrize("path, headers", [
    ("/digest", {"Authorization": 'Digest username="", realm="", nonce="", uri="", response=""'}),
    ("/basic", {"Authorization": "Basic Og=="}),  # ":": an empty user and password
    ("/diary", {"X-Key": ""}),
    ("/me", {"Cookie": "theme=dark mode; SESSIONID=abc; flag"}),  # pairs http.cookies refuses beside it
])
def test_credentials_in_the_right_place_are_not_refused(security, path, headers):
    assert security.get(path, headers=headers).status_code == 200


@pytest.mark.parametrize("path, headers", [
    ("/digest", {"Authorization": "Digest abc"}),
    ("/basic", {"Authorization": "Basic xyz"}),
    ("/diary", {}),
    ("/me", {"Cookie": "theme=dark; session=abc"}),
])
def test_missing_or_malformed_credentials_are_still_refused(security, path, headers):
    assert security.get(path, headers=headers).status_code == 401


@pytest.fixture(scope="module")
def requests():
    return create_app(SERVED / "requests.yaml").test_client()


def test_a_body_where_the_operation_takes_none_is_a_415(requests):
    declared = requests.post("/ping", data="hi", content_type="text/plain")
    assert declared.status_code == 415 and body(declared) == {"reason": "this takes no body"}
    own = requests.get("/ping", data="{}", content_type="application/json")
    assert own.status_code == 415 and "takes no request body" in body(own)["detail"]
    assert requests.post("/ping").status_code == 200  # no body: nothing to refuse


@pytest.mark.parametrize("content_type, data", [
    ("application/x-www-form-urlencoded", "url=http://example.com/a&note=kept"),
    ("multipart/form-data; boundary=B",
     '--B\r\nContent-Disposition: form-data; name="url"\r\n\r\nhttp://example.com/a\r\n--B--\r\n'),
])
def test_reserved_characters_sent_as_they_are_break_allow_reserved_false(requests, content_type, data):
    refused = requests.post("/links", data=data, content_type=content_type)
    assert refused.status_code == 400
    assert "the field 'url' has ':' as it is" in body(refused)["detail"]
    assert body(refused)["details"]["violations"] == [{
        "parameter": "url", "in": "body", "pointer": "/url", "rule": "allowReserved",
        "message": "the field 'url' has ':' as it is: its encoding sets allowReserved: false, so reserved "
                   "characters must be percent-encoded"}]


def test_reserved_characters_percent_encoded_or_in_other_fields_are_accepted(requests):
    sent = "url=http%3A%2F%2Fexample.com%2Fa&note=a/b+c"
    assert requests.post("/links", data=sent, content_type="application/x-www-form-urlencoded").status_code == 201


def test_an_empty_path_segment_is_a_missing_parameter_not_an_unknown_path(requests):
    refused = requests.get("/pets//toys")
    assert refused.status_code == 400
    assert "petId" in body(refused)["detail"] and "required" in body(refused)["detail"]
    assert requests.get("/pets/rex/toys").status_code == 200
    assert requests.get("/pets//balls").status_code == 404  # no such route


def test_an_empty_segment_reaches_the_operation_its_route_names():
    """`reaching` (whether an answer may wait on a shared store) is true for every request `match` gives an
    operation, the empty segment's too."""
    operations = list(pipeline_of(create_app(SERVED / "requests.yaml")).spec.operations.values())
    router = Router(operations)
    toys = router.match("GET", "/pets//toys").operation
    assert toys.path == "/pets/{petId}/toys" and router.reaching(frozenset({toys.id}))("GET", "/pets//toys")


@pytest.fixture(scope="module")
def examples():
    return create_app(SERVED / "examples.yaml")


def test_a_named_example_that_lacks_required_properties_is_completed_from_its_schema(examples):
    answer = examples.test_client().get("/pets/x", headers={"Prefer": "example=nameless"})
    assert answer.status_code == 200  # it passed the response check: the schema's required properties are there
    pet = body(answer)
    assert {k: pet[k] for k in ("id", "kind")} == {"id": "p2", "kind": "dog"} and pet["owner"]["name"] == "Bo"
    assert pet["name"] and "@" in pet["owner"]["email"]  # made from the schema
    assert "tag" not in pet  # an optional property it left out stays out
    assert any("the example 'nameless' of GET /pets/{petId} lacks required properties (/name, /owner/email)"
               in str(w) for w in pipeline_of(examples).warnings)


def test_a_completed_example_answers_unasked_too(examples):
    owner = body(examples.test_client().get("/owners/o1"))
    assert owner["name"] == "Dee" and "@" in owner["email"]


def test_a_complete_example_is_served_as_written_and_a_wrong_value_is_not_mended(examples):
    client = examples.test_client()
    assert body(client.get("/pets/x", headers={"Prefer": "example=cat"}))["owner"]["email"] == "ann@example.com"
    wrong = client.get("/pets/x", headers={"Prefer": "example=wrong"})
    assert wrong.status_code == 500 and body(wrong)["details"]["pointer"] == "/id"
