"""Fixture answers built from the request (issue 33 item 1): a `respond` answer's status, headers and body are
Jinja2 templates in its sandbox, compiled once at start-up, rendered per request, still checked against the
description; through HTTP in process, on the small pets description and on Kindgi."""
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


@pytest.mark.parametrize("template", ["{{ ''.__class__ }}", "{{ body.__class__.__mro__ }}",
                                      "{{ body['__init__'] }}", "{{ body | attr('__class__') }}"])
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
        assert "'_' are refused" in problem.message


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
