"""Stateful mode: operations declared in the fixtures as writes (`create`, `update`, `replace`, `delete`) change
what the lists, items and `require` rules reading their collection answer, per session, until a reset. Proved on
a small pets API written for the tests (tests/data/pets), on the memory store and on a real Redis."""
from __future__ import annotations

import random
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from flask.testing import FlaskClient

from conftest import SHARED, body
from mockserver import create_app
from mockserver.base.errors import LoadError
from mockserver.pipeline.stateful import rank_between
from mockserver.web.app import MOCK_KEY

PETS = Path(__file__).resolve().parents[1] / "data" / "pets"
SPEC, FIXTURES = PETS / "openapi.yaml", PETS / "fixtures"
Client = Callable[..., FlaskClient]


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.slow)])  # a redis-server
def clients(request: pytest.FixtureRequest) -> Iterator[Client]:
    """A maker of clients of the pets mock; over Redis, every client made is another app sharing one Redis
    (as replicas do), over memory one app."""
    if request.param == "memory":
        app = create_app(SPEC, FIXTURES)
        yield lambda **options: (create_app(SPEC, FIXTURES, **options) if options else app).test_client()
        return
    url = request.getfixturevalue("redis_url")
    apps: list[Any] = []

    def make(**options: Any) -> FlaskClient:
        apps.append(create_app(SPEC, FIXTURES, state=url, **options))
        return apps[-1].test_client()

    yield make
    for app in apps:
        app.extensions[MOCK_KEY].pipeline.store.close()


@pytest.fixture()
def pets() -> FlaskClient:
    return create_app(SPEC, FIXTURES).test_client()


def names(client: FlaskClient, query: str = "", session: str | None = None) -> list[str]:
    response = client.get("/pets" + query, headers={"X-Mock-Session": session} if session else {})
    assert response.status_code == 200, response.data
    return [p["name"] for p in body(response)["data"]]


def in_session(session: str | None) -> dict[str, str]:
    return {"X-Mock-Session": session} if session else {}


# -- declared writes ---------------------------------------------------------------------------------------------
def test_a_created_pet_gets_the_mocks_id_and_timestamp_and_is_listed_and_read(pets):
    created = pets.post("/pets", json={"id": 99, "name": "Rex", "kind": "dog", "createdAt": "1999-01-01T00:00:00Z"})
    assert created.status_code == 201
    rex = body(created)
    assert rex["id"] == 4 and rex["createdAt"] != "1999-01-01T00:00:00Z"  # readOnly: the mock's own values
    assert rex["createdAt"].endswith("Z") and rex["createdAt"][:4].isdigit()
    assert created.headers["Location"] == "/pets/4"
    assert names(pets) == ["Ada", "Bo", "Cy", "Rex"]
    assert body(pets.get("/pets/4")) == rex
    assert body(pets.post("/pets", json={"name": "Sam"}))["id"] == 5  # an integer sequence
    assert names(pets, "?kind=dog") == ["Bo", "Rex"]  # filters read the written items too


def test_write_only_properties_are_kept_but_never_answered(pets):
    created = pets.post("/pets", json={"name": "Rex", "secret": "s3cret"})
    assert "secret" not in body(created)
    assert "secret" not in body(pets.get("/pets/4"))
    assert all("secret" not in p for p in body(pets.get("/pets"))["data"])
    patched = pets.patch("/pets/4", json={"name": "Rex II"})  # kept through an update
    assert "secret" not in body(patched)
    store = pets.application.extensions[MOCK_KEY].pipeline.store
    rows = store.live(None, "pets", "").rows
    assert rows["[4]"]["item"]["secret"] == "s3cret" and rows["[4]"]["item"]["name"] == "Rex II"


def test_update_is_a_json_merge_patch(pets):
    pets.patch("/pets/2", json={"tag": "good"})
    patched = pets.patch("/pets/2", json={"kind": "cat", "id": 7}, content_type="application/merge-patch+json")
    assert patched.status_code == 200
    assert body(patched) == {"id": 2, "name": "Bo", "kind": "cat", "tag": "good", "createdAt": "2024-01-02T00:00:00Z"}
    removed = body(pets.patch("/pets/2", json={"tag": None}))  # null removes a member
    assert "tag" not in removed and removed["kind"] == "cat"
    assert body(pets.get("/pets/2")) == removed and names(pets, "?kind=cat") == ["Ada", "Bo"]


def test_replace_swaps_the_item_but_keeps_the_mocks_own_fields(pets):
    replaced = pets.put("/pets/1", json={"name": "Zed", "tag": "new"})
    assert replaced.status_code == 200
    assert body(replaced) == {"id": 1, "name": "Zed", "tag": "new", "createdAt": "2024-01-01T00:00:00Z"}  # no kind
    assert body(pets.get("/pets/1")) == body(replaced)


