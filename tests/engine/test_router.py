import pytest

from mockserver.base.errors import MockError
from mockserver.pipeline.router import Router
from mockserver.spec.index import Operation


def op(method: str, path: str) -> Operation:
    return Operation(f"{method} {path}", method, path, [], None, {}, [], "")


ROUTER = Router([op("GET", "/users/{id}"), op("GET", "/users/me"), op("DELETE", "/users/{id}"),
                 op("GET", "/Accounts/{Sid}.json"), op("GET", "/files/{name}")], "/api")


def test_a_concrete_path_beats_a_templated_one():
    assert ROUTER.match("GET", "/api/users/me").operation.path == "/users/me"
    assert ROUTER.match("GET", "/api/users/42").path_params == {"id": "42"}


def test_a_less_concrete_template_still_answers_another_method():
    assert ROUTER.match("DELETE", "/api/users/me").operation.path == "/users/{id}"


def test_a_method_the_concrete_path_lacks_is_405_where_the_template_s_value_would_not_fit():
    """FastAPI's `POST /backfills/dry_run` beside `GET /backfills/{backfill_id}` (an integer): `GET
    /backfills/dry_run` names the concrete path, so it is a 405 with its Allow, not a 422 for `dry_run`; a value
    that fits still reaches the template (`DELETE /users/me` above)."""
    routes = [op("POST", "/backfills/dry_run"), op("GET", "/backfills/{backfill_id}")]
    router = Router(routes, fits=lambda operation, values: all(v.isdigit() for v in values.values()))
    with pytest.raises(MockError) as caught:
        router.match("GET", "/backfills/dry_run")
    assert caught.value.status == 405 and caught.value.headers == {"Allow": "POST"}
    assert router.match("GET", "/backfills/7").path_params == {"backfill_id": "7"}
    assert router.match("GET", "/backfills/x").operation.path == "/backfills/{backfill_id}"  # then a 400 or 422


def test_a_typed_path_parameter_decides_the_route_in_the_mock(write):
    from conftest import body
    from mockserver import create_app

    client = create_app(write("spec.yaml", """
        openapi: 3.1.0
        info: {title: t, version: '1'}
        paths:
          /backfills/dry_run:
            post: {responses: {'200': {description: ok}}}
          /backfills/{backfill_id}:
            get:
              parameters: [{name: backfill_id, in: path, required: true, schema: {type: integer}}]
              responses: {'200': {description: ok, content: {application/json: {schema: {type: object}}}}}
    """)).test_client()
    refused = client.get("/backfills/dry_run")
    assert refused.status_code == 405 and refused.headers["Allow"] == "POST" and "GET" in body(refused)["detail"]
    assert client.get("/backfills/3").status_code == 200
    assert client.get("/backfills/three").status_code == 400


def test_a_parameter_inside_a_segment():
    match = ROUTER.match("GET", "/api/Accounts/AC123.json")
    assert match.path_params == {"Sid": "AC123"}


def test_an_encoded_slash_stays_inside_its_segment():
    assert ROUTER.match("GET", "/api/files/a%2Fb").path_params == {"name": "a/b"}


def test_the_server_base_path_is_required():
    with pytest.raises(MockError) as caught:
        ROUTER.match("GET", "/users/me")
    assert caught.value.status == 404 and "/api" in caught.value.message


def test_unknown_path_is_404_and_wrong_method_is_405_with_allow():
    with pytest.raises(MockError) as caught:
        ROUTER.match("GET", "/api/nothing")
    assert caught.value.status == 404
    with pytest.raises(MockError) as caught:
        ROUTER.match("POST", "/api/Accounts/A.json")
    assert caught.value.status == 405 and caught.value.headers == {"Allow": "GET"}


def test_a_literal_segment_matches_its_percent_encoded_spelling():
    router = Router([op("PUT", "/<upload_url>"), op("GET", "/applications/@me"), op("GET", "/applications/{id}")])
    assert router.match("PUT", "/%3Cupload_url%3E").operation.path == "/<upload_url>"
    assert router.match("PUT", "/%3cupload_url%3e").operation.path == "/<upload_url>"
    assert router.match("GET", "/applications/%40me").operation.path == "/applications/@me"
    assert router.match("GET", "/applications/%41me").path_params == {"id": "Ame"}  # letters stay literal


def test_a_refused_request_line_still_names_its_operation():
    """For refusals made before the request is read (a line over the server's limit): the line may be cut inside
    an escape, or before the path's last segments."""
    router = Router([op("GET", "/channels/{id}/reactions/{emoji}"), op("PUT", "/channels/{id}/reactions/{emoji}/@me"),
                     op("GET", "/Accounts/{Sid}.json")], "/api")
    assert router.guess("GET /api/channels/1/reactions/x HTTP/1.1").path == "/channels/{id}/reactions/{emoji}"
    assert router.guess("PUT /api/channels/1/reactions/" + "%C2%A9" * 5 + "%C2%A").path == \
        "/channels/{id}/reactions/{emoji}/@me"  # cut: only the PUT route can begin so
    assert router.guess("GET /api/Accounts/AC" + "%E2%82%AC" * 3 + "%E2").path == "/Accounts/{Sid}.json"
    assert router.guess("PUT /api/channels/1/reactions/x HTTP/1.1") is None  # whole line: 405, no guessing
    assert router.guess("GET /elsewhere/" + "a" * 10) is None


def test_reaching_is_true_for_every_request_that_matches_one_of_the_operations():
    """What decides whether an answer may wait on Redis: every request `match` gives one of the operations is
    caught (the falling-through DELETE too), a request of another operation or of no operation is not."""
    reaches = ROUTER.reaching(frozenset({"DELETE /users/{id}", "GET /Accounts/{Sid}.json"}))
    for method, path in [("DELETE", "/api/users/me"), ("DELETE", "/api/users/7/"), ("delete", "/api/users/7"),
                         ("GET", "/api/Accounts/A%2F1.json")]:
        assert reaches(method, path) and ROUTER.match(method.upper(), path).operation.id in {
            "DELETE /users/{id}", "GET /Accounts/{Sid}.json"}, (method, path)
    for method, path in [("GET", "/api/users/7"), ("GET", "/api/nope"), ("DELETE", "/users/7"),
                         ("DELETE", "/api/users/7/x"), ("POST", "/api/Accounts/A.json")]:
        assert not reaches(method, path), (method, path)
    assert not ROUTER.reaching(frozenset())("GET", "/api/users/me")
    assert Router([op("GET", "/")], "/api").reaching(frozenset({"GET /"}))("GET", "/api")
