"""`mockserver contract` as a person runs it: against the mock it passes; against servers broken on purpose, one
rule at a time, it fails and names the check that caught the break. The broken servers are the Notes mock
(tests/data/contract) behind a small WSGI wrapper that breaks exactly one thing, served on a free port."""
from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import takewhile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode

import pytest
import yaml
from requests.structures import CaseInsensitiveDict
from werkzeug.wrappers import Request, Response

from conftest import KINDGI_FIXTURES, KINDGI_SPEC, LIBRARY, ROOT, SAMPLE_PROJECT, free_port
from mockserver import create_app
from mockserver.cli import main
from mockserver.contract import load_contract
from mockserver.contract.data import load as load_data
from mockserver.contract.links import Exchange, evaluate, links_to, values
from mockserver.pipeline.fixture_values import caller_for, derive
from mockserver.spec.index import SpecIndex
from mockserver.testing import MockServer
from mockserver.web.app import pipeline_of
from stand_ins import Served, ids_elsewhere

pytestmark = pytest.mark.slow  # servers in other processes, or whole contract runs: `-m 'not slow'` skips them

DATA = ROOT / "tests" / "data"
NOTES = DATA / "contract"
VAULT = DATA / "credentials"  # basic auth, an API key in the query and a bearer token, one per operation
VAULT_ARGS = ["--spec", str(VAULT / "openapi.yaml"), "--fixtures", str(VAULT / "fixtures"), "--token", "vault-key",
              "--basic", "vault-key:any-password"]
NOTES_ARGS = ["--spec", str(NOTES / "notes.yaml"), "--fixtures", str(NOTES / "fixtures"), "--token", "reader",
              "--data", str(NOTES / "data.yaml")]  # the fixtures' ids are not sent to a --url
Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Any]
Rewrite = Callable[[str, list[tuple[str, str]], bytes], tuple[str, list[tuple[str, str]], bytes]]


@contextmanager
def serving(app: Wsgi, base_path: str = "/api") -> Iterator[str]:
    """The app on a free port, in a thread; yields its base URL (with the description's base path)."""
    server = Served(app)
    try:
        yield server.url + base_path
    finally:
        server.stop()


def notes_mock() -> Wsgi:
    return create_app(NOTES / "notes.yaml", NOTES / "fixtures", strict_auth=True)


def on_request(change: Callable[[dict[str, Any]], None]) -> Wsgi:
    """The Notes mock, seeing each request after `change` edited its WSGI environ."""
    return on_request_of(notes_mock(), change)


def on_request_of(inner: Wsgi, change: Callable[[dict[str, Any]], None]) -> Wsgi:
    """`inner`, seeing each request after `change` edited its WSGI environ."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        change(environ)
        return inner(environ, start_response)

    return app


def call(app: Wsgi, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    caught: dict[str, Any] = {}
    body = b"".join(app(environ, lambda status, headers, exc_info=None: caught.update(s=status, h=list(headers))))
    return caught["s"], caught["h"], body


def respond(start_response: Callable[..., Any], status: str, headers: list[tuple[str, str]],
            body: bytes) -> list[bytes]:
    start_response(status, [(k, v) for k, v in headers if k.lower() != "content-length"]
                   + [("Content-Length", str(len(body)))])
    return [body]


def on_response(change: Rewrite) -> Wsgi:
    """The Notes mock, each answer passed through `change(status, headers, body)` before it leaves."""
    inner = notes_mock()
    return lambda environ, start_response: respond(start_response, *change(*call(inner, environ)))


def unsealed(inner: Wsgi) -> Wsgi:
    """`inner`, taking any cursor: one it did not issue starts the list again (a 200), as a runtime that does not
    seal its cursors may."""
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        status, headers, body = call(inner, environ)
        if status.startswith("400") and "cursor=" in environ.get("QUERY_STRING", ""):
            query_without("cursor")(environ)
            status, headers, body = call(inner, environ)
        return respond(start_response, status, headers, body)

    return app


def forgiving_cursors() -> Wsgi:
    """The Notes mock, but a cursor it refuses gets the first page instead of a 400."""
    return unsealed(notes_mock())


def query_without(name: str, unless: Callable[[str], bool] = lambda value: False) -> Callable[[dict[str, Any]], None]:
    """A request change: the query parameter `name` is dropped (kept when `unless(value)`)."""
    def change(environ: dict[str, Any]) -> None:
        pairs = parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        environ["QUERY_STRING"] = urlencode([(k, v) for k, v in pairs if k != name or unless(v)])
    return change


def json_body(change: Callable[[Any], None], statuses: tuple[str, ...] = ("200",)) -> Rewrite:
    """A response change: the JSON body of answers with these statuses, edited in place by `change`."""
    def rewrite(status: str, headers: list[tuple[str, str]], body: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
        if status[:3] not in statuses:
            return status, headers, body
        data = json.loads(body)
        change(data)
        return status, headers, json.dumps(data).encode()
    return rewrite


def without_header(name: str) -> Rewrite:
    return lambda status, headers, body: (status, [h for h in headers if h[0].lower() != name.lower()], body)


def status_instead(old: str, new: str) -> Rewrite:
    return lambda status, headers, body: (new if status.startswith(old) else status, headers, body)


def valid_limit(value: str) -> bool:
    return value.isdigit() and 1 <= int(value) <= 10


def set_bearer(environ: dict[str, Any]) -> None:
    environ["HTTP_AUTHORIZATION"] = "Bearer reader"


def contract(url: str, *extra: str) -> int:
    return main(["contract", "--url", url, *NOTES_ARGS, "--max-examples", "5", "--seed", "1", *extra])


def parsed_junit(path: Path) -> ET.Element:
    """The JUnit file, parsed, checked against the shape CI servers read (testsuites > testsuite > testcase, at
    most one failure or error each, with a message and a type), and its one test suite."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1 and {"name", "tests", "failures", "errors", "skipped"} <= set(suites[0].attrib)
    for case in suites[0].iter("testcase"):
        assert case.get("classname") and case.get("name"), case.attrib
        assert len(case.findall("failure")) + len(case.findall("error")) <= 1, case.attrib  # one verdict a case
        for failure in case.findall("failure"):
            assert failure.get("message") is not None and failure.get("type"), failure.attrib
    return suites[0]


def failed_checks(output: str) -> set[str]:
    """The checks the report's failure list names: lines like `1. GET /notebooks/{notebookId}/notes · check: …`."""
    return set(re.findall(r"^\d+\. \S+ \S+ · (\w+):", output, re.M))