def test_delete_then_read_update_or_delete_is_the_operations_404_in_the_envelope(pets):
    deleted = pets.delete("/pets/2")
    assert deleted.status_code == 204 and deleted.data == b""
    assert names(pets) == ["Ada", "Cy"]
    for response in (pets.get("/pets/2"), pets.patch("/pets/2", json={"name": "X"}),
                     pets.put("/pets/2", json={"name": "X"}), pets.delete("/pets/2")):
        assert response.status_code == 404
        assert body(response)["error"]["code"] == "not-found" and body(response)["error"]["details"] == {"id": 2}
    created = body(pets.post("/pets", json={"name": "New"}))
    assert pets.delete(f"/pets/{created['id']}").status_code == 204 and names(pets) == ["Ada", "Cy"]


def test_a_create_whose_key_exists_is_a_409_declared_or_not(pets):
    assert pets.post("/owners", json={"login": "bob"}).status_code == 201
    for login in ("bob", "ana"):  # written, and from the fixtures
        conflict = pets.post("/owners", json={"login": login, "name": "again"})
        assert conflict.status_code == 409, conflict.data
        assert body(conflict)["error"]["details"] == {"login": login}
    assert pets.post("/badges", json={"code": "silver"}).status_code == 204  # no body declared: none answered
    assert pets.post("/badges", json={"code": "silver"}).status_code == 409  # addBadge declares none: the gap


def test_require_rules_read_the_written_collection(pets):
    assert pets.post("/owners/bob/pets", json={"name": "Odd"}).status_code == 404
    pets.post("/owners", json={"login": "bob"})
    assert pets.post("/owners/bob/pets", json={"name": "Odd"}).status_code == 201
    assert "Odd" in names(pets)


def test_the_request_body_is_still_validated_and_nothing_is_written(pets):
    refused = pets.post("/pets", json={"name": ""})
    assert refused.status_code == 400 and body(refused)["error"]["details"]["violations"][0]["rule"] == "minLength"
    assert names(pets) == ["Ada", "Bo", "Cy"]


# -- cursors across writes ---------------------------------------------------------------------------------------
def test_a_cursor_taken_before_writes_never_repeats_or_skips_an_item_that_existed(pets):
    first = body(pets.get("/pets?limit=2"))
    assert [p["name"] for p in first["data"]] == ["Ada", "Bo"]
    pets.post("/pets", json={"name": "Aaron"})  # sorts before the cursor: not on a later page
    pets.post("/pets", json={"name": "Bz"})  # sorts after it: on the next page
    pets.patch("/pets/2", json={"name": "Zzz"})  # Bo, already served, keeps its place: not served again
    pets.post("/pets", json={"name": "Dee"})
    pets.delete("/pets/3")  # Cy, not served yet and gone: not served
    rest, cursor = [], first["nextCursor"]
    while cursor:
        page = body(pets.get("/pets?limit=1&cursor=" + cursor))
        rest += [p["name"] for p in page["data"]]
        cursor = page.get("nextCursor")
    assert rest == ["Bz", "Dee"]
    assert names(pets) == ["Aaron", "Ada", "Zzz", "Bz", "Dee"]  # a new listing: every item, Bo still in place


def test_ranks_always_fit_between_their_neighbours_and_stay_short():
    rng = random.Random(7)
    ranks: list[list[int]] = [[0]]
    for _ in range(3000):
        at = rng.choice([0, len(ranks), len(ranks) - 1, rng.randrange(len(ranks) + 1)])
        before = ranks[at - 1] if at else None
        after = ranks[at] if at < len(ranks) else None
        new = rank_between(before, after)
        assert (before is None or before < new) and (after is None or new < after)
        ranks.insert(at, new)
    assert max(len(r) for r in ranks) <= 8


# -- sessions, reset, bounds, the shared store -------------------------------------------------------------------
def test_create_list_delete_on_the_store(clients):
    client = clients()
    rex = body(client.post("/pets", json={"name": "Rex"}))
    assert names(client) == ["Ada", "Bo", "Cy", "Rex"]
    assert body(clients().get(f"/pets/{rex['id']}"))["name"] == "Rex"  # over Redis: another replica sees it
    assert client.delete(f"/pets/{rex['id']}").status_code == 204
    assert client.get(f"/pets/{rex['id']}").status_code == 404 and names(client) == ["Ada", "Bo", "Cy"]


def test_two_sessions_see_only_their_own_writes(clients):
    alice, bob = clients(), clients()
    alice.post("/pets", json={"name": "Rex"}, headers=in_session("alice"))
    bob.delete("/pets/1", headers=in_session("bob"))
    bob.post("/pets", json={"name": "Tom"}, headers=in_session("bob"))
    assert names(alice, session="alice") == ["Ada", "Bo", "Cy", "Rex"]
    assert names(bob, session="bob") == ["Bo", "Cy", "Tom"]
    assert names(alice) == ["Ada", "Bo", "Cy"]  # no session: the whole mock's own state, untouched
    assert body(bob.get("/pets/4", headers=in_session("bob")))["name"] == "Tom"  # each session's own sequence
    assert body(alice.get("/pets/4", headers=in_session("alice")))["name"] == "Rex"


