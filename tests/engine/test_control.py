"""The control API: its own description, its token, switching it off, never a clash or a 500."""
import json
import re

import pytest
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


def test_every_description_in_its_own_description_is_text(kindgi):
    """A comma inside a YAML flow mapping (`{description: A, b.}`) splits the text into a stray `null` key:
    every `description` must come through whole, and no key or value may be null."""
    found: list[tuple[str, object]] = []

    def walk(node: object, pointer: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                text = key == "description" and not pointer.endswith("/properties")  # not a property so named
                if key is None or value is None or (text and not isinstance(value, str)):
                    found.append((f"{pointer}/{key}", value))
                walk(value, f"{pointer}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{pointer}/{index}")

    walk(json.loads(kindgi.get("/__mock/openapi.json").data), "")
    assert found == []


def refs(node: object) -> list[str]:
    """Every `$ref` in a document."""
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for v in node.values() for r in refs(v)]
    return [r for v in node for r in refs(v)] if isinstance(node, list) else []


def test_the_description_is_served_as_one_document_that_points_at_the_mock(kindgi):
    """What a frontend developer feeds to openapi-typescript: JSON or YAML (by suffix, else by Accept), its
    servers the URL the request came to."""
    served = kindgi.get("/__mock/description", base_url="http://127.0.0.1:4010")
    assert served.status_code == 200 and served.content_type == "application/json"
    document = json.loads(served.data)
    validate(document)
    assert document["info"]["title"] == "Kindgi API" and "/v1/test-sets" in document["paths"]
    assert document["servers"] == [{"url": "http://127.0.0.1:4010", "description": "this mock"}]
    assert json.loads(kindgi.get("/__mock/description.json", base_url="http://127.0.0.1:4010").data) == document
    for asked in ({"path": "/__mock/description.yaml"},
                  {"path": "/__mock/description", "headers": {"Accept": "application/yaml, application/json;q=0.5"}}):
        as_yaml = kindgi.get(**asked, base_url="http://127.0.0.1:4010")
        assert as_yaml.content_type == "application/yaml" and yaml.safe_load(as_yaml.data) == document
    assert 'href="/__mock/description"' in kindgi.get("/__mock/").data.decode()  # the dashboard names it
    wrong = kindgi.get("/__mock/description.xml")
    assert wrong.status_code == 404 and "/__mock/description.json" in body(wrong)["error"]["message"]


def test_a_description_split_over_files_is_served_as_one(write):
    """A generator cannot follow a `$ref` into the mock's folder: each part of another file is copied in where it
    is first met, and later `$ref`s to it (one from inside itself too) point to that copy."""
    write("parts/tree.yaml", """
        Tree: {type: object, properties: {name: {type: string}, children: {type: array, items: {$ref: '#/Tree'}}}}
        limit: {name: limit, in: query, schema: {type: integer}}
    """)
    spec = write("openapi.yaml", """
        openapi: 3.1.0
        info: {title: Split, version: "1"}
        servers: [{url: "https://trees.example/v2"}]
        paths:
          /trees:
            get:
              parameters: [{$ref: 'parts/tree.yaml#/limit'}]
              responses:
                "200": {description: ok, content: {application/json: {schema: {$ref: 'parts/tree.yaml#/Tree'}}}}
          /forest:
            get:
              responses:
                "200": {description: ok, content: {application/json: {schema: {
                  type: array, items: {$ref: 'parts/tree.yaml#/Tree', description: One tree.}}}}}
    """)
    document = body(create_app(spec).test_client().get("/__mock/description"))
    validate(document)
    assert document["servers"] == [{"url": "http://localhost/v2", "description": "this mock"}]
    assert document["paths"]["/trees"]["get"]["parameters"] == [{"name": "limit", "in": "query",
                                                                 "schema": {"type": "integer"}}]
    tree = "#/paths/~1trees/get/responses/200/content/application~1json/schema"
    assert sorted(refs(document)) == [tree, tree]  # from inside itself, and from /forest beside a description
    assert document["paths"]["/forest"]["get"]["responses"]["200"]["content"]["application/json"]["schema"][
        "items"] == {"$ref": tree, "description": "One tree."}


def test_a_token_protects_it():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control_token="s3cret").test_client()
    for headers in ({}, {"X-Mock-Control-Token": "wrong"}):
        response = client.get("/__mock/scenarios", headers=headers)
        assert response.status_code == 401 and body(response)["error"]["code"] == "unauthorized"
    assert client.get("/__mock/scenarios", headers={"X-Mock-Control-Token": "s3cret"}).status_code == 200
    assert client.get("/__mock/scenarios", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    # the description as one document, like the docs page's: its token guards it as it guards the journal
    assert client.get("/__mock/description").status_code == 401
    assert client.get("/__mock/description", headers={"X-Mock-Control-Token": "s3cret"}).status_code == 200
    assert client.get("/v1/test-sets", headers=DEMO).status_code == 200  # the API itself is not affected
    assert client.get("/__mock/nothing").status_code == 401  # a path no endpoint takes is behind the token too
    assert client.get("/__mock/nothing", headers={"X-Mock-Control-Token": "s3cret"}).status_code == 404


def test_it_can_be_switched_off():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control=False).test_client()
    response = client.get("/__mock/health")
    assert response.status_code == 404 and body(response)["error"]["code"] == "not-found"


