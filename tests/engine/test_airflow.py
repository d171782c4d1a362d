"""Issue 17's measure, in small: Apache Airflow's description (FastAPI's) served with no fixtures answers as a
client of the real API expects. The description is never in the checkout: `bench/airflow.py --fetch-only` puts
it in the cache (or set MOCKSERVER_AIRFLOW_SPEC to a copy); without it these tests skip. The whole contract run on
it is `bench/airflow.py`."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from conftest import ROOT, body
from mockserver import create_app

_spec = importlib.util.spec_from_file_location("bench_airflow", ROOT / "bench" / "airflow.py")
assert _spec is not None and _spec.loader is not None
airflow = sys.modules["bench_airflow"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(airflow)

SPEC = Path(os.environ["MOCKSERVER_AIRFLOW_SPEC"]) if os.environ.get("MOCKSERVER_AIRFLOW_SPEC") else airflow.cached()
AUTH = {"Authorization": "Bearer t"}
pytestmark = pytest.mark.skipif(
    SPEC is None or not SPEC.is_file(),
    reason="Airflow's description is not here: run `.venv/bin/python bench/airflow.py --fetch-only` (pip downloads "
           "apache-airflow-core) or set MOCKSERVER_AIRFLOW_SPEC to v2-rest-api-generated.yaml")


@pytest.fixture(scope="module")
def client():
    return create_app(SPEC).test_client()


def test_airflow_answers_agree_with_the_request(client):
    assert body(client.get("/api/v2/dags/tutorial", headers=AUTH))["dag_id"] == "tutorial"
    pages = [body(client.get(f"/api/v2/dags?limit=5&offset={offset}", headers=AUTH)) for offset in (0, 5)]
    assert [len(page["dags"]) for page in pages] == [5, 5]
    assert pages[0]["total_entries"] == pages[1]["total_entries"] >= 10
    pool = body(client.post("/api/v2/pools", json={"name": "p1", "slots": 4}, headers=AUTH))
    assert (pool["name"], pool["slots"]) == ("p1", 4)


def test_airflow_refusals_are_the_ones_it_declares(client):
    wrong_method = client.get("/api/v2/backfills/dry_run", headers=AUTH)  # POST only; {backfill_id} is an integer
    assert wrong_method.status_code == 405 and wrong_method.headers["Allow"] == "POST"
    accept = client.get("/api/v2/config", headers={**AUTH, "Accept": "text/html"})  # its `accept` enum
    assert accept.status_code == 422 and body(accept)["detail"][0]["loc"] == ["header", "accept"]  # as FastAPI says
    empty = client.delete("/api/v2/dags/x/dagRuns//taskInstances/t/state-store", headers=AUTH)  # a route there
    assert empty.status_code == 422 and body(empty)["detail"][0]["loc"] == ["path", "dag_run_id"]  # missing, not 404
    nowhere = client.delete("/api/v2/dags/x/nowhere", headers=AUTH)
    assert nowhere.status_code == 404 and nowhere.content_type == "application/json"
    assert "no operation" in body(nowhere)["detail"]