def test_reset_restores_the_fixtures_of_one_session_or_of_all(clients):
    client = clients()
    for session in ("alice", "bob", None):
        client.post("/pets", json={"name": "Rex"}, headers=in_session(session))
    assert client.post("/__mock/reset?session=alice", json={}).status_code == 200
    assert names(client, session="alice") == ["Ada", "Bo", "Cy"]
    assert names(client, session="bob") == names(client) == ["Ada", "Bo", "Cy", "Rex"]
    assert client.post("/__mock/reset", json={}).status_code == 200
    assert names(client, session="bob") == names(client) == ["Ada", "Bo", "Cy"]
    assert body(client.post("/pets", json={"name": "Again"}))["id"] == 4


def test_a_collection_holds_at_most_max_items_per_session(clients):
    client = clients(max_items=4)
    assert client.post("/pets", json={"name": "Rex"}).status_code == 201
    full = client.post("/pets", json={"name": "One too many"})
    assert full.status_code == 507
    assert body(full)["error"]["code"] == "mock-state-full"
    assert body(full)["error"]["details"] == {"collection": "pets", "limit": 4}
    assert client.post("/pets", json={"name": "Rex"}, headers=in_session("other")).status_code == 201
    client.delete("/pets/1")
    assert client.post("/pets", json={"name": "Fits again"}).status_code == 201


def test_a_deleted_items_id_is_never_given_again_until_its_scope_is_reset(clients):
    client, replica = clients(), clients()  # over Redis, two replicas sharing one sequence
    rex = body(client.post("/pets", json={"name": "Rex"}))
    assert rex["id"] == 4 and client.delete("/pets/4").status_code == 204
    assert body(replica.post("/pets", json={"name": "Tom"}))["id"] == 5  # not 4 again: a cache keyed by id holds
    assert client.get("/pets/4").status_code == 404 and body(client.get("/pets/5"))["name"] == "Tom"
    assert client.delete("/pets/5").status_code == 204 and client.delete("/pets/3").status_code == 204
    assert client.delete("/pets/3", headers=in_session("alice")).status_code == 204  # a fixture's id is kept too
    assert body(client.post("/pets", json={"name": "Ann"}, headers=in_session("alice")))["id"] == 4  # its own
    assert body(replica.post("/pets", json={"name": "Sam"}))["id"] == 6
    assert client.post("/__mock/reset?session=alice", json={}).status_code == 200  # another scope's reset
    assert body(client.post("/pets", json={"name": "Max"}))["id"] == 7
    assert client.post("/__mock/reset", json={}).status_code == 200
    assert body(replica.post("/pets", json={"name": "New"}))["id"] == 4  # the fixtures again: the sequence too


def test_an_id_the_client_chose_and_deleted_is_not_given_again(tmp_path):
    def client_ids(spec: dict[str, Any]) -> None:
        schemas = spec["components"]["schemas"]
        schemas["NewPet"]["properties"]["id"] = schemas["Pet"]["properties"]["id"] = {"type": "integer"}

    client = create_app(*variant(tmp_path, client_ids)).test_client()
    assert body(client.post("/pets", json={"id": 10, "name": "Rex"}))["id"] == 10
    assert client.delete("/pets/10").status_code == 204
    assert body(client.post("/pets", json={"name": "Tom"}))["id"] == 11


def test_concurrent_creates_each_get_their_own_id(clients):
    client = clients()
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda n: body(client.post("/pets", json={"name": f"P{n}"}))["id"], range(24)))
    assert sorted(ids) == list(range(4, 28))
    assert len(names(client)) == 27


def test_creates_through_two_replicas_at_once_are_each_kept_once_and_both_list_them_all(clients):
    """Over Redis two replicas write one session at once: a write that finds the other's first is tried again on
    top of it (each replica keeps its own view and learns only what the other changed): no pet lost, no id twice,
    and both list every pet in one order."""
    one, two = clients(), clients()

    def create(n: int) -> int:
        response = (one, two)[n % 2].post("/pets", json={"name": f"P{n:02}"}, headers={"X-Mock-Session": "both"})
        return int(body(response)["id"])

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(create, range(40)))
    assert sorted(ids) == list(range(4, 44))
    assert names(one, "?limit=100", "both") == names(two, "?limit=100", "both") == [
        "Ada", "Bo", "Cy", *(f"P{n:02}" for n in range(40))]


# -- validated both ways, and checked at start-up ---------------------------------------------------------------
def variant(tmp_path: Path, change_spec: Callable[[dict[str, Any]], None] | None = None,
            change_fixtures: Callable[[dict[str, Any]], None] | None = None) -> tuple[Path, Path]:
    spec, fixtures = yaml.safe_load(SPEC.read_text()), yaml.safe_load((FIXTURES / "pets.yaml").read_text())
    if change_spec:
        change_spec(spec)
    if change_fixtures:
        change_fixtures(fixtures)
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "openapi.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "fixtures" / "pets.yaml").write_text(yaml.safe_dump(fixtures, sort_keys=False))
    return tmp_path / "openapi.yaml", tmp_path / "fixtures"


