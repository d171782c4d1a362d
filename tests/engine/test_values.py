"""Only JSON that serialises is ever accepted or stored, and no input crashes the mock (issue 28, items 3, 4 and 8):
a lone surrogate, NaN, Infinity, a number beyond a double or an integer longer than Python reads, and nesting
deeper than `--max-depth`, are a 400 naming the pointer and rule (in the API's envelope, and in the control
API's), never a 500, and one bad input never changes what other requests get. Proved on the pets mock
(tests/data/pets, stateful writes), in process, on a real Redis, and under Granian (`mockserver serve`) where only
Granian shows the bug: chunked control bodies, paths and headers that are not ASCII."""
from __future__ import annotations

import json
import logging
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask.testing import FlaskClient

from conftest import body, serving
from mockserver import create_app
from mockserver.base.errors import LoadError
from mockserver.state import Rows, RowsUpdate
from mockserver.web.app import pipeline_of

PETS = Path(__file__).resolve().parents[1] / "data" / "pets"
SPEC, FIXTURES = PETS / "openapi.yaml", PETS / "fixtures"
JSON = {"Content-Type": "application/json"}


@pytest.fixture()
def pets() -> FlaskClient:
    return create_app(SPEC, FIXTURES).test_client()


def violation(response: Any) -> dict[str, str]:
    """The one violation of a 400 in the envelope (the pets' own, or RFC 7807 without fixtures)."""
    assert response.status_code == 400, response.data
    answer = body(response)
    violations = answer.get("error", answer)["details"]["violations"]
    assert len(violations) == 1, violations
    return violations[0]


def names(client: FlaskClient) -> list[str]:
    response = client.get("/pets")
    assert response.status_code == 200, response.data
    return [p["name"] for p in body(response)["data"]]


# -- request bodies ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw, pointer, rule", [
    (b'{"name": "a\\ud800"}', "/name", "unicode"),  # a lone surrogate, JSON-escaped
    (b'{"name": "b", "tag": "\\udc00x"}', "/tag", "unicode"),
    (b'{"name": "c", "weight": NaN}', "/weight", "number"),
    (b'{"name": "d", "weight": [1, -Infinity]}', "/weight/1", "number"),
    (b'{"name": "e", "weight": 1e999}', "/weight", "number"),  # read as infinity by Python
    (b'{"name": "f", "n": ' + b"1" * 100_000 + b"}", "/n", "number"),  # past sys.get_int_max_str_digits()
], ids=["surrogate", "low-surrogate", "nan", "-infinity", "1e999", "100000-digits"])
def test_a_body_json_cannot_carry_is_a_400_naming_the_pointer_and_nothing_is_stored(pets, raw, pointer, rule):
    found = violation(pets.post("/pets", data=raw, headers=JSON))
    assert (found["in"], found["pointer"], found["rule"]) == ("body", pointer, rule)
    assert names(pets) == ["Ada", "Bo", "Cy"]  # the collection still serves, and holds nothing new
    assert pets.get("/pets/1").status_code == 200
    assert pets.post("/pets", json={"name": "Rex"}).status_code == 201
    assert names(pets) == ["Ada", "Bo", "Cy", "Rex"]


def test_a_valid_surrogate_pair_is_a_character_and_is_stored(pets):
    created = pets.post("/pets", data=b'{"name": "Rex \\ud83d\\ude00"}', headers=JSON)
    assert created.status_code == 201 and body(created)["name"] == "Rex \U0001F600"


@pytest.mark.parametrize("depth", [300, 10_000])
def test_nesting_deeper_than_the_limit_is_a_400_not_a_recursion_error(pets, depth):
    raw = b'{"name": "Rex", "tag": ' + b"[" * depth + b"]" * depth + b"}"
    found = violation(pets.post("/pets", data=raw, headers=JSON))
    assert found["rule"] == "depth" and "256" in found["message"]


