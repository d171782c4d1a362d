"""Answers that follow the request (issue 33), through HTTP in process on the small pets description, on Kindgi
and on a small orders description written here.

Item 1: a `respond` answer's status, headers and body are Jinja2 templates in its sandbox, compiled once at
start-up, rendered per request, still checked against the description.
Item 2: a `when` tests the body at a JSON pointer (equals, matches, present, contains), JSON and form and
multipart alike; without a fixture, the response example named as the request example the body agrees with
answers (Prism's pairing); `Prefer: example=` still wins."""
import shutil
import textwrap

import pytest
import yaml

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, body
from mockserver import create_app
from mockserver.base.errors import LoadError

PETS = KINDGI_SPEC.parents[1] / "tests" / "data" / "pets"
SETTINGS = ('settings: {errors: {template: {error: {code: "{{code}}", message: "{{message}}", '
            'requestId: "{{requestId}}", details: "{{details}}"}}}}\n')


def pets(write, tmp_path, operations: str):
    """The pets mock with these operations' fixtures (YAML under `operations:`)."""
    write("fx/pets.yaml", SETTINGS + "operations:\n" + textwrap.indent(textwrap.dedent(operations), "  "))
    return create_app(PETS / "openapi.yaml", tmp_path / "fx").test_client()


def start_up_problems(write, tmp_path, operations: str):
    with pytest.raises(LoadError) as caught:
        pets(write, tmp_path, operations)
    return caught.value.problems


CREATE = """\
      addPet:
        respond:
          - status: 201
            headers: {Location: "/pets/{{ sequence }}"}
            body:
              id: "{{ sequence }}"
              name: "{{ body.name }}"
              kind: "{{ pointer('/kind') }}"
              tag: "{{ jsonpath('$.name')[0] | lower }}-{{ body.name | length }}"
              createdAt: "{{ now }}"
"""


def test_a_templated_create_echoes_the_body_with_server_made_ids(write, tmp_path):
    client = pets(write, tmp_path, CREATE)
    first = client.post("/pets", json={"name": "Rex", "kind": "dog"})
    second = client.post("/pets", json={"name": "Tom", "kind": "cat"})
    assert first.status_code == second.status_code == 201
    made = body(first)
    assert made["id"] == 1 and body(second)["id"] == 2  # a number, as the description says, one per answer
    assert first.headers["Location"] == "/pets/1" and second.headers["Location"] == "/pets/2"
    assert (made["name"], made["kind"], made["tag"]) == ("Rex", "dog", "rex-3")
    assert made["createdAt"].endswith("Z") and made["createdAt"][:4].isdigit()


@pytest.mark.slow  # a redis-server
def test_sequence_is_counted_once_for_every_worker_on_redis_and_a_reset_starts_it_again(write, tmp_path, redis_url):
    write("fx/pets.yaml", SETTINGS + "operations:\n" + textwrap.indent(textwrap.dedent(CREATE), "  "))
    workers = [create_app(PETS / "openapi.yaml", tmp_path / "fx", state=redis_url).test_client() for _ in range(2)]
    ids = [body(workers[n % 2].post("/pets", json={"name": "Rex", "kind": "dog"}))["id"] for n in range(4)]
    assert ids == [1, 2, 3, 4]
    assert workers[0].post("/__mock/reset", json={}).status_code == 200
    assert body(workers[1].post("/pets", json={"name": "Rex", "kind": "dog"}))["id"] == 1


def test_a_read_echoes_its_typed_path_parameter_a_header_and_one_uuid_per_answer(write, tmp_path):
    client = pets(write, tmp_path, """\
        getPet:
          respond:
            - status: 200
              headers: {X-Trace: "{{ uuid }}"}
              body: {id: "{{ path.id }}", name: "{{ header['x-pet-name'] }}", tag: "{{ uuid }}",
                     createdAt: "2024-01-01T00:00:00Z"}
        """)
    answers = [client.get("/pets/42", headers={"X-Pet-Name": "Rex"}) for _ in range(2)]
    first = body(answers[0])
    assert first["id"] == 42 and first["name"] == "Rex"  # the path parameter as the description types it
    assert first["tag"] == answers[0].headers["X-Trace"] and len(first["tag"]) == 36
    assert body(answers[1])["tag"] != first["tag"]


def test_a_request_lacking_what_a_template_needs_is_the_mocks_own_500_naming_it(write, tmp_path):
    client = pets(write, tmp_path, CREATE)
    answer = client.post("/pets", json={"name": "Rex"})  # no kind
    assert answer.status_code == 500
    error = body(answer)["error"]
    assert error["code"] == "mock-fixture-error"
    assert "{{ pointer('/kind') }}" in error["message"] and "/body/kind" in error["message"]
    assert "no value at /kind" in error["message"]
    assert error["details"]["pointer"] == "/body/kind" and error["details"]["origin"].endswith("pets.yaml:5")
    assert "Traceback" not in answer.text