def test_an_unknown_control_path_is_named_as_sent_in_the_envelope(kindgi):
    missing = kindgi.get("/__mock/%ff/x%2Fy")
    assert missing.status_code == 404 and body(missing)["error"]["code"] == "not-found"
    assert body(missing)["error"]["message"] == "no control endpoint /__mock/%ff/x%2Fy; see /__mock/openapi.json"


def test_unknown_control_paths_and_bad_bodies_are_4xx(kindgi):
    assert kindgi.get("/__mock/nothing").status_code == 404
    for data in (b"", b"{oops", b"[1, 2]", b'"text"'):
        response = kindgi.post("/__mock/scenarios", data=data, content_type="application/json")
        assert response.status_code == 400, (data, response.data)


STORYBOOK = {"Origin": "http://localhost:6006"}


def test_a_page_of_an_origin_named_with_control_origin_can_use_it():
    """CORS for the pages named: Storybook or a component test in the browser sets its own error cases."""
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control_origins=("http://localhost:6006/",)).test_client()
    preflight = client.options("/__mock/scenarios", headers={**STORYBOOK, "Access-Control-Request-Method": "POST",
                                                              "Access-Control-Request-Headers": "content-type"})
    assert preflight.status_code == 204 and preflight.headers["Access-Control-Allow-Origin"] == STORYBOOK["Origin"]
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    made = client.post("/__mock/scenarios", headers=STORYBOOK, json={"operationId": "listTestSets", "latency": 1})
    assert made.status_code == 201 and made.headers["Access-Control-Allow-Origin"] == STORYBOOK["Origin"]
    client.delete("/__mock/scenarios/" + body(made)["id"], headers=STORYBOOK, json={})
    refused = client.get("/v1/test-sets", headers=STORYBOOK)
    assert refused.status_code == 401 and "WWW-Authenticate" in refused.headers["Access-Control-Expose-Headers"]


