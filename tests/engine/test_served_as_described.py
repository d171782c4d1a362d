"""Issue 32: any description served the way its users expect. Each class has a small description under
tests/data/served/: security failures answered with the description's own (non-object) bodies and credentials
each scheme takes as given; the request checks a body, a form field or an empty path segment needs; a named
example completed from its schema."""
import pytest

from conftest import ROOT, body
from mockserver import create_app

SERVED = ROOT / "tests" / "data" / "served"


@pytest.fixture(scope="module")
def security():
    return create_app(SERVED / "security.yaml").test_client()


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
])
def test_credentials_in_the_right_place_are_not_refused(security, path, headers):
    assert security.get(path, headers=headers).status_code == 200


@pytest.mark.parametrize("path, headers", [
    ("/digest", {"Authorization": "Digest abc"}),
    ("/basic", {"Authorization": "Basic xyz"}),
    ("/diary", {}),
])
def test_missing_or_malformed_credentials_are_still_refused(security, path, headers):
    assert security.get(path, headers=headers).status_code == 401
