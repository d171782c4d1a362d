"""`--stateful` on descriptions written by others (issue 31): each defect class pinned by a tiny description of
its own under tests/data/stateful, served in process and called over HTTP as an SDK would."""
from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from conftest import body
from mockserver import create_app
from mockserver.base.errors import LoadError

DATA = Path(__file__).resolve().parents[1] / "data" / "stateful"


def stateful(name: str) -> FlaskClient:
    return create_app(DATA / name, stateful=True).test_client()


# -- item 1: stored items are what a read would answer ----------------------------------------------------------
def test_a_nested_object_the_reads_complete_is_filled_with_the_servers_fields_and_read_back():
    client = stateful("server_made.yaml")
    made = client.post("/runs", json={"name": "r1", "state": {"type": "PENDING"}, "priority": None,
                                      "token": "s3cret"})
    assert made.status_code == 201, made.data
    run = body(made)
    state = run["state"]
    assert state["type"] == "PENDING"  # what the request gave is kept
    assert len(state["id"]) == 36 and state["timestamp"].endswith("Z")  # made by the server
    assert state["details"]["retries"] == 0 and isinstance(state["details"]["flags"], list)  # a default, a made one
    assert run["priority"] == 10  # null sent, none taken by reads: the reads' default
    assert "token" not in run  # writeOnly in the body, unknown to the closed reads: never stored
    assert body(client.get(f"/runs/{run['id']}")) == run and body(client.get("/runs")) == [run]
    updated = client.patch(f"/runs/{run['id']}", json={"name": "r1", "state": {"type": "RUNNING", "message": "go"}})
    assert updated.status_code == 200, updated.data
    assert body(updated)["state"]["type"] == "RUNNING" and body(updated)["state"]["id"] == state["id"]
    store = client.application.extensions["mockserver"].pipeline.store
    assert all("token" not in row["item"] for row in store.live(None, "runs", "").rows.values())


def test_the_servers_optional_fields_are_null_or_a_made_reference_and_a_copy_of_a_member_follows_it():
    client = stateful("server_made.yaml")
    run = body(client.post("/runs", json={"name": "r1", "state": {"type": "PENDING"}}))
    assert run["ended"] is None and uuid.UUID(run["pool_id"]) and run["state_type"] == "PENDING"
    assert client.patch(f"/runs/{run['id']}", json={"name": "r1", "state": {"type": "RUNNING"}}).status_code == 200
    read = body(client.get(f"/runs/{run['id']}"))
    assert read["state_type"] == "RUNNING" and read["pool_id"] == run["pool_id"] and read["ended"] is None


def test_an_item_that_still_cannot_fit_names_the_field_the_branch_and_the_request_as_its_source():
    client = stateful("server_made.yaml")
    refused = client.post("/runs", json={"name": "r1", "state": {"type": "PENDING", "message": "far too long"}})
    assert refused.status_code == 500
    error = body(refused)
    details = error["details"] if "details" in error else error["error"]["details"]
    assert details["source"] == "request" and details["field"] == "/state/message"
    assert "State" in details["schema"] or "anyOf/1" in details["schema"], details
    assert "fixture" not in refused.get_data(as_text=True)
    assert body(client.get("/runs")) == []  # nothing stored


def test_a_created_item_fits_every_read_and_a_create_answering_another_shape_gets_the_items_values():
    client = stateful("shapes.yaml")
    made = client.post("/projects", json={"name": "p1"})
    assert made.status_code == 201, made.data
    project_id = body(made)["id"]
    assert body(made) == {"id": project_id} and str(uuid.UUID(project_id)) == project_id  # a uuid, as bodies say
    read = body(client.get(f"/projects/{project_id}"))
    assert read["name"] == "p1" and isinstance(read["isDefault"], bool)  # left out by the body: the server's
    listed = body(client.get("/projects"))["data"]
    assert [row["id"] for row in listed] == [project_id] and isinstance(listed[0]["tenantId"], str)  # the list's own
    kept = body(client.post("/projects", json={"name": "p2", "isDefault": True}))
    assert body(client.get(f"/projects/{kept['id']}"))["isDefault"] is True  # what the request gave is kept


