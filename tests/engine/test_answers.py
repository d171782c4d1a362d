"""The three answer sources, in order: fixture, example, generated; and the Prefer header that picks one."""
import json
import urllib.request

import pytest

from conftest import LIBRARY, body
from mockserver import create_app
from mockserver.testing import MockServer

KEY = {"X-Api-Key": "reader-key"}

SPEC = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /pets/{id}:
    get:
      operationId: getPet
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Pet'}
              examples:
                cat: {value: {id: p1, name: Tom, kind: cat}}
                dog: {value: {id: p2, name: Rex, kind: dog}}
        '404': {description: missing}
components:
  schemas:
    Pet:
      type: object
      required: [id, name, kind]
      properties:
        id: {type: string}
        name: {type: string, minLength: 1}
        kind: {enum: [cat, dog]}
        tag: {type: string, format: uuid}
        born: {type: string, format: date-time}
"""


def test_a_fixture_answers_first(library):
    response = library.get("/api/v2/books/9780000000030.json", headers=KEY)
    assert body(response)["title"] == "On Maps"


def test_a_fixed_answer_is_chosen_by_request_values(library):
    assert "books" in body(library.get("/api/v2/shelves/1?verbose=true", headers=KEY))
    assert "books" not in body(library.get("/api/v2/shelves/1", headers=KEY))


def test_an_example_answers_without_fixture(write):
    client = create_app(write("spec.yaml", SPEC)).test_client()
    assert body(client.get("/pets/x")) == {"id": "p1", "name": "Tom", "kind": "cat"}
    assert body(client.get("/pets/x", headers={"Prefer": "example=dog"}))["name"] == "Rex"
    response = client.get("/pets/x", headers={"Prefer": "example=bird"})
    assert response.status_code == 400 and body(response)["details"]["examples"] == ["cat", "dog"]


def test_generated_data_is_valid_realistic_and_deterministic(write):
    path = write("spec.yaml", SPEC)
    client = create_app(path).test_client()
    first = client.get("/pets/x", headers={"Prefer": "dynamic=true"})
    assert first.status_code == 200  # checked against the schema before it left
    again = client.get("/pets/x", headers={"Prefer": "dynamic=true"})
    assert first.data == again.data
    other_seed = create_app(path, seed=7).test_client().get("/pets/x", headers={"Prefer": "dynamic=true"})
    assert other_seed.data != first.data
    pet = body(first)
    assert pet["kind"] in ("cat", "dog") and pet["name"]


def test_generated_when_nothing_else(library):
    response = library.get("/api/v2/authors/someone")
    assert response.status_code == 200
    author = json.loads(response.data)
    assert isinstance(author["name"], str) and author["name"]


def test_prefer_code_answers_a_declared_status_in_the_envelope(kindgi):
    response = kindgi.get("/v1/test-sets", headers={"Authorization": "Bearer demo-token", "Prefer": "code=503"})
    assert response.status_code == 503
    assert response.headers["Retry-After"].isdigit()
    error = body(response)["error"]
    assert error["code"] == "database-busy" and error["requestId"] == response.headers["X-Request-Id"]


def test_prefer_code_of_an_undeclared_status_is_400(kindgi):
    response = kindgi.get("/v1/test-sets", headers={"Authorization": "Bearer demo-token", "Prefer": "code=418"})
    assert response.status_code == 400
    assert body(response)["error"]["details"]["declared"] == ["200", "400", "401", "503"]


def test_preferences_combine_and_unknown_ones_are_ignored(write):
    client = create_app(write("spec.yaml", SPEC)).test_client()
    assert body(client.get("/pets/x", headers={"Prefer": "respond-async, example=dog"}))["name"] == "Rex"
    assert client.get("/pets/x", headers={"Prefer": "example=dog, code=404"}).status_code == 404
    generated = client.get("/pets/x", headers={"Prefer": "dynamic=true; wait=5"})
    assert body(generated) not in ({"id": "p1", "name": "Tom", "kind": "cat"},
                               {"id": "p2", "name": "Rex", "kind": "dog"})



NO_SUCCESS = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /gone:
    get:
      responses: {'405': {description: not here}}
  /broken:
    get:
      responses:
        5XX:
          description: always failing
          content: {application/json: {example: {reason: down}}}
        4XX:
          description: refused
          content:
            application/json:
              schema: {type: object, required: [reason], properties: {reason: {type: string}}}
"""


