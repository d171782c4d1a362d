"""A contract report a CI pipeline and a busy engineer can trust (issue 34): the JUnit and JSON files always parse,
whatever a fuzzed name or a server's answer holds; a flag that would be silently unused is refused; one root
cause is one finding; and the real cause (no server, a wrong base path, refused credentials) comes first, fast.
The servers are the Notes mock of tests/data/contract, broken on purpose, on a free port."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from test_contract import (
    NOTES,
    contract,
    json_body,
    on_request,
    on_response,
    parsed_junit,
    query_without,
    serving,
    valid_limit,
    vault_contract,
    vault_mock,
    why,
)
from werkzeug.wrappers import Request, Response

from conftest import free_port
from mockserver.cli import main
from mockserver.contract import Finding, Gap, RunResult, as_json
from mockserver.contract.report import junit, write_json
from mockserver.contract.results import OperationResult

pytestmark = pytest.mark.slow  # whole contract runs

# every character XML 1.0 forbids, those it allows only escaped, and what UTF-8 cannot write
FUZZ = "".join(map(chr, range(32))) + "\x7f<&>\"'\ud800 \udfff \udbff\ufffe\uffff"  # no surrogate pair


def test_fuzzed_names_and_values_still_make_reports_that_parse(tmp_path: Path):
    """Control characters and lone surrogates in every name and value a run reports: the files parse, each
    forbidden character written as its escape, and every test case keeps its curl."""
    label = f"GET /notes/{FUZZ}"
    op = OperationResult(label, f"list{FUZZ}", declared=["200"], checked=1)
    op.statuses[200] = 1
    op.failed[f"check{FUZZ}"] = 1
    finding = Finding(label, f"check{FUZZ}", f"title {FUZZ}", f"expected {FUZZ}", f"got {FUZZ}",
                      f"curl -X GET 'http://127.0.0.1:1/notes/{FUZZ}'")
    op.findings[(finding.check, finding.cause, finding.rule)] = finding
    result = RunResult("http://127.0.0.1:1", 1, 5, {}, operations={label: op}, errors=[f"error {FUZZ}"],
                       checks=[f"check{FUZZ}"], notes=[f"note {FUZZ}"],
                       gaps=[Gap("success", label, f"detail {FUZZ}")])
    junit(result, tmp_path / "contract.xml")
    write_json(result, tmp_path / "contract.json")
    suite = parsed_junit(tmp_path / "contract.xml")
    failed = [case for case in suite.iter("testcase") if case.get("name", "").startswith("check")]
    classname = failed[0].get("classname", "") if len(failed) == 1 else ""
    assert classname.startswith("GET /notes/\\x00\\x01\\x02") and classname.endswith("\\udbff\\ufffe\\uffff")
    failure = failed[0].find("failure")
    assert failure is not None and "\\x0b" in failure.get("message", "") and "\\ud800" in failure.get("message", "")
    assert "reproduce: curl -X GET" in (failure.text or "")
    data = json.loads((tmp_path / "contract.json").read_text(encoding="utf-8"))
    assert data == as_json(result) and "\\x0b" in data["findings"][0]["title"] and "\\udfff" in data["notes"][0]


def fuzzed_answers(status: str, headers: list[tuple[str, str]], body: bytes) -> tuple[str, list[tuple[str, str]],
                                                                                       bytes]:
    """The Notes mock's answers, broken with what a fuzzed server may send: a 200 whose note has a number for an
    id and lone surrogates in its text, a 404 whose body is not JSON but every control character."""
    if status.startswith("404"):
        return status, headers, b'{"error": "' + bytes(range(32)) + b'"}'
    def fuzz(page: Any) -> None:
        for note in page["notes"][:1]:
            note.update(id=42, text=FUZZ)
    return json_body(fuzz)(status, headers, body)


def test_a_run_against_a_server_answering_control_characters_writes_reports_that_parse(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    junit_path, json_path = tmp_path / "contract.xml", tmp_path / "contract.json"
    with serving(on_response(fuzzed_answers)) as url:
        code = contract(url, "--junit", str(junit_path), "--report-json", str(json_path))
    output = capsys.readouterr().out
    assert code == 1, output
    suite = parsed_junit(junit_path)
    failures = [failure for case in suite.iter("testcase") for failure in case.findall("failure")
                if case.get("name") == "response_schema_conformance"]
    assert failures and all("reproduce: curl -X GET" in (failure.text or "") for failure in failures)
    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert any(finding["check"] == "response_schema_conformance" for finding in data["findings"]), data["findings"]
    assert "\\ud800" in json_path.read_text(encoding="utf-8") and "\\x01" in output


PETS = ["--spec", str(NOTES.parent / "pets" / "openapi.yaml"), "--fixtures", str(NOTES.parent / "pets" / "fixtures")]


@pytest.mark.parametrize("flags, says", [
    (["--basic", "user:wrong"], "--basic: the description declares no HTTP basic scheme ("),
    (["--token", "t"], "--token: the description declares no HTTP bearer, OAuth 2, OpenID Connect or API key "
                       "scheme ("),
    (["--api-key", "X-Key=k"], "--api-key X-Key: the description declares no API key scheme named X-Key ("),
])
def test_a_credential_no_operation_would_carry_is_refused_naming_the_flag(flags: list[str], says: str,
                                                                          capsys: pytest.CaptureFixture[str]):
    """Pets declares no security scheme: right and wrong passwords would make the same run, so the flag is refused
    before any call, with the way to send it anyway."""
    assert main(["contract", *PETS, *flags]) == 2
    said = capsys.readouterr().err
    assert says in said and "so no call would carry it" in said and "--header 'Authorization: …'" in said, said


def test_credentials_a_scheme_takes_are_not_refused(capsys: pytest.CaptureFixture[str]):
    """The Vault's schemes take basic and an API key named `api_key`: the flags pass, the operation does not."""
    assert main(["contract", "--spec", str(NOTES.parent / "credentials" / "openapi.yaml"), "--basic", "u:p",
                 "--api-key", "api_key=k", "--operation", "noSuchOp"]) == 2
    assert "no operation noSuchOp" in capsys.readouterr().err