def test_the_depth_limit_is_max_depth_and_brackets_inside_strings_do_not_count():
    client = create_app(SPEC, FIXTURES, max_depth=3).test_client()
    assert violation(client.post("/pets", data=b'{"name": "Rex", "x": [[[1]]]}', headers=JSON))["rule"] == "depth"
    assert client.post("/pets", data=b'{"name": "Rex", "x": [[1]]}', headers=JSON).status_code == 201
    assert client.post("/pets", data=b'{"name": "[[[[\\"{{{{", "x": [["]]"]]}', headers=JSON).status_code == 201


TREES = """
openapi: 3.0.3
info: {title: Trees, version: "1"}
paths:
  /trees:
    post:
      operationId: addTree
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Tree"}
      responses:
        "201": {description: made}
        "400": {description: bad}
components:
  schemas:
    Tree: {type: array, items: {$ref: "#/components/schemas/Tree"}}
"""


def test_a_body_within_the_limit_too_deep_for_a_recursive_schemas_check_is_a_400(tmp_path):
    (tmp_path / "trees.yaml").write_text(TREES)
    client = create_app(tmp_path / "trees.yaml").test_client()
    assert client.post("/trees", data="[" * 100 + "]" * 100, headers=JSON).status_code == 201
    found = violation(client.post("/trees", data="[" * 256 + "]" * 256, headers=JSON))  # jsonschema recurses 4x
    assert found["rule"] == "depth" and "too deeply" in found["message"]


# -- the control API ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw, pointer, rule", [
    (b'{"operationId": "listPets", "status": 500, "rate": NaN}', "/rate", "number"),
    (b'{"operationId": "listPets", "status": 500, "rate": 1e999}', "/rate", "number"),
    (b'[{"operationId": "listPets", "status": 500, "id": "\\ud800"}]', "/0/id", "unicode"),
    (b'{"operationId": "listPets", "status": 500, "x": ' + b"[" * 990 + b"]" * 990 + b"}", "", "depth"),
], ids=["nan-rate", "infinite-rate", "surrogate-id", "990-levels"])
def test_a_scenario_json_cannot_carry_is_a_400_naming_the_field_and_the_list_still_answers(pets, raw, pointer,
                                                                                           rule):
    found = violation(pets.post("/__mock/scenarios", data=raw, headers=JSON))
    assert (found["pointer"], found["rule"]) == (pointer, rule)
    listed = pets.get("/__mock/scenarios")
    assert listed.status_code == 200 and body(listed) == {"scenarios": []}


def test_a_wrong_method_on_a_control_path_is_405_with_allow_in_json(pets):
    refused = pets.put("/__mock/reset")
    assert refused.status_code == 405 and refused.headers["Allow"] == "POST"
    assert body(refused)["error"]["details"]["allowed"] == ["POST"]
    assert pets.put("/__mock/no-such-thing").status_code == 404  # an unknown path is still not found
    both = pets.patch("/__mock/scenarios")
    assert both.status_code == 405 and both.headers["Allow"] == "GET, HEAD, POST, DELETE"


def test_a_session_with_a_trailing_newline_is_a_400(pets):
    assert violation(pets.get("/__mock/scenarios?session=alice%0A"))["rule"] == "pattern"