def test_an_item_that_breaks_what_reads_answer_is_the_mocks_500_and_is_not_stored(tmp_path):
    def reads_need_a_tag(spec: dict[str, Any]) -> None:
        spec["components"]["schemas"]["Pet"]["required"].append("tag")
        spec["paths"]["/pets/{id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"] = {
            "allOf": [{"$ref": "#/components/schemas/Pet"}, {"required": ["nickname"]}]}  # declared nowhere

    def tagged(fixtures: dict[str, Any]) -> None:
        for item in fixtures["collections"]["pets"]["items"]:
            item["tag"] = item["nickname"] = "t"

    client = create_app(*variant(tmp_path, reads_need_a_tag, tagged)).test_client()
    broken = client.post("/pets", json={"name": "Rex", "tag": "t"})  # getPet also needs a nickname
    assert broken.status_code == 500
    error = body(broken)["error"]
    assert error["code"] == "mock-contract-violation" and "getPet" in error["message"]
    assert error["details"]["rule"] == "required" and error["details"]["operation"] == "getPet"
    assert names(client) == ["Ada", "Bo", "Cy"]
    assert client.post("/pets", json={"name": "Rex", "tag": "t", "nickname": "R"}).status_code == 201


@pytest.mark.parametrize("declaration, pointer, words", [
    ({"create": {"in": "pets"}}, "/operations/addPet/create", "not in the fixture format"),
    ({"create": {"into": "nope"}}, "/operations/addPet/create/into", "no collection 'nope'"),
    ({"create": {"into": "pets"}, "respond": [{"status": 201}]}, "/operations/addPet", "not in the fixture format"),
    ({"update": {"in": "pets"}}, "/operations/addPet/update", "not in the fixture format"),
    ({"create": {"into": "pets", "key": "name"}}, "/operations/addPet/create/key", "has the key ['id']"),
])
def test_a_malformed_write_is_a_start_up_problem_with_file_line_and_pointer(tmp_path, declaration, pointer, words):
    spec, fixtures = variant(tmp_path, change_fixtures=lambda f: f["operations"].update(addPet=declaration))
    with pytest.raises(LoadError) as caught:
        create_app(spec, fixtures)
    problem = next(p for p in caught.value.problems if words in p.message)
    assert problem.file.endswith("pets.yaml") and problem.pointer == pointer and problem.line > 1


def test_a_write_on_a_collection_without_key_or_an_operation_without_body_is_refused(tmp_path):
    def no_key(fixtures: dict[str, Any]) -> None:
        del fixtures["collections"]["pets"]["key"]
        fixtures["operations"]["getPet"] = {"respond": [{"status": 200, "body": {
            "id": 1, "name": "A", "createdAt": "2024-01-01T00:00:00Z"}}]}
        fixtures["operations"]["deletePet"] = {"update": {"in": "owners", "where": [{"field": "login",
                                                                                      "equals": "ana"}]}}

    with pytest.raises(LoadError) as caught:
        create_app(*variant(tmp_path, change_fixtures=no_key))
    messages = [p.message for p in caught.value.problems]
    assert any("create needs items with a key" in m for m in messages)
    assert any("deletePet takes no request body to update" in m for m in messages)


def test_collections_nobody_writes_are_served_as_before(tmp_path):
    client = create_app(*variant(tmp_path, change_fixtures=lambda f: [f["operations"].pop(k) for k in (
        "addPet", "updatePet", "replacePet", "deletePet", "addOwnedPet")])).test_client()
    pipeline = client.application.extensions[MOCK_KEY].pipeline
    assert "pets" not in pipeline.answers.live and names(client) == ["Ada", "Bo", "Cy"]
    assert client.delete("/pets/1").status_code == 204 and names(client) == ["Ada", "Bo", "Cy"]


# -- inferred from the REST shape ---------------------------------------------------------------------------------
PETSTORE = SHARED / "corpus" / "oai-petstore-expanded.yaml"


@pytest.fixture()
def petstore() -> Path:
    if not PETSTORE.is_file():
        pytest.skip(f"{PETSTORE} is absent: the shared corpus is not checked out beside this one")
    return PETSTORE


def test_inferred_mode_makes_the_petstore_remember(petstore):
    client = create_app(petstore, stateful=True).test_client()
    assert body(client.get("/v2/pets")) == []  # a bare array, as the description answers
    rex = body(client.post("/v2/pets", json={"name": "Rex", "tag": "dog"}))
    assert rex == {"id": 1, "name": "Rex", "tag": "dog"}
    assert body(client.get("/v2/pets")) == [rex] and body(client.get("/v2/pets/1")) == rex
    assert client.delete("/v2/pets/1").status_code == 204
    gone = client.get("/v2/pets/1")
    assert gone.status_code == 404 and body(gone) == {"code": 404, "message": "no such pet"}  # the API's own Error
    assert body(client.get("/v2/pets")) == []
    assert body(create_app(petstore).test_client().get("/v2/pets")) != []  # not stateful: generated, as before