def test_an_operation_without_success_answers_one_of_its_declared_responses(write):
    """Only `405`, or only `4XX`/`5XX`: the answer is that response (a range as its first code), never a 500
    for an undeclared 200."""
    client = create_app(write("spec.yaml", NO_SUCCESS)).test_client()
    gone = client.get("/gone")
    assert gone.status_code == 405 and gone.data == b""
    broken = client.get("/broken")
    assert broken.status_code == 400 and isinstance(body(broken)["reason"], str)


EXAMPLES_FIRST = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /ping:
    get:
      responses:
        '200': {description: ok, content: {text/plain: {schema: {type: string, example: pong}}}}
  /bees:
    get:
      parameters: [{name: n, in: query, schema: {type: integer}}]
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                type: object
                required: [honey]
                properties:
                  honey: {type: string, example: killer bees}
                  queen: {type: string, default: Beatrix}
                  hives: {type: integer, minimum: 1}
                  note: {type: [string, 'null']}
"""


def test_static_answers_are_the_description_s_examples_with_every_property(write):
    client = create_app(write("spec.yaml", EXAMPLES_FIRST)).test_client()
    ping = client.get("/ping")
    assert ping.content_type.startswith("text/plain") and ping.data == b"pong"
    for n in range(10):
        bees = body(client.get(f"/bees?n={n}"))
        assert bees["honey"] == "killer bees" and bees["queen"] == "Beatrix"
        assert bees["hives"] >= 1 and isinstance(bees["note"], str)


def test_prefer_dynamic_varies_examples_and_optional_properties(write):
    client = create_app(write("spec.yaml", EXAMPLES_FIRST)).test_client()
    answers = [body(client.get(f"/bees?n={n}", headers={"Prefer": "dynamic=true"})) for n in range(20)]
    assert {a["honey"] for a in answers} - {"killer bees"}
    assert any(set(a) != {"honey", "queen", "hives", "note"} for a in answers)


def test_dynamic_option_varies_every_answer_unless_a_request_prefers_static(write):
    """`mockserver serve --dynamic` (`create_app(dynamic=True)`): generated data without `Prefer`, as Prism's
    `--dynamic`; `Prefer: dynamic=false` still gets the examples."""
    client = create_app(write("spec.yaml", EXAMPLES_FIRST), dynamic=True).test_client()
    answers = [body(client.get(f"/bees?n={n}")) for n in range(20)]
    assert {a["honey"] for a in answers} - {"killer bees"}
    for n in range(3):
        static = body(client.get(f"/bees?n={n}", headers={"Prefer": "dynamic=false"}))
        assert static["honey"] == "killer bees" and static["queen"] == "Beatrix"
    assert client.get("/ping", headers={"Prefer": "dynamic=false"}).data == b"pong"


def test_dynamic_option_keeps_fixture_answers():
    """Fixtures are the user's own answers: `dynamic=True` (here through `MockServer`, as the pytest plugin's
    marker passes it) replaces the description's examples, not them."""
    with MockServer(LIBRARY / "openapi.yaml", LIBRARY / "fixtures", dynamic=True) as server:
        request = urllib.request.Request(server.url + "/api/v2/books/9780000000030.json", headers=KEY)
        with urllib.request.urlopen(request) as response:
            assert json.loads(response.read())["title"] == "On Maps"


PREFERRED = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /things:
    post:
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: object}, example: {kept: true}}}}
        '201':
          description: made
          content: {application/json: {schema: {type: object, required: [id], properties: {id: {type: string}}}}}
        '503': {description: down, content: {text/plain: {schema: {type: string}, example: service unavailable}}}
  /anything:
    get:
      responses:
        default:
          description: whatever happens
          content: {application/json: {schema: {type: object, properties: {m: {type: string}}}}}
  /ranged:
    get:
      responses:
        '200': {description: ok}
        4XX: {description: refused}
