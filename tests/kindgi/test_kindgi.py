"""Kindgi behaves like Kindgi (issue 3): every list walked with several limits and checked against an oracle
computed here, from the fixture files, independently of the engine; every documented filter and error."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, OTHER, SAMPLE_PROJECT, body

TENANT_A = "6f1d2c3b-8a4e-4f5a-9b7c-1d2e3f4a5b6c"
TENANT_B = "a3c5e7f9-1b2d-4e6f-8a0c-2e4f6a8c0e1b"
LIMITS = (1, 7, 25, 100)


@lru_cache
def collection(name: str) -> list[dict[str, Any]]:
    for path in sorted((KINDGI_FIXTURES / "collections").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        if name in data.get("collections", {}):
            return data["collections"][name]["items"]
    raise KeyError(name)


def walk(client, path: str, params: dict[str, Any], limit: int, headers=DEMO) -> list[dict[str, Any]]:
    """Every page of a list, following nextCursor; checks the page shape on the way."""
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):
        query = {**params, "limit": limit, **({"cursor": cursor} if cursor else {})}
        response = client.get(f"{path}?{urlencode(query)}", headers=headers)
        assert response.status_code == 200, response.data
        page = body(response)
        assert len(page["data"]) <= limit
        assert ("nextCursor" in page) == page["hasMore"]
        items += page["data"]
        if not page["hasMore"]:
            return items
        cursor = page["nextCursor"]
    raise AssertionError("the list never ended")


def semver(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def expected_test_sets(tenant: str, *, kind: str | None = None, name: str | None = None,
                       include_retired: bool = False, project: str | None = None, org: str | None = None) -> list[str]:
    by_id: dict[str, list[dict[str, Any]]] = {}
    for item in collection("testSets"):
        if item["tenantId"] == tenant:
            by_id.setdefault(item["id"], []).append(item)
    shown = []
    for test_set_id, versions in sorted(by_id.items()):
        active = [v for v in versions if "unregisteredAt" not in v]
        latest = max(active or versions, key=lambda v: semver(v["version"]))
        if not active and not include_retired:
            continue
        if (kind is None and latest["kind"] == "corrections") or (kind and latest["kind"] != kind):
            continue
        if name and not test_set_id.startswith(name):
            continue
        if project and latest.get("projectId") != project or org and latest["organizationId"] != org:
            continue
        shown.append(f"{test_set_id}@{latest['version']}")
    return shown


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [f"{i['id']}@{i['version']}" for i in items]


# -- GET /v1/test-sets -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("limit", LIMITS)
def test_test_sets_walk_in_id_order_latest_version_each(kindgi, limit):
    items = walk(kindgi, "/v1/test-sets", {}, limit)
    assert ids(items) == expected_test_sets(TENANT_A)
    assert len(items) >= 100
    assert [i["id"] for i in items] == sorted(i["id"] for i in items)
    assert all(i["tenantId"] == TENANT_A and "organizationId" not in i for i in items)


def test_test_sets_semver_and_preferring_active_versions(kindgi):
    shown = {i["id"]: i for i in walk(kindgi, "/v1/test-sets", {}, 100)}
    assert shown["acme.drafting-accuracy"]["version"] == "1.2.0"
    assert shown["acme.support.triage"]["version"] == "1.10.0"  # not 1.9.0: versions compare as semver
    assert shown["acme.drafting.nda-generation"]["version"] == "1.1.0"  # 2.0.0 is unregistered
    assert all("unregisteredAt" not in i for i in shown.values())


@pytest.mark.parametrize("params, oracle", [
    ({"kind": "accuracy"}, {"kind": "accuracy"}),
    ({"kind": "corrections"}, {"kind": "corrections"}),
    ({"name": "acme.drafting"}, {"name": "acme.drafting"}),
    ({"name": "globex.", "kind": "regression"}, {"name": "globex.", "kind": "regression"}),
    ({"includeRetired": "true"}, {"include_retired": True}),
    ({"scopeKind": "project", "scopeId": SAMPLE_PROJECT}, {"project": SAMPLE_PROJECT}),
    ({"scopeKind": "project", "scopeId": SAMPLE_PROJECT.upper()}, {"project": SAMPLE_PROJECT}),
    ({"scopeKind": "org", "scopeId": "96ba35b3-79fc-56b2-962c-8c326cd2d4ab"},
     {"org": "96ba35b3-79fc-56b2-962c-8c326cd2d4ab"}),
    ({"scopeKind": "tenant"}, {}),
    ({"scopeKind": "tenant", "inherit": "false"}, {}),
])
@pytest.mark.parametrize("limit", (3, 25))
def test_test_set_filters(kindgi, params, oracle, limit):
    expected = expected_test_sets(TENANT_A, **oracle)
    assert expected, "the dataset should make every filter interesting"
    assert ids(walk(kindgi, "/v1/test-sets", params, limit)) == expected


def test_corrections_only_when_asked_and_retired_as_highest_version(kindgi):
    default = walk(kindgi, "/v1/test-sets", {}, 100)
    assert all(i["kind"] != "corrections" for i in default)
    retired = [i for i in walk(kindgi, "/v1/test-sets", {"includeRetired": "true"}, 100) if "unregisteredAt" in i]
    assert len(retired) >= 5
    for item in retired:
        versions = [v for v in collection("testSets") if v["id"] == item["id"] and v["tenantId"] == TENANT_A]
        assert item["version"] == max((v["version"] for v in versions), key=semver)


@pytest.mark.parametrize("query", ["scopeId=x", "scopeKind=tenant&scopeId=x", "scopeKind=org",
                                   "scopeKind=project", "scopeId=x&inherit=true"])
def test_malformed_scope_is_scope_invalid(kindgi, query):
    response = kindgi.get(f"/v1/test-sets?{query}", headers=DEMO)
    assert response.status_code == 400
    assert body(response)["error"]["code"] == "scope-invalid"


@pytest.mark.parametrize("query, parameter", [
    ("kind=unknown", "kind"), ("limit=0", "limit"), ("limit=101", "limit"), ("scopeKind=galaxy", "scopeKind"),
    ("includeRetired=maybe", "includeRetired"), ("inherit=2", "inherit")])
def test_bad_test_set_parameters_are_bad_input(kindgi, query, parameter):
    response = kindgi.get(f"/v1/test-sets?{query}", headers=DEMO)
    assert response.status_code == 400
    error = body(response)["error"]
    assert error["code"] == "bad-input" and error["details"]["violations"][0]["parameter"] == parameter


def test_tenants_see_only_their_own(kindgi):
    theirs = walk(kindgi, "/v1/test-sets", {"includeRetired": "true", "kind": "accuracy"}, 25, headers=OTHER)
    assert ids(theirs) == expected_test_sets(TENANT_B, kind="accuracy", include_retired=True)
    assert "acme.drafting-accuracy@0.3.0" in ids(theirs)  # the same id as tenant A's, its own version
    assert all(i["tenantId"] == TENANT_B for i in theirs)


# -- GET /v1/agents/{agentId}/test-set/cases ---------------------------------------------------------------------
def expected_agent_cases(agent: str, project: str, *, retired: bool = False, kinds: set[str] | None = None,
                         tenant: str = TENANT_A) -> list[str]:
    cases = [c for c in collection("agentCases") if c["tenantId"] == tenant and c["agentId"] == agent
             and c["projectId"] == project and (retired or "retired" not in c) and (not kinds or c["kind"] in kinds)]
    cases.sort(key=lambda c: c["id"])
    cases.sort(key=lambda c: c["addedAt"], reverse=True)
    return [c["id"] for c in cases]


AGENT_CASES = "/v1/agents/acme.drafting/test-set/cases"


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("params, oracle", [
    ({}, {}),
    ({"include": "retired"}, {"retired": True}),
    ({"kind": "hand"}, {"kinds": {"hand"}}),
    ({"kind": "correction", "include": "retired"}, {"kinds": {"correction"}, "retired": True}),
    ({"kind": "correction,hand"}, {}),
])
def test_agent_cases_newest_added_first(kindgi, limit, params, oracle):
    items = walk(kindgi, AGENT_CASES, {"projectId": SAMPLE_PROJECT, **params}, limit)
    assert [c["id"] for c in items] == expected_agent_cases("acme.drafting", SAMPLE_PROJECT, **oracle)
    assert all(c["projectId"] == SAMPLE_PROJECT for c in items)


def test_agent_cases_dataset_is_big_and_varied(kindgi):
    items = walk(kindgi, AGENT_CASES, {"projectId": SAMPLE_PROJECT, "include": "retired"}, 100)
    assert len(items) >= 60
    assert {c["kind"] for c in items} == {"correction", "hand"}
    assert any("retired" in c for c in items) and any(c.get("expert") for c in items)
    assert all(c["id"].startswith("case-") for c in items if c["kind"] == "hand")


def test_project_id_in_any_letter_case(kindgi):
    lower = walk(kindgi, AGENT_CASES, {"projectId": SAMPLE_PROJECT}, 25)
    upper = walk(kindgi, AGENT_CASES, {"projectId": SAMPLE_PROJECT.upper()}, 25)
    assert lower == upper and lower


@pytest.mark.parametrize("query, parameter", [
    ("", "projectId"), ("projectId=42", "projectId"), (f"projectId={SAMPLE_PROJECT}&include=all", "include"),
    (f"projectId={SAMPLE_PROJECT}&kind=robot", "kind"), (f"projectId={SAMPLE_PROJECT}&kind=hand,", "kind"),
])
def test_bad_agent_case_parameters(kindgi, query, parameter):
    response = kindgi.get(f"{AGENT_CASES}?{query}", headers=DEMO)
    assert response.status_code == 400
    error = body(response)["error"]
    assert error["code"] == "bad-input" and error["details"]["violations"][0]["parameter"] == parameter


def test_unknown_or_foreign_agent_is_agent_not_found(kindgi):
    for agent, headers in (("acme.nobody", DEMO), ("globex.assistant", DEMO), ("acme.drafting", OTHER)):
        response = kindgi.get(f"/v1/agents/{agent}/test-set/cases?projectId={SAMPLE_PROJECT}", headers=headers)
        assert response.status_code == 404
        assert body(response)["error"]["code"] == "agent-not-found"


# -- GET /v1/test-sets/{testSetId}/versions/{version}/cases and the eval-suite one -------------------------------
def stored(collection_name: str, key: str, set_id: str, version: str, tenant: str = TENANT_A) -> list[str]:
    return [c["caseId"] for c in collection(collection_name)
            if c["tenantId"] == tenant and c[key] == set_id and c["version"] == version]


@pytest.mark.parametrize("limit", LIMITS)
def test_corrections_cases_newest_stored_first(kindgi, limit):
    items = walk(kindgi, "/v1/test-sets/acme.drafting.corrections/versions/1.1.0/cases", {}, limit)
    assert [c["caseId"] for c in items] == stored("testSetCases", "testSetId", "acme.drafting.corrections", "1.1.0")
    assert len(items) >= 60
    assert {c["subject"]["kind"] for c in items} == {"agent", "flow"}
    erased = [c for c in items if c.get("erased")]
    assert erased and all(c["input"] is None and c["output"] is None and c["items"] == [] for c in erased)


@pytest.mark.parametrize("limit", LIMITS)
def test_eval_suite_cases_newest_judged_first(kindgi, limit):
    items = walk(kindgi, "/v1/eval-suites/acme.drafting-accuracy/versions/1.2.0/cases", {}, limit)
    assert [c["caseId"] for c in items] == stored("evalSuiteCases", "suiteId", "acme.drafting-accuracy", "1.2.0")
    assert len(items) >= 30


@pytest.mark.parametrize("path, code", [
    ("/v1/test-sets/acme.nothing/versions/1.0.0/cases", "test-set-not-found"),
    ("/v1/test-sets/acme.drafting-accuracy/versions/1.2.0/cases", "test-set-not-found"),  # not `corrections`
    ("/v1/test-sets/acme.drafting.corrections/versions/9.9.9/cases", "test-set-not-found"),
    ("/v1/eval-suites/acme.nothing/versions/1.0.0/cases", "eval-suite-not-found"),
    ("/v1/eval-suites/acme.drafting-accuracy/versions/0.3.0/cases", "eval-suite-not-found"),  # tenant B's version
])
def test_unknown_sets_and_versions_are_404_with_their_code(kindgi, path, code):
    response = kindgi.get(path, headers=DEMO)
    assert response.status_code == 404
    assert body(response)["error"]["code"] == code


def test_another_tenants_set_is_answered_as_missing(kindgi):
    mine = kindgi.get("/v1/test-sets/globex.assistant.corrections/versions/1.0.0/cases", headers=OTHER)
    assert mine.status_code == 200 and body(mine)["data"]
    theirs = kindgi.get("/v1/test-sets/globex.assistant.corrections/versions/1.0.0/cases", headers=DEMO)
    missing = kindgi.get("/v1/test-sets/globex.never-was/versions/1.0.0/cases", headers=DEMO)
    assert theirs.status_code == missing.status_code == 404
    strip = lambda r: re.sub(r"req_[0-9a-f]+|globex\.[a-z.-]+", "X", r.data.decode())  # noqa: E731
    assert strip(theirs) == strip(missing)


@pytest.mark.parametrize("path", ["/v1/test-sets/acme.drafting.corrections/versions/1.1/cases",
                                  "/v1/eval-suites/acme.drafting-accuracy/versions/v1.2.0/cases"])
def test_a_malformed_version_is_400(kindgi, path):
    response = kindgi.get(path, headers=DEMO)
    assert response.status_code == 400
    violation = body(response)["error"]["details"]["violations"][0]
    assert (violation["parameter"], violation["in"], violation["rule"]) == ("version", "path", "pattern")


# -- cursors -----------------------------------------------------------------------------------------------------
def first_cursor(client, url: str, headers=DEMO) -> str:
    page = body(client.get(url, headers=headers))
    assert page["hasMore"]
    return page["nextCursor"]


def cursor_reason(response) -> str:
    assert response.status_code == 400, response.data
    error = body(response)["error"]
    assert error["code"] == "bad-input"
    return error["details"]["reason"]


def test_limit_may_change_between_pages(kindgi):
    cursor = first_cursor(kindgi, "/v1/test-sets?limit=5")
    rest = body(kindgi.get(f"/v1/test-sets?limit=100&cursor={cursor}", headers=DEMO))["data"]
    assert ids(rest)[:95] == expected_test_sets(TENANT_A)[5:100]


def test_tampered_cursor(kindgi):
    cursor = first_cursor(kindgi, "/v1/test-sets?limit=5")
    tampered = cursor[:10] + ("A" if cursor[10] != "A" else "B") + cursor[11:]
    assert cursor_reason(kindgi.get(f"/v1/test-sets?cursor={tampered}", headers=DEMO)) == "tampered"
    assert cursor_reason(kindgi.get("/v1/test-sets?cursor=not-a-cursor", headers=DEMO)) == "tampered"


def test_foreign_cursors(kindgi):
    cursor = first_cursor(kindgi, "/v1/test-sets?limit=5&kind=accuracy")
    assert cursor_reason(kindgi.get(f"/v1/test-sets?kind=custom&cursor={cursor}", headers=DEMO)) == "foreign"
    assert cursor_reason(kindgi.get(f"/v1/test-sets?cursor={cursor}", headers=DEMO)) == "foreign"
    assert cursor_reason(kindgi.get(f"/v1/test-sets?kind=accuracy&cursor={cursor}", headers=OTHER)) == "foreign"
    other_list = f"{AGENT_CASES}?projectId={SAMPLE_PROJECT}&cursor={cursor}"
    assert cursor_reason(kindgi.get(other_list, headers=DEMO)) == "foreign"
    version_cursor = first_cursor(kindgi, "/v1/test-sets/acme.drafting.corrections/versions/1.1.0/cases?limit=2")
    wrong_version = "/v1/test-sets/acme.drafting.corrections/versions/1.0.0/cases?cursor=" + version_cursor
    assert cursor_reason(kindgi.get(wrong_version, headers=DEMO)) == "foreign"


def _error_examples(node: Any, pointer: str = "") -> dict[str, Any]:
    """Every example of an error envelope in the description, by the JSON pointer of its value."""
    found: dict[str, Any] = {}
    if isinstance(node, dict):
        for key, sub in node.items():
            here = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
            if key == "example" and isinstance(sub, dict) and "error" in sub:
                found[here] = sub
            elif key == "examples" and isinstance(sub, dict):
                found.update({f"{here}/{name}/value": ex["value"] for name, ex in sub.items()
                              if isinstance(ex, dict) and isinstance(ex.get("value"), dict) and "error" in ex["value"]})
            else:
                found.update(_error_examples(sub, here))
    return found


def _shape(value: Any) -> Any:
    """Keys and kinds, not values: what client code written against the example relies on."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


