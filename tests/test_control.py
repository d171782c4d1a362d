"""The control API: its own description, its token, switching it off, never a clash or a 500."""
import json

import yaml
from openapi_spec_validator import validate

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, body
from mockserver import create_app
from mockserver.web.control import DESCRIPTION


def test_health_and_its_own_description(kindgi):
    assert body(kindgi.get("/__mock/health"))["status"] == "ok"
    served = json.loads(kindgi.get("/__mock/openapi.json").data)
    validate(served)
    assert served == yaml.safe_load(DESCRIPTION.read_text())


def test_a_token_protects_it():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control_token="s3cret").test_client()
    for headers in ({}, {"X-Mock-Control-Token": "wrong"}):
        response = client.get("/__mock/scenarios", headers=headers)
        assert response.status_code == 401 and body(response)["error"]["code"] == "unauthorized"
    assert client.get("/__mock/scenarios", headers={"X-Mock-Control-Token": "s3cret"}).status_code == 200
    assert client.get("/__mock/scenarios", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert client.get("/v1/test-sets", headers=DEMO).status_code == 200  # the API itself is not affected


def test_it_can_be_switched_off():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control=False).test_client()
    response = client.get("/__mock/health")
    assert response.status_code == 404 and body(response)["error"]["code"] == "not-found"


def test_unknown_control_paths_and_bad_bodies_are_4xx(kindgi):
    assert kindgi.get("/__mock/nothing").status_code == 404
    for data in (b"", b"{oops", b"[1, 2]", b'"text"'):
        response = kindgi.post("/__mock/scenarios", data=data, content_type="application/json")
        assert response.status_code == 400, (data, response.data)
