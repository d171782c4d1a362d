"""What a stateful write's checks cost, and that they refuse what they refused: a written item is validated once
per schema it must fit (a list's page by its items' schema), a PATCH of an item this process checked validates
only the properties it changed where the item's schema judges each property on its own, and checks the item whole
where a keyword ties properties together (`dependentRequired`, `oneOf`). Proved on tiny pets descriptions."""
from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conftest import body, serving
from mockserver import create_app
from mockserver.pipeline import stateful
from mockserver.web.app import MOCK_KEY

PETS = Path(__file__).resolve().parents[1] / "data" / "pets"
SESSION = {"X-Mock-Session": "checks"}


def tiny(tmp_path: Path, pet: dict[str, Any], patch: dict[str, Any], ada: dict[str, Any] | None = None
         ) -> tuple[Path, Path]:
    """The pets description of the tests with the item schema reads answer (`Pet`) and the PATCH body's
    (`PetPatch`) replaced: one list, one item read, a create and a PATCH; `ada`: the one fixture pet, if not
    the usual one."""
    spec = yaml.safe_load((PETS / "openapi.yaml").read_text())
    spec["components"]["schemas"].update(Pet=pet, PetPatch=patch)
    by_id = [{"field": "id", "equals": {"path": "id"}}]
    fixtures = {"collections": {"pets": {"key": ["id"], "items": [ada or
                    {"id": 1, "name": "Ada", "kind": "dog", "tag": "t", "createdAt": "2024-01-01T00:00:00Z"}]}},
                "operations": {"listPets": {"list": {"from": "pets"}}, "getPet": {"item": {"from": "pets",
                                                                                         "where": by_id}},
                               "addPet": {"create": {"into": "pets"}}, "updatePet": {"update": {"in": "pets",
                                                                                                "where": by_id}}}}
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "openapi.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "fixtures" / "pets.yaml").write_text(yaml.safe_dump(fixtures))
    return tmp_path / "openapi.yaml", tmp_path / "fixtures"