BROKEN = {  # each server made when its test runs (not in every worker's collection)
    "a field of the wrong type": (
        lambda: on_response(json_body(lambda page: page["notes"][0].update(id=42) if page["notes"] else None)),
        "response_schema_conformance"),
    "a status the description does not declare": (lambda: on_response(status_instead("404", "410 GONE")),
                                                  "status_code_conformance"),
    "no X-Request-Id": (lambda: on_response(without_header("X-Request-Id")), "request_id_header"),
    "a 200 for an invalid limit": (lambda: on_request(query_without("limit", unless=valid_limit)),
                                   "negative_data_rejection"),
    "auth ignored": (lambda: on_request(set_bearer), "ignored_auth"),
    "a cursor that repeats items": (lambda: on_request(query_without("cursor")), "cursor_walk"),
    "a requestId other than X-Request-Id": (
        lambda: on_response(json_body(lambda e: e["error"].update(requestId="req_other"), ("400", "401", "404"))),
        "request_id_header"),
    "an error code the operation does not document": (
        lambda: on_response(json_body(lambda e: e["error"].update(code="gone-fishing"), ("404",))),
        "error_code_documented"),
    "a page out of the documented order": (lambda: on_response(json_body(lambda page: page["notes"].reverse())),
                                           "cursor_walk"),
    "a nextCursor on the last page": (lambda: on_response(json_body(lambda page: page.setdefault("next", "more?"))),
                                      "next_cursor_when_has_more"),
    "a tampered cursor accepted": (lambda: forgiving_cursors(), "tampered_cursor_rejected"),
    "a 503 without Retry-After": (lambda: on_response(status_instead("404", "503 SERVICE UNAVAILABLE")),
                                  "retry_after_seconds"),
    "a 404 breaking its envelope": (lambda: on_response(json_body(lambda e: e.update(error="gone"), ("404",))),
                                    "response_schema_conformance"),
}


@pytest.mark.parametrize("broken", BROKEN, ids=list(BROKEN))
def test_a_broken_server_fails_naming_the_check_that_caught_it(broken: str, capsys: pytest.CaptureFixture[str]):
    make, check = BROKEN[broken]
    with serving(make()) as url:
        code = contract(url)
    output = capsys.readouterr().out
    assert code == 1, output
    assert check in failed_checks(output), output
    assert "reproduce: curl -X GET" in output and url.split("/api")[0] in output


def test_the_unbroken_server_passes_every_check(capsys: pytest.CaptureFixture[str]):
    with serving(notes_mock()) as url:
        code = contract(url)
    output = capsys.readouterr().out
    assert code == 0, output
    assert "PASSED: 1 operations" in output and "FAIL" not in output


def test_junit_report_names_each_failed_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    report = tmp_path / "reports" / "contract.xml"
    with serving(on_response(without_header("X-Request-Id"))) as url:
        assert contract(url, "--junit", str(report)) == 1
    capsys.readouterr()
    suite = parsed_junit(report)
    assert suite is not None and int(suite.get("failures", "0")) >= 1
    failed = {case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None}
    assert "request_id_header" in failed
    failure = next(c.find("failure") for c in suite.iter("testcase") if c.get("name") == "request_id_header")
    assert failure is not None and "curl" in (failure.text or "")


def test_the_same_seed_sends_the_same_requests(capsys: pytest.CaptureFixture[str]):
    outputs = []
    with serving(notes_mock()) as url:
        for _ in range(2):
            contract(url, "--seed", "42")
            outputs.append(re.sub(r" in [\d.]+ s", "", capsys.readouterr().out))
    assert outputs[0] == outputs[1]
    assert "repeat with --seed 42" in outputs[0]


def test_the_kindgi_mock_served_keeps_the_contract_with_ids_it_lists(capsys: pytest.CaptureFixture[str]):
    """Against a --url the fixtures' ids are not sent: the ids come from the mock's own lists (the eval suite's
    from the description's example), and every operation still reaches its 200s."""
    with MockServer(KINDGI_SPEC, KINDGI_FIXTURES, strict_auth=True) as server:
        code = main(["contract", "--url", server.url, "--token", "demo-token", "--max-examples", "10", "--seed", "5"])
    output = capsys.readouterr().out
    assert code == 0, output
    lines = [line for line in output.splitlines() if line.startswith("GET ")]
    assert len(lines) == 4 and all("200×" in line for line in lines), lines
    assert "ids discovered on the target: listTestSetVersionCases (3), listAgentTestSetCases (3)" in output
    assert "ids from the fixtures" not in output


@pytest.mark.parametrize("token", ["demo-token", "other-tenant-token"])
def test_every_id_combination_from_the_fixtures_exists_for_its_caller(kindgi_app, token: str):
    pipeline = pipeline_of(kindgi_app)  # the app's own, not loaded again
    client = kindgi_app.test_client()
    for op in pipeline.spec.operations.values():
        for combo in derive(pipeline.fixtures, op.id, caller_for(pipeline.auth, token)):
            path = op.path.format(**{name: value for (where, name), value in combo.items() if where == "path"})
            query = {name: value for (where, name), value in combo.items() if where == "query"}
            response = client.get(path, query_string=query, headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 200, (op.id, combo, response.json)
            assert response.json["data"], (op.id, combo)


def test_any_description_is_checked_and_its_gaps_named(capsys: pytest.CaptureFixture[str]):
    """The Library: an API key instead of a bearer token, RFC 7807 errors, no request id header, a write
    operation. Served in-process it answers 401 without credentials, which its description never declares."""
    code = main(["contract", "--spec", str(LIBRARY / "openapi.yaml"), "--fixtures", str(LIBRARY / "fixtures"),
                 "--max-examples", "5", "--seed", "2"])
    output = capsys.readouterr().out
    assert code == 1
    assert failed_checks(output) == {"status_code_conformance"}, output
    assert "Received: 401" in output and "POST /books" in output
    assert "curl -X GET http://127.0.0.1:4010/api/v2/books/" in output  # replayable on `mockserver serve`
    assert "ids from the fixtures: getBook (3)" in output


def test_an_unreachable_server_fails_with_the_reason(capsys: pytest.CaptureFixture[str]):
    port = free_port()  # nobody listens on it once closed
    assert main(["contract", "--url", f"http://127.0.0.1:{port}", "--token", "demo-token", "--max-examples", "2",
                 "--operation", "listTestSets"]) == 1
    output = capsys.readouterr().out
    assert why(output) == [f"  - cannot connect to http://127.0.0.1:{port}: connection refused"], output


def test_usage_problems_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["contract", "--operation", "noSuchOperation"]) == 2
    assert "no operation noSuchOperation" in capsys.readouterr().err
    broken = tmp_path / "fixtures"
    broken.mkdir()
    (broken / "x.yaml").write_text("operations:\n  listTestSets: {nope: 1}\n")
    assert main(["contract", "--spec", str(KINDGI_SPEC), "--fixtures", str(broken)]) == 2
    assert "problem(s) found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["contract", "--basic", "no-colon"])
    assert exited.value.code == 2 and "is not 'user:password'" in capsys.readouterr().err


