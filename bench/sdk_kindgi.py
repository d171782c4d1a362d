"""The official `kindgi` SDK's calls against a Kindgi API at a URL (the mock of the official description), as a
Kindgi developer writes them. Run by `bench/sdks.py` with the Python of a venv that has `kindgi` installed (never
the project's): `python bench/sdk_kindgi.py URL` prints one JSON record per call, read-back and example."""
from __future__ import annotations

import sys
from typing import Any

import httpx
from kindgi.client import Kindgi
from sdk_driver import Driver

PROJECT = {"name": "Bench project", "slug": "bench-project", "description": "made by bench/sdks.py"}
AGENT = {"id": "bench.drafting", "version": "1.0.0", "name": "Drafting", "instructions": "Draft a reply.",
         "capabilities": [], "tools": [], "retrieval": [], "guardrails": []}
TOOL = {"id": "bench.verify-citation", "version": "1.0.0", "description": "Verifies a citation.",
        "input": {"type": "object"}, "output": {"type": "object"}}
FLOW = {"id": "bench.ingest", "version": "1.0.0", "name": "Ingest", "nodes": [{"id": "a", "kind": "tool"}],
        "edges": []}
SUITE = {"id": "bench.accuracy", "version": "1.0.0", "kind": "accuracy", "description": "Accuracy",
         "spec": {"cases": []}}
TEAM = {"name": "Bench team", "slug": "bench-team"}
STAND_IN = "00000000-0000-4000-8000-000000000000"  # the id the calls after a failed create use (`after=` says so)


def getting_started(client: Kindgi, project_id: str) -> bool:
    """`kindgi.client`'s own example: start a run of a flow, read its status and output."""
    run = client.runs.start(flow=FLOW["id"], projectId=project_id, input={"vendor": "Acme"})
    return bool(run.status) and client.runs.get(run.id).id == run.id


def main(url: str) -> None:
    """Every resource in the order a developer meets them: a project first, as everything else belongs to one."""
    run = Driver("kindgi")
    client = Kindgi(url, token="kgi_bt_bench", max_retries=0,
                    http_client=httpx.Client(event_hooks={"response": [run.hook]}))
    run.call("system.health", client.system.health)
    created = run.call("projects.create", client.projects.create, PROJECT)
    project_id = created.id if created else STAND_IN
    run.readback("projects.get", PROJECT, client.projects.get, project_id, after="projects.create")
    run.listed("projects.list", project_id, client.projects.list, after="projects.create")
    run.call("projects.get_default", client.projects.get_default)
    run.call("projects.update", client.projects.update, project_id, {"description": "renamed"}, after="projects.create")
    run.readback("projects.get after update", {"description": "renamed"}, client.projects.get, project_id,
                 after="projects.create")
    team = run.call("teams.create", client.teams.create, TEAM)
    team_id = team.id if team else STAND_IN
    run.readback("teams.get", TEAM, client.teams.get, team_id, after="teams.create")
    run.listed("teams.list", team_id, client.teams.list, after="teams.create")

    scoped = {"projectId": project_id}
    run.call("agents.publish", client.agents.publish, {**AGENT, **scoped})
    run.readback("agents.get", {**AGENT, **scoped}, client.agents.get, AGENT["id"], after="agents.publish")
    run.listed("agents.list", AGENT["id"], client.agents.list, after="agents.publish")
    run.call("agents.list_versions", client.agents.list_versions, AGENT["id"], after="agents.publish")
    run.readback("agents.get_version", AGENT, client.agents.get_version, AGENT["id"], AGENT["version"],
                 after="agents.publish")
    run.call("tools.register", client.tools.register, {**TOOL, **scoped})
    run.readback("tools.get", TOOL, client.tools.get, TOOL["id"], after="tools.register")
    run.listed("tools.list", TOOL["id"], client.tools.list, after="tools.register")
    run.call("tools.list_versions", client.tools.list_versions, TOOL["id"], after="tools.register")
    run.call("flows.publish", client.flows.publish, {**FLOW, **scoped})
    run.readback("flows.get", FLOW, client.flows.get, FLOW["id"], after="flows.publish")
    run.listed("flows.list", FLOW["id"], client.flows.list, after="flows.publish")
    run.readback("flows.get_version", FLOW, client.flows.get_version, FLOW["id"], FLOW["version"],
                 after="flows.publish")
    run.call("eval_suites.publish", client.eval_suites.publish, {**SUITE, **scoped})
    run.readback("eval_suites.get", SUITE, client.eval_suites.get, SUITE["id"], after="eval_suites.publish")
    run.listed("eval_suites.list", SUITE["id"], client.eval_suites.list, after="eval_suites.publish")
    run.call("eval_suites.list_cases", client.eval_suites.list_cases, SUITE["id"], SUITE["version"],
             after="eval_suites.publish")

    schedule_body: dict[str, Any] = {"flowId": FLOW["id"], "flowVersion": FLOW["version"], "projectId": project_id,
                                     "config": {"cronExpression": "0 9 * * 1", "timezone": "UTC"}, "label": "weekly"}
    schedule = run.call("schedules.register", client.schedules.register, schedule_body)
    trigger = str(schedule.trigger_id) if schedule else STAND_IN
    run.readback("schedules.get", {"label": "weekly", "flowId": FLOW["id"]}, client.schedules.get, trigger,
                 after="schedules.register")
    run.listed("schedules.list", trigger, client.schedules.list, key="triggerId", after="schedules.register")
    run.call("schedules.pause", client.schedules.pause, trigger, after="schedules.register")
    run.readback("schedules.get after pause", {"status": "paused"}, client.schedules.get, trigger,
                 after="schedules.register")
    run.call("schedules.resume", client.schedules.resume, trigger, after="schedules.register")
    run.call("schedules.fires", client.schedules.fires, trigger, after="schedules.register")

    where = {"env_name": "local", "scope_kind": "project", "scope_id": project_id}
    secret = {"scope": {"kind": "project", "tenantId": "bench-tenant", "projectId": project_id},
              "envName": "local", "name": "BENCH_KEY", "value": "s3cr3t", "writeMode": "create-new"}
    run.call("secrets.set", client.secrets.set, secret)
    run.readback("secrets.get", {"name": "BENCH_KEY", "envName": "local"}, client.secrets.get, "BENCH_KEY", **where,
                 after="secrets.set")
    run.listed("secrets.list", "BENCH_KEY", client.secrets.list, key="name", **where, after="secrets.set")
    run.call("secrets.list_versions", client.secrets.list_versions, "BENCH_KEY", **where, after="secrets.set")

    started = run.call("runs.start", client.runs.start,
                       {"flow": FLOW["id"], "projectId": project_id, "input": {"vendor": "Acme"}})
    run_id = str(started.id) if started else STAND_IN
    run.readback("runs.get", {"flowId": FLOW["id"]}, client.runs.get, run_id, after="runs.start")
    run.listed("runs.list", run_id, client.runs.list, after="runs.start")
    run.call("runs.journal", client.runs.journal, run_id, after="runs.start")
    run.call("runs.progress", client.runs.progress, run_id, after="runs.start")
    run.call("runs.cancel", client.runs.cancel, run_id, after="runs.start")
    run.call("projects.delete", client.projects.delete, project_id, after="projects.create")
    run.example("the client's docstring: runs.start(flow=…, input=…), then its status and output",
                lambda: getting_started(client, project_id))
    client.close()


if __name__ == "__main__":
    main(sys.argv[1])