def test_an_unknown_operation_names_at_most_five_nearest(capsys: pytest.CaptureFixture[str]):
    assert main(["contract", *PETS, "--exclude-operation", "addPets"]) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith("mockserver: no operation addPets in ") and said.count("\n") == 0, said
    nearest = said.split("(nearest: ")[1].rstrip(")").split(", ")
    assert len(nearest) == 5 and nearest[0] == "addPet", said


def test_a_data_parameter_no_operation_has_is_refused_with_its_line(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]):
    data = tmp_path / "data.yaml"
    data.write_text("parameters:\n  notebookId: [work]\n  notebookID: [work]\n")
    assert main(["contract", "--spec", str(NOTES / "notes.yaml"), "--fixtures", str(NOTES / "fixtures"),
                 "--data", str(data)]) == 2
    said = capsys.readouterr().err
    assert f"--data {data}, line 3: no operation has a parameter notebookID (nearest: notebookId" in said, said


def test_one_root_cause_is_one_problem_with_its_rules_and_two_reproductions(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]):
    """A server that accepts `limit=11`, `limit=0` and `limit=abc`: one problem (the query parameter `limit`) with
    all three rules, not many findings under the first; the summary and the JSON count problems and occurrences."""
    out = tmp_path / "report.json"
    with serving(on_request(query_without("limit", unless=valid_limit))) as url:
        assert contract(url, "--report-json", str(out)) == 1
    output = capsys.readouterr().out
    problems = re.findall(r"^\d+\. GET \S+ · (\w+): .*$", output, re.M)
    assert problems == ["negative_data_rejection"], output
    heading = output.index("1. GET ")
    cause = output[heading:].splitlines()[1]
    assert cause.startswith("   cause:     query limit · rules: ") and {
        "Value greater than maximum", "Value smaller than minimum", "Incorrect type"} <= set(
        cause.split("rules: ")[1].split(", ")), output
    reproductions = [line for line in output[heading:].split("\n\n")[0].splitlines() if "reproduce: curl" in line]
    assert len(reproductions) == 2 and reproductions[0] != reproductions[1], output
    data = json.loads(out.read_text(encoding="utf-8"))
    [problem] = data["problems"]
    assert problem["cause"] == "query limit" and problem["families"] == ["/notebooks"] and len(problem["examples"]) == 2
    assert problem["count"] == data["occurrences"] == sum(f["count"] for f in data["findings"]) > 2
    assert len(problem["rules"]) == len(data["findings"]) >= 3
    assert re.search(rf"^FAILED: 1 operations, \d+ requests, 1 problem \({problem['count']} occurrences\) in 1 "
                     r"operation, 0 error\(s\)", output, re.M), output