def test_a_reference_sent_by_its_stem_is_read_back_as_the_field_the_reads_name():
    client = stateful("shapes.yaml")
    run = client.post("/runs", json={"flow": "ingest"})
    assert run.status_code == 201, run.data
    assert body(run)["flowId"] == "ingest" and isinstance(body(run)["flowVersion"], str) and "flow" not in body(run)
    assert body(client.get(f"/runs/{body(run)['id']}")) == body(run)


# -- item 2: collections by resource, not by last path word -----------------------------------------------------
def test_a_read_by_the_key_and_another_field_answering_the_item_reads_the_same_items():
    client = stateful("shapes.yaml")
    flow = {"id": "ingest", "version": "1.0.0", "name": "Ingest"}
    published = client.post("/flows", json=flow)
    assert published.status_code == 201 and body(published) == {"flowId": "ingest", "version": "1.0.0"}
    assert body(client.get("/flows/ingest")) == flow
    assert body(client.get("/flows/ingest/versions/1.0.0")) == flow
    assert client.get("/flows/ingest/versions/2.0.0").status_code == 404


def test_a_nested_create_answering_the_items_schema_of_another_collection_creates_into_it():
    client = stateful("shapes.yaml")
    made = client.post("/teams/t1/projects", json={"name": "p3"})
    assert made.status_code == 201, made.data
    assert body(client.get(f"/projects/{body(made)['id']}"))["name"] == "p3"
    assert [p["name"] for p in body(client.get("/projects"))["data"]] == ["p3"]


def test_a_v2_family_is_its_own_collection_keyed_by_the_parameter_its_item_operations_use():
    client = stateful("families.yaml")
    v1 = client.post("/concurrency_limits/", json={"tag": "db", "concurrency_limit": 2})
    v2 = client.post("/v2/concurrency_limits/", json={"name": "db", "limit": 5})
    assert v1.status_code == 200 and v2.status_code == 201, (v1.data, v2.data)
    assert body(client.get(f"/concurrency_limits/{body(v1)['id']}")) == body(v1)
    assert body(client.get("/v2/concurrency_limits/db")) == body(v2)  # by name, the v2 key
    assert client.patch("/v2/concurrency_limits/db", json={"limit": 7}).status_code == 204
    assert body(client.get("/v2/concurrency_limits/db"))["limit"] == 7
    assert body(client.get(f"/concurrency_limits/{body(v1)['id']}"))["concurrency_limit"] == 2  # v1 untouched
    live = client.application.extensions["mockserver"].pipeline.answers.live
    assert live["concurrency_limits"].collection.key == ["id"] and live["v2/concurrency_limits"].collection.key == [
        "name"]


def test_a_collection_whose_create_answers_an_array_is_keyed_by_its_items_field_not_the_parameters_name():
    client = stateful("nested_keys.yaml")
    made = client.post("/boards/b1/pins", json=[{"title": "a"}, {"title": "b"}])
    assert made.status_code == 201, made.data
    first, second = body(made)
    assert uuid.UUID(first["id"]) and uuid.UUID(second["id"]) and "pin_id" not in first
    assert client.post("/boards/b1/pins", json=[{"title": "c"}]).status_code == 201  # no key None made twice
    assert client.patch(f"/boards/b1/pins/{first['id']}", json={"title": "A"}).status_code == 204
    assert client.delete(f"/boards/b1/pins/{second['id']}").status_code == 204
    assert [p["title"] for p in body(client.get("/boards/b1/pins"))] == ["A", "c"]
    assert client.delete(f"/boards/b1/pins/{second['id']}").status_code == 404
    reordered = client.post("/boards/b1/pins/reorder", json={"ids": []})  # an action answering pins: generated
    assert reordered.status_code == 200 and len(body(client.get("/boards/b1/pins"))) == 2, reordered.data


