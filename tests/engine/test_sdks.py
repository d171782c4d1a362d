"""Issue 31's measure, its own parts: `bench/sdks.py` (real SDKs against the mock) downloads SDKs and descriptions,
so it is not in `make test`; what is here is what it makes of an SDK's outcomes (the table, the defect classes)
and how its fetch fails without a network."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from conftest import ROOT, free_port
from mockserver import create_app

sys.path.insert(0, str(ROOT / "bench"))  # the drivers import `sdk_driver` as a top-level module, as they run
_spec = importlib.util.spec_from_file_location("bench_sdks", ROOT / "bench" / "sdks.py")
assert _spec is not None and _spec.loader is not None
sdks = sys.modules["bench_sdks"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sdks)
from sdk_driver import Driver  # noqa: E402  (found on the path set above)


class ApiError(Exception):
    """An SDK's error, as the drivers meet them."""


def fail(message: str) -> None:
    raise ApiError(message)


def test_the_table_counts_calls_read_backs_and_the_example_and_classes_each_failure(capsys):
    run = Driver("kindgi")
    print("KindgiConfigWarning: a line of the SDK's own")  # not a record
    run.call("projects.create", lambda body: {"id": "p1"}, {"name": "P"})
    run.readback("projects.get", {"name": "P", "slug": "p"}, lambda ident: {"id": ident, "name": "P", "slug": "q"},
                 "p1")
    run.listed("projects.list", "p1", lambda: {"data": [{"id": "p2"}], "hasMore": False})
    run.readback("runs.get", {"flowId": "f"}, fail, "HTTP 404 no such run")
    run.call("teams.create", fail, "HTTP 500 (answer: mock-contract-violation: 'isDefault' is a required property)")
    run.listed("teams.list", "t1", lambda: [], after="teams.create")
    run.example("getting started", lambda: fail("InvalidVersion: 'build'"))
    printed = capsys.readouterr().out
    outcomes = [sdks.Outcome("kindgi", "mock --stateful", sdks.parse_records(printed)),
                sdks.Outcome("prefect", "real server", error="prefect server start did not start: port in use")]

    lines = sdks.table(outcomes).splitlines()

    assert lines[2] == "| kindgi | mock --stateful | 4/6 (66 %) | 0/4 (0 %) | no |"
    assert lines[3] == "| prefect | real server | not run: prefect server start did not start: port in use | - | - |"
    assert ("kindgi against mock --stateful: 7 failure(s) (1 stored items 1, 2 collections 4, 4 generated values 1, "
            "after a failed write 1)" in lines)
    failures = [line.strip() for line in lines[6:]]
    assert failures == [
        "readback projects.get: [2 collections] slug: wrote 'p', read 'q'",
        "readback projects.list: [2 collections] id 'p1' not among 1 listed: ['p2']",
        "call     runs.get: [2 collections] ApiError: HTTP 404 no such run",
        "readback runs.get: [2 collections] the read failed: ApiError: HTTP 404 no such run",
        "call     teams.create: [1 stored items] ApiError: HTTP 500 (answer: mock-contract-violation: "
        "'isDefault' is a required property)",
        "readback teams.list: [after a failed write] after a failed write (teams.create): id 't1' not among 0 listed: "
        "[]",
        "example  getting started: [4 generated values] ApiError: InvalidVersion: 'build'",
    ]


def test_the_official_description_s_fetch_says_what_failed_and_where_without_a_network(tmp_path):
    index = f"http://127.0.0.1:{free_port()}/simple"  # nothing listens there
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "sdks.py"), "--fetch-only"], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PIP_INDEX_URL": index})
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"sdks: could not download kindgi-cli with pip from {index} (no network, or "
                                  "not there): ")
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "mockserver" / "kindgi").exists()


def test_prefects_mock_answers_the_version_its_real_server_reported_not_the_descriptions_own(tmp_path):
    spec = tmp_path / "openapi.json"  # Prefect's shape: FastAPI's default info.version, a plain-string version
    spec.write_text(json.dumps({
        "openapi": "3.1.0", "info": {"title": "Prefect REST API", "version": "0.1.0"}, "servers": [{"url": "/api"}],
        "paths": {"/admin/version": {"get": {"operationId": "read_version_admin_version_get", "responses": {
            "200": {"description": "ok", "content": {"application/json": {"schema": {"type": "string"}}}}}}}}}))
    fixtures = sdks.version_fixture(tmp_path / "fixtures", "3.9.1")
    answer = create_app(spec, fixtures, stateful=True).test_client().get("/api/admin/version")
    assert answer.status_code == 200 and answer.get_json() == "3.9.1"