def vault_mock() -> Wsgi:
    return create_app(VAULT / "openapi.yaml", VAULT / "fixtures", strict_auth=True)


def vault_contract(url: str, *extra: str) -> int:
    return main(["contract", "--url", url, *VAULT_ARGS, "--max-examples", "5", "--seed", "1", *extra])


def basic_everywhere() -> Wsgi:
    """The Vault mock behind a gate that wants the basic credential on every operation, not only where the
    description says so: the API key of GET /stats is refused."""
    inner = vault_mock()

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if not environ.get("HTTP_AUTHORIZATION", "").startswith("Basic "):
            return respond(start_response, "401 UNAUTHORIZED", [("Content-Type", "application/problem+json")],
                           b'{"title": "Unauthorized", "status": 401}')
        return inner(environ, start_response)

    return app


def basic_added(environ: dict[str, Any]) -> None:
    """A request change: every request carries the basic credential, whatever the client sent."""
    environ["HTTP_AUTHORIZATION"] = "Basic " + base64.b64encode(b"vault-key:any-password").decode()


def operation_lines(output: str) -> dict[str, str]:
    """The report's line of each operation (`GET /stats  getStats  · 11 requests: 200×4, 405×7`), by label."""
    return {" ".join(line.split()[:2]): line for line in output.splitlines() if re.match(r"^[A-Z]+ /", line)}


def test_each_operation_gets_the_credential_its_security_scheme_wants(capsys: pytest.CaptureFixture[str]):
    """Basic auth on one operation, an API key in the query on the next, a bearer token on the third: with strict
    auth, a 200 on each says its own credential went where its scheme puts it."""
    with serving(vault_mock(), "/v1") as url:
        code = vault_contract(url)
    output = capsys.readouterr().out
    assert code == 0, output
    lines = operation_lines(output)
    assert set(lines) == {"GET /records", "GET /stats", "GET /me"}, output
    assert all("200×" in line for line in lines.values()), lines
    contract = load_contract(VAULT / "openapi.yaml", VAULT / "fixtures", token="vault-key", basic=("vault-key", "pw"))
    sent = {label: (one.headers, one.query) for label, one in contract.credentials.items()}
    assert sent == {"GET /records": ({"Authorization": "Basic dmF1bHQta2V5OnB3"}, {}),
                    "GET /stats": ({}, {"api_key": "vault-key"}),
                    "GET /me": ({"Authorization": "Bearer vault-key"}, {})}


def test_a_server_wanting_basic_auth_everywhere_fails_where_the_description_says_api_key(
        capsys: pytest.CaptureFixture[str]):
    with serving(basic_everywhere(), "/v1") as url:
        code = vault_contract(url)
    output = capsys.readouterr().out
    assert code == 1, output
    assert re.findall(r"^\d+\. (\S+ \S+) · (\w+):", output, re.M) == [("GET /stats", "status_code_conformance")], output


def test_a_server_letting_callers_in_without_the_basic_credential_fails_ignored_auth(
        capsys: pytest.CaptureFixture[str]):
    with serving(on_request_of(vault_mock(), basic_added), "/v1") as url:
        code = vault_contract(url)
    output = capsys.readouterr().out
    assert code == 1, output
    assert ("GET /records", "ignored_auth") in re.findall(r"^\d+\. (\S+ \S+) · (\w+):", output, re.M), output


def test_a_description_without_fixtures_is_checked_in_process_with_credentials_it_derives(
        capsys: pytest.CaptureFixture[str]):
    """No fixtures, so no token: each operation gets a placeholder credential of its own scheme, which the mock
    in-process accepts (`--accept-token`) with strict auth, so ignored_auth checks that every other is refused."""
    code = main(["contract", "--spec", str(VAULT / "openapi.yaml"), "--max-examples", "5", "--seed", "1"])
    output = capsys.readouterr().out
    assert code == 0, output
    assert "the mock, in-process (strict auth)" in output and "ignored_auth left out" not in output
    assert re.search(r"ok\s+ignored_auth\s+\d+ passed", output), output
    assert all("200×" in line for line in operation_lines(output).values()), output


def test_operations_kept_in_their_own_files_are_checked_with_their_parameters(capsys: pytest.CaptureFixture[str]):
    """`get: {$ref: operations/list-things.yaml}` (as DigitalOcean writes every operation): chosen by operationId
    or by label, and read whole — the `limit` parameter of another file is tried and its bounds enforced (400s)."""
    code = main(["contract", "--spec", str(DATA / "split" / "openapi.yaml"), "--operation", "GET /things", "getThing",
                 "--max-examples", "5", "--seed", "1"])
    output = capsys.readouterr().out
    assert code == 0, output
    lines = operation_lines(output)
    assert set(lines) == {"GET /things", "GET /things/{thingId}"}, output
    assert all("200×" in line and "400×" in line for line in lines.values()), lines
    assert "ignored_auth left out" not in output  # nothing there takes credentials


def why(output: str) -> list[str]:
    """The lines right after the report's first one, where a failed run says why."""
    lines = output.splitlines()
    assert lines[1] == "FAILED:", output
    return list(takewhile(lambda line: line.startswith("  "), lines[2:]))