def test_a_read_by_another_field_of_the_items_reads_the_same_items():
    client = stateful("families.yaml")
    made = body(client.post("/concurrency_limits/", json={"tag": "db", "concurrency_limit": 2}))
    assert body(client.get("/concurrency_limits/tag/db")) == made
    assert client.delete(f"/concurrency_limits/{made['id']}").status_code == 204
    assert client.get("/concurrency_limits/tag/db").status_code == 404


def test_two_resources_ending_in_the_same_word_but_read_with_other_items_are_two_collections():
    client = stateful("same_word.yaml")
    model = client.post("/providers", json={"region": "eu"})
    identity = client.post("/auth/providers", json={"providerId": "okta", "clientId": "c1"})
    assert model.status_code == 201 and identity.status_code == 201, (model.data, identity.data)
    assert body(client.get(f"/providers/{body(model)['id']}")) == body(model)
    assert body(client.get("/auth/providers/okta")) == {"providerId": "okta", "clientId": "c1"}


# -- item 6: the stateful mock keeps to its own description -----------------------------------------------------
def test_a_create_whose_declared_body_is_an_array_creates_each_item_in_order():
    client = stateful("undeclared.yaml")
    made = client.post("/tags", json=[{"name": "a"}, {"name": "b"}])
    assert made.status_code == 201, made.data
    assert body(made) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert body(client.get("/tags")) == body(made) and body(client.get("/tags/2")) == {"id": 2, "name": "b"}
    again = client.post("/tags", json=[{"name": "c"}])
    assert body(again) == [{"id": 3, "name": "c"}]
    empty = client.post("/tags", json=[])
    assert empty.status_code == 201 and body(empty) == [] and len(body(client.get("/tags"))) == 3


def test_an_unknown_id_takes_the_declared_default_and_an_undeclared_404_is_said_once_at_start_up():
    client = stateful("undeclared.yaml")
    missing = client.get("/tags/99")
    assert missing.status_code == 404 and body(missing) == {"code": 404, "message": "no such tag"}  # `default`
    assert client.delete("/tags/99").status_code == 404  # answered all the same
    warnings = [p.message for p in client.application.extensions["mockserver"].pipeline.warnings]
    assert [m for m in warnings if "declares no 404" in m] == [
        "deleteTag declares no 404 (nor 4XX, nor default), yet a tag it names may not exist: answered 404 all the "
        "same; the description should declare it"]


def test_a_key_the_client_chose_twice_is_a_conflict_and_an_undeclared_409_is_said_once_at_start_up():
    client = stateful("conflicts.yaml")
    made = client.post("/pools", json={"name": "default"})
    assert made.status_code == 201, made.data
    again = client.post("/pools", json={"name": "default"})
    assert again.status_code == 409 and "a pool with name='default' exists already" in again.get_data(as_text=True)
    assert body(client.get("/pools/default")) == body(made)  # the first is kept, not overwritten
    assert client.post("/queues", json={"name": "default"}).status_code == 201
    assert client.post("/queues", json={"name": "default"}).status_code == 400  # its declared error status
    warnings = [p.message for p in client.application.extensions["mockserver"].pipeline.warnings]
    assert [m for m in warnings if "declares no 409" in m] == [
        "createPool declares no 409 (nor 4XX, nor default), yet a pool it creates may be sent with a name another "
        "has already: answered 409 all the same; the description should declare it"]


def test_an_empty_cursor_is_the_first_page_and_an_undeclared_400_for_a_foreign_cursor_is_said_once_at_start_up():
    client = stateful("cursors.yaml")
    for text in "abc":
        assert client.post("/notes", json={"text": text}).status_code == 201
    first = body(client.get("/notes?limit=2"))
    assert body(client.get("/notes?limit=2&cursor=")) == first  # a client's unset cursor: the first page
    assert [n["text"] for n in body(client.get(f"/notes?limit=2&cursor={first['nextCursor']}"))["data"]] == ["c"]
    assert client.get("/notes?cursor=junk").status_code == 400  # answered all the same
    warnings = [p.message for p in client.application.extensions["mockserver"].pipeline.warnings]
    assert [m for m in warnings if "declares no 400" in m] == [
        "listNotes declares no 400 (nor 4XX, nor default), yet a cursor it is sent may not be one the mock issued: "
        "answered 400 all the same; the description should declare it"]