ERROR_CASES = {  # each error example of the description, and a request that makes the mock answer that case
    "/paths/~1v1~1test-sets/get/responses/400/content/application~1json/examples/badInput/value":
        ("/v1/test-sets?kind=precision", DEMO),
    "/paths/~1v1~1test-sets/get/responses/400/content/application~1json/examples/scopeInvalid/value":
        (f"/v1/test-sets?scopeKind=tenant&scopeId={SAMPLE_PROJECT}", DEMO),
    "/paths/~1v1~1agents~1{agentId}~1test-set~1cases/get/responses/400/content/application~1json/example":
        ("/v1/agents/acme.drafting/test-set/cases?projectId=acme-prod", DEMO),
    "/paths/~1v1~1agents~1{agentId}~1test-set~1cases/get/responses/404/content/application~1json/example":
        (f"/v1/agents/acme.nobody/test-set/cases?projectId={SAMPLE_PROJECT}", DEMO),
    "/components/responses/BadVersionOrCursor/content/application~1json/examples/badVersion/value":
        ("/v1/test-sets/acme.drafting.corrections/versions/1.2/cases", DEMO),
    "/components/responses/BadVersionOrCursor/content/application~1json/examples/badCursor/value":
        ("/v1/test-sets/acme.drafting.corrections/versions/1.1.0/cases?cursor={foreign}", DEMO),
    "/components/responses/DatabaseBusy/content/application~1json/example":
        ("/v1/test-sets", {**DEMO, "Prefer": "code=503"}),
}