# -- what is stored ----------------------------------------------------------------------------------------------
def test_a_fixture_value_json_cannot_carry_is_a_start_up_problem_with_file_line_and_pointer(tmp_path):
    fixtures = yaml.safe_load((FIXTURES / "pets.yaml").read_text())
    fixtures["collections"]["pets"]["items"][1]["weight"] = float("nan")
    (tmp_path / "pets.yaml").write_text(yaml.safe_dump(fixtures, sort_keys=False))
    (tmp_path / "more.json").write_text('{"scenarios": [{"operationId": "listPets", "status": 500, "id": "\\ud800"}]}')
    (tmp_path / "long.yaml").write_text("settings:\n  n: " + "1" * 5000 + "\n")
    with pytest.raises(LoadError) as raised:
        create_app(SPEC, tmp_path)
    found = {(Path(p.file).name, p.pointer, p.rule): p for p in raised.value.problems}
    assert ("pets.yaml", "/collections/pets/items/1/weight", "number") in found
    assert found["pets.yaml", "/collections/pets/items/1/weight", "number"].line is not None
    assert ("more.json", "/scenarios/0/id", "unicode") in found
    assert ("long.yaml", "/settings/n", "number") in found


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.slow)])  # a redis-server
def replicas(request: pytest.FixtureRequest) -> Iterator[Callable[[], Any]]:
    """A maker of apps of the pets mock: over Redis each is a replica sharing one Redis, over memory one app."""
    if request.param == "memory":
        app = create_app(SPEC, FIXTURES)
        yield lambda: app
        return
    url = request.getfixturevalue("redis_url")
    apps: list[Any] = []

    def make() -> Any:
        apps.append(create_app(SPEC, FIXTURES, state=url))
        return apps[-1]

    yield make
    for app in apps:
        pipeline_of(app).store.close()


@pytest.mark.parametrize("bad", [{"weight": float("nan")}, {"name": "a\ud800"}])
def test_an_unservable_item_an_older_mock_stored_is_left_out_and_named_and_the_rest_is_served(replicas, caplog,
                                                                                              bad):
    def older_mock(rows: Rows) -> RowsUpdate:  # a write no check stopped: what main stored before the fix
        return RowsUpdate({"[9]": {"item": {"id": 9, "name": "Old", "createdAt": "2024-01-09T00:00:00Z", **bad},
                                   "seq": 0, "ranks": {}},
                           "[10]": {"item": {"id": 10, "name": "Ok", "createdAt": "2024-01-10T00:00:00Z"}, "seq": 1,
                                    "ranks": {}}})

    pipeline_of(replicas()).store.change_live(None, "pets", older_mock)
    client = replicas().test_client()  # over Redis a new replica, which reads the rows for the first time
    with caplog.at_level(logging.WARNING, logger="mockserver"):
        assert names(client) == ["Ada", "Bo", "Cy", "Ok"]
    assert "'pets'" in caplog.text and "[9]" in caplog.text
    assert client.get("/pets/1").status_code == 200 and client.get("/pets/10").status_code == 200
    assert client.get("/pets/9").status_code == 404
    collections = client.get("/__mock/collections")
    assert collections.status_code == 200
    assert [c["count"] for c in body(collections)["collections"] if c["name"] == "pets"] == [4]
    assert client.post("/pets", json={"name": "Rex"}).status_code == 201


# -- under Granian -----------------------------------------------------------------------------------------------
def _exchange(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """One request sent as bytes (what an HTTP client library would refuse to send); the status, headers, body."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, content = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, content


@pytest.mark.slow
def test_under_granian_control_bodies_paths_and_session_headers_are_read_or_refused_in_json():
    scenario = b'{"operationId": "listPets", "status": 500, "rate": NaN}'
    chunked = f"{len(scenario):x}\r\n".encode() + scenario + b"\r\n0\r\n\r\n"
    with serving("--spec", str(SPEC), "--fixtures", str(FIXTURES)) as (_, port):
        status, _, content = _exchange(port, b"POST /__mock/scenarios HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                             b"application/json\r\nTransfer-Encoding: chunked\r\nConnection: "
                                             b"close\r\n\r\n" + chunked)
        assert status == 400 and re.search(rb'"pointer": ?"/rate"', content), content  # the body was read
        status, headers, content = _exchange(port, b"GET /__mock/%ff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert status == 404 and headers["content-type"] == "application/json", content
        assert json.loads(content)["error"]["code"] == "not-found"
        for where in (b"/pets", b"/__mock/scenarios"):
            status, _, content = _exchange(port, b"GET " + where + b" HTTP/1.1\r\nHost: x\r\nX-Mock-Session: "
                                                 b"ab\xc3\xa9\r\nConnection: close\r\n\r\n")
            assert status == 400, (where, content)
            assert json.loads(content)["error"]["details"]["violations"][0]["parameter"] == "X-Mock-Session"