def test_a_token_the_server_refuses_fails_naming_the_credentials(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """A rotated CI secret: every call that carries the token is a 401. Nothing was checked, so the run fails and
    says so first, in the text and in the JUnit file."""
    report = tmp_path / "contract.xml"
    with serving(notes_mock()) as url:
        code = contract(url, "--token", "not-a-real-token", "--junit", str(report))
    output = capsys.readouterr().out
    assert code == 1, output
    reasons = why(output)
    assert reasons[0].startswith("  - the credentials never authenticated") and "--token" in reasons[0], output
    assert reasons[1].startswith("      GET /notebooks/{notebookId}/notes (401×"), output
    assert "PASSED" not in output
    gate = [case for case in parsed_junit(report).iter("testcase") if case.get("name") == "tested: credentials"]
    assert len(gate) == 1 and gate[0].find("failure") is not None


def test_an_expired_token_fails_every_operation_of_the_in_process_mock(capsys: pytest.CaptureFixture[str]):
    code = main(["contract", "--token", "expired-token", "--max-examples", "3", "--seed", "1"])
    output = capsys.readouterr().out
    assert code == 1, output
    refused = [line.split(" (")[0].strip() for line in why(output)[1:]]
    assert sorted(refused) == sorted(operation_lines(output)), output


def kindgi_contract(url: str, *extra: str) -> int:
    return main(["contract", "--url", url, "--token", "demo-token", "--max-examples", "5", "--seed", "1", *extra])


NEVER_FOUND = ["GET /v1/agents/{agentId}/test-set/cases", "GET /v1/eval-suites/{suiteId}/versions/{version}/cases",
               "GET /v1/test-sets/{testSetId}/versions/{version}/cases"]


def test_a_deployment_without_the_fixtures_ids_fails_naming_the_operations_never_answered_with_success(
        capsys: pytest.CaptureFixture[str]):
    """Its own data: every call with a path id is a 404, and an OPTIONS 200 is a probe, not an answer. Only the
    list of test sets (no path id) has its success answers checked."""
    with serving(ids_elsewhere(create_app(KINDGI_SPEC, KINDGI_FIXTURES, strict_auth=True)), "") as url:
        code = kindgi_contract(url)
    output = capsys.readouterr().out
    assert code == 1, output
    reasons = why(output)
    assert reasons[0].startswith("  - never answered with success"), output
    assert sorted(line.split(" (")[0].strip() for line in reasons[1:]) == NEVER_FOUND, output
    lines = operation_lines(output)
    assert all("answers: 200×" not in lines[label] and "probes with other methods: 200×" in lines[label]
               for label in NEVER_FOUND), lines
    assert "answers: 200×" in lines["GET /v1/test-sets"]


def test_operations_allowed_untested_do_not_fail_the_run(capsys: pytest.CaptureFixture[str]):
    allowed = ["listAgentTestSetCases", "listEvalSuiteVersionCases", NEVER_FOUND[2]]  # by operationId or label
    with serving(ids_elsewhere(create_app(KINDGI_SPEC, KINDGI_FIXTURES, strict_auth=True)), "") as url:
        code = kindgi_contract(url, *(arg for name in allowed for arg in ("--allow-untested", name)))
    output = capsys.readouterr().out
    assert code == 0, output
    assert output.splitlines()[1] == "allowed untested (--allow-untested):", output
    assert sorted(line.split(":")[0].strip() for line in output.splitlines()[2:5]) == NEVER_FOUND, output


def test_a_list_whose_pages_never_have_a_next_one_fails_naming_the_cursor_checks(capsys: pytest.CaptureFixture[str]):
    """Success answers, but none the cursor checks can apply to: they report `did not apply` and the run fails."""
    with serving(on_response(json_body(lambda page: (page.update(more=False), page.pop("next", None))))) as url:
        code = contract(url)
    output = capsys.readouterr().out
    assert code == 1, output
    never = {line.split()[1] for line in why(output) if "never applied" in line}
    assert never == {"cursor_walk", "tampered_cursor_rejected"}, output
    assert re.search(r"^  -\s+cursor_walk\s+did not apply \(\d+ answers checked\)$", output, re.M), output


def test_the_mock_in_process_passes_with_every_operation_tested(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """`make contract`: every operation answered with success, every check that had to apply did, and the JUnit
    file says for each check how often it passed, failed and did not apply."""
    report = tmp_path / "contract.xml"
    code = main(["contract", "--max-examples", "5", "--seed", "3", "--junit", str(report)])
    output = capsys.readouterr().out
    assert code == 0, output
    assert re.search(r"^PASSED: 4 operations, \d+ requests, 0 problems, 0 error\(s\), 0 untested", output, re.M)
    assert all("answers: 200×" in line for line in operation_lines(output).values()), output
    cases = {(case.get("classname"), case.get("name")): case for case in parsed_junit(report).iter("testcase")}
    walk = cases[("GET /v1/test-sets", "cursor_walk")]
    counts = {p.get("name"): int(p.get("value", "-1")) for p in walk.iter("property")}
    assert counts["passed"] >= 1 and counts["failed"] == 0 and counts["did not apply"] >= 1, counts
    assert "forced with `Prefer: code=` (honoured on " in output
    assert "declared responses: 18 of 18 observed (100 %)" in output
    retry = {p.get("name"): p.get("value")
             for p in cases[("GET /v1/test-sets", "retry_after_seconds")].iter("property")}
    assert int(retry["passed"]) >= 1, retry  # its 503, forced, had its Retry-After
    unsealed = cases[("GET /v1/test-sets", "tampered_cursor_rejected")]  # the description does not say sealed
    assert unsealed.find("skipped") is not None


def own_choices(folder: Path) -> Path:
    """The Kindgi fixtures, with choices of its own where the pages leave them open: ties of an agent's cases
    broken by id descending, and codes of its own for a 401 and for a missing test set or eval suite."""
    shutil.copytree(KINDGI_FIXTURES, folder)
    main_file = folder / "kindgi.yaml"
    fixtures = yaml.safe_load(main_file.read_text())
    fixtures["settings"]["errors"]["codes"][401] = "invalid-token"
    operations = fixtures["operations"]
    operations["listAgentTestSetCases"]["list"]["order"] = [{"by": "addedAt", "desc": True}, {"by": "id", "desc": True}]
    for name, code in (("listTestSetVersionCases", "no-such-test-set"), ("listEvalSuiteVersionCases", "no-such-suite")):
        for rule in operations[name]["require"]:
            rule["code"] = code
    main_file.write_text(yaml.safe_dump(fixtures, sort_keys=False))
    return folder


def test_a_faithful_deployment_making_its_own_choices_where_the_pages_leave_them_open_passes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Ties broken the other way, its own codes where the pages name none, cursors not sealed: nothing the
    description states is broken, so nothing fails — and every operation's success was checked."""
    fixtures = own_choices(tmp_path / "fixtures")
    walked = walk_all(create_app(KINDGI_SPEC, fixtures).test_client(), "/v1/agents/acme.drafting/test-set/cases",
                      {"projectId": SAMPLE_PROJECT, "limit": 100})
    assert any(a["addedAt"] == b["addedAt"] and a["id"] > b["id"] for a, b in zip(walked, walked[1:]))  # a tie
    with serving(unsealed(create_app(KINDGI_SPEC, fixtures, strict_auth=True)), "") as url:
        code = kindgi_contract(url, "--max-examples", "10")
    output = capsys.readouterr().out
    assert code == 0, output
    assert all("answers: 200×" in line for line in operation_lines(output).values()), output
    assert re.search(r"^\s+ok\s+cursor_walk\s+\d+ passed", output, re.M), output
    assert "401 code among" not in output and "invalid-token" not in output


def walk_all(client: Any, path: str, query: dict[str, Any]) -> list[dict[str, Any]]:
    """Every item of a list, page after page."""
    items, cursor = [], None
    while True:
        page = client.get(path, query_string={**query, **({"cursor": cursor} if cursor else {})},
                          headers={"Authorization": "Bearer demo-token"}).json
        items += page["data"]
        if not page["hasMore"]:
            return items
        cursor = page["nextCursor"]


def test_declared_responses_never_observed_fail_below_min_responses(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]):
    """Notes declares 200, 400, 401, 404 and 503; unforced, nothing makes the mock answer 503: 4 of 5 observed."""
    report = tmp_path / "contract.xml"
    with serving(notes_mock()) as url:
        below = contract(url, "--no-force", "--min-responses", "90", "--junit", str(report))
        output = capsys.readouterr().out
        at = contract(url, "--no-force", "--min-responses", "80")
    assert below == 1, output
    assert "  responses: 4 of 5 declared observed · not seen: 503" in output
    assert "declared responses: 4 of 5 observed (80 %), --min-responses 90 %" in output
    assert why(output) == ["  - only 4 of 5 declared responses observed (80.0 %), below --min-responses 90; "
                           "not seen: GET /notebooks/{notebookId}/notes 503"], output
    case = next(c for c in parsed_junit(report).iter("testcase") if c.get("name") == "declared responses")
    assert case.find("failure") is not None
    assert {p.get("name"): p.get("value") for p in case.iter("property")}["observed 503"] == "0"
    assert at == 0, capsys.readouterr().out


def retry_after_dropped(status: str, headers: list[tuple[str, str]],
                        body: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
    return without_header("Retry-After")(status, headers, body) if status.startswith("503") else (status, headers, body)


def test_a_503_without_its_declared_retry_after_fails_once_forced(capsys: pytest.CaptureFixture[str]):
    """Nothing provokes the Notes mock into a 503; asked with `Prefer: code=503` it answers one, here without the
    `Retry-After` its description declares. Without forcing, that 503 is never seen (and the run passes)."""
    with serving(on_response(retry_after_dropped)) as url:
        code = contract(url)
        output = capsys.readouterr().out
        unforced = contract(url, "--no-force")
    assert code == 1, output
    assert {"retry_after_seconds", "response_headers_conformance"} <= failed_checks(output), output
    assert "forced with `Prefer: code=` (honoured on GET /notebooks/{notebookId}/notes)" in output
    assert unforced == 0
    assert "not seen: 503" in capsys.readouterr().out


def test_forcing_keeps_to_the_operations_chosen(capsys: pytest.CaptureFixture[str]):
    with serving(notes_mock()) as url:
        code = contract(url, "--operation", "listNotes")
    output = capsys.readouterr().out
    assert code == 0, output
    assert "forced with `Prefer: code=`" in output and "declared responses: 5 of 5 observed (100 %)" in output


def test_a_target_ignoring_prefer_is_not_forced(capsys: pytest.CaptureFixture[str]):
    def strip_prefer(environ: dict[str, Any]) -> None:
        environ.pop("HTTP_PREFER", None)

    with serving(on_request(strip_prefer)) as url:
        code = contract(url)
    output = capsys.readouterr().out
    assert code == 0, output
    assert "responses not forced: the target does not honour `Prefer: code=`" in output
    assert "  responses: 4 of 5 declared observed · not seen: 503" in output


def methods_seen(inner: Wsgi, seen: list[str]) -> Wsgi:
    """`inner`, noting the method of every request it gets."""
    return on_request_of(inner, lambda environ: seen.append(environ["REQUEST_METHOD"]))


def test_a_read_only_run_sends_no_unsafe_method(capsys: pytest.CaptureFixture[str]):
    """The Library has `POST /books`, and a full run probes every path with PUT, DELETE …: read-only, none of it."""
    seen: list[str] = []
    library = create_app(LIBRARY / "openapi.yaml", LIBRARY / "fixtures", strict_auth=True)
    args = ["--spec", str(LIBRARY / "openapi.yaml"), "--fixtures", str(LIBRARY / "fixtures"), "--max-examples", "3",
            "--seed", "1", "--token", "reader-key"]
    with serving(methods_seen(library, seen), "/api/v2") as url:
        main(["contract", "--url", url, *args, "--read-only"])
        read_only = capsys.readouterr().out
        safe = set(seen)
        seen.clear()
        main(["contract", "--url", url, *args, "--operation", "listBooks"])
        full = capsys.readouterr().out
    assert safe and safe <= {"GET", "HEAD", "OPTIONS"}, safe
    assert "POST /books" not in operation_lines(read_only), read_only
    assert {"PUT", "DELETE"} <= set(seen)  # what read-only spared the target
    assert "this run may change the target: it probes every path with methods it does not declare" in full
    assert "this run may change" not in read_only


def test_an_excluded_operation_is_never_called(capsys: pytest.CaptureFixture[str]):
    seen: list[str] = []
    with serving(on_request_of(vault_mock(), lambda environ: seen.append(environ["PATH_INFO"])), "/v1") as url:
        code = vault_contract(url, "--exclude-operation", "whoAmI", "--exclude-operation", "GET /stats")
    output = capsys.readouterr().out
    assert code == 0, output
    assert set(operation_lines(output)) == {"GET /records"}, output
    assert not {"/v1/me", "/v1/stats"} & set(seen)


@pytest.mark.parametrize("source", ["file", "env"])
def test_the_token_comes_from_a_file_or_the_environment(source: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]):
    secret = tmp_path / "token"
    secret.write_text("reader\n")
    monkeypatch.setenv("NOTES_TOKEN", "reader")
    given = ["--token-file", str(secret)] if source == "file" else ["--token-env", "NOTES_TOKEN"]
    with serving(notes_mock()) as url:
        code = main(["contract", "--url", url, "--spec", str(NOTES / "notes.yaml"), "--fixtures",
                     str(NOTES / "fixtures"), "--data", str(NOTES / "data.yaml"), *given, "--max-examples", "3",
                     "--seed", "1"])
    output = capsys.readouterr().out
    assert code == 0, output
    assert "answers: 200×" in operation_lines(output)["GET /notebooks/{notebookId}/notes"]


def test_a_missing_token_source_is_a_usage_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["contract", "--token-file", str(tmp_path / "nope")]) == 2
    assert "--token-file" in capsys.readouterr().err
    assert main(["contract", "--token-env", "MOCKSERVER_NO_SUCH_VARIABLE"]) == 2
    assert "no such environment variable" in capsys.readouterr().err