def test_a_list_of_closed_summaries_serves_each_stored_item_cut_to_the_summary():
    client = stateful("summaries.yaml")
    made = client.post("/providers", json={"providerId": "p1", "kind": "oidc", "clientId": "c1"})
    assert made.status_code == 201, made.data
    provider = body(made)
    assert provider["kind"] == "oidc" and provider["clientId"] == "c1"
    assert body(client.get("/providers"))["data"] == [{"providerId": provider["providerId"], "kind": "oidc"}]
    assert body(client.get(f"/providers/{provider['providerId']}")) == provider  # a read by id: the whole item


# -- item 3: searches, counts and actions -----------------------------------------------------------------------
def flows(client: FlaskClient, *names: str) -> dict[str, dict]:
    made = {name: client.post("/flows/", json={"name": name, "tags": [name[0]]}) for name in names}
    assert all(r.status_code == 201 for r in made.values()), [r.data for r in made.values()]
    return {name: body(r) for name, r in made.items()}


def test_a_search_in_the_body_answers_the_collection_filtered_sorted_and_windowed():
    client = stateful("searches.yaml")
    flows(client, "beta", "alpha", "gamma", "delta")
    search = lambda query: [f["name"] for f in body(client.post("/flows/filter", json=query))]  # noqa: E731
    assert search({}) == ["beta", "alpha", "gamma", "delta"]  # the order they were made in
    assert search({"sort": "NAME_ASC"}) == ["alpha", "beta", "delta", "gamma"]
    assert search({"sort": "NAME_DESC", "limit": 2, "offset": 1}) == ["delta", "beta"]
    assert search({"flows": {"name": {"any_": ["gamma", "alpha", "nope"]}}, "deployments": {"x": 1}}) == [
        "alpha", "gamma"]  # a filter on another collection is left out of the match
    assert search({"flows": None}) == ["beta", "alpha", "gamma", "delta"]  # null filters nothing
    assert body(client.post("/flows/count", json={"flows": {"name": {"any_": ["beta", "delta"]}}})) == 2
    assert body(client.post("/flows/count", json={})) == 4
    bad = client.post("/flows/filter", json={"limit": -1})
    assert bad.status_code == 400 and "limit" in bad.get_data(as_text=True)


def test_a_search_windowed_by_a_whole_number_written_with_a_fraction_answers_as_its_schemas_integer_allows():
    client = stateful("searches.yaml")
    flows(client, "beta", "alpha", "gamma")
    windowed = client.post("/flows/filter", json={"limit": 1.0, "offset": 1.0})  # `integer` in JSON Schema
    assert windowed.status_code == 200, windowed.data
    assert [f["name"] for f in body(windowed)] == ["alpha"]
    assert client.post("/flows/filter", json={"limit": 1.5}).status_code == 400  # refused by the schema


def test_an_action_whose_body_names_fields_of_the_item_updates_them():
    client = stateful("searches.yaml")
    flow = flows(client, "alpha")["alpha"]
    acted = client.post(f"/flows/{flow['id']}/set_state", json={"state": {"type": "COMPLETED"}, "force": True})
    assert acted.status_code == 200 and body(acted)["status"] in ("ACCEPT", "REJECT")  # its own answer
    read = body(client.get(f"/flows/{flow['id']}"))
    assert read["state"] == {"type": "COMPLETED"} and "force" not in read and read["name"] == "alpha"
    assert client.post("/flows/00000000-0000-4000-8000-000000000000/set_state",
                       json={"state": {"type": "RUNNING"}}).status_code == 404
    assert client.patch(f"/flows/{flow['id']}/state", json={"type": "RUNNING"}).status_code == 204  # a sub-object
    assert body(client.get(f"/flows/{flow['id']}"))["state"] == {"type": "RUNNING"}


