"""`/__mock/metrics` (`--metrics`): Prometheus' text format, read with prometheus_client's own parser, with counts
that match the calls made, across two Granian workers too."""
from __future__ import annotations

import concurrent.futures
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, RedisServer, serving
from mockserver import create_app
from mockserver.web.app import create_apps

TITLE = "Kindgi API"
PETS = KINDGI_SPEC.parents[1] / "tests" / "data" / "pets"


def samples(text: str) -> dict[str, list[Any]]:
    """Each sample family's samples by name (`mockserver_requests_total`, `…_bucket`, …)."""
    found: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append(sample)
    return found


def total(found: dict[str, list[Any]], name: str, **labels: str) -> float:
    return sum(s.value for s in found.get(name, []) if labels.items() <= s.labels.items())


@pytest.fixture()
def counted() -> Iterator[FlaskClient]:
    yield create_app(KINDGI_SPEC, KINDGI_FIXTURES, metrics=True).test_client()


def test_requests_are_counted_by_operation_status_and_source(counted: FlaskClient) -> None:
    for _ in range(3):
        assert counted.get("/v1/test-sets?limit=2", headers=DEMO).status_code == 200
    assert counted.get("/v1/test-sets", headers={}).status_code == 401
    assert counted.post("/__mock/scenarios", json={"operationId": "listTestSets", "status": 503}).status_code == 201
    assert counted.get("/v1/test-sets", headers=DEMO).status_code == 503
    assert counted.get("/nowhere").status_code == 404
    answer = counted.get("/__mock/metrics")
    assert answer.status_code == 200 and answer.content_type.startswith("text/plain; version=0.0.4")
    found = samples(answer.get_data(as_text=True))
    ops = dict(api=TITLE, operation="listTestSets")
    assert total(found, "mockserver_requests_total", **ops, status="200", source="fixture") == 3
    assert total(found, "mockserver_requests_total", **ops, status="401") == 1
    assert total(found, "mockserver_requests_total", **ops, status="503", source="scenario") == 1
    assert total(found, "mockserver_requests_total", api=TITLE, operation="(none)", status="404") == 1
    assert total(found, "mockserver_request_duration_seconds_count", **ops) == 5
    assert total(found, "mockserver_request_duration_seconds_bucket", **ops, le="+Inf") == 5
    assert total(found, "mockserver_state_available", api=TITLE, backend="memory") == 1
    assert total(found, "mockserver_sessions", api=TITLE) == 0


def test_sessions_and_stored_items_are_read_from_the_state_at_scrape_time() -> None:
    pets = create_app(PETS / "openapi.yaml", PETS / "fixtures", metrics=True).test_client()
    assert pets.post("/pets", json={"name": "Rex"}).status_code == 201
    assert pets.post("/__mock/sessions", json={}).status_code == 201
    found = samples(pets.get("/__mock/metrics").get_data(as_text=True))
    assert total(found, "mockserver_stored_items", collection="pets") == 4  # three from the fixtures, one written
    assert total(found, "mockserver_sessions") == 1
    assert total(found, "mockserver_requests_total", operation="addPet", status="201") == 1


def test_metrics_are_off_unless_asked_for() -> None:
    answer = create_app(KINDGI_SPEC, KINDGI_FIXTURES).test_client().get("/__mock/metrics")
    assert answer.status_code == 404 and "start the mock with --metrics" in answer.get_data(as_text=True)


@pytest.mark.slow
def test_two_workers_add_up_and_a_scrape_needs_the_control_token(own_redis: RedisServer) -> None:
    with serving("--spec", str(KINDGI_SPEC), "--fixtures", str(KINDGI_FIXTURES), "--workers", "2", "--metrics",
                 "--state", own_redis.url(), "--control-token", "t0k") as (_, port):
        def call(_: int) -> int:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/test-sets?limit=1", headers=DEMO)
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status
        with concurrent.futures.ThreadPoolExecutor(8) as pool:  # new connections: both workers take some
            assert set(pool.map(call, range(200))) == {200}
        scrape = urllib.request.Request(f"http://127.0.0.1:{port}/__mock/metrics")
        with pytest.raises(urllib.error.HTTPError, match="401"):
            urllib.request.urlopen(scrape, timeout=10)
        scrape.add_header("Authorization", "Bearer t0k")
        for _ in range(4):  # whichever worker answers the scrape, it adds up both
            with urllib.request.urlopen(scrape, timeout=10) as answer:
                found = samples(answer.read().decode())
            assert total(found, "mockserver_requests_total", operation="listTestSets", status="200") == 200
            assert total(found, "mockserver_state_available", backend="redis") == 1
        pids = {s.labels.get("pid") for s in found.get("mockserver_requests_total", [])}
        assert pids == {None}  # summed over workers, not one series per worker


def test_a_mock_of_several_apis_counts_each_under_its_name() -> None:
    from mockserver.web.mounts import Api

    app = create_apps([Api("kindgi", KINDGI_SPEC, KINDGI_FIXTURES, "/kindgi"),
                       Api("pets", PETS / "openapi.yaml", PETS / "fixtures")], metrics=True).test_client()
    assert app.get("/kindgi/v1/test-sets", headers=DEMO).status_code == 200
    assert app.post("/pets", json={"name": "Rex"}).status_code == 201
    found = samples(app.get("/__mock/metrics?api=pets").get_data(as_text=True))
    assert total(found, "mockserver_requests_total", api="kindgi", operation="listTestSets", status="200") == 1
    assert total(found, "mockserver_requests_total", api="pets", operation="addPet", status="201") == 1
    assert total(found, "mockserver_stored_items", api="pets", collection="pets") == 4
    assert total(found, "mockserver_state_available", api="kindgi") == 1


def test_round_trips_to_redis_are_timed_and_those_that_fail_counted(own_redis: RedisServer) -> None:
    import os
    import signal

    app = create_app(KINDGI_SPEC, KINDGI_FIXTURES, metrics=True, state=own_redis.url(), state_timeout=0.5)
    client = app.test_client()
    scenario = {"operationId": "listTestSets", "status": 503, "times": 5}
    assert client.post("/__mock/scenarios", json=scenario).status_code == 201
    assert client.get("/v1/test-sets", headers=DEMO).status_code == 503  # the scenario's count: a round trip
    found = samples(client.get("/__mock/metrics").get_data(as_text=True))
    assert total(found, "mockserver_state_round_trip_seconds_count", api=TITLE, backend="redis") >= 1
    assert total(found, "mockserver_state_errors_total", api=TITLE, backend="redis") == 0
    assert own_redis.pid is not None
    os.kill(own_redis.pid, signal.SIGSTOP)  # frozen: the next round trip waits out --state-timeout and fails
    try:
        failed = client.get("/v1/test-sets", headers=DEMO)
        assert failed.status_code == 503 and b"state" in failed.data.lower()
        found = samples(client.get("/__mock/metrics").get_data(as_text=True))
    finally:
        os.kill(own_redis.pid, signal.SIGCONT)
    assert total(found, "mockserver_state_errors_total", api=TITLE, backend="redis") == 1
    assert total(found, "mockserver_state_available", api=TITLE, backend="redis") == 0
