"""Prefect's own Python client (`prefect.get_client`) against a Prefect API at a URL: its real server, or the mock of
the description that server publishes. Run by `bench/sdks.py` with the Python of a venv that has `prefect`
installed (never the project's): `python bench/sdk_prefect.py URL` prints one JSON record per call, read-back and
example."""
from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from typing import Any

from sdk_driver import Driver

FLOW = "bench-flow"
POOL = {"name": "bench-pool", "type": "process", "description": "made by bench/sdks.py"}
VARIABLE = {"name": "bench_var", "value": "42"}
LIMIT = {"name": "bench-gcl", "limit": 5}
ARTIFACT = {"key": "bench-artifact", "type": "markdown", "data": "# made by bench/sdks.py"}
BLOCK_TYPE = {"name": "Bench Block", "slug": "bench-block"}


def getting_started() -> bool:
    """Prefect's quickstart: a flow that says hello, run once; it ends COMPLETED."""
    from prefect import flow

    @flow(log_prints=True)
    def hello_world(name: str = "world") -> None:
        print(f"Hello {name}!")

    return bool(hello_world(return_state=True).is_completed())


def healthy(client: Any) -> None:
    """`api_healthcheck` returns its failure rather than raising it."""
    failure = client.api_healthcheck()
    if failure is not None:
        raise failure


def main(url: str) -> None:
    """The resources of Prefect's quickstart and its deployment guide, each created, read and listed."""
    os.environ["PREFECT_API_URL"] = url
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import (
        ArtifactCreate,
        BlockTypeCreate,
        GlobalConcurrencyLimitCreate,
        LogCreate,
        VariableCreate,
        WorkPoolCreate,
    )
    from prefect.states import Running

    run = Driver("prefect")
    with get_client(sync_client=True, httpx_settings={"event_hooks": {"response": [run.hook]}}) as client:
        run.call("hello", client.hello)
        run.call("api_healthcheck", healthy, client)
        flow_id = run.call("create_flow_from_name", client.create_flow_from_name, FLOW)
        run.readback("read_flow", {"name": FLOW}, client.read_flow, flow_id, after="create_flow_from_name")
        run.readback("read_flow_by_name", {"name": FLOW}, client.read_flow_by_name, FLOW, after="create_flow_from_name")
        run.listed("read_flows", flow_id, client.read_flows, after="create_flow_from_name")

        @flow(name=FLOW)
        def bench_flow() -> None:
            """A flow object for `create_flow_run`: never called."""

        flow_run = run.call("create_flow_run", client.create_flow_run, bench_flow, name="bench-run",
                            tags=["bench"])
        run_id = flow_run.id if flow_run else None
        run.readback("read_flow_run", {"name": "bench-run", "tags": ["bench"]}, client.read_flow_run, run_id,
                     after="create_flow_run")
        run.listed("read_flow_runs", run_id, client.read_flow_runs, after="create_flow_run")
        run.call("set_flow_run_state", client.set_flow_run_state, run_id, Running(), after="create_flow_run")
        run.readback("read_flow_run after set_flow_run_state", {"state_type": "RUNNING"}, client.read_flow_run,
                     run_id, after="create_flow_run")
        run.call("read_flow_run_states", client.read_flow_run_states, run_id, after="create_flow_run")

        run.call("create_work_pool", client.create_work_pool, WorkPoolCreate(**POOL))
        run.readback("read_work_pool", POOL, client.read_work_pool, POOL["name"], after="create_work_pool")
        run.listed("read_work_pools", POOL["name"], client.read_work_pools, key="name", after="create_work_pool")
        queue = run.call("create_work_queue", client.create_work_queue, "bench-queue",
                         work_pool_name=POOL["name"])
        run.readback("read_work_queue", {"name": "bench-queue"}, client.read_work_queue,
                     queue.id if queue else None, after="create_work_queue")
        deployment_id = run.call("create_deployment", client.create_deployment, flow_id, "bench-deployment",
                                 work_pool_name=POOL["name"], tags=["bench"])
        run.readback("read_deployment", {"name": "bench-deployment", "tags": ["bench"]}, client.read_deployment,
                     deployment_id, after="create_deployment")
        run.listed("read_deployments", deployment_id, client.read_deployments, after="create_deployment")

        run.call("create_variable", client.create_variable, VariableCreate(**VARIABLE))
        run.readback("read_variable_by_name", VARIABLE, client.read_variable_by_name, VARIABLE["name"],
                     after="create_variable")
        run.listed("read_variables", VARIABLE["name"], client.read_variables, key="name", after="create_variable")
        run.call("create_concurrency_limit", client.create_concurrency_limit, "bench-tag", 3)
        run.readback("read_concurrency_limit_by_tag", {"tag": "bench-tag", "concurrency_limit": 3},
                     client.read_concurrency_limit_by_tag, "bench-tag", after="create_concurrency_limit")
        run.call("create_global_concurrency_limit", client.create_global_concurrency_limit,
                 GlobalConcurrencyLimitCreate(**LIMIT))
        run.readback("read_global_concurrency_limit_by_name", LIMIT, client.read_global_concurrency_limit_by_name,
                     LIMIT["name"], after="create_global_concurrency_limit")
        run.call("create_artifact", client.create_artifact, ArtifactCreate(**ARTIFACT))
        run.listed("read_artifacts", ARTIFACT["key"], client.read_artifacts, key="key", after="create_artifact")
        run.call("create_block_type", client.create_block_type, BlockTypeCreate(**BLOCK_TYPE))
        run.readback("read_block_type_by_slug", BLOCK_TYPE, client.read_block_type_by_slug, BLOCK_TYPE["slug"],
                     after="create_block_type")
        log = LogCreate(name="bench", level=20, message="made by bench/sdks.py", timestamp=datetime.now(UTC),
                        flow_run_id=run_id)
        run.call("create_logs", client.create_logs, [log])
        run.listed("read_logs", "made by bench/sdks.py", client.read_logs, key="message", after="create_logs")
        run.call("delete_variable_by_name", client.delete_variable_by_name, VARIABLE["name"], after="create_variable")
        run.call("delete_flow_run", client.delete_flow_run, run_id, after="create_flow_run")
    run.example("Prefect's quickstart: hello_world() ends COMPLETED", getting_started)


if __name__ == "__main__":
    main(sys.argv[1])