def test_set_state_under_two_kinds_of_items_acts_on_each_and_a_plural_under_an_item_is_no_action():
    client = stateful("actions.yaml")
    for runs in ("flow_runs", "task_runs"):
        run = body(client.post(f"/{runs}", json={"name": "r"}))
        assert client.post(f"/{runs}/{run['id']}/set_state", json={"state": {"type": "RUNNING"}}).status_code == 200
        assert body(client.get(f"/{runs}/{run['id']}"))["state"] == {"type": "RUNNING"}
    run = body(client.post("/flow_runs", json={"name": "r"}))
    assert client.post(f"/flow_runs/{run['id']}/api_keys", json={"name": "key"}).status_code == 200
    assert body(client.get(f"/flow_runs/{run['id']}"))["name"] == "r"  # a key was made: the run is as it was


def test_a_create_without_its_optional_body_a_key_never_made_twice_and_a_delete_answering_its_own_shape():
    client = stateful("actions.yaml")
    made = [client.post("/videos") for _ in range(30)]  # no body: the description makes it optional
    assert all(r.status_code == 200 for r in made), made[0].data
    ids = [body(r)["id"] for r in made]
    assert len(set(ids)) == 30 and all(body(r)["object"] == "video" for r in made)
    gone = client.delete(f"/videos/{ids[0]}")
    assert gone.status_code == 200 and body(gone) == {"id": ids[0], "object": "video.deleted",
                                                      "deleted": body(gone)["deleted"]}
    assert client.get(f"/videos/{ids[0]}").status_code == 404


def test_items_of_one_word_under_two_parents_and_two_shapes_are_two_collections():
    client = stateful("actions.yaml")
    run = body(client.post("/flow_runs", json={"name": "r"}))
    task = body(client.post("/task_runs", json={"name": "t"}))
    assert client.post(f"/flow_runs/{run['id']}/notes", json={"text": "a"}).status_code == 201
    made = client.post(f"/task_runs/{task['id']}/notes", json={"body": "b"})
    assert made.status_code == 201, made.data
    assert [n["body"] for n in body(client.get(f"/task_runs/{task['id']}/notes"))] == ["b"]


def test_a_value_of_a_type_the_reads_do_not_hold_and_a_read_of_bytes_do_not_break_a_write():
    client = stateful("actions.yaml")
    run = client.post("/flow_runs", json={"name": "r", "agent": "a1", "tags": "x"})  # it reads objects of both
    assert run.status_code == 201 and "agent" not in body(run) and body(run)["tags"] == {}, run.data  # required
    blob = client.post("/blobs", json={"name": "b"})  # its read answers bytes: not one of the reads checked
    assert blob.status_code == 201, blob.data


@pytest.mark.slow  # a whole contract run
def test_the_contract_of_the_stateful_mock_says_an_undeclared_404_once_as_the_descriptions_gap():
    from mockserver.contract.runner import RunOptions, run

    result = run(RunOptions(DATA / "undeclared.yaml", None, phases=["stateful"], max_examples=5, seed=1,
                            force=False, stateful=True))
    delete = result.operations["DELETE /tags/{id}"]
    assert delete.statuses[404] > 0 and not delete.findings, delete.findings  # unknown ids were deleted
    assert [n for n in result.notes if n.startswith("the description's gap") and "deleteTag" in n] == [
        "the description's gap, not the mock's: deleteTag declares no 404 (nor 4XX, nor default), yet a tag it "
        f"names may not exist: answered 404 all the same; the description should declare it ({delete.statuses[404]} "
        "answers of DELETE /tags/{id})"]
    assert not result.operations["GET /tags/{id}"].findings  # its 404 is within its declared `default`


