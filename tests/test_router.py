import pytest

from mockserver.core.errors import MockError
from mockserver.core.router import Router
from mockserver.core.spec import Operation


def op(method: str, path: str) -> Operation:
    return Operation(f"{method} {path}", method, path, [], None, {}, [], "")


ROUTER = Router([op("GET", "/users/{id}"), op("GET", "/users/me"), op("DELETE", "/users/{id}"),
                 op("GET", "/Accounts/{Sid}.json"), op("GET", "/files/{name}")], "/api")


def test_a_concrete_path_beats_a_templated_one():
    assert ROUTER.match("GET", "/api/users/me").operation.path == "/users/me"
    assert ROUTER.match("GET", "/api/users/42").path_params == {"id": "42"}


def test_a_less_concrete_template_still_answers_another_method():
    assert ROUTER.match("DELETE", "/api/users/me").operation.path == "/users/{id}"


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