def test_validate_prints_what_it_inferred_per_operation(petstore):
    done = subprocess.run([sys.executable, "-m", "mockserver", "validate", "--spec", str(petstore), "--stateful"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:4] == [
        "stateful: findPets lists pets", "stateful: addPet creates into pets (key id)",
        "stateful: find pet by id reads one of pets by id", "stateful: deletePet deletes one of pets by id"]


def test_stateful_in_the_settings_infers_what_the_fixtures_leave_out_seeded_from_examples(tmp_path):
    def example(spec: dict[str, Any]) -> None:
        spec["paths"]["/pets/{id}"]["get"]["responses"]["200"]["content"]["application/json"]["example"] = {
            "id": 7, "name": "Example", "createdAt": "2024-05-01T00:00:00Z"}

    def only_owners(fixtures: dict[str, Any]) -> None:
        fixtures["settings"]["stateful"] = True
        del fixtures["collections"]["pets"]
        for name in ("listPets", "getPet", "addPet", "updatePet", "replacePet", "deletePet", "addOwnedPet"):
            del fixtures["operations"][name]

    client = create_app(*variant(tmp_path, example, only_owners)).test_client()
    assert names(client) == ["Example"]
    assert body(client.post("/pets", json={"name": "Rex"}))["id"] == 8
    assert body(client.patch("/pets/8", json={"tag": "t"}))["tag"] == "t"
    assert names(client) == ["Example", "Rex"]
    assert client.post("/owners", json={"login": "ana"}).status_code == 409  # declared ones stay as declared


POOLS = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /pools:
    post:
      requestBody: {required: true, content: {application/json: {schema: {$ref: '#/components/schemas/PoolBody'}}}}
      responses:
        '201': {description: made, content: {application/json: {schema: {$ref: '#/components/schemas/Pool'}}}}
  /pools/{pool_name}:
    parameters: [{name: pool_name, in: path, required: true, schema: {type: string}}]
    get:
      responses:
        '200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Pool'}}}}
        '404': {description: none}
    delete:
      responses: {'204': {description: gone}, '404': {description: none}}
components:
  schemas:
    PoolBody:
      type: object
      required: [name, slots]
      properties:
        name: {type: string}
        slots: {type: integer}
        include_deferred: {type: boolean, default: false}
        team_name: {anyOf: [{type: string}, {type: 'null'}]}
    Pool:
      type: object
      required: [name, slots, include_deferred, team_name, occupied_slots]
      properties:
        name: {type: string}
        slots: {type: integer}
        include_deferred: {type: boolean}
        team_name: {anyOf: [{type: string}, {type: 'null'}]}
        occupied_slots: {type: integer, minimum: 0}
