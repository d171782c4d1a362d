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


def test_a_page_on_another_origin_can_use_it(kindgi):
    """CORS, as for the API: Storybook or a component test in the browser sets its own error cases."""
    origin = {"Origin": "http://localhost:6006"}
    preflight = kindgi.options("/__mock/scenarios", headers={**origin, "Access-Control-Request-Method": "POST",
                                                              "Access-Control-Request-Headers": "content-type"})
    assert preflight.status_code == 204 and preflight.headers["Access-Control-Allow-Origin"] == origin["Origin"]
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    made = kindgi.post("/__mock/scenarios", headers=origin, json={"operationId": "listTestSets", "latency": 1})
    assert made.status_code == 201 and made.headers["Access-Control-Allow-Origin"] == origin["Origin"]
    kindgi.delete("/__mock/scenarios/" + body(made)["id"])
    refused = kindgi.get("/v1/test-sets", headers=origin)
    assert refused.status_code == 401 and "WWW-Authenticate" in refused.headers["Access-Control-Expose-Headers"]


def test_a_control_token_refusal_carries_cors_too():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control_token="s3cret").test_client()
    refused = client.get("/__mock/scenarios", headers={"Origin": "http://localhost:3000"})
    assert refused.status_code == 401 and refused.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"


def test_a_body_over_the_limit_is_413_before_it_is_read():
    """20 MB announced, a few bytes sent: the answer comes at once, in the envelope (the API's own limit)."""
    import socket
    import time

    from mockserver.testing import MockServer

    with MockServer(KINDGI_SPEC, KINDGI_FIXTURES) as server:
        with socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])), timeout=5) as sock:
            sock.sendall(b"POST /__mock/scenarios HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 20000000\r\n\r\n{\"operat")
            started, received = time.monotonic(), b""
            while b"\r\n\r\n" not in received or not received.rstrip().endswith(b"}"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
    head, _, answer = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413") and time.monotonic() - started < 3
    assert json.loads(answer)["error"]["code"] == "payload-too-large"
