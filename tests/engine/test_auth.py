"""Bearer and API-key security: 401 in the envelope for a missing, malformed, expired, revoked or (strict) unknown
credential; an unknown well-formed token is an anonymous caller of the default tenant otherwise."""
import pytest

from conftest import KINDGI_FIXTURES, KINDGI_SPEC, LIBRARY, body
from mockserver import create_app


@pytest.mark.parametrize("authorization, says", [
    (None, "missing Authorization header"),
    ("demo-token", "malformed Authorization header"),
    ("Bearer ", "malformed Authorization header"),
    ("Basic ZGVtbzp4", "malformed Authorization header"),
    ("Bearer expired-token", "expired"),
    ("Bearer revoked-token", "revoked"),
])
def test_401_says_why(kindgi, authorization, says):
    headers = {"Authorization": authorization} if authorization else {}
    response = kindgi.get("/v1/test-sets", headers=headers)
    assert response.status_code == 401
    error = body(response)["error"]
    assert error["code"] == "unauthorized" and says in error["message"]
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_an_unknown_token_is_anonymous_in_the_default_tenant(kindgi):
    anonymous = kindgi.get("/v1/test-sets?limit=100", headers={"Authorization": "Bearer someone-else"})
    demo = kindgi.get("/v1/test-sets?limit=100", headers={"Authorization": "Bearer demo-token"})
    assert anonymous.status_code == 200
    assert body(anonymous)["data"] == body(demo)["data"]


def test_strict_auth_refuses_unknown_tokens():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, strict_auth=True).test_client()
    response = client.get("/v1/test-sets", headers={"Authorization": "Bearer someone-else"})
    assert response.status_code == 401
    assert body(response)["error"]["details"] == {"reason": "unknown-token"}
    assert client.get("/v1/test-sets", headers={"Authorization": "Bearer demo-token"}).status_code == 200


def test_api_key_and_open_operations(library):
    assert library.get("/api/v2/books").status_code == 401
    assert library.get("/api/v2/books", headers={"X-Api-Key": "reader-key"}).status_code == 200
    assert library.get("/api/v2/books/latest").status_code == 200  # `security: []`


SCHEMES = """\
openapi: 3.1.0
info: {title: t, version: '1'}
components:
  securitySchemes:
    digest: {type: http, scheme: digest}
    basic: {type: http, scheme: basic}
    key: {type: apiKey, in: header, name: X-Key}
    bearer: {type: http, scheme: bearer}
paths:
  /digest: {get: {security: [{digest: []}], responses: {'200': {description: ok}}}}
  /basic: {get: {security: [{basic: []}], responses: {'200': {description: ok}}}}
  /key: {get: {security: [{key: []}], responses: {'200': {description: ok}}}}
  /either: {get: {security: [{bearer: []}, {key: []}], responses: {'200': {description: ok}}}}
"""
DIGEST = 'Digest username="ada", realm="mock", nonce="n", uri="/digest", response="6629fae49393a05397450978507c4ef1"'


def test_each_scheme_takes_its_own_credentials_and_challenges_in_its_own_words(write):
    client = create_app(write("spec.yaml", SCHEMES)).test_client()
    assert client.get("/digest", headers={"Authorization": DIGEST}).status_code == 200
    refused = client.get("/digest", headers={"Authorization": "Bearer t"})
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith('Digest realm="mock"')
    assert "nonce=" in refused.headers["WWW-Authenticate"]
    assert client.get("/basic").headers["WWW-Authenticate"] == 'Basic realm="mock"'
    assert client.get("/key").headers["WWW-Authenticate"] == 'ApiKey realm="mock", in="header", name="X-Key"'
    assert client.get("/either").headers["WWW-Authenticate"] == (
        'Bearer realm="mock", ApiKey realm="mock", in="header", name="X-Key"')


def test_accepted_tokens_without_fixtures():
    """`--accept-token`: a description with no fixtures (so no tokens) still tells a good credential from a bad
    one under --strict-auth, which is what a contract run against the mock needs to check ignored_auth."""
    client = create_app(LIBRARY / "openapi.yaml", strict_auth=True, accept_tokens=("reader-1",)).test_client()
    assert client.get("/api/v2/books", headers={"X-Api-Key": "reader-1"}).status_code == 200
    assert client.get("/api/v2/books", headers={"X-Api-Key": "someone-else"}).status_code == 401


def test_guest_tokens_are_callers_only_where_the_fixtures_declare_none():
    """What `mockserver contract` runs its in-process mock with: its credentials let in where the mock has no
    callers of its own, and refused where the fixtures declare theirs."""
    client = create_app(LIBRARY / "openapi.yaml", strict_auth=True, guest_tokens=("run-key",)).test_client()
    assert client.get("/api/v2/books", headers={"X-Api-Key": "run-key"}).status_code == 200
    assert client.get("/api/v2/books", headers={"X-Api-Key": "someone-else"}).status_code == 401
    kindgi = create_app(KINDGI_SPEC, KINDGI_FIXTURES, strict_auth=True, guest_tokens=("run-key",)).test_client()
    assert kindgi.get("/v1/test-sets", headers={"Authorization": "Bearer run-key"}).status_code == 401