"""


def test_a_path_parameter_named_for_its_resource_keys_it_by_its_last_word(write):
    """FastAPI's `/pools/{pool_name}` over items whose key is `name`: inferred, so a deleted pool is gone. What
    the reads require and the create leaves out is the server's to fill: the body's default, null where the
    reads take it, a value made up where no body may send it."""
    client = create_app(write("spec.yaml", POOLS), stateful=True).test_client()
    made = client.post("/pools", json={"name": "p1", "slots": 4})
    assert made.status_code == 201
    pool = body(client.get("/pools/p1"))
    assert pool == body(made) and isinstance(pool.pop("occupied_slots"), int)
    assert pool == {"name": "p1", "slots": 4, "include_deferred": False, "team_name": None}
    assert client.delete("/pools/p1").status_code == 204
    assert client.get("/pools/p1").status_code == 404


# -- the contract's stateful phase --------------------------------------------------------------------------------
def stateful_phase(petstore: Path, url: str | None = None) -> Any:
    from mockserver.contract.runner import RunOptions, run

    return run(RunOptions(petstore, None, url=url, phases=["stateful"], max_examples=10, seed=1, force=False,
                       stateful=url is None))


def test_the_contracts_stateful_phase_passes_against_the_stateful_mock(petstore):
    result = stateful_phase(petstore)
    assert result.passed, (result.errors, result.gaps, {k: v.findings for k, v in result.operations.items()})
    assert result.operations["GET /pets/{id}"].statuses[200] > 0  # reads of what the sequences created
    assert result.operations["DELETE /pets/{id}"].statuses[204] > 0


def test_the_contract_of_a_mock_that_remembers_nothing_leaves_use_after_free_out_and_says_so(petstore):
    """Without --stateful the mock answers a deleted pet as before: that is the mock's declared behaviour, not a
    defect of the description, so the check is left out with the reason (docs/STATEFUL.md)."""
    from mockserver.contract.runner import RunOptions, run

    result = run(RunOptions(petstore, None, phases=["stateful"], max_examples=10, seed=1, force=False))
    assert result.passed, (result.errors, result.gaps, {k: v.findings for k, v in result.operations.items()})
    assert any(note.startswith("use_after_free left out: the mock checked remembers no write") for note in result.notes)
    assert not any("use_after_free" in note for note in stateful_phase(petstore).notes)  # checked when it remembers


def test_the_contracts_stateful_phase_follows_the_described_links():
    links = SHARED / "corpus" / "oai-link-example.yaml"
    if not links.is_file():
        pytest.skip(f"{links} is absent: the shared corpus is not checked out beside this one")
    result = stateful_phase(links)
    assert not result.errors and not result.gaps, (result.errors, result.gaps)
    # the description declares no 400: a negative step's rightful refusal (an unknown `state`) is its own gap, the
    # only finding allowed (whether a seed sends one no longer hangs on which modules the process had loaded)
    findings = {(label, key): finding for label, op in result.operations.items()
                for key, finding in op.findings.items()}
    assert all(key[0] == "status_code_conformance" and finding.title == "Undocumented status code"
               and finding.expected.startswith("Received: 400") for (_, key), finding in findings.items()), findings
    assert result.operations["GET /2.0/repositories/{username}/{slug}/pullrequests/{pid}"].statuses[200] > 0


def test_the_contracts_stateful_phase_catches_a_server_that_forgets_what_it_created(petstore):
    from stand_ins import Served

    writes, reads = create_app(petstore, stateful=True), create_app(petstore, stateful=True)

    def forgetful(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        """Remembers every write, but reads an item from a mock that never saw one."""
        item_read = environ["REQUEST_METHOD"] == "GET" and environ["PATH_INFO"].startswith("/v2/pets/")
        return (reads if item_read else writes)(environ, start_response)

    server = Served(forgetful)
    try:
        result = stateful_phase(petstore, server.url + "/v2")
    finally:
        server.stop()
    assert not result.passed
    found = {check for op in result.operations.values() for check, *_ in op.findings}
    assert "ensure_resource_availability" in found


def test_the_control_api_shows_each_sessions_written_collections(pets):
    pets.post("/pets", json={"name": "Rex", "secret": "s"}, headers=in_session("alice"))
    mine = {c["name"]: c for c in body(pets.get("/__mock/collections?session=alice"))["collections"]}
    assert sorted(mine) == ["badges", "owners", "pets"]
    assert mine["pets"]["count"] == 4 and mine["pets"]["written"] is True
    assert mine["pets"]["items"][-1]["name"] == "Rex" and "secret" not in mine["pets"]["items"][-1]
    everyone = {c["name"]: c for c in body(pets.get("/__mock/collections"))["collections"]}
    assert everyone["pets"]["count"] == 3 and everyone["pets"]["written"] is False
    pets.post("/__mock/reset", headers=in_session("alice"))
    assert body(pets.get("/__mock/collections?session=alice"))["collections"][2]["count"] == 3


@pytest.mark.browser
def test_the_dashboard_shows_the_written_collections_and_its_reset_undoes_the_writes():
    dashboard = pytest.importorskip("test_dashboard")  # skips without playwright
    if not dashboard.CHROMIUM.exists():
        pytest.skip(f"no browser: {dashboard.CHROMIUM} is missing")
    from mockserver.testing import MockServer

    with MockServer(SPEC, FIXTURES) as server, dashboard.sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(dashboard.CHROMIUM), args=dashboard.ARGS)
        try:
            page, outside = dashboard.open_page(browser, server.url)
            page.goto(server.url + "/__mock/")
            row = page.locator('#collections tr[data-collection="pets"]')
            dashboard.expect(row).to_contain_text("3")
            urllib.request.urlopen(urllib.request.Request(
                server.url + "/pets", data=b'{"name": "Rex"}', headers={"Content-Type": "application/json"}),
                timeout=10).close()
            dashboard.expect(row).to_contain_text("4")
            dashboard.expect(row).to_contain_text("written")
            page.locator("#reset").click()
            dashboard.expect(row).to_contain_text("3")
            assert outside == []
        finally:
            browser.close()


WHOLE_READS = {"HGETALL", "HKEYS", "HVALS", "HSCAN", "ZRANGE", "ZRANGEBYSCORE", "SMEMBERS", "SCAN", "KEYS"}


def watched(monitor: redis.Redis, key: str, call: Callable[[], Any], sent: bool = False) -> tuple[Any, list[str]]:
    """The answer to a call, and the commands Redis ran on a key meanwhile, by name (with `sent`: only those a
    client sent, not those a script ran)."""
    with monitor.monitor() as seen:
        response = call()
        assert response.status_code < 300, response.data
        marker = uuid.uuid4().hex
        monitor.echo(marker)
        names: list[str] = []
        for command in seen.listen():
            if marker in command["command"]:
                return response, names
            if key in command["command"] and not (sent and command["client_type"] == "lua"):
                names.append(command["command"].split(" ", 1)[0].upper())
    raise AssertionError("MONITOR ended")


@pytest.mark.slow  # a redis-server
def test_a_write_sends_redis_the_same_commands_at_10_and_at_1000_items(redis_url):
    """A create, an update and a delete each cost Redis the same commands whatever the collection holds, and none
    of them reads the whole collection: seen with MONITOR on a real redis-server, at 10 and at 1,000 pets."""
    app = create_app(SPEC, FIXTURES, state=redis_url)
    client, session = app.test_client(), {"X-Mock-Session": "growth"}
    monitor = redis.Redis.from_url(redis_url.split("?")[0])

    def fill(upto: int) -> None:
        for i in range(count(), upto):
            assert client.post("/pets", json={"name": f"P{i:04}"}, headers=session).status_code == 201

    def count() -> int:
        found = body(client.get("/__mock/collections?session=growth"))["collections"]
        return next(c["count"] for c in found if c["name"] == "pets")

    def commands() -> list[list[str]]:
        """What a create, an update and a delete of a pet cost Redis."""
        created, create = watched(monitor, PETS_OF_GROWTH, lambda: client.post("/pets", json={"name": "Zed"},
                                                                                headers=session))
        pet = body(created)["id"]
        _, update = watched(monitor, PETS_OF_GROWTH, lambda: client.patch(f"/pets/{pet}", json={"name": "Zoe"},
                                                                          headers=session))
        _, delete = watched(monitor, PETS_OF_GROWTH, lambda: client.delete(f"/pets/{pet}", headers=session))
        return [create, update, delete]

    fill(10)
    assert count() == 10
    small = commands()
    fill(1000)
    assert count() == 1000
    large = commands()
    assert small == large
    assert all(names and not WHOLE_READS & set(names) for names in large), large
    app.extensions[MOCK_KEY].pipeline.store.close()


PETS_OF_GROWTH = "live|growth|pets"


@pytest.mark.slow  # a redis-server
def test_a_read_of_a_written_collection_is_one_round_trip_to_redis_whether_it_changed_or_not(redis_url):
    """A read asks Redis once for what changed since the version it holds, be it nothing or another process's
    write: seen with MONITOR on a real redis-server, two apps standing for two processes."""
    reader, writer = (create_app(SPEC, FIXTURES, state=redis_url) for _ in range(2))
    session = {"X-Mock-Session": "growth"}
    monitor = redis.Redis.from_url(redis_url.split("?")[0])
    assert writer.test_client().post("/pets", json={"name": "Ann"}, headers=session).status_code == 201
    assert len(body(reader.test_client().get("/pets", headers=session))["data"]) == 4  # the view it holds
    read = partial(reader.test_client().get, "/pets", headers=session)
    _, unchanged = watched(monitor, PETS_OF_GROWTH, read, sent=True)
    assert writer.test_client().post("/pets", json={"name": "Bo"}, headers=session).status_code == 201
    listed, changed = watched(monitor, PETS_OF_GROWTH, read, sent=True)
    assert len(body(listed)["data"]) == 5
    assert unchanged == changed == ["EVALSHA"]
    for app in (reader, writer):
        app.extensions[MOCK_KEY].pipeline.store.close()


def test_a_valid_write_follows_no_ref_chain_per_request(monkeypatch):
    """The request path only looks up (issue 35): a valid create or PATCH is checked by validators rooted at their
    schemas at start-up, so it resolves only the `$ref`s inside what it checks (a page's items are `$ref: Pet`, the
    create's Location header), never the chains of `$ref`s from each request body's and each answer's place in the
    document to its schema (9 and 8 look-ups, each a walk of the document's pointers, before)."""
    import referencing._core

    client, session = create_app(SPEC, FIXTURES).test_client(), {"X-Mock-Session": "refs"}
    first = client.post("/pets", json={"name": "Ada", "kind": "cat"}, headers=session)  # each validator's first use
    assert client.patch(f"/pets/{body(first)['id']}", json={"tag": "old"}, headers=session).status_code == 200
    looked_up: list[str] = []
    lookup = referencing._core.Resolver.lookup

    def counted(self: Any, ref: str) -> Any:
        looked_up.append(ref)
        return lookup(self, ref)

    monkeypatch.setattr(referencing._core.Resolver, "lookup", counted)
    created = client.post("/pets", json={"name": "Bo", "kind": "dog"}, headers=session)
    assert created.status_code == 201 and body(created)["name"] == "Bo"
    assert len(looked_up) <= 2, looked_up
    looked_up.clear()
    patched = client.patch(f"/pets/{body(first)['id']}", json={"tag": "new"}, headers=session)
    assert patched.status_code == 200 and body(patched)["tag"] == "new"
    assert len(looked_up) <= 1, looked_up
    looked_up.clear()
    refused = client.patch(f"/pets/{body(first)['id']}", json={"kind": "fish"}, headers=session)
    assert refused.status_code == 400 and "/kind" in refused.get_data(as_text=True)  # told as before, where


@pytest.mark.slow  # a redis-server
def test_a_write_another_process_overtook_learns_what_changed_from_its_refused_write(redis_url):
    """A write whose process holds an old version is refused, and the refusal itself carries what the other
    process changed: the write is sent again at once, two calls to Redis in all (not a third to read the
    changes), and both writes land. Seen with MONITOR on a real redis-server, two apps standing for two
    processes."""
    apps = [create_app(SPEC, FIXTURES, state=redis_url) for _ in range(2)]
    first, second = (app.test_client() for app in apps)
    session = {"X-Mock-Session": "growth"}
    monitor = redis.Redis.from_url(redis_url.split("?")[0])
    ann = body(first.post("/pets", json={"name": "Ann"}, headers=session))  # the version `first` holds
    assert second.post("/pets", json={"name": "Bea"}, headers=session).status_code == 201  # moves it on
    patched, sent = watched(monitor, PETS_OF_GROWTH, lambda: first.patch(
        f"/pets/{ann['id']}", json={"tag": "seen"}, headers=session), sent=True)
    assert sent == ["EVALSHA", "EVALSHA"]  # refused with the changes, then written
    assert body(patched)["tag"] == "seen"
    for client in (first, second):
        listed = {p["name"]: p.get("tag") for p in body(client.get("/pets", headers=session))["data"]}
        assert listed == {"Ada": None, "Ann": "seen", "Bea": None, "Bo": None, "Cy": None}  # nothing lost
    created = body(first.post("/pets", json={"name": "Cal"}, headers=session))  # its id after Bea's: none twice
    ids = [p["id"] for p in body(second.get("/pets", headers=session))["data"]]
    assert created["id"] in ids and len(ids) == len(set(ids)) == 6
    for app in apps:
        app.extensions[MOCK_KEY].pipeline.store.close()


@pytest.mark.slow  # a redis-server
def test_written_collections_are_read_and_written_after_redis_forgets_its_scripts(redis_url):
    """SCRIPT FLUSH (as a restarted Redis, or an operator) between writes: the next read and write load their
    scripts again and answer as before, in this process and in another."""
    apps = [create_app(SPEC, FIXTURES, state=redis_url) for _ in range(2)]
    first, second = (app.test_client() for app in apps)
    session = {"X-Mock-Session": "flushed"}
    admin = redis.Redis.from_url(redis_url.split("?")[0])
    ann = body(first.post("/pets", json={"name": "Ann"}, headers=session))
    admin.script_flush()
    assert first.patch(f"/pets/{ann['id']}", json={"tag": "one"}, headers=session).status_code == 200
    admin.script_flush()
    assert body(second.get(f"/pets/{ann['id']}", headers=session))["tag"] == "one"
    admin.script_flush()
    assert second.post("/pets", json={"name": "Bea"}, headers=session).status_code == 201
    admin.script_flush()
    assert first.patch(f"/pets/{ann['id']}", json={"tag": "two"}, headers=session).status_code == 200
    listed = {p["name"]: p.get("tag") for p in body(second.get("/pets", headers=session))["data"]}
    assert listed == {"Ada": None, "Ann": "two", "Bea": None, "Bo": None, "Cy": None}
    for app in apps:
        app.extensions[MOCK_KEY].pipeline.store.close()


def test_a_write_makes_its_answer_once(monkeypatch):
    """A create and a PATCH answer the item as they checked it: served once for the check (and the answer) and
    once for the view reads answer from, not a third time for the answer; the answer of another shape (the pets'
    write answers are not the reads' schema) made once, checked and sent; and the answer is what reads serve."""
    from mockserver.pipeline.stateful import LiveCollection

    client, session = create_app(SPEC, FIXTURES).test_client(), {"X-Mock-Session": "once"}
    made: list[str] = []

    def counting(name: str) -> Callable[..., Any]:
        method = getattr(LiveCollection, name)

        def counted(self: LiveCollection, *args: Any) -> Any:
            made.append(name)
            return method(self, *args)
        return counted

    for name in ("serve", "project"):
        monkeypatch.setattr(LiveCollection, name, counting(name))
    created = client.post("/pets", json={"name": "Ann", "kind": "cat"}, headers=session)
    assert created.status_code == 201 and sorted(made) == ["project", "serve", "serve"], made
    made.clear()
    patched = client.patch(f"/pets/{body(created)['id']}", json={"tag": "new"}, headers=session)
    assert patched.status_code == 200 and sorted(made) == ["project", "serve", "serve"], made
    assert body(client.get(f"/pets/{body(created)['id']}", headers=session)) == body(patched)


@pytest.mark.slow  # a redis-server
def test_patches_of_one_pet_through_two_replicas_at_once_lose_no_field(redis_url):
    """Two replicas PATCH one pet at once, one its name, the other its tag, many times: each write refused because
    the other wrote first decides again from what the refusal carried, so neither overwrites the other's field
    with the value it held before; the pet ends with the last name and the last tag sent."""
    apps = [create_app(SPEC, FIXTURES, state=redis_url) for _ in range(2)]
    session = {"X-Mock-Session": "race"}
    pet = body(apps[0].test_client().post("/pets", json={"name": "Ann"}, headers=session))["id"]

    def patch(app: Any, field: str) -> None:
        client = app.test_client()
        for i in range(60):
            assert client.patch(f"/pets/{pet}", json={field: f"{field}{i}"}, headers=session).status_code == 200

    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(patch, app, field) for app in apps for field in ("name", "tag")]:
            done.result()
    for app in apps:
        found = body(app.test_client().get(f"/pets/{pet}", headers=session))
        assert (found["name"], found["tag"]) == ("name59", "tag59")
        app.extensions[MOCK_KEY].pipeline.store.close()