def test_an_unreachable_target_is_said_first_within_three_seconds(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]):
    port = free_port()  # nobody listens on it once closed
    report = tmp_path / "contract.xml"
    started = time.monotonic()
    code = contract(f"http://127.0.0.1:{port}/api", "--junit", str(report))
    elapsed = time.monotonic() - started
    output = capsys.readouterr().out
    assert code == 1 and elapsed < 3, (elapsed, output)
    assert why(output) == [f"  - cannot connect to http://127.0.0.1:{port}/api: connection refused"], output
    [case] = parsed_junit(report).iter("testcase")
    failure = case.find("failure")
    assert failure is not None and "connection refused" in failure.get("message", "")


def test_a_wrong_base_path_is_said_first_naming_the_servers_path(capsys: pytest.CaptureFixture[str]):
    """The Vault's servers say /v1; called without it, every first call is a 404: the run says so and stops."""
    with serving(vault_mock(), "") as url:
        code = vault_contract(url)
    output = capsys.readouterr().out
    assert code == 1, output
    [reason] = why(output)
    assert reason.startswith("  - every first call answered 404 (GET /records 404, ") and reason.endswith(
        f"is the base path of {url} right? the description's servers say /v1, so --url should end with it"), output
    assert " 0 requests" in output.splitlines()[-1], output


def test_refused_credentials_are_said_first_and_nothing_is_fuzzed(capsys: pytest.CaptureFixture[str]):
    with serving(vault_mock(), "/v1") as url:
        code = vault_contract(url, "--token", "wrong", "--basic", "wrong:wrong")
    output = capsys.readouterr().out
    assert code == 1, output
    [reason] = why(output)
    assert reason.startswith("  - the credentials never authenticated: every first call that carried them was "
                             "refused (GET /records 401, "), output
    assert " 0 requests" in output.splitlines()[-1], output


FLOWS = """\
openapi: 3.0.3
info: {title: Flows, version: 1.0.0}
servers: [{url: /api}]
paths:
  /flows:
    post:
      operationId: createFlow
      requestBody:
        required: true
        content: {application/json: {schema: {type: object}, example: {name: nightly}}}
      responses:
        '201': {description: Created; where is in Location., content: {application/json: {schema: {type: object}}}}
  /flows/search:
    post:
      operationId: searchFlows
      requestBody:
        content: {application/json: {schema: {type: object, properties: {name: {type: string}}}}}
      responses:
        '200':
          description: The flows found.
          content:
            application/json:
              schema:
                type: object
                required: [data]
                properties: {data: {type: array, items: {$ref: '#/components/schemas/Thing'}}}
  /flows/{id}:
    get:
      operationId: getFlow
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        '200': {description: A flow., content: {application/json: {schema: {$ref: '#/components/schemas/Thing'}}}}
        '404': {description: No such flow., content: {application/json: {schema: {type: object}}}}
  /owners/{id}:
    get:
      operationId: getOwner
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        '200': {description: An owner., content: {application/json: {schema: {$ref: '#/components/schemas/Thing'}}}}
        '404': {description: No such owner., content: {application/json: {schema: {type: object}}}}
components:
  schemas:
    Thing: {type: object, required: [id], properties: {id: {type: string}}}
"""
HELD = {"flows": ["flow-1", "flow-2"], "owners": ["owner-1"], "created": []}


@Request.application
def flows(request: Request) -> Response:
    """Flows listed by a search only (no GET list), a flow created found at its `Location` only, and owners that
    no list gives; all found by id."""
    parts = request.path.strip("/").split("/")  # api, flows|owners, id|search
    if parts[1:] == ["flows"] and request.method == "POST":
        HELD["created"].append(f"flow-new-{len(HELD['created'])}")
        return Response(request.get_data(), 201, content_type="application/json",
                        headers={"Location": f"/api/flows/{HELD['created'][-1]}"})
    if parts[1:] == ["flows", "search"] and request.method == "POST":
        return Response(json.dumps({"data": [{"id": id} for id in HELD["flows"]]}), content_type="application/json")
    if len(parts) == 3 and request.method == "GET" and parts[2] in HELD.get(parts[1], []) + HELD["created"]:
        return Response(json.dumps({"id": parts[2]}), content_type="application/json")
    return Response(json.dumps({"message": "not here"}), 404, content_type="application/json")


def flows_contract(tmp_path: Path, url: str, *extra: str, description: str = FLOWS) -> int:
    spec = tmp_path / "flows.yaml"
    spec.write_text(description)
    return main(["contract", "--spec", str(spec), "--url", url, "--mode", "positive", "--phases", "examples",
                 "--max-examples", "2", "--seed", "1", "--no-force", "--exclude-checks", "unsupported_method",
                 *extra])