def test_text_from_the_request_is_echoed_as_text_never_run(write, tmp_path):
    client = pets(write, tmp_path, CREATE)
    sneaky = "{{ ''.__class__.__mro__[1].__subclasses__() }}{% for x in range(3) %}x{% endfor %}"
    answer = client.post("/pets", json={"name": sneaky, "kind": "dog"})
    assert answer.status_code == 201 and body(answer)["name"] == sneaky


@pytest.mark.parametrize("template, says", [("{{ body.name * body.n }}", "longer than 100,000"),
                                             ("n{{ body.m ** body.n }}", "too large")])
def test_request_values_cannot_make_a_template_compute_without_bound(write, tmp_path, template, says):
    """`**` and `*` on request values are bounded: a client cannot make the mock compute or hold gigabytes."""
    client = pets(write, tmp_path, f"""\
      addPet:
        respond:
          - status: 201
            body: {{id: 1, name: "{template}", createdAt: "2024-01-01T00:00:00Z"}}
""")
    answer = client.post("/pets", json={"name": "x", "m": 9, "n": 100_000_000})
    assert answer.status_code == 500 and body(answer)["error"]["code"] == "mock-fixture-error"
    assert says in body(answer)["error"]["message"]
    assert client.post("/pets", json={"name": "x", "m": 9, "n": 3}).status_code == 201  # small ones still work


@pytest.mark.parametrize("template", ["{{ ''.__class__ }}", "{{ body.__class__.__mro__ }}",
                                      "{{ body['__init__'] }}", "{{ body | attr('__class__') }}",
                                      "{% include '/etc/passwd' %}"])
def test_a_template_reaching_out_of_the_sandbox_is_refused_at_start_up(write, tmp_path, template):
    found = start_up_problems(write, tmp_path, f"""\
      addPet:
        respond:
          - status: 201
            body: {{id: 1, name: "{template}", createdAt: "2024-01-01T00:00:00Z"}}
""")
    for problem in found:  # one for each name
        assert problem.file.endswith("pets.yaml") and problem.line == 6 and problem.rule == "template"
        assert problem.pointer == "/operations/addPet/respond/0/body/name"
        assert "'_' are refused" in problem.message or "read no file" in problem.message


def test_a_template_that_does_not_compile_stops_start_up_with_file_line_and_pointer(write, tmp_path):
    found = start_up_problems(write, tmp_path, """\
      addPet:
        respond:
          - status: 201
            headers: {Location: "/pets/{{ body.name "}
            body: {id: "{{ sequence }}", name: "{{ nam }}", createdAt: "{{ now }}", tag: "{{ jsonpath('$[') }}"}
""")
    by_pointer = {p.pointer: p for p in found}
    assert set(by_pointer) == {"/operations/addPet/respond/0/headers/Location",
                               "/operations/addPet/respond/0/body/name", "/operations/addPet/respond/0/body/tag"}
    assert "does not compile" in by_pointer["/operations/addPet/respond/0/headers/Location"].message
    assert "nam, which templates do not know" in by_pointer["/operations/addPet/respond/0/body/name"].message
    assert "is not a JSONPath" in by_pointer["/operations/addPet/respond/0/body/tag"].message
    assert {p.line for p in found} == {6, 7}


def test_a_rendered_answer_is_still_checked_against_the_description(write, tmp_path):
    client = pets(write, tmp_path, """\
      addPet:
        respond:
          - status: "{{ 201 if body.name != 'Nobody' else 418 }}"
            headers: {X-Echo: "{{ body.tag }}"}
            body: {id: 1, name: "{{ body.name }}", kind: "{{ body.tag }}", createdAt: "2024-01-01T00:00:00Z"}
""")
    fine = client.post("/pets", json={"name": "Rex", "tag": "cat"})
    assert fine.status_code == 201 and fine.headers["X-Echo"] == "cat"
    wrong = client.post("/pets", json={"name": "Rex", "tag": "fish"})  # not a kind the description allows
    assert wrong.status_code == 500 and body(wrong)["error"]["code"] == "mock-contract-violation"
    assert "/kind" in body(wrong)["error"]["message"]
    undeclared = client.post("/pets", json={"name": "Nobody", "tag": "cat"})
    assert undeclared.status_code == 500 and "418" in body(undeclared)["error"]["message"]
    split = client.post("/pets", json={"name": "Rex", "tag": "cat\r\nSet-Cookie: a=b"})
    assert split.status_code == 500 and body(split)["error"]["code"] == "mock-fixture-error"
    assert "Set-Cookie" not in split.headers


