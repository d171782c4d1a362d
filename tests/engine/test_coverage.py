"""Consumer coverage: a known sequence of calls gives exact numbers, in /__mock/coverage and in `mockserver
coverage` (text, JUnit, --min); a reset starts it afresh; the control token guards it; a `default` response,
path/header/array enums and deepObject parameters count as a client sends them."""
from __future__ import annotations

import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, SAMPLE_PROJECT, body
from mockserver import create_app
from mockserver.cli import main
from mockserver.testing import MockServer


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer(KINDGI_SPEC, KINDGI_FIXTURES) as started:
        yield started


def call(server: MockServer, path: str, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(server.url + path, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def known_sequence(server: MockServer) -> None:
    """Nine calls to operations (one to none), each status asserted so the coverage below is known exactly."""
    server.reset()
    agent_cases = f"/v1/agents/acme.drafting/test-set/cases?projectId={SAMPLE_PROJECT}"
    assert call(server, "/v1/test-sets?limit=2&kind=accuracy", DEMO) == 200
    assert call(server, "/v1/test-sets") == 401
    assert call(server, "/v1/test-sets?scopeKind=org", DEMO) == 400
    assert call(server, "/v1/test-sets", {**DEMO, "Prefer": "code=503"}) == 503
    assert call(server, "/v1/test-sets", {**DEMO, "Accept": "text/html"}) == 406  # not declared by listTestSets
    assert call(server, "/v1/test-sets/acme.drafting-accuracy/versions/1.0.0/cases", DEMO) == 404
    server.scenario(operationId="listAgentTestSetCases", status=503, times=1)
    assert call(server, agent_cases + "&include=retired", DEMO) == 503
    assert call(server, agent_cases, DEMO) == 200
    assert call(server, "/v1/nowhere", DEMO) == 404


def seen(items: list[dict[str, Any]], key: str) -> dict[str, int]:
    return {str(item[key]): item["calls"] for item in items if item["calls"]}


def test_a_known_sequence_gives_exact_numbers(server):
    known_sequence(server)
    report = server.control("GET", "coverage")
    assert (report["calls"], report["unmatched"], report["journalFull"]) == (9, 1, False)
    assert (report["covered"], report["total"], report["percent"]) == (15, 46, 32.6)
    ops = {op["operationId"]: op for op in report["operations"]}
    test_sets = ops["listTestSets"]
    assert (test_sets["calls"], test_sets["covered"], test_sets["total"], test_sets["percent"]) == (5, 9, 22, 40.9)
    assert seen(test_sets["statuses"], "status") == {"200": 1, "400": 1, "401": 1, "503": 1}
    assert test_sets["undeclaredStatuses"] == [{"status": 406, "calls": 1}]
    assert seen(test_sets["queryParameters"], "name") == {"limit": 1, "kind": 1, "scopeKind": 1}
    assert seen(test_sets["enumValues"], "value") == {"accuracy": 1, "org": 1}
    assert [e["value"] for e in test_sets["enumValues"] if e["parameter"] == "scopeKind"] == [
        "tenant", "org", "project"]
    agents = ops["listAgentTestSetCases"]
    assert (agents["calls"], agents["covered"], agents["total"]) == (2, 5, 11)
    assert seen(agents["statuses"], "status") == {"200": 1, "503": 1}
    assert seen(agents["queryParameters"], "name") == {"projectId": 2, "include": 1}
    assert agents["enumValues"] == [{"in": "query", "parameter": "include", "value": "retired", "calls": 1}]
    assert (ops["listTestSetVersionCases"]["covered"], ops["listTestSetVersionCases"]["total"]) == (1, 7)
    assert (ops["listEvalSuiteVersionCases"]["calls"], ops["listEvalSuiteVersionCases"]["percent"]) == (0, 0.0)


def test_the_command_reports_it_and_writes_junit(server, capsys, tmp_path):
    known_sequence(server)
    report = tmp_path / "coverage.xml"
    assert main(["coverage", "--url", server.url, "--junit", str(report), "--min", "30"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"mockserver coverage of {server.url} · 9 calls since the last reset (1 to no operation)\n")
    assert ("GET /v1/test-sets  listTestSets · 5 calls · 40.9 % (9 of 22)\n"
            "  statuses          seen 200×1, 400×1, 401×1, 503×1 · never none\n") in out
    assert "  undeclared        406×1 (statuses the description does not give it)\n" in out
    assert "  include values    seen retired×1 · never none\n" in out
    assert "  statuses          seen 200×1, 503×1 · never 400, 401, 404\n" in out
    assert out.rstrip().endswith("TOTAL 32.6 % (15 of 46) · minimum 30 % met")
    suite = ET.parse(report).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("46", "31")
    failed = {(case.get("classname").split()[0], case.get("name")) for case in suite.iter("testcase")
              if case.find("failure") is not None}
    assert ("listTestSets", "statuses: 503") not in failed
    assert {("listAgentTestSetCases", "statuses: 404"), ("listTestSets", "kind values: pairwise"),
            ("listTestSets", "query parameters: cursor")} <= failed


def test_below_the_minimum_it_exits_1(server, capsys):
    known_sequence(server)
    assert main(["coverage", "--url", server.url, "--min", "50"]) == 1
    assert capsys.readouterr().out.rstrip().endswith("TOTAL 32.6 % (15 of 46) · below the minimum of 50 %")


def test_one_sessions_coverage(server, capsys):
    server.reset()
    known_sequence(server)
    own = server.session()
    assert call(server, "/v1/test-sets?kind=accuracy", {"Authorization": "Bearer demo-token", **own.headers}) == 200
    assert main(["coverage", "--url", server.url, "--session", own.session_id]) == 0
    out = capsys.readouterr().out
    assert own.coverage()["calls"] == 1 and f"{server.url} · 1 calls since the last reset" in out
    assert server.coverage()["calls"] == 10  # the whole mock: the known sequence's nine calls and the session's


def test_a_reset_starts_it_afresh(server):
    known_sequence(server)
    server.reset()
    report = server.control("GET", "coverage")
    assert (report["calls"], report["covered"], report["percent"]) == (0, 0, 0.0)
    assert all(op["calls"] == 0 for op in report["operations"])


def test_the_control_token_guards_it(capsys):
    with MockServer(KINDGI_SPEC, KINDGI_FIXTURES, control_token="s3cret") as guarded:
        url = guarded.url
        assert call(guarded, "/__mock/coverage") == 401
        assert main(["coverage", "--url", url]) == 2
        assert "answered 401 for /__mock/coverage: give its --control-token" in capsys.readouterr().err
        assert main(["coverage", "--url", url, "--control-token", "s3cret"]) == 0
    assert main(["coverage", "--url", url]) == 2  # stopped: cannot be read
    assert "cannot read the coverage of" in capsys.readouterr().err


def test_it_is_gone_without_the_control_api():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control=False).test_client()
    for path in ("/__mock/coverage", "/__mock/", "/__mock/docs"):
        assert client.get(path).status_code == 404


EDGES = """
openapi: 3.0.3
info: {title: Edges, version: "1"}
servers: [{url: /api}]
paths:
  /items/{kind}:
    get:
      operationId: listItems
      parameters:
        - {name: kind, in: path, required: true, schema: {type: string, enum: [a, b]}}
        - {name: colors, in: query, explode: false, schema: {type: array, items: {$ref: '#/components/schemas/Color'}}}
        - {name: filter, in: query, style: deepObject, schema: {type: object, properties: {size: {type: integer}}}}
        - {name: X-Mode, in: header, schema: {type: string, enum: [fast, safe]}}
        - {name: flag, in: query, schema: {type: boolean, nullable: true, enum: [true, null]}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: array, items: {type: string}}}}}
        "404": {description: not found}
        default: {description: anything else}
components:
  schemas:
    Color: {type: string, enum: [red, green, blue]}
"""


@pytest.mark.parametrize("journal_size", [1000, 1], ids=["calls-in-the-journal", "calls-that-left-it"])
def test_defaults_and_enums_anywhere(write, journal_size):
    """The same counts whether the calls are still in the journal or left it (counted, not kept)."""
    client = create_app(write("edges.yaml", EDGES), journal_size=journal_size).test_client()
    assert client.get("/api/items/a?colors=red,blue&filter[size]=2&flag=true",
                      headers={"X-Mode": "safe"}).status_code == 200
    assert client.get("/api/items/b?colors=purple").status_code == 400
    assert client.get("/api/items/b", headers={"Prefer": "code=404"}).status_code == 404
    op = body(client.get("/__mock/coverage"))["operations"][0]
    assert seen(op["statuses"], "status") == {"200": 1, "404": 1, "default": 1}  # the 400 falls to default
    assert seen(op["queryParameters"], "name") == {"colors": 2, "filter": 1, "flag": 1}
    assert {(e["in"], e["parameter"], e["value"]): e["calls"] for e in op["enumValues"]} == {
        ("path", "kind", "a"): 1, ("path", "kind", "b"): 2, ("query", "colors", "red"): 1,
        ("query", "colors", "green"): 0, ("query", "colors", "blue"): 1, ("header", "X-Mode", "fast"): 0,
        ("header", "X-Mode", "safe"): 1, ("query", "flag", "true"): 1}
    assert (op["covered"], op["total"]) == (12, 14)


def test_past_the_counted_kinds_calls_are_still_counted_and_it_says_so(write, monkeypatch):
    from mockserver.state import memory

    monkeypatch.setattr(memory, "COUNTED_KINDS", 1)
    client = create_app(write("edges.yaml", EDGES), journal_size=1).test_client()
    for kind in ("a", "b", "a", "b"):
        client.get(f"/api/items/{kind}")
    report = body(client.get("/__mock/coverage"))
    # one distinct call is broken down: "a", counted twice; both calls to "b" are counted as a number only
    assert (report["calls"], report["journalFull"]) == (4, True)
    assert report["operations"][0]["calls"] == 2