"""


def test_prefer_code_picks_any_declared_response_successes_included(write):
    client = create_app(write("spec.yaml", PREFERRED)).test_client()
    made = client.post("/things", headers={"Prefer": "code=201"})
    assert made.status_code == 201 and isinstance(body(made)["id"], str)
    assert body(client.post("/things", headers={"Prefer": "code=200"})) == {"kept": True}
    down = client.post("/things", headers={"Prefer": "code=503"})
    assert down.status_code == 503 and down.content_type.startswith("text/plain")
    assert down.data == b"service unavailable"
    refused = client.post("/things", headers={"Prefer": "code=404"})
    assert refused.status_code == 400 and body(refused)["details"]["declared"] == ["200", "201", "503"]


def test_prefer_code_reaches_statuses_under_default_and_ranges(write):
    client = create_app(write("spec.yaml", PREFERRED)).test_client()
    assert client.get("/anything", headers={"Prefer": "code=401"}).status_code == 401
    assert client.get("/anything", headers={"Prefer": "code=201"}).status_code == 201
    assert client.get("/ranged", headers={"Prefer": "code=4XX"}).status_code == 400
    assert client.get("/ranged", headers={"Prefer": "code=409"}).status_code == 409
    assert client.get("/ranged", headers={"Prefer": "code=5XX"}).status_code == 400


def test_prefer_example_of_an_answer_without_named_examples_is_400(write):
    client = create_app(write("spec.yaml", PREFERRED)).test_client()
    refused = client.post("/things", headers={"Prefer": "code=201, example=big"})
    assert refused.status_code == 400 and body(refused)["details"]["examples"] == []
    assert body(client.post("/things", headers={"Prefer": "example=example"})) == {"kept": True}


HEADERS = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /n:
    get:
      responses:
        '200':
          description: ok
          headers:
            nonce: {schema: {type: string}, example: abc}
            X-Rate-Left: {schema: {type: integer, example: 41}}
            X-Unexampled: {schema: {type: string}}
          content: {application/json: {schema: {type: object}}}
    head:
      responses:
        '200': {description: ok, headers: {nonce: {schema: {type: string}, example: abc}}}
"""


def test_declared_headers_with_examples_are_sent(write):
    client = create_app(write("spec.yaml", HEADERS)).test_client()
    got = client.get("/n")
    assert got.headers["nonce"] == "abc" and got.headers["X-Rate-Left"] == "41"
    assert "X-Unexampled" not in got.headers
    assert client.head("/n").headers["nonce"] == "abc"


COHERENT = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /dags/{dag_id}:
    get:
      parameters: [{name: dag_id, in: path, required: true, schema: {type: string}}]
      responses:
        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Dag'}}}}
  /pets/{petId}:
    get:
      parameters: [{name: petId, in: path, required: true, schema: {type: integer}}]
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {type: object, required: [id], properties: {id: {type: integer}, name: {type: string}}}
  /dags:
    get:
      parameters:
        - {name: limit, in: query, schema: {type: integer, default: 50}}
        - {name: offset, in: query, schema: {type: integer}}
        - {name: owner, in: query, schema: {type: string}}
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                type: object
                required: [dags, total_entries]
                properties:
                  dags: {type: array, items: {$ref: '#/components/schemas/Dag'}}
                  total_entries: {type: integer}
  /pools:
    post:
      requestBody: {required: true, content: {application/json: {schema: {$ref: '#/components/schemas/Pool'}}}}
      responses:
        '201': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Pool'}}}}
components:
  schemas:
    Dag:
      type: object
      required: [dag_id]
      properties: {dag_id: {type: string}, owner: {type: string}, is_paused: {type: boolean}}
    Pool:
      type: object
      required: [name, slots]
      properties:
        name: {type: string}
        slots: {type: integer, minimum: 0}
        occupied_slots: {type: integer, readOnly: true}