def test_the_contract_says_a_400_for_invalid_data_where_no_error_is_declared_once_as_the_descriptions_gap():
    from mockserver.contract.runner import RunOptions, run

    result = run(RunOptions(DATA / "undeclared.yaml", None, phases=["coverage"], max_examples=2, seed=8,
                            coverage_cap=5, force=False, stateful=True, mode="negative"))
    create = result.operations["POST /tags"]
    assert create.statuses[400] > 0 and not create.findings, create.findings  # bodies that break the schema
    assert [n for n in result.notes if "createTags" in n] == [
        "the description's gap, not the mock's: createTags declares no 400 (nor 4XX, nor default), yet a request "
        "may break its parameters or body: answered 400 all the same; the description should declare it "
        f"({create.statuses[400]} answers of POST /tags)"]


def test_the_contract_of_the_stateful_mock_says_an_undeclared_409_for_a_key_taken_once_as_the_descriptions_gap():
    from mockserver.contract.runner import RunOptions, run

    result = run(RunOptions(DATA / "conflicts.yaml", None, phases=["examples", "coverage"], max_examples=2, seed=8,
                            force=False, stateful=True, mode="positive"))
    create = result.operations["POST /pools"]
    assert create.statuses[409] > 0 and not create.findings, create.findings  # the name was sent again
    assert [n for n in result.notes if n.startswith("the description's gap")] == [
        "the description's gap, not the mock's: createPool declares no 409 (nor 4XX, nor default), yet a pool it "
        "creates may be sent with a name another has already: answered 409 all the same; the description should "
        f"declare it ({create.statuses[409]} answers of POST /pools)"]
    assert not result.operations["POST /queues"].findings  # its 400 is declared


FLOWS = """\
collections:
  flows:
    key: [id]
    items:
      - {id: 6a1c2c0e-0000-4000-8000-000000000001, name: one, created: '2024-01-01T00:00:00Z', state: {type: PENDING}}
      - {id: 6a1c2c0e-0000-4000-8000-000000000002, name: two, created: '2024-01-02T00:00:00Z', state: {type: RUNNING}}
operations:
  filterFlows: {search: {from: flows, page: {items: ''}}}
  countFlows: {search: {from: flows, count: true}}
  patchFlowState: {update: {in: flows, where: [{field: id, equals: {path: id}}], action: state}}
  readFlow: {item: {from: flows, where: [{field: id, equals: {path: id}}]}}
"""


def test_fixtures_declare_searches_counts_and_actions_and_a_search_of_the_wrong_shape_is_a_start_up_problem(
        tmp_path):
    (tmp_path / "flows.yaml").write_text(FLOWS)
    client = create_app(DATA / "searches.yaml", tmp_path).test_client()
    running = client.post("/flows/filter", json={"flows": {"state": {"type": {"any_": ["RUNNING"]}}}})
    assert [f["name"] for f in body(running)] == ["two"]
    assert body(client.post("/flows/count", json={})) == 2
    one = "/flows/6a1c2c0e-0000-4000-8000-000000000001"
    assert client.patch(f"{one}/state", json={"type": "COMPLETED"}).status_code == 204
    assert body(client.get(one))["state"] == {"type": "COMPLETED"}
    (tmp_path / "flows.yaml").write_text(FLOWS.replace("page: {items: ''}", "page: {items: data}"))
    with pytest.raises(LoadError) as caught:
        create_app(DATA / "searches.yaml", tmp_path)
    problem = next(p for p in caught.value.problems if "filterFlows's search" in p.message)
    assert problem.file.endswith("flows.yaml") and problem.line == 8 and problem.pointer == (
        "/operations/filterFlows/search")