@pytest.fixture()
def validated(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every value a written item's quick checks validate, in order."""
    seen: list[Any] = []
    fits = stateful.fits

    def counted(validator: Any, instance: Any) -> bool:
        seen.append(instance)
        return fits(validator, instance)

    monkeypatch.setattr(stateful, "fits", counted)
    yield seen


def test_a_write_validates_its_item_once_and_a_patch_what_it_changed(validated):
    """On the pets of the tests, whose list, item read, create and PATCH all answer `Pet`: a create validates
    the item once (not a second time inside a page of listPets); the first PATCH of a fixture pet validates it
    whole, then each PATCH of it, and of a created pet, validates only the changed property (the old item fitted
    already); the answers are those reads then serve."""
    client = create_app(PETS / "openapi.yaml", PETS / "fixtures").test_client()
    validated.clear()  # start-up's
    created = client.post("/pets", json={"name": "Ann", "kind": "cat"}, headers=SESSION)
    assert created.status_code == 201
    assert validated == [body(created)], validated  # the item, once; no page
    validated.clear()
    patched = client.patch(f"/pets/{body(created)['id']}", json={"tag": "new"}, headers=SESSION)
    assert patched.status_code == 200 and validated == ["new"], validated
    validated.clear()
    first = client.patch("/pets/1", json={"tag": "a"}, headers=SESSION)
    assert first.status_code == 200 and validated == [body(first)], validated  # a fixture's: whole, once
    validated.clear()
    again = client.patch("/pets/1", json={"kind": "dog", "tag": "b"}, headers=SESSION)
    assert again.status_code == 200 and sorted(validated) == ["b", "dog"], validated
    assert body(client.get("/pets/1", headers=SESSION)) == body(again)
    assert body(again) == {"id": 1, "name": "Ada", "kind": "dog", "createdAt": "2024-01-01T00:00:00Z", "tag": "b"}
    listed = body(client.get("/pets", headers=SESSION))["data"]
    assert [p.get("tag") for p in listed] == ["b", "new", None, None]


PET = {"type": "object", "required": ["id", "name", "createdAt"],
       "properties": {"id": {"type": "integer", "readOnly": True}, "name": {"type": "string"},
                      "kind": {"type": "string", "enum": ["cat", "dog"]}, "tag": {"type": "string", "maxLength": 3},
                      "createdAt": {"type": "string", "format": "date-time", "readOnly": True}}}
PATCH = {"type": "object", "properties": {"name": {"type": "string", "nullable": True},
                                          "kind": {"type": "string", "nullable": True},
                                          "tag": {"type": "string", "nullable": True}}}


def violation(client: Any, pet_id: int, patch: dict[str, Any]) -> str:
    """The message of a PATCH refused as the mock's own fault (what the item would break), nothing else said."""
    refused = client.patch(f"/pets/{pet_id}", json=patch, headers=SESSION)
    assert refused.status_code == 500, refused.data
    error = body(refused)["error"]
    assert error["code"] == "mock-contract-violation" and error["details"] == {}, error
    return str(error["message"])


def test_a_patch_of_independent_properties_is_refused_as_before(tmp_path):
    """A PATCH checked by the properties it changes is refused where the whole item would be, with the same
    error: a value the item's schema does not take (`tag` longer than reads allow), and a required property
    removed (`name: null`); nothing is stored."""
    client = create_app(*tiny(tmp_path, PET, PATCH)).test_client()
    pet = body(client.post("/pets", json={"name": "Ann", "tag": "ok"}, headers=SESSION))
    assert client.patch(f"/pets/{pet['id']}", json={"tag": "abc"}, headers=SESSION).status_code == 200
    assert violation(client, pet["id"], {"tag": "toolong"}) == (
        "the item written to 'pets' would break the getPet response schema at /tag (closest schema branch "
        "/properties/tag/maxLength), by a value of the request: 'toolong' is too long")
    assert violation(client, pet["id"], {"kind": "fish"}) == (
        "the item written to 'pets' would break the getPet response schema at /kind (closest schema branch "
        "/properties/kind/enum), by a value of the request: 'fish' is not one of ['cat', 'dog']")
    assert body(client.get(f"/pets/{pet['id']}", headers=SESSION))["tag"] == "abc"


@pytest.mark.parametrize("rule, item, patch, branch, words", [
    ({"dependentRequired": {"tag": ["kind"]}}, {"name": "Ann", "kind": "cat", "tag": "t"}, {"kind": None},
     "/dependentRequired", "'kind' is a dependency of 'tag'"),
    ({"oneOf": [{"properties": {"kind": {"const": "cat"}}, "required": ["kind"]},
                {"properties": {"tag": {"const": "t"}}, "required": ["tag"]}]},
     {"name": "Ann", "kind": "cat"}, {"tag": "t"}, "/oneOf",
     "is valid under each of {'properties': {'tag': {'const': 't'}}, 'required': ['tag']}, {'properties': "
     "{'kind': {'const': 'cat'}}, 'required': ['kind']}"),
    ({"if": {"properties": {"kind": {"const": "cat"}}, "required": ["kind"]}, "then": {"required": ["tag"]}},
     {"name": "Ann", "kind": "dog"}, {"kind": "cat"}, "/then/required", "'tag' is a required property"),
])
def test_a_patch_that_breaks_a_rule_across_properties_is_refused_as_before(tmp_path, validated, rule, item, patch,
                                                                           branch, words):
    """Where the item's schema ties properties together (`dependentRequired`, `oneOf`, `if`), a PATCH is checked
    whole: one that changes a property fitting its own schema, yet breaks the rule across them, is refused as
    before, with the same error, and nothing is stored."""
    client = create_app(*tiny(tmp_path, {**PET, **rule}, PATCH)).test_client()
    pet = body(client.post("/pets", json=item, headers=SESSION))
    validated.clear()
    renamed = client.patch(f"/pets/{pet['id']}", json={"name": "Bea"}, headers=SESSION)
    assert renamed.status_code == 200
    assert validated and all(isinstance(v, dict) for v in validated)  # whole: the item (or a page of it)
    stored = body(client.get(f"/pets/{pet['id']}", headers=SESSION))
    message = violation(client, pet["id"], patch)
    assert message.startswith("the item written to 'pets' would break the getPet response schema at / (closest "
                              f"schema branch {branch}), by a value of the request: ") and message.endswith(words)
    assert body(client.get(f"/pets/{pet['id']}", headers=SESSION)) == stored and stored["name"] == "Bea"


@pytest.mark.slow  # a redis-server
def test_a_patch_of_an_item_another_process_wrote_is_checked_whole(redis_url, validated):
    """Over Redis, an item another replica wrote (or one written by an older mock) was not checked by this
    process: its PATCH validates it whole; the next PATCH there validates only what it changes."""
    apps = [create_app(PETS / "openapi.yaml", PETS / "fixtures", state=redis_url) for _ in range(2)]
    first, second = (app.test_client() for app in apps)
    pet = body(first.post("/pets", json={"name": "Ann"}, headers=SESSION))
    second.get("/pets", headers=SESSION)  # its view holds the pet, as another process wrote it
    validated.clear()
    patched = second.patch(f"/pets/{pet['id']}", json={"tag": "one"}, headers=SESSION)
    assert patched.status_code == 200 and validated == [body(patched)], validated
    validated.clear()
    assert second.patch(f"/pets/{pet['id']}", json={"tag": "two"}, headers=SESSION).status_code == 200
    assert validated == ["two"], validated
    for app in apps:
        app.extensions[MOCK_KEY].pipeline.store.close()


KIND_OR_TAG = {"oneOf": [{"required": ["kind"]}, {"required": ["tag"]}]}  # one of the two, never both


@pytest.mark.parametrize("sent, made", [({"name": "Ann", "kind": "cat"}, []), ({"name": "Ann", "tag": "t"}, []),
                                        ({"name": "Ann"}, ["kind"])])
def test_a_create_its_one_of_allows_is_stored_as_it_fits(tmp_path, sent, made):
    """An item schema whose `oneOf` takes `kind` or `tag` (both optional properties): a create sending one of
    them is answered 201 with an item holding that one only (the mock makes up no value for the other, which
    would fit both branches); one sending neither gets a made-up `kind`, the first the mock fills; the item
    fits the schema, and reads serve it as the create answered it."""
    schema = {**PET, **KIND_OR_TAG}
    ada = {"id": 1, "name": "Ada", "kind": "dog", "createdAt": "2024-01-01T00:00:00Z"}
    client = create_app(*tiny(tmp_path, schema, PATCH, ada)).test_client()
    created = client.post("/pets", json=sent, headers=SESSION)
    assert created.status_code == 201, created.data
    pet = body(created)
    assert pet.items() >= sent.items() and sorted(pet.keys() - sent.keys()) == sorted(["id", "createdAt", *made])
    jsonschema.Draft202012Validator(schema).validate(pet)
    assert body(client.get(f"/pets/{pet['id']}", headers=SESSION)) == pet
    assert [p for p in body(client.get("/pets", headers=SESSION))["data"] if p["id"] == pet["id"]] == [pet]


def test_a_create_that_fits_no_branch_is_the_mocks_clear_error(tmp_path):
    """Where the item does not fit even without what the mock filled (both `kind` and `tag` sent, which the
    create's body allows), the answer is the mock's own error saying which rule, not a bare 500; nothing is
    stored."""
    ada = {"id": 1, "name": "Ada", "kind": "dog", "createdAt": "2024-01-01T00:00:00Z"}
    client = create_app(*tiny(tmp_path, {**PET, **KIND_OR_TAG}, PATCH, ada)).test_client()
    refused = client.post("/pets", json={"name": "Ann", "kind": "cat", "tag": "t"}, headers=SESSION)
    assert refused.status_code == 500, refused.data
    error = body(refused)["error"]
    assert error["code"] == "mock-contract-violation" and "closest schema branch /oneOf" in error["message"], error
    assert [p["name"] for p in body(client.get("/pets", headers=SESSION))["data"]] == ["Ada"]


@pytest.mark.parametrize("rule", [
    {"oneOf": [{"properties": {"kind": {"const": "cat"}}, "required": ["kind"]},
               {"properties": {"tag": {"const": "t"}}, "required": ["tag"]}]},
    {"if": {"properties": {"kind": {"const": "cat"}}, "required": ["kind"]}, "then": {"required": ["tag"]}},
])
def test_a_patch_answers_the_item_reads_serve(tmp_path, rule):
    """Where the item schema has a `oneOf` of consts or an `if`/`then`: a PATCH of a created pet (whose `tag`
    the mock made up) and of the fixture pet answers the very item reads then serve, made-up `tag` included;
    the create's answer too."""
    client = create_app(*tiny(tmp_path, {**PET, **rule}, PATCH)).test_client()
    created = client.post("/pets", json={"name": "Ann", "kind": "cat"}, headers=SESSION)
    assert created.status_code == 201, created.data
    pet = body(created)
    assert body(client.get(f"/pets/{pet['id']}", headers=SESSION)) == pet
    for pet_id in (pet["id"], 1):
        patched = client.patch(f"/pets/{pet_id}", json={"name": "Bea"}, headers=SESSION)
        assert patched.status_code == 200, patched.data
        read = body(client.get(f"/pets/{pet_id}", headers=SESSION))
        assert body(patched) == read and read["name"] == "Bea" and "tag" in read, (body(patched), read)


def test_a_patch_refused_keeps_what_the_item_held(tmp_path):
    """A PATCH of the fixture pet (never checked by this process: checked whole) that breaks a rule across
    properties is refused as before: what the item held already (`tag`, which needs `kind`) is never left out
    to make the item fit; only what the mock itself made up for this write may be."""
    client = create_app(*tiny(tmp_path, {**PET, "dependentRequired": {"tag": ["kind"]}}, PATCH)).test_client()
    message = violation(client, 1, {"kind": None})
    assert "closest schema branch /dependentRequired" in message and message.endswith(
        "'kind' is a dependency of 'tag'"), message
    assert body(client.get("/pets/1", headers=SESSION))["tag"] == "t"


def call(port: int, method: str, path: str, sent: Any = None) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request(method, path, json.dumps(sent) if sent is not None else None,
                       {"Content-Type": "application/json", **SESSION})
    response = connection.getresponse()
    return response.status, json.loads(response.read() or b"null")


@pytest.mark.slow  # two mock servers and a redis-server
def test_two_replicas_serve_a_one_of_create_as_it_was_answered(tmp_path, redis_url):
    """`mockserver serve` twice on one Redis, the item schema's `oneOf` taking `kind` or `tag`: a create sent to
    one replica answers 201 without a made-up `tag`; the other replica reads it as answered, and its PATCH
    answers what both then read."""
    ada = {"id": 1, "name": "Ada", "kind": "dog", "createdAt": "2024-01-01T00:00:00Z"}
    spec, fixtures = tiny(tmp_path, {**PET, **KIND_OR_TAG}, PATCH, ada)
    args = ("--spec", str(spec), "--fixtures", str(fixtures), "--state", redis_url, "--log-level", "warning")
    with serving(*args) as (_, first), serving(*args) as (_, second):
        status, pet = call(first, "POST", "/pets", {"name": "Ann", "kind": "cat"})
        assert status == 201 and "tag" not in pet, pet
        assert call(second, "GET", f"/pets/{pet['id']}") == (200, pet)
        status, patched = call(second, "PATCH", f"/pets/{pet['id']}", {"name": "Bea"})
        assert status == 200 and patched == {**pet, "name": "Bea"}, patched
        assert call(first, "GET", f"/pets/{pet['id']}") == call(second, "GET", f"/pets/{pet['id']}") == (200, patched)