def kindgi_with(tmp_path, operations: dict) -> object:
    """Kindgi's fixtures with these operations' in place of its own."""
    shutil.copytree(KINDGI_FIXTURES, tmp_path / "fx")
    main = tmp_path / "fx" / "kindgi.yaml"
    fixtures = yaml.safe_load(main.read_text())
    fixtures["operations"].update(operations)
    main.write_text(yaml.safe_dump(fixtures))
    return create_app(KINDGI_SPEC, tmp_path / "fx").test_client()


def test_a_kindgi_answer_echoes_query_caller_and_request_id_with_their_types(kindgi, tmp_path):
    page = body(kindgi.get("/v1/test-sets?limit=1", headers=DEMO))
    page["data"][0]["description"] = "{{ query.name }} for {{ caller.id }} ({{ requestId }})"
    page["data"][0]["tenantId"] = "{{ caller.tenant }}"
    page["hasMore"] = "{{ query.limit > 1 }}"  # a boolean, as the description wants it
    client = kindgi_with(tmp_path, {"listTestSets": {"respond": [{"status": 200, "body": page}]}})
    answers = [client.get("/v1/test-sets?limit=5&name=acme", headers=DEMO) for _ in range(2)]
    for answer in answers:
        assert answer.status_code == 200
        served = body(answer)
        assert served["hasMore"] is True
        assert served["data"][0]["description"] == (f"acme for usr_01HV3Q8ZK4ADA5LOVELACE0001 "
                                                    f"({answer.headers['X-Request-Id']})")
        assert served["data"][0]["tenantId"] == "6f1d2c3b-8a4e-4f5a-9b7c-1d2e3f4a5b6c"
    # made for each request: the same read asked again is not served from the answer cache
    assert body(answers[0])["data"][0]["description"] != body(answers[1])["data"][0]["description"]
    fewer = client.get("/v1/test-sets?limit=1&name=acme", headers=DEMO)
    assert body(fewer)["hasMore"] is False, fewer.text


ORDERS = """\
openapi: 3.0.3
info: {title: Orders, version: "1"}
paths:
  /orders:
    post:
      operationId: placeOrder
      requestBody:
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Order"}
            examples:
              small: {value: {items: [pen], customer: {tier: basic}}}
              bulk: {value: {items: [pen, ink, paper], customer: {tier: gold}}}
              rush: {value: {items: [pen], customer: {tier: rush}}}
      responses:
        "201":
          description: Placed
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Placed"}
              examples:
                small: {value: {status: queued, lane: standard}}
                bulk: {value: {status: review, lane: freight}}
                rush: {value: {status: null, lane: air}}  # breaks its schema: served only when asked for
  /contact:
    post:
      operationId: contact
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema: {type: object, properties: {topic: {type: string}, urgent: {type: boolean}}}
          multipart/form-data:
            schema: {type: object, properties: {topic: {type: string}, urgent: {type: boolean}}}
      responses:
        "200":
          description: Routed
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Placed"}
components:
  schemas:
    Order:
      type: object
      properties:
        items: {type: array, items: {type: string}}
        customer: {type: object, properties: {tier: {type: string}}}
        note: {type: string}
    Placed:
      type: object
      required: [status]
      properties: {status: {type: string}, lane: {type: string}}
"""


def orders(write, tmp_path, operations: str = ""):
    write("orders.yaml", ORDERS)
    write("fx/orders.yaml", SETTINGS + ("operations:\n" + textwrap.indent(textwrap.dedent(operations), "  ")
                                        if operations else ""))
    return create_app(tmp_path / "orders.yaml", tmp_path / "fx").test_client()


ROUTES = """\
placeOrder:
  respond:
    - when: {body: /customer/tier, equals: gold}
      status: 201
      body: {status: vip}
    - when: {body: /items, contains: ink}
      status: 201
      body: {status: inky}
    - when: {body: /note, matches: "^rush\\\\b", ignoreCase: true}
      status: 201
      body: {status: rushed}
    - when: {all: [{body: /items/0, present: true}, {body: /note, present: false}]}
      status: 201
      body: {status: plain}
    - status: 201
      body: {status: other}
contact:
  respond:
    - when: {all: [{body: /topic, equals: billing}, {body: /urgent, equals: true}]}
      status: 200
      body: {status: billing-now}
    - when: {body: /topic, matches: "^bill"}
      status: 200
      body: {status: billing}
    - status: 200
      body: {status: general}
"""