def stalling_once(inner: Wsgi, seconds: float) -> Wsgi:
    """`inner`, but the first call that carries the Notes token waits `seconds` before it is answered."""
    stalled = threading.Event()

    def stall(environ: dict[str, Any]) -> None:
        if not stalled.is_set() and environ.get("HTTP_AUTHORIZATION") == "Bearer reader":
            stalled.set()
            time.sleep(seconds)

    return on_request_of(inner, stall)


def test_a_stalled_answer_gives_up_after_the_request_timeout(capsys: pytest.CaptureFixture[str]):
    started = time.monotonic()
    with serving(stalling_once(notes_mock(), 6)) as url:
        code = contract(url, "--request-timeout", "0.5")
        elapsed = time.monotonic() - started
    output = capsys.readouterr().out
    assert code == 1 and "Read timed out after 0.5 seconds" in output, output
    assert elapsed < 6, elapsed  # it did not wait for the stalled answer


def test_a_run_killed_mid_way_leaves_a_partial_junit_file(tmp_path: Path):
    """As a CI timeout kills it: GET /me never answers, the run is killed while it waits, and the JUnit file
    already holds the operations done (marked incomplete); stderr said what was done, one line per phase."""
    report = tmp_path / "contract.xml"
    release = threading.Event()

    def hang_on_me(environ: dict[str, Any]) -> None:
        if environ["PATH_INFO"].endswith("/me"):
            release.wait(60)

    server = Served(on_request_of(vault_mock(), hang_on_me))
    # --no-discover: discovery would first wait out its own 10 s timeout on GET /me, then go on to the phases
    process = subprocess.Popen([sys.executable, "-m", "mockserver", "contract", "--url", server.url + "/v1",
                                *VAULT_ARGS, "--max-examples", "3", "--seed", "1", "--junit", str(report),
                                "--no-discover"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=DATA.parent.parent)
    try:
        assert process.stderr is not None
        progress = [process.stderr.readline() for _ in range(2)]
        assert all(line.startswith("mockserver contract: examples ") for line in progress), progress
        assert "GET /records" in progress[0] and "GET /stats" in progress[1]
        time.sleep(1)  # it now waits for GET /me
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()
        release.set()
        server.stop()
    suite = parsed_junit(report)
    assert suite is not None
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["complete"] == "false"
    assert {case.get("classname") for case in suite.iter("testcase")} >= {"GET /records", "GET /stats"}


def ids_of_its_own(folder: Path) -> Path:
    """The Kindgi fixtures as another deployment's data: every id of the form `acme.…` is `globex.…` there."""
    shutil.copytree(KINDGI_FIXTURES, folder)
    for path in folder.rglob("*.yaml"):
        path.write_text(path.read_text().replace("acme.", "globex."))
    return folder


def test_a_deployment_with_ids_of_its_own_passes_with_ids_discovered_and_the_rest_from_data(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """None of the fixtures' ids exist there. The test sets it lists give a corrections set's id and version, and
    a pairwise set the agent and project of an agent's cases; an eval suite's id is not listed anywhere: that
    one comes from --data. Then every operation's success is checked, and the run passes."""
    data = tmp_path / "data.yaml"
    data.write_text("operations:\n  listEvalSuiteVersionCases:\n"
                    "    - {suiteId: globex.drafting-accuracy, version: 1.2.0}\n")
    with serving(create_app(KINDGI_SPEC, ids_of_its_own(tmp_path / "fixtures"), strict_auth=True), "") as url:
        discovered_only = kindgi_contract(url)
        output = capsys.readouterr().out
        with_data = kindgi_contract(url, "--data", str(data))
        passed = capsys.readouterr().out
    assert discovered_only == 1, output
    assert "ids discovered on the target: listTestSetVersionCases (3), listAgentTestSetCases (3)" in output
    assert [line.split(" (")[0].strip() for line in why(output)[1:]] == [NEVER_FOUND[1]], output
    assert with_data == 0, passed
    assert "values from --data: listEvalSuiteVersionCases (1)" in passed
    assert all("answers: 200×" in line for line in operation_lines(passed).values()), passed


def test_a_deployment_is_never_sent_the_fixtures_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Run with Kindgi's fixtures against a deployment holding other data: the ids it is called with are the ones
    it lists (and the description's own examples), never one only the fixtures hold."""
    pipeline = pipeline_of(create_app(KINDGI_SPEC, KINDGI_FIXTURES))
    described = {"acme.drafting", "acme.drafting.test-set", "acme.drafting-accuracy"}  # the description's examples
    fixture_only = {str(value) for op in pipeline.spec.operations.values()
                    for combo in derive(pipeline.fixtures, op.id, caller_for(pipeline.auth, "demo-token"))
                    for value in combo.values() if str(value).startswith("acme.")} - described
    assert "acme.drafting.corrections" in fixture_only, fixture_only
    seen: list[str] = []
    deployment = create_app(KINDGI_SPEC, ids_of_its_own(tmp_path / "fixtures"), strict_auth=True)
    record = lambda environ: seen.append(unquote(environ["PATH_INFO"] + "?" + environ.get("QUERY_STRING", "")))  # noqa: E731
    with serving(on_request_of(deployment, record), "") as url:
        kindgi_contract(url, "--fixtures", str(KINDGI_FIXTURES))
    output = capsys.readouterr().out
    assert "ids discovered on the target: listTestSetVersionCases (3), listAgentTestSetCases (3)" in output, output
    assert "ids from the fixtures" not in output
    assert any("globex.drafting.corrections" in request for request in seen)
    sent = [(request, value) for request in seen for value in fixture_only
            if re.search(re.escape(value) + r"\b", request)]
    assert not sent, sent[:5]


LINKED = DATA / "links" / "openapi.yaml"


def linked_pets(seen: list[str]) -> Wsgi:
    """The pets of tests/data/links, served by hand: ids unlike anything a name would guess (`uid`), an owner
    named by a header; it notes the path and query of every request."""
    pets = {"p-7f3a": ("Rex", "o-31c4"), "p-8e2b": ("Tom", "o-4d09")}
    owners = {"o-31c4": "Ada", "o-4d09": "Grace"}

    @Request.application
    def app(request: Request) -> Response:
        seen.append(request.full_path)
        parts = request.path.strip("/").split("/")
        found: Any = None
        headers = {}
        if request.method != "GET":
            return Response("", 405, headers={"Allow": "GET"})
        if parts == ["pets"]:
            found = [{"uid": uid, "name": name} for uid, (name, _) in pets.items()]
        elif len(parts) == 2 and parts[0] == "pets" and parts[1] in pets:
            found = {"uid": parts[1], "name": pets[parts[1]][0]}
            headers["X-Owner"] = pets[parts[1]][1]
        elif parts[0] == "pets" and parts[1:] and parts[1] in pets and parts[2:] == ["toys"]:
            found = {"ball": ["red ball"], "bone": []}.get(request.args.get("kind", ""))
        elif len(parts) == 2 and parts[0] == "owners" and parts[1] in owners:
            found = {"name": owners[parts[1]]}
        if found is None:
            return Response(json.dumps({"message": "not found"}), 404, content_type="application/json")
        return Response(json.dumps(found), 200, headers=headers, content_type="application/json")

    return app


@pytest.mark.parametrize("links", [True, False], ids=["links", "no links"])
def test_ids_are_discovered_where_the_description_links_them(links: bool, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]):
    """Nothing in the list's items is named after `petId`: the links say it is `uid`, a pet's owner is its
    `X-Owner` header (an operationRef) and its toys take its own path value and a constant. With the links every
    operation's success is checked with discovered values; without them nothing is discovered (Schemathesis reuses
    the list's `uid`s by itself, but an owner, named only by a header, is never reached) and the run fails."""
    spec = tmp_path / "openapi.yaml"
    described = yaml.safe_load(LINKED.read_text())
    if not links:
        for item in described["paths"].values():
            for response in item["get"]["responses"].values():
                response.pop("links", None)
    spec.write_text(yaml.safe_dump(described, sort_keys=False))
    seen: list[str] = []
    with serving(linked_pets(seen), "") as url:
        code = main(["contract", "--url", url, "--spec", str(spec), "--max-examples", "3", "--seed", "1"])
    output = capsys.readouterr().out
    lines = operation_lines(output)
    if links:
        assert code == 0, output
        assert "ids discovered on the target: getPet (2), listToys (2), getOwner (2)" in output, output
        assert all("answers: 200×" in line for line in lines.values()), output
        assert {"/pets/p-7f3a/toys?kind=ball", "/owners/o-4d09?"} <= set(seen), seen
    else:
        assert code == 1, output
        assert "ids discovered on the target: none" in output, output
        assert "answers: 200×" not in lines["GET /owners/{ownerId}"], output  # an owner is named only by a header
        assert not {"/owners/o-31c4?", "/owners/o-4d09?"} & set(seen), seen


def test_a_link_reads_the_answers_of_the_status_it_is_declared_on():
    found, _ = links_to(SpecIndex(LINKED))
    to_pet, to_owner, to_toys = found["getPet"][0], found["getOwner"][0], found["listToys"][0]
    listed = Exchange("GET", {}, 200, {}, [{"uid": "p-0001"}, {"name": "no uid"}, {"uid": "p-0002"}])
    assert values(to_pet, listed) == [{("path", "petId"): "p-0001"}, {("path", "petId"): "p-0002"}]
    assert values(to_pet, Exchange("GET", {}, 404, {}, [{"uid": "p-0001"}])) == []  # declared on the 200 only
    pet = Exchange("GET", {("path", "petId"): "p-0001"}, 200, CaseInsensitiveDict({"x-owner": "o-0009"}), {})
    assert values(to_owner, pet) == [{("path", "ownerId"): "o-0009"}]
    assert values(to_toys, pet) == [{("path", "petId"): "p-0001", ("query", "kind"): "ball"}]
    assert evaluate("pets/{$request.path.petId}/{$statusCode}", pet) == "pets/p-0001/200"


def test_a_link_discovery_cannot_follow_is_named_with_where_it_stands(tmp_path: Path):
    described = yaml.safe_load(LINKED.read_text())
    links = described["paths"]["/pets/{petId}"]["get"]["responses"]["200"]["links"]
    links["GetOwner"]["operationRef"] = "other.yaml#/paths/~1owners/get"
    links["ListToys"]["parameters"]["colour"] = "red"
    described["components"]["links"]["GetPet"]["operationId"] = "getPett"
    spec = tmp_path / "openapi.yaml"
    spec.write_text(yaml.safe_dump(described, sort_keys=False))
    found, problems = links_to(SpecIndex(spec))
    assert not found, found
    written = spec.read_text().splitlines()
    where = {name: f"{spec}:{written.index(f'            {name}:') + 1}" for name in ("GetPet", "GetOwner", "ListToys")}
    assert problems == [
        f"link GetPet of GET /pets ({where['GetPet']}) not followed: no operation 'getPett' in the description",
        f"link GetOwner of GET /pets/{{petId}} ({where['GetOwner']}) not followed: operationRef "
        "'other.yaml#/paths/~1owners/get' is not a local #/paths/… reference to an operation",
        f"link ListToys of GET /pets/{{petId}} ({where['ListToys']}) not followed: "
        "GET /pets/{petId}/toys has no parameter 'colour'"], problems


PINNED = DATA / "pinned" / "openapi.yaml"


def every_dag(seen: list[str]) -> Wsgi:
    """The runs of tests/data/pinned, by hand: the one DAG it lists is `etl`, `running`; the runs of every DAG
    (`~`) in the state `queued` are there. It notes the path and query of every request."""
    @Request.application
    def app(request: Request) -> Response:
        seen.append(unquote(request.full_path))
        if request.method != "GET":
            return Response("", 405, headers={"Allow": "GET"})
        if request.path == "/dags":
            return Response(json.dumps({"dags": [{"dag_id": "etl", "state": "running"}]}), 200,
                            content_type="application/json")
        if request.path == "/dags/~/runs" and request.args.get("state") == "queued":
            return Response(json.dumps({"runs": ["r1"]}), 200, content_type="application/json")
        return Response(json.dumps({"detail": "no such DAG"}), 404, content_type="application/json")

    return app


def test_a_parameter_fixed_to_one_value_keeps_it_in_every_phase(capsys: pytest.CaptureFixture[str]):
    """`dag_id` is `const: "~"` and `state` an `enum` of one: the list's link (and its items' field names) would
    fill them with `etl` and `running`, as the stateful phase did to Airflow's `dag_id`. No request carries those;
    only the negative cases send other values, on purpose."""
    seen: list[str] = []
    with serving(every_dag(seen), "") as url:
        code = main(["contract", "--url", url, "--spec", str(PINNED), "--max-examples", "20", "--seed", "1"])
    output = capsys.readouterr().out
    assert code == 0, output
    runs = [request for request in seen if request.startswith("/dags/") and "/runs" in request]
    assert "/dags/~/runs?state=queued" in runs, runs
    assert not [request for request in runs if "etl" in request or "running" in request], runs
    assert re.search(r"^\s+ok\s+negative_data_rejection\s+\d+ passed", output, re.M), output


def test_data_per_parameter_pairs_the_nth_values(tmp_path: Path):
    data = tmp_path / "data.yaml"
    data.write_text("parameters:\n  suiteId: [a.one, a.two]\n  version: 1.0.0\n")
    combos = load_data(data, SpecIndex(KINDGI_SPEC))
    assert combos["listEvalSuiteVersionCases"] == [{("path", "suiteId"): "a.one", ("path", "version"): "1.0.0"},
                                                   {("path", "suiteId"): "a.two", ("path", "version"): "1.0.0"}]
    assert combos["listTestSetVersionCases"] == [{("path", "version"): "1.0.0"}]


@pytest.mark.parametrize("content, says", [
    ("operations:\n  noSuchOperation: []\n", "no operation noSuchOperation"),
    ("operations:\n  listTestSets:\n    - {nope: 1}\n", "listTestSets has no parameter nope"),
    ("- just a list\n", "a mapping of `parameters`, `operations` and `paths` is expected"),
    ("parameters: x: quoted-nowhere\n", "data.yaml:1: /: not valid YAML: mapping values are not allowed in this "
                                         "context (column 14) [syntax]"),
])
def test_an_unusable_data_file_is_a_usage_problem(content: str, says: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]):
    data = tmp_path / "data.yaml"
    data.write_text(content)
    assert main(["contract", "--data", str(data)]) == 2
    said = capsys.readouterr().err
    assert says in said and "quoted-nowhere" not in said


def test_without_schemathesis_the_command_says_what_to_install():
    blocked = ("import sys; sys.modules['schemathesis'] = None; from mockserver.cli import main; "
               "raise SystemExit(main(['contract']))")
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, cwd=DATA.parent.parent)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("mockserver: `mockserver contract` needs Schemathesis: "
                                   "pip install 'mockserver[contract]'")


