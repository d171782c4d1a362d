"""A tenant never sees another's data, through any list, filter, cursor or 404; secrets never leak."""
import logging
import re

import pytest

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, OTHER, SAMPLE_PROJECT, body
from mockserver import create_app

TENANT_B_PROJECT = "a267c875-5b5f-5ec6-bc01-0159b6c9d2e6"
# for every operation: a resource of tenant A, the same for tenant B, and one that exists nowhere
CASES = {
    "listTestSets": ("/v1/test-sets?limit=100&includeRetired=true", None, None),
    "listTestSetVersionCases": ("/v1/test-sets/acme.drafting.corrections/versions/1.1.0/cases",
                                "/v1/test-sets/globex.assistant.corrections/versions/1.0.0/cases",
                                "/v1/test-sets/nobody.corrections/versions/1.0.0/cases"),
    "listAgentTestSetCases": (f"/v1/agents/acme.drafting/test-set/cases?projectId={SAMPLE_PROJECT}",
                              f"/v1/agents/globex.assistant/test-set/cases?projectId={TENANT_B_PROJECT}",
                              f"/v1/agents/nobody.agent/test-set/cases?projectId={SAMPLE_PROJECT}"),
    "listEvalSuiteVersionCases": ("/v1/eval-suites/acme.drafting-accuracy/versions/1.2.0/cases",
                                  "/v1/eval-suites/acme.drafting-accuracy/versions/0.3.0/cases",
                                  "/v1/eval-suites/nobody.suite/versions/1.0.0/cases"),
}


def anonymised(response) -> str:
    """The answer with what differs between two missing ids taken out: request id and the ids themselves."""
    return re.sub(r"req_[0-9a-f]+|[a-z]+\.[a-z.-]+|\d+\.\d+\.\d+", "X", response.data.decode())


@pytest.mark.parametrize("operation", sorted(CASES))
def test_every_operation_keeps_tenants_apart(kindgi, operation):
    mine, theirs, nowhere = CASES[operation]
    a = kindgi.get(mine, headers=DEMO)
    assert a.status_code == 200 and body(a)["data"]
    if theirs is None:  # a list of the whole tenant: nothing of the other's in it, either way round
        b = kindgi.get(mine, headers=OTHER)
        ids_a = {i["tenantId"] for i in body(a)["data"]}
        ids_b = {i["tenantId"] for i in body(b)["data"]}
        assert len(ids_a) == len(ids_b) == 1 and ids_a != ids_b
        return
    assert kindgi.get(theirs, headers=OTHER).status_code == 200  # it exists, for its own tenant
    foreign = kindgi.get(theirs, headers=DEMO)
    missing = kindgi.get(nowhere, headers=DEMO)
    assert foreign.status_code == missing.status_code == 404
    assert anonymised(foreign) == anonymised(missing)
    assert kindgi.get(mine, headers=OTHER).status_code == 404


@pytest.mark.parametrize("operation", sorted(CASES))
def test_a_cursor_cannot_cross_tenants(kindgi, operation):
    mine = CASES[operation][0].replace("limit=100&", "")
    page = body(kindgi.get(mine + ("&" if "?" in mine else "?") + "limit=1", headers=DEMO))
    assert page["hasMore"]
    other = kindgi.get(mine + ("&" if "?" in mine else "?") + f"cursor={page['nextCursor']}", headers=OTHER)
    assert other.status_code in (400, 404)  # refused as foreign, or the resource is not theirs at all
    if other.status_code == 400:
        assert body(other)["error"]["details"]["reason"] == "foreign"


def test_filters_never_reach_another_tenant(kindgi):
    for query in ("name=globex.assistant", "kind=corrections", f"scopeKind=project&scopeId={TENANT_B_PROJECT}"):
        data = body(kindgi.get(f"/v1/test-sets?limit=100&includeRetired=true&{query}", headers=DEMO))["data"]
        assert all(i["tenantId"] == "6f1d2c3b-8a4e-4f5a-9b7c-1d2e3f4a5b6c" for i in data)
    assert body(kindgi.get(f"/v1/test-sets?scopeKind=project&scopeId={TENANT_B_PROJECT}", headers=DEMO))["data"] == []


def test_the_cursor_secret_never_appears(caplog, monkeypatch):
    secret = "sup3r-s3cret-cursor-key"
    app = create_app(KINDGI_SPEC, KINDGI_FIXTURES, cursor_secret=secret)
    client = app.test_client()
    with caplog.at_level(logging.DEBUG):
        page = client.get("/v1/test-sets?limit=2", headers=DEMO)
        client.get(f"/v1/test-sets?cursor={body(page)['nextCursor']}x", headers=DEMO)
        client.get("/v1/test-sets?limit=500", headers=DEMO)
        journal = client.get("/__mock/requests")
        scenarios = client.get("/__mock/scenarios")
    seen = b"".join(r.data for r in (page, journal, scenarios)).decode() + caplog.text
    assert secret not in seen
    assert "demo-token" not in journal.data.decode()  # Authorization is masked in the journal