@pytest.mark.parametrize(("sent", "status"), [
    ({"items": ["pen"], "customer": {"tier": "gold"}}, "vip"),  # equality at a pointer, first match wins
    ({"items": ["pen", "ink"], "customer": {"tier": "basic"}}, "inky"),  # an array that contains the value
    ({"items": ["pen"], "note": "RUSH please"}, "rushed"),  # a regular expression, in any letter case
    ({"items": ["pen"]}, "plain"),  # present and absent
    ({"items": [], "note": "whenever"}, "other"),
])
def test_a_when_on_a_json_body_field_picks_the_answer(write, tmp_path, sent, status):
    client = orders(write, tmp_path, ROUTES)
    assert body(client.post("/orders", json=sent)) == {"status": status}


def test_form_and_multipart_fields_are_matched_as_typed_by_the_schema(write, tmp_path):
    client = orders(write, tmp_path, ROUTES)
    form = {"topic": "billing", "urgent": "true"}  # `urgent` is a boolean by the schema: `equals: true` holds
    assert body(client.post("/contact", data=form, content_type="application/x-www-form-urlencoded")) == {
        "status": "billing-now"}
    assert body(client.post("/contact", data={"topic": "billing-dispute"}, content_type="multipart/form-data")) == {
        "status": "billing"}
    assert body(client.post("/contact", data={"topic": "hello"}, content_type="multipart/form-data")) == {
        "status": "general"}


def test_a_create_on_pets_answers_by_a_body_field(write, tmp_path):
    write("fx/pets.yaml", SETTINGS + textwrap.dedent("""\
        operations:
          addPet:
            respond:
              - when: {body: /kind, in: [cat, dog]}
                status: 201
                body: {id: 7, name: "{{ body.name }}", kind: "{{ body.kind }}", createdAt: "2024-01-01T00:00:00Z"}
              - status: 409
                body: {error: {code: conflict, message: "{{ body.kind | default('no kind') }} is not welcome"}}
        """))
    client = create_app(PETS / "openapi.yaml", tmp_path / "fx").test_client()
    cat = client.post("/pets", json={"name": "Tom", "kind": "cat"})
    assert cat.status_code == 201 and body(cat)["kind"] == "cat"
    bird = client.post("/pets", json={"name": "Tweety", "kind": "bird"})
    assert bird.status_code == 409 and body(bird)["error"]["message"] == "bird is not welcome"


def test_the_response_example_paired_with_the_request_example_answers(write, tmp_path):
    client = orders(write, tmp_path)  # no fixture for placeOrder: the examples answer
    bulk = {"items": ["pen", "ink", "paper"], "customer": {"tier": "gold"}, "note": "more members are fine"}
    assert body(client.post("/orders", json=bulk)) == {"status": "review", "lane": "freight"}
    assert body(client.post("/orders", json={"items": ["pen"], "customer": {"tier": "basic"}})) == {
        "status": "queued", "lane": "standard"}
    # a body no request example agrees with gets the first example, as before; Prefer: example= still wins
    assert body(client.post("/orders", json={"items": ["ink"]}))["lane"] == "standard"
    assert body(client.post("/orders", json=bulk, headers={"Prefer": "example=small"}))["lane"] == "standard"
    # a paired example that breaks its schema is not served unasked: the first that fits is
    rush = client.post("/orders", json={"items": ["pen"], "customer": {"tier": "rush"}})
    assert rush.status_code == 201 and body(rush)["lane"] == "standard"


def test_a_bad_regular_expression_or_pointer_stops_start_up_where_it_is(write, tmp_path):
    write("fx/contact.yaml", """\
        operations:
          contact:
            respond:
              - when: {body: topic, present: true}
                status: 200
                body: {status: x}
        """)
    with pytest.raises(LoadError) as caught:
        orders(write, tmp_path, """\
            placeOrder:
              respond:
                - when: {any: [{body: /note, equals: x}, {not: {body: /note, matches: "(unclosed"}}]}
                  status: 201
                  body: {status: x}
            """)
    pointer, pattern = sorted(caught.value.problems, key=lambda p: p.file)  # contact.yaml, orders.yaml
    assert pattern.file.endswith("orders.yaml") and pattern.line == 5
    assert pattern.pointer == "/operations/placeOrder/respond/0/when/any/1/not/matches"
    assert "'(unclosed' is not a regular expression" in pattern.message
    assert pointer.file.endswith("contact.yaml") and pointer.line == 4
    assert pointer.pointer == "/operations/contact/respond/0/when/body" and pointer.rule == "pattern"