def test_an_order_failure_shows_the_sort_key_values_of_the_items(capsys: pytest.CaptureFixture[str]):
    with serving(on_response(json_body(lambda page: page["notes"].reverse()))) as url:
        assert contract(url) == 1
    output = capsys.readouterr().out
    assert re.search(r'got: +item \d+ \(written: "[\d-]+", id: "[^"]+"\) before item \d+ \(written: "[\d-]+", id: ',
                     output), output


def test_a_documented_rejection_of_valid_data_is_no_failure(capsys: pytest.CaptureFixture[str]):
    """A deployment that answers a notebook it does not hold with its documented 400 (not 404): a schema-valid
    request, rejected, but with an answer the operation documents, which is never held against it."""
    with serving(on_response(status_instead("404", "400 BAD REQUEST"))) as url:
        code = contract(url)
    output = capsys.readouterr().out
    assert code == 0, output
    assert re.search(r"^\s+ok\s+positive_data_acceptance", output, re.M), output


def test_each_security_scheme_takes_a_credential_of_its_own(capsys: pytest.CaptureFixture[str]):
    """No --token: a basic credential, a bearer token and the query API key each given for its own scheme."""
    given = ["--spec", str(VAULT / "openapi.yaml"), "--fixtures", str(VAULT / "fixtures"),
             "--auth-basic", "vault-key:any-password", "--auth-bearer", "vault-key", "--api-key", "api_key=vault-key"]
    with serving(vault_mock(), "/v1") as url:
        code = main(["contract", "--url", url, *given, "--max-examples", "3", "--seed", "1"])
    output = capsys.readouterr().out
    assert code == 0, output
    assert all("answers: 200×" in line for line in operation_lines(output).values()), output
    contract = load_contract(VAULT / "openapi.yaml", VAULT / "fixtures", token="t", bearer="b",
                             api_keys={"api_key": "k"})
    assert {label: (one.headers, one.query) for label, one in contract.credentials.items()} == {
        "GET /stats": ({}, {"api_key": "k"}), "GET /me": ({"Authorization": "Bearer b"}, {})}


CURSOR_PAGES = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /runs:
    get:
      parameters: [{name: cursor, in: query, schema: {type: string}}, {name: limit, in: query, schema: {type: integer}}]
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties: {runs: {type: array, items: {type: object}}, next_cursor: {type: [string, 'null']}}
  /pages:
    get:
      parameters: [{name: cursor, in: query, schema: {type: string}}]
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                allOf:
                  - {type: object, properties: {data: {type: array, items: {type: object}}}}
                  - {type: object, properties: {hasMore: {type: boolean}, nextCursor: {type: string}}}
"""


def test_the_cursor_checks_are_owed_only_by_pages_that_say_hasmore(write):
    """Without fixtures, a `cursor` parameter alone (Airflow's pages say `next_cursor` only) does not make the run
    fail because `next_cursor_when_has_more` and `cursor_walk` never applied; a page with `hasMore` still owes them."""
    raw = load_contract(write("spec.yaml", CURSOR_PAGES), None).schema.raw_schema
    assert raw["paths"]["/runs"]["get"]["x-contract"]["page"] is None
    assert raw["paths"]["/pages"]["get"]["x-contract"]["page"]["hasMore"] == "hasMore"