def test_ids_are_discovered_from_a_search_operation(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """No GET lists the flows: `POST /flows/search` with `{}` does, and its items' ids reach GET /flows/{id}. A
    read-only run sends no POST, so it discovers nothing there."""
    with serving(flows) as url:
        code = flows_contract(tmp_path, url, "--operation", "searchFlows", "getFlow", "--allow-untested", "searchFlows")
        output = capsys.readouterr().out
        assert code == 0, output
        assert "ids discovered on the target: getFlow (2)" in output, output
        assert re.search(r"^GET /flows/\{id\}  getFlow  · \d+ answers: 200×\d+$", output, re.M), output
        flows_contract(tmp_path, url, "--operation", "getFlow", "--read-only")
        assert "ids discovered on the target: none" in capsys.readouterr().out


def test_data_values_per_path_family_reach_only_that_family(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """`id` names a flow under /flows/{id} and an owner under /owners/{id}: values given per path family go to
    the operations of that family only."""
    data = tmp_path / "data.yaml"
    data.write_text("paths:\n  /flows/{id}: [{id: flow-2}]\n  /owners/{id}:\n    - {id: owner-1}\n")
    with serving(flows) as url:
        code = flows_contract(tmp_path, url, "--operation", "getFlow", "getOwner", "--no-discover", "--data",
                              str(data))
        output = capsys.readouterr().out
        assert code == 0, output
        assert "values from --data: getFlow (1), getOwner (1)" in output, output
        lines = [line for line in output.splitlines() if line.startswith("GET /")]
        assert len(lines) == 2 and all(re.search(r"answers: 200×\d+$", line) for line in lines), output
        data.write_text("paths:\n  /flow/{id}: [{id: flow-2}]\n")
        assert flows_contract(tmp_path, url, "--data", str(data)) == 2
    assert "line 2: no path /flow/{id} in the description (nearest: /flows/{id}" in capsys.readouterr().err


def test_ids_are_discovered_from_what_a_create_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """POST /flows (its example as the body) answers where the flow is in `Location`: GET /flows/{id} gets it."""
    HELD["created"].clear()
    with serving(flows) as url:
        code = flows_contract(tmp_path, url, "--operation", "createFlow", "getFlow")
    output = capsys.readouterr().out
    assert code == 0, output
    assert "ids discovered on the target: getFlow (1)" in output, output
    assert re.search(r"^GET /flows/\{id\}  getFlow  · \d+ answers: 200×\d+$", output, re.M), output


CREATED = """\
openapi: 3.0.3
info: {title: Created, version: 1.0.0}
servers: [{url: /api}]
paths:
  /flows:
    post:
      operationId: createFlow
      requestBody: {$ref: '#/components/requestBodies/Named'}
      responses: {'201': {description: Created; where is in Location.}}
  /flows/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: string}}]
    get:
      operationId: getFlow
      responses: &found
        '200': {description: Found., content: {application/json: {schema: {type: object}}}}
        '404': {description: No such thing., content: {application/json: {schema: {type: object}}}}
    put: {operationId: renameFlow, requestBody: {$ref: '#/components/requestBodies/Named'},
          responses: *found}
  /owners:
    post:
      operationId: createOwner
      requestBody: {$ref: '#/components/requestBodies/Named'}
      responses:
        '201': {description: Created., content: {application/json: {schema: {type: object}}}}
  /owners/{id}:
    parameters: [{name: id, in: path, required: true, schema: {type: string}}]
    get: {operationId: getOwner, responses: *found}
    put: {operationId: renameOwner, requestBody: {$ref: '#/components/requestBodies/Named'},
          responses: *found}
components:
  requestBodies:
    Named:
      required: true
      content: {application/json: {schema: {type: object}, example: {name: nightly}}}
"""
MADE: dict[str, list[str]] = {"flows": [], "owners": []}


@Request.application
def made_only(request: Request) -> Response:
    """Serves only what was created here: a flow is where its `Location` says (an empty body), an owner by the
    `ownerId` of the body (no `Location`)."""
    parts = request.path.strip("/").split("/")  # api, flows|owners, id
    if len(parts) == 2 and request.method == "POST":
        made = MADE[parts[1]]
        made.append(f"{parts[1][:-1]}-{len(made)}")
        if parts[1] == "flows":
            return Response(status=201, headers={"Location": f"/api/flows/{made[-1]}"})
        return Response(json.dumps({"ownerId": made[-1]}), 201, content_type="application/json")
    if len(parts) == 3 and parts[2] in MADE.get(parts[1], []):
        return Response(json.dumps({"id": parts[2]}), content_type="application/json")
    return Response(json.dumps({"message": "not here"}), 404, content_type="application/json")


def test_ids_of_what_creates_answer_reach_the_item_operations_of_their_own_family(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """A server that lists nothing and only serves what was created: the flow's id from `Location`, the owner's
    from its body's `ownerId`; each reaches its own family's item operations (a flow's id is no owner's `{id}`),
    whose every answer is then a 200."""
    for made in MADE.values():
        made.clear()
    with serving(made_only) as url:
        code = flows_contract(tmp_path, url, "--allow-untested", "createFlow", "--allow-untested", "createOwner",
                              description=CREATED)
    output = capsys.readouterr().out
    assert code == 0, output
    assert ("ids discovered on the target: getFlow (1), renameFlow (1), getOwner (1), renameOwner (1)"
            in output), output
    items = [line for line in output.splitlines() if re.match(r"(GET|PUT) /(flows|owners)/\{id\}  ", line)]
    assert len(items) == 4 and all(re.search(r"answers: 200×\d+$", line) for line in items), output


VERSIONED = """\
openapi: 3.0.3
info: {title: Versioned, version: 1.0.0}
servers: [{url: /api}]
security: [{bearer: []}]
paths:
  /flows: {get: {operationId: listFlows, responses: {'200': {$ref: '#/components/responses/Things'}}}}
  /owners: {get: {operationId: listOwners, responses: {'200': {$ref: '#/components/responses/Things'}}}}
  /notes: {get: {operationId: listNotes, responses: {'200': {$ref: '#/components/responses/Things'}}}}
components:
  securitySchemes: {bearer: {type: http, scheme: bearer}}
  responses:
    Things:
      description: The things, in the API version that answered.
      headers: {API-Version: {required: true, schema: {type: string, pattern: '^[0-9]+[.][0-9]+$'}}}
      content: {application/json: {schema: {type: array, items: {type: object}}}}
"""


@Request.application
def versioned(request: Request) -> Response:
    """Every list of three families answered with a malformed `API-Version`, whatever the method and
    credentials: three faults, each on every operation."""
    return Response("[]", content_type="application/json", headers={"API-Version": "latest"})


def test_one_cause_on_many_operations_of_many_families_is_one_problem(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]):
    """A malformed response header on /flows, /owners and /notes, a 200 to any undeclared method and to any
    credentials: three problems, each named by its cause and rule, "in 3 operations", with two reproductions; not
    one per family."""
    spec, out, report = tmp_path / "versioned.yaml", tmp_path / "report.json", tmp_path / "contract.xml"
    spec.write_text(VERSIONED)
    with serving(versioned) as url:
        code = main(["contract", "--spec", str(spec), "--url", url, "--phases", "coverage", "--max-examples", "2",
                     "--seed", "1", "--no-force", "--token", "t",
                     "--checks", "response_headers_conformance,unsupported_method,ignored_auth",
                     "--report-json", str(out), "--junit", str(report)])
    output = capsys.readouterr().out
    assert code == 1, output
    blocks = [block.splitlines() for block in output.split("\n\n") if re.match(r"\d+\. ", block)]
    causes = {block[0].split(" · ")[1].split(":")[0]: block[1].removeprefix("   cause:     ") for block in blocks}
    everywhere = " · operations: GET /flows, GET /notes, GET /owners"
    assert causes == {"unsupported_method": "undeclared methods · rules: answered 200" + everywhere,
                      "response_headers_conformance": "header API-Version · rules: pattern" + everywhere,
                      "ignored_auth": "authentication · rules: API accepts requests without authentication"
                                      + everywhere}, output
    assert all(block[0].endswith(" occurrences in 3 operations)") for block in blocks), output
    assert all(len([line for line in block if "reproduce: curl -X" in line]) == 2 for block in blocks), output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [problem["families"] for problem in data["problems"]] == [["/flows", "/notes", "/owners"]] * 3, data
    cases = parsed_junit(report).iter("testcase")
    failed = [(case.get("classname"), case.get("name")) for case in cases if case.find("failure") is not None]
    assert len(failed) == 9, failed  # JUnit: still a test case per operation and check
    assert re.search(rf"^FAILED: 3 operations, \d+ requests, 3 problems \({data['occurrences']} occurrences\) in 3 "
                     r"operations, 0 error\(s\)", output, re.M), output