"""


def test_generated_answers_echo_the_request(write):
    """No fixtures, no examples: the id asked for is the id answered, a query filter is what the items carry,
    and a created resource is what was sent."""
    client = create_app(write("spec.yaml", COHERENT)).test_client()
    assert body(client.get("/dags/tutorial"))["dag_id"] == "tutorial"
    assert body(client.get("/pets/42"))["id"] == 42
    for name, slots in (("p1", 4), ("p2", 9)):
        pool = body(client.post("/pools", json={"name": name, "slots": slots}))
        assert (pool["name"], pool["slots"]) == (name, slots)
    listed = body(client.get("/dags?owner=ann"))
    assert listed["dags"] and {d["owner"] for d in listed["dags"]} == {"ann"}


def test_a_generated_list_is_as_long_as_limit_asks_and_stable(write):
    client = create_app(write("spec.yaml", COHERENT)).test_client()
    page = client.get("/dags?limit=3&offset=0")
    assert len(body(page)["dags"]) == 3
    assert client.get("/dags?limit=3&offset=0").data == page.data  # the same total for the same request
    assert len(body(client.get("/dags"))["dags"]) == 50  # the parameter's default
    assert len(body(client.get("/dags?limit=1000"))["dags"]) == 100  # a page at most


def test_a_generated_total_agrees_with_the_items_on_every_page(write):
    """`total_entries` is the list's, the same on every page of it, never fewer than the items up to the page's
    end, and exactly those on the last page (fewer items than `limit` asks: past the page cap here)."""
    client = create_app(write("spec.yaml", COHERENT)).test_client()
    pages = [body(client.get(f"/dags?limit=3&offset={offset}")) for offset in (0, 3, 6)]
    assert [len(page["dags"]) for page in pages] == [3, 3, 3]
    assert len({page["total_entries"] for page in pages}) == 1 and pages[0]["total_entries"] >= 9
    assert body(client.get("/dags?limit=3&offset=0")) == pages[0]
    far = body(client.get("/dags?limit=10&offset=5000"))
    assert far["total_entries"] >= 5010
    last = body(client.get("/dags?limit=1000&offset=20"))
    assert len(last["dags"]) == 100 and last["total_entries"] == 120
    assert body(client.get("/dags?limit=0"))["dags"] == []


def test_a_total_beside_a_bounded_list_or_inside_meta_is_reconciled(write):
    spec = COHERENT.replace(
        "                  dags: {type: array, items: {$ref: '#/components/schemas/Dag'}}\n"
        "                  total_entries: {type: integer}",
        "                  dags: {type: array, maxItems: 4, items: {$ref: '#/components/schemas/Dag'}}\n"
        "                  total_entries: {type: integer, example: 2}\n"
        "                  meta: {type: object, required: [totalCount], properties: {totalCount: {type: integer}}}"
    ).replace("- {name: owner,", "- {name: page, in: query, schema: {type: integer}}\n        - {name: owner,")
    client = create_app(write("spec.yaml", spec)).test_client()
    full = body(client.get("/dags?limit=3&offset=30"))  # the example's 2 is fewer than the items seen
    assert len(full["dags"]) == 3 and full["total_entries"] == full["meta"]["totalCount"] == 33
    bounded = body(client.get("/dags?limit=10&offset=10"))  # 4 items at most: the last page, 10 before it
    assert len(bounded["dags"]) == 4 and bounded["total_entries"] == bounded["meta"]["totalCount"] == 14
    numbered = body(client.get("/dags?limit=10&page=3"))  # pages of 10: 20 items before this one
    assert numbered["total_entries"] == numbered["meta"]["totalCount"] == 24


def test_a_limit_inside_an_object_parameter_sizes_the_list(write):
    page = "{name: page, in: query, schema: {type: object, properties: {limit: {type: integer}}}}"
    spec = COHERENT.replace("{name: limit, in: query, schema: {type: integer, default: 50}}", page)
    client = create_app(write("spec.yaml", spec)).test_client()
    assert len(body(client.get("/dags?limit=4"))["dags"]) == 4


def test_a_deprecated_operation_says_so_in_a_header(write):
    spec = write("old.yaml", """
        openapi: 3.1.0
        info: {title: old, version: '1'}
        paths:
          /old:
            get:
              operationId: getOld
              deprecated: true
              responses: {'200': {description: ok, content: {application/json: {schema: {type: object}}}}}
          /new:
            get:
              operationId: getNew
              responses: {'200': {description: ok, content: {application/json: {schema: {type: object}}}}}
    """)
    client = create_app(spec).test_client()
    assert client.get("/old").headers["Deprecation"] == "true"
    assert "Deprecation" not in client.get("/new").headers


@pytest.mark.parametrize("media_type, expected", [
    ("application/json", True), ("application/problem+json; charset=utf-8", True), ("APPLICATION/JSON", True),
    ("application/x-ndjson", False), ("text/plain", False), (None, False)])
def test_one_answer_to_is_this_json(media_type, expected):
    from mockserver.base.http import is_json

    assert is_json(media_type) is expected
def test_a_list_sent_in_the_body_is_echoed_and_its_items_too(write):
    """The body's list takes the answer's place before query values go into its items (a shorter list sent)."""
    spec = COHERENT.replace("  /pools:\n    post:", "  /dags/clear:\n    post:\n      parameters: [{name: owner, in: "
                            "query, schema: {type: string}}]\n      requestBody: {content: {application/json: {schema: "
                            "{type: object, properties: {dags: {type: array, items: {$ref: "
                            "'#/components/schemas/Dag'}}}}}}}\n      responses:\n        '200': {description: ok, "
                            "content: {application/json: {schema: {type: object, properties: {dags: {type: array, "
                            "items: {$ref: '#/components/schemas/Dag'}}}}}}}\n  /pools:\n    post:")
    client = create_app(write("spec.yaml", spec)).test_client()
    cleared = client.post("/dags/clear?owner=ann&limit=3", json={"dags": [{"dag_id": "a"}]})
    assert body(cleared) == {"dags": [{"dag_id": "a"}]}


def test_a_list_in_a_file_of_its_own_is_sized_and_its_relative_refs_resolve(write):
    """DigitalOcean keeps each schema in its own file, with refs relative to it: the items made for `limit` are
    found from the file's root (a URI without a fragment), not from a path made up below it."""
    write("models/list.yml", "type: object\nproperties:\n  things: {type: array, items: {$ref: 'thing.yml'}}\n")
    write("models/thing.yml", "type: object\nrequired: [name]\n"
                              "properties: {name: {type: string}, twin: {$ref: 'thing.yml'}}\n")
    client = create_app(write("spec.yaml", """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /things:
    get:
      parameters: [{name: per_page, in: query, schema: {type: integer}}]
      responses:
        '200': {description: ok, content: {application/json: {schema: {$ref: 'models/list.yml'}}}}
""")).test_client()
    answer = client.get("/things?per_page=3")
    assert answer.status_code == 200 and len(body(answer)["things"]) == 3


def test_a_query_value_that_breaks_the_items_field_is_left_out_of_every_item_and_the_others_kept(write):
    """Twilio's `?PageSize=100&Log=1`: `Log` goes into no item (its `log` is a string of one digit here), while
    `owner` goes into all of them; the items are checked a field at a time, not an item at a time."""
    spec = COHERENT.replace("- {name: owner, in: query, schema: {type: string}}",
                            "- {name: owner, in: query, schema: {type: string}}\n"
                            "        - {name: log, in: query, schema: {type: string}}").replace(
        "properties: {dag_id: {type: string}, owner: {type: string}, is_paused: {type: boolean}}",
        "properties: {dag_id: {type: string}, owner: {type: string}, is_paused: {type: boolean},\n"
        "                   log: {type: string, pattern: '^[0-9]$'}}")
    client = create_app(write("spec.yaml", spec)).test_client()
    dags = body(client.get("/dags?limit=100&owner=ann&log=many"))["dags"]
    assert len(dags) == 100 and {d["owner"] for d in dags} == {"ann"}
    assert all(len(d["log"]) == 1 for d in dags)