def test_a_page_of_another_origin_is_refused_and_gets_no_cors(kindgi):
    """By default only the mock's own pages (the dashboard) may use the control API: another page's preflight,
    its calls and a browser's cross-site call without Origin are 403 in the envelope, without CORS headers (its
    browser keeps even the refusal from it). The API's own paths still echo any origin."""
    preflight = kindgi.options("/__mock/reset", headers={**STORYBOOK, "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 403 and "Access-Control-Allow-Origin" not in preflight.headers
    for method, path, headers in (
            ("POST", "/__mock/reset", {**STORYBOOK, "Content-Type": "text/plain"}),
            ("POST", "/__mock/scenarios?session=alice", {**STORYBOOK, "Content-Type": "application/json"}),
            ("GET", "/__mock/requests", STORYBOOK),
            ("GET", "/__mock/requests", {"Origin": "null"}),
            ("GET", "/__mock/requests", {"Sec-Fetch-Site": "cross-site"}),
            ("GET", "/__mock/coverage", {"Sec-Fetch-Site": "same-site"})):
        refused = kindgi.open(path, method=method, headers=headers, data=b'{"operationId": "listTestSets"}')
        assert refused.status_code == 403, (method, path, headers, refused.data)
        assert body(refused)["error"]["code"] == "forbidden"
        assert ("--control-origin" if "Origin" in headers else "Sec-Fetch-Site") in body(refused)["error"]["message"]
        assert "Access-Control-Allow-Origin" not in refused.headers
    assert {s["origin"] for s in body(kindgi.get("/__mock/scenarios"))["scenarios"]} == {"fixtures"}  # none set
    own = kindgi.post("/__mock/reset", json={}, headers={"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"})
    assert own.status_code == 200
    assert kindgi.get("/__mock/requests", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
    api = kindgi.options("/v1/test-sets", headers={**STORYBOOK, "Access-Control-Request-Method": "GET"})
    assert api.status_code == 204 and api.headers["Access-Control-Allow-Origin"] == STORYBOOK["Origin"]


def test_a_page_at_a_name_pointed_here_is_refused_without_a_token(kindgi):
    """DNS rebinding: a page of evil.example makes its name point at 127.0.0.1, so its calls are "same-origin".
    A browser's call at a Host that is a name other than localhost is refused unless the mock has a token or
    the origin is named; IP addresses, localhost and clients without a browser's headers are let in."""
    page = {"Host": "evil.example:4010", "Sec-Fetch-Site": "same-origin"}
    for headers in (page, {**page, "Origin": "http://evil.example:4010"}):
        refused = kindgi.get("/__mock/requests", headers=headers)
        assert refused.status_code == 403 and "DNS rebinding" in body(refused)["error"]["message"]
    for host in ("127.0.0.1:4010", "[::1]:4010", "localhost:4010", "app.localhost", "192.168.1.20:4010"):
        assert kindgi.get("/__mock/requests", headers={**page, "Host": host}).status_code == 200, host
    assert kindgi.get("/__mock/requests", headers={"Host": "mock:4010"}).status_code == 200  # curl, SDKs
    named = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control_origins=("http://evil.example:4010",)).test_client()
    assert named.get("/__mock/requests", headers=page).status_code == 200
    guarded = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control_token="s3cret").test_client()
    assert guarded.get("/__mock/requests", headers={**page, "X-Mock-Control-Token": "s3cret"}).status_code == 200


def test_a_change_needs_json_or_an_x_mock_header(kindgi):
    """What a page of another origin can send without a preflight (a form, text/plain) never changes the mock,
    even where no browser says where it comes from."""
    for method, path in (("POST", "/__mock/reset"), ("DELETE", "/__mock/requests"), ("DELETE", "/__mock/scenarios"),
                         ("POST", "/__mock/sessions")):
        for content_type in (None, "text/plain", "application/x-www-form-urlencoded"):
            refused = kindgi.open(path, method=method, content_type=content_type)
            assert refused.status_code == 415, (method, path, content_type)
            assert body(refused)["error"]["code"] == "unsupported-media-type"
            assert f"{method} {path}" in refused.text and "Content-Type: application/json" in refused.text
        assert kindgi.open(path, method=method, json={}).status_code in (200, 201)
        assert kindgi.open(path, method=method, headers={"X-Mock-Session": "bob"}).status_code in (200, 201)
    assert kindgi.get("/__mock/requests").status_code == 200  # reads need neither


def test_control_origin_must_be_an_origin_and_star_needs_a_token():
    for origins, token, said in ((("*",), None, "needs --control-token"),
                                 (("localhost:3000",), None, "scheme://host[:port]"),
                                 (("http://localhost:3000/app",), None, "not an origin")):
        with pytest.raises(ValueError, match=re.escape(said)):
            create_app(KINDGI_SPEC, KINDGI_FIXTURES, control_origins=origins, control_token=token)
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control_origins=("*",), control_token="s3cret").test_client()
    answered = client.get("/__mock/scenarios", headers={**STORYBOOK, "X-Mock-Control-Token": "s3cret"})
    assert answered.status_code == 200 and answered.headers["Access-Control-Allow-Origin"] == STORYBOOK["Origin"]


def test_a_control_token_refusal_carries_cors_for_a_page_let_in():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control_token="s3cret",
                        control_origins=("http://localhost:6006",)).test_client()
    refused = client.get("/__mock/scenarios", headers=STORYBOOK)
    assert refused.status_code == 401 and refused.headers["Access-Control-Allow-Origin"] == STORYBOOK["Origin"]


def test_a_fresh_session_is_unguessable_and_works_at_once(kindgi):
    """POST /__mock/sessions: a name nobody can guess (a session's name is all it takes to use its state)."""
    made = [kindgi.post("/__mock/sessions", json={}) for _ in range(3)]
    assert {m.status_code for m in made} == {201}
    names = [body(m)["session"] for m in made]
    assert len(set(names)) == 3 and all(re.fullmatch(r"s-[A-Za-z0-9_-]{32}", n) for n in names)
    assert body(made[0])["headers"] == {"X-Mock-Session": names[0]}
    kindgi.post(f"/__mock/scenarios?session={names[0]}", json={"operationId": "listTestSets", "status": 503})
    assert kindgi.get("/v1/test-sets", headers={**DEMO, "X-Mock-Session": names[0]}).status_code == 503
    assert kindgi.get("/v1/test-sets", headers={**DEMO, "X-Mock-Session": names[1]}).status_code == 200
    kindgi.post("/__mock/reset", json={})


def test_sessions_and_the_whole_journal_need_the_token_when_one_is_set():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control_token="s3cret").test_client()
    assert client.post("/__mock/sessions", json={}).status_code == 401
    token = {"X-Mock-Control-Token": "s3cret"}
    session = body(client.post("/__mock/sessions", json={}, headers=token))["session"]
    client.get("/v1/test-sets", headers={**DEMO, "X-Mock-Session": session})
    assert client.get("/__mock/requests").status_code == 401
    assert [e["session"] for e in body(client.get("/__mock/requests", headers=token))["requests"]] == [session]


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