def test_every_error_example_has_the_shape_the_mock_serves(kindgi):
    """UI code written against the description's examples works against the mock: same keys, same kinds."""
    examples = _error_examples(yaml.safe_load(KINDGI_SPEC.read_text()))
    assert set(examples) == set(ERROR_CASES)
    foreign = body(kindgi.get("/v1/test-sets?limit=1", headers=DEMO))["nextCursor"]
    for pointer, (path, headers) in ERROR_CASES.items():
        answer = body(kindgi.get(path.format(foreign=foreign), headers=headers))
        example = examples[pointer]
        assert answer["error"]["code"] == example["error"]["code"], pointer
        assert _shape(answer) == _shape(example), (pointer, answer)


def test_the_descriptions_parameter_examples_go_together(kindgi):
    """Swagger's "Try it out" fills in every parameter's example: sent together they must not break the
    description's own rules (a `scopeId` example without a `scopeKind` one was a 400 scope-invalid)."""
    spec = yaml.safe_load(KINDGI_SPEC.read_text())
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            examples = {p["name"]: p["example"] for p in operation.get("parameters", []) if "example" in p}
            url = path.format(**{name: examples.pop(name) for name in re.findall(r"\{(\w+)\}", path)})
            answer = kindgi.open(url + "?" + urlencode(examples), method=method.upper(), headers=DEMO)
            assert answer.status_code != 400, (operation["operationId"], body(answer))