@pytest.mark.slow  # a redis-server
def test_an_array_create_holds_across_replicas_on_a_shared_redis(redis_url):
    apps = [create_app(DATA / "undeclared.yaml", stateful=True, state=redis_url) for _ in range(2)]
    try:
        one, two = (app.test_client() for app in apps)
        assert body(one.post("/tags", json=[{"name": "a"}, {"name": "b"}])) == [
            {"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
        assert body(two.post("/tags", json=[{"name": "c"}])) == [{"id": 3, "name": "c"}]  # one shared sequence
        assert [t["name"] for t in body(one.get("/tags"))] == ["a", "b", "c"]
    finally:
        for app in apps:
            app.extensions["mockserver"].pipeline.store.close()


def test_an_action_named_by_a_verb_sets_the_enum_value_that_is_its_past_participle_unless_the_body_says():
    client = stateful("verbs.yaml")
    schedules = [body(client.post("/schedules", json={"label": f"s{i}"})) for i in range(12)]
    for schedule in schedules:  # whatever status each was made with
        paused = client.post(f"/schedules/{schedule['triggerId']}/pause")
        assert paused.status_code == 200
        assert body(client.get(f"/schedules/{schedule['triggerId']}"))["status"] == "paused"
    run = body(client.post("/runs", json={"flow": "ingest"}))
    assert client.post(f"/runs/{run['id']}/force-cancel", json={"reason": "late"}).status_code == 200
    assert body(client.get(f"/runs/{run['id']}"))["state"] == "CANCELED"  # the enum's own spelling
    other = body(client.post("/runs", json={"flow": "ingest"}))
    client.post(f"/runs/{other['id']}/force-cancel", json={"state": "PENDING"})
    assert body(client.get(f"/runs/{other['id']}"))["state"] == "PENDING"  # the body said otherwise
    for schedule in schedules:  # `resumed` is no value of the enum: resume changes nothing
        client.post(f"/schedules/{schedule['triggerId']}/resume")
        assert body(client.get(f"/schedules/{schedule['triggerId']}"))["status"] == "paused"


def test_validate_says_which_verbs_set_a_value_and_why_another_does_not():
    done = subprocess.run([sys.executable, "-m", "mockserver", "validate", "--spec", str(DATA / "verbs.yaml"),
                           "--stateful"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "stateful: pauseSchedule acts on one of schedules by triggerId: it sets status: paused (the past " \
           "participle of pause), unless its body says otherwise" in done.stdout.splitlines()
    assert "stateful: resumeSchedule not inferred: it takes no body, and no string enum of the items holds " \
           "resumed" in done.stdout.splitlines()


def test_an_actions_answer_is_the_item_it_changed_or_holds_the_field_changed_as_stored():
    client = stateful("verbs.yaml")
    schedule = body(client.post("/schedules", json={"label": "weekly"}))
    paused = body(client.post(f"/schedules/{schedule['triggerId']}/pause"))
    assert paused == body(client.get(f"/schedules/{schedule['triggerId']}")) and paused["status"] == "paused"
    job = body(client.post("/jobs", json={"name": "nightly"}))
    for kind in ("RUNNING", "PENDING", "RUNNING", "PENDING"):
        acted = body(client.post(f"/jobs/{job['id']}/set_state", json={"state": {"type": kind}}))
        stored = body(client.get(f"/jobs/{job['id']}"))["state"]
        assert stored["type"] == kind and acted["state"] == stored  # with the id and timestamp the mock gave it
        assert acted["status"] == "ACCEPT"  # done, as the mock did it: not REJECT, ABORT or WAIT


def test_a_collection_only_created_and_searched_takes_its_key_and_fields_from_the_searchs_items():
    client = stateful("searched.yaml")
    made = client.post("/logs/", json=[{"message": "made by the bench", "level": 20}, {"message": "two", "level": 30}])
    assert made.status_code == 201
    found = body(client.post("/logs/filter", json={"message": "made by the bench"}))
    assert [(log["message"], log["level"]) for log in found] == [("made by the bench", 20)]
    assert uuid.UUID(found[0]["id"]) and found[0]["created"]  # filled, as the search's items require
    assert [log["message"] for log in body(client.post("/logs/filter", json={"limit": 5}))] == ["made by the bench",
                                                                                               "two"]
