"""`mockserver diff OLD NEW`: classic changes classified for clients with both locations, the evidence of fixtures
and of the journal, the formats, the exit codes."""
from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, SHARED
from mockserver.cli import main
from mockserver.spec.documents import read_document
from mockserver.spec.index import SpecIndex
from mockserver.testing import MockServer
from mockserver.tools.diff import Change, diff


def _base() -> dict[str, Any]:
    """A small description touching every kind of change the diff knows."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "Shop", "version": "1"},
        "paths": {
            "/items": {
                "get": {
                    "operationId": "listItems",
                    "parameters": [
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                        {"name": "color", "in": "query", "schema": {"$ref": "#/components/schemas/Color"}},
                        {"name": "q", "in": "query", "schema": {"type": "string", "maxLength": 50}},
                    ],
                    "responses": {
                        "200": {"description": "a page", "content": {"application/json": {"schema": {
                            "type": "object", "required": ["data"], "properties": {
                                "data": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}}}}}},
                        "404": {"description": "none", "content": {"application/json": {"schema": {"type": "object"}}}},
                        "503": {"description": "busy", "headers": {"Retry-After": {"required": True, "schema": {
                            "type": "integer", "maximum": 60}}}},
                    },
                },
                "post": {
                    "operationId": "createItem",
                    "requestBody": {"required": True, "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/NewItem"}},
                        "application/x-www-form-urlencoded": {"schema": {"$ref": "#/components/schemas/NewItem"}}}},
                    "responses": {"201": {"description": "made", "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Item"}},
                        "application/xml": {"schema": {"type": "string"}}}}},
                },
            },
            "/items/{id}": {
                "delete": {
                    "operationId": "deleteItem",
                    "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "responses": {"204": {"description": "gone"}},
                },
            },
        },
        "components": {"schemas": {
            "Color": {"type": "string", "enum": ["red", "green", "blue"]},
            "Item": {"type": "object", "required": ["id", "color"], "properties": {
                "id": {"type": "string"}, "color": {"$ref": "#/components/schemas/Color"},
                "name": {"type": "string", "maxLength": 20}, "price": {"type": "integer"},
                "note": {"type": "string"}, "weight": {"type": "number"}}},
            "NewItem": {"type": "object", "required": ["color"], "properties": {
                "color": {"$ref": "#/components/schemas/Color"}, "name": {"type": "string", "pattern": "^[a-z]+$"},
                "price": {"type": "integer", "minimum": 0}}},
        }},
    }


def _write(folder: Path, name: str, data: dict[str, Any]) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _diff(tmp_path: Path, edit: Callable[[dict[str, Any]], Any]) -> list[Change]:
    new = _base()
    edit(new)
    return diff(SpecIndex(_write(tmp_path, "old.yaml", _base())), SpecIndex(_write(tmp_path, "new.yaml", new)))


def _get(d: dict[str, Any]) -> dict[str, Any]:
    return d["paths"]["/items"]["get"]


def _post(d: dict[str, Any]) -> dict[str, Any]:
    return d["paths"]["/items"]["post"]


def _schemas(d: dict[str, Any]) -> dict[str, Any]:
    return d["components"]["schemas"]


CASES: list[tuple[str, Callable[[dict[str, Any]], Any], str, bool, str]] = [
    # (name, edit, kind, breaking, side)
    ("operation removed", lambda d: d["paths"]["/items/{id}"].pop("delete"), "operation-removed", True, "request"),
    ("operation added", lambda d: d["paths"]["/items/{id}"].update(
        get={"operationId": "getItem", "responses": {"200": {"description": "x"}}}), "operation-added", False,
     "request"),
    ("response removed", lambda d: _get(d)["responses"].pop("404"), "response-removed", True, "response"),
    ("response added", lambda d: _get(d)["responses"].update({"400": {"description": "bad"}}), "response-added",
     False, "response"),
    ("response header removed", lambda d: _get(d)["responses"]["503"].pop("headers"), "header-removed", True,
     "response"),
    ("response header bound widened", lambda d: _get(d)["responses"]["503"]["headers"]["Retry-After"]["schema"].update(
        maximum=120), "bound-widened", True, "response"),
    ("required parameter added", lambda d: _get(d)["parameters"].append(
        {"name": "shop", "in": "header", "required": True, "schema": {"type": "string"}}),
     "parameter-added-required", True, "request"),
    ("optional parameter added", lambda d: _get(d)["parameters"].append(
        {"name": "sort", "in": "query", "schema": {"type": "string"}}), "parameter-added", False, "request"),
    ("parameter removed", lambda d: _get(d)["parameters"].pop(2), "parameter-removed", True, "request"),
    ("parameter renamed", lambda d: _get(d)["parameters"][2].update(name="query"), "parameter-renamed", True,
     "request"),
    ("parameter moved", lambda d: _get(d)["parameters"][2].update({"in": "header"}), "parameter-moved", True,
     "request"),
    ("parameter made required", lambda d: _get(d)["parameters"][0].update(required=True),
     "parameter-made-required", True, "request"),
    ("request bound narrowed", lambda d: _get(d)["parameters"][0]["schema"].update(maximum=50), "bound-narrowed",
     True, "request"),
    ("request bound widened", lambda d: _get(d)["parameters"][2]["schema"].pop("maxLength"), "bound-widened",
     False, "request"),
    ("response bound widened", lambda d: _schemas(d)["Item"]["properties"]["name"].update(maxLength=40),
     "bound-widened", True, "response"),
    ("request pattern changed", lambda d: _schemas(d)["NewItem"]["properties"]["name"].update(pattern="^[a-z]{2,}$"),
     "pattern-narrowed", True, "request"),
    ("request format added", lambda d: _schemas(d)["NewItem"]["properties"]["name"].update(format="email"),
     "format-narrowed", True, "request"),
    ("request pattern removed", lambda d: _schemas(d)["NewItem"]["properties"]["name"].pop("pattern"),
     "pattern-widened", False, "request"),
    ("type changed", lambda d: _schemas(d)["Item"]["properties"]["price"].update(type="string"), "type-changed",
     True, "response"),
    ("response type widened", lambda d: _schemas(d)["Item"]["properties"]["price"].update(type="number"),
     "type-changed", True, "response"),
    ("response type narrowed", lambda d: _schemas(d)["Item"]["properties"]["weight"].update(type="integer"),
     "type-changed", False, "response"),
    ("response $ref made nullable", lambda d: _schemas(d)["Item"]["properties"].update(
        color={"anyOf": [{"$ref": "#/components/schemas/Color"}, {"type": "null"}]}), "made-nullable", True,
     "response"),
    ("request type widened", lambda d: _schemas(d)["NewItem"]["properties"]["price"].update(type="number"),
     "type-changed", False, "request"),
    ("response property removed", lambda d: _schemas(d)["Item"]["properties"].pop("note"), "property-removed", True,
     "response"),
    ("request property removed", lambda d: _schemas(d)["NewItem"]["properties"].pop("price"),
     "property-removed", True, "request"),
    ("request property made required", lambda d: _schemas(d)["NewItem"]["required"].append("name"),
     "property-made-required", True, "request"),
    ("response property made required", lambda d: _schemas(d)["Item"]["required"].append("name"),
     "property-made-required", False, "response"),
    ("response property made optional", lambda d: _schemas(d)["Item"]["required"].remove("color"),
     "property-made-optional", True, "response"),
    ("request property added as required", lambda d: (_schemas(d)["NewItem"]["properties"].update(
        sku={"type": "string"}), _schemas(d)["NewItem"]["required"].append("sku")),
     "property-added-required", True, "request"),
    ("response property made nullable", lambda d: _schemas(d)["Item"]["properties"]["name"].update(nullable=True),
     "made-nullable", True, "response"),
    ("request property made nullable", lambda d: _schemas(d)["NewItem"]["properties"]["name"].update(nullable=True),
     "made-nullable", False, "request"),
    ("response media type removed", lambda d: _post(d)["responses"]["201"]["content"].pop("application/xml"),
     "media-type-removed", True, "response"),
    ("request media type removed", lambda d: _post(d)["requestBody"]["content"].pop(
        "application/x-www-form-urlencoded"), "media-type-removed", True, "request"),
    ("security added", lambda d: (_post(d).update(security=[{"bearer": []}]), d["components"].update(
        securitySchemes={"bearer": {"type": "http", "scheme": "bearer"}})), "security-added", True, "request"),
    ("request body removed", lambda d: _post(d).pop("requestBody"), "request-body-removed", True, "request"),
    ("request body made required", lambda d: d["paths"]["/items/{id}"]["delete"].update(requestBody={
        "required": True, "content": {"application/json": {"schema": {"type": "object"}}}}),
     "request-body-made-required", True, "request"),
]


@pytest.mark.parametrize("name, edit, kind, breaking, side", CASES, ids=[c[0] for c in CASES])
def test_each_kind_of_change_is_found_and_classified(tmp_path: Path, name: str, edit: Callable[[dict[str, Any]], Any],
                                                     kind: str, breaking: bool, side: str) -> None:
    changes = _diff(tmp_path, edit)
    assert [(c.kind, c.breaking, c.side) for c in changes] == [(kind, breaking, side)], [c.message for c in changes]
    change = changes[0]
    assert change.old is not None and change.new is not None
    for location, file in ((change.old, "old.yaml"), (change.new, "new.yaml")):  # both places, line of the pointer
        assert Path(location.file).name == file
        assert location.line == read_document(Path(location.file)).line(location.pointer)


def _nothing(d: dict[str, Any]) -> None:
    return None


def _close_item(d: dict[str, Any]) -> None:
    _schemas(d)["Item"].update(additionalProperties=False)
    _schemas(d)["Item"]["properties"]["id"].update(readOnly=True)


def _animals(d: dict[str, Any]) -> None:
    """A pet by kind (`discriminator` with a mapping), sent by POST /animals only and answered by GET /animals only."""
    pet = {"oneOf": [{"$ref": "#/components/schemas/Cat"}, {"$ref": "#/components/schemas/Dog"}],
           "discriminator": {"propertyName": "kind", "mapping": {"cat": "#/components/schemas/Cat",
                                                                 "dog": "#/components/schemas/Dog"}}}
    kind = {"type": "object", "required": ["kind"], "properties": {"kind": {"type": "string"}}}
    _schemas(d).update(Pet=pet, Cat=kind, Dog=kind, Bird=kind)
    ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}
    d["paths"]["/animals"] = {
        "get": {"operationId": "getAnimal", "responses": {"200": {"description": "a pet", "content": ref}}},
        "post": {"operationId": "addAnimal", "requestBody": {"required": True, "content": ref},
                 "responses": {"204": {"description": "added"}}}}


def _mapping(d: dict[str, Any]) -> dict[str, Any]:
    return _schemas(d)["Pet"]["discriminator"]["mapping"]


STRICT_CASES: list[tuple[str, Callable[[dict[str, Any]], Any], Callable[[dict[str, Any]], Any], str, bool, str]] = [
    # (name, edit of both, edit of NEW, kind, breaking, side): what a strict client (generated code) feels
    ("response object opened", _close_item, lambda d: _schemas(d)["Item"].pop("additionalProperties"),
     "object-opened", True, "response"),
    ("request object closed", _nothing, lambda d: _schemas(d)["NewItem"].update(additionalProperties=False),
     "object-closed", True, "request"),
    ("request object closed by unevaluatedProperties", _nothing,
     lambda d: _schemas(d)["NewItem"].update(unevaluatedProperties=False), "object-closed", True, "request"),
    ("response object closed", _nothing, lambda d: _schemas(d)["Item"].update(additionalProperties=False),
     "object-closed", False, "response"),
    ("request multipleOf added", _nothing, lambda d: _schemas(d)["NewItem"]["properties"]["price"].update(
        multipleOf=5), "multiple-of-narrowed", True, "request"),
    ("response multipleOf added", _nothing, lambda d: _schemas(d)["Item"]["properties"]["price"].update(
        multipleOf=5), "multiple-of-narrowed", False, "response"),
    ("request multipleOf divided", lambda d: _schemas(d)["NewItem"]["properties"]["price"].update(multipleOf=10),
     lambda d: _schemas(d)["NewItem"]["properties"]["price"].update(multipleOf=5), "multiple-of-widened", False,
     "request"),
    ("request property made readOnly", _nothing, lambda d: _schemas(d)["NewItem"]["properties"]["name"].update(
        readOnly=True), "made-read-only", True, "request"),
    ("response property made readOnly", _nothing, lambda d: _schemas(d)["Item"]["properties"]["name"].update(
        readOnly=True), "made-read-only", False, "response"),
    ("response property made writeOnly", _nothing, lambda d: _schemas(d)["Item"]["properties"]["note"].update(
        writeOnly=True), "made-write-only", True, "response"),
    ("request property made writeOnly", _nothing, lambda d: _schemas(d)["NewItem"]["properties"]["name"].update(
        writeOnly=True), "made-write-only", False, "request"),
    ("response property no longer readOnly", _close_item,
     lambda d: _schemas(d)["Item"]["properties"]["id"].pop("readOnly"), "no-longer-read-only", False, "response"),
    ("response discriminator value added", _animals, lambda d: _mapping(d).update(bird="#/components/schemas/Bird"),
     "discriminator-widened", True, "response"),
    ("request discriminator value removed", _animals, lambda d: _mapping(d).pop("dog"), "discriminator-narrowed",
     True, "request"),
    ("discriminator value mapped elsewhere", _animals, lambda d: _mapping(d).update(dog="#/components/schemas/Bird"),
     "discriminator-changed", True, "request"),
]


@pytest.mark.parametrize("name, both, edit, kind, breaking, side", STRICT_CASES, ids=[c[0] for c in STRICT_CASES])
def test_what_a_strict_client_feels_is_found_and_classified(tmp_path: Path, name: str,
                                                            both: Callable[[dict[str, Any]], Any],
                                                            edit: Callable[[dict[str, Any]], Any], kind: str,
                                                            breaking: bool, side: str) -> None:
    """Closed and open objects, multipleOf, readOnly/writeOnly and discriminator mappings, each breaking or not by
    the side it stands on (a discriminator's schema stands on both: each side's verdict is checked)."""
    old, new = _base(), _base()
    both(old)
    both(new)
    edit(new)
    changes = diff(SpecIndex(_write(tmp_path, "old.yaml", old)), SpecIndex(_write(tmp_path, "new.yaml", new)))
    found = [(c.kind, c.breaking, c.side) for c in changes]
    assert (kind, breaking, side) in found and {c.kind for c in changes} == {kind}, [c.message for c in changes]
    for change in changes:
        assert change.old is not None and change.new is not None
        assert change.new.line == read_document(Path(change.new.file)).line(change.new.pointer)


def test_a_discriminator_flips_between_request_and_response(tmp_path: Path) -> None:
    def between(edit: Callable[[dict[str, Any]], Any]) -> set[tuple[str, str, bool]]:
        old, new = _base(), _base()
        _animals(old)
        _animals(new)
        edit(new)
        changes = diff(SpecIndex(_write(tmp_path, "old.yaml", old)), SpecIndex(_write(tmp_path, "new.yaml", new)))
        return {(c.kind, c.side, c.breaking) for c in changes}

    assert between(lambda d: _mapping(d).pop("dog")) == {("discriminator-narrowed", "request", True),
                                                         ("discriminator-narrowed", "response", False)}
    assert between(lambda d: _mapping(d).update(bird="#/components/schemas/Bird")) == {
        ("discriminator-widened", "request", False), ("discriminator-widened", "response", True)}
    assert between(lambda d: _schemas(d)["Pet"]["discriminator"].update(propertyName="type")) == {
        ("discriminator-changed", "request", True), ("discriminator-changed", "response", True)}


def test_a_shared_enum_narrowed_flips_between_request_and_response(tmp_path: Path) -> None:
    """Narrowing breaks clients sending the value (the query parameter, the body); the response side only reads."""
    changes = _diff(tmp_path, lambda d: _schemas(d)["Color"].update(enum=["red", "green"]))
    assert {(c.kind, c.side, c.breaking) for c in changes} == {("enum-narrowed", "request", True),
                                                               ("enum-narrowed", "response", False)}
    request = next(c for c in changes if c.side == "request")
    assert {s.operation for s in request.sites} == {"GET /items", "POST /items"}
    assert request.old.pointer == "/components/schemas/Color/enum" and '"blue"' in request.message
    widened = _diff(tmp_path, lambda d: _schemas(d)["Color"]["enum"].append("black"))
    assert {(c.kind, c.side, c.breaking) for c in widened} == {("enum-widened", "request", False),
                                                               ("enum-widened", "response", True)}


def test_refs_are_followed_across_files(tmp_path: Path) -> None:
    old, new = _base(), _base()
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    for folder, data, values in (("old", old, ["red", "green", "blue"]), ("new", new, ["red", "green"])):
        _schemas(data)["Color"] = {"$ref": "colors.yaml#/Color"}
        (tmp_path / folder / "colors.yaml").write_text(f"Color:\n  type: string\n  enum: {json.dumps(values)}\n")
    changes = diff(SpecIndex(_write(tmp_path / "old", "api.yaml", old)),
                   SpecIndex(_write(tmp_path / "new", "api.yaml", new)))
    request = next(c for c in changes if c.side == "request")
    assert Path(request.old.file) == tmp_path / "old" / "colors.yaml" and request.old.line == 3
    assert Path(request.new.file) == tmp_path / "new" / "colors.yaml" and request.old.pointer == "/Color/enum"


def test_a_renamed_path_parameter_is_the_same_operation(tmp_path: Path) -> None:
    def rename(d: dict[str, Any]) -> None:
        d["paths"]["/items/{itemId}"] = d["paths"].pop("/items/{id}")
        d["paths"]["/items/{itemId}"]["delete"]["parameters"][0]["name"] = "itemId"
    assert _diff(tmp_path, rename) == []


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["diff", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_exit_codes_and_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _write(tmp_path, "old.yaml", _base())
    widened = _base()
    _get(widened)["parameters"].append({"name": "sort", "in": "query", "schema": {"type": "string"}})
    added = _write(tmp_path, "added.yaml", widened)
    narrowed = _base()
    _schemas(narrowed)["Color"]["enum"].remove("blue")
    broken = _write(tmp_path, "broken.yaml", narrowed)
    assert _cli(capsys, str(old), str(added), "--fail-on", "breaking")[0] == 0
    code, out, _ = _cli(capsys, str(old), str(added), "--fail-on", "any")
    assert code == 1 and "ok [parameter-added, request]" in out
    code, out, _ = _cli(capsys, str(old), str(broken), "--fail-on", "breaking")
    assert code == 1 and "BREAKING [enum-narrowed, request]" in out
    assert _cli(capsys, str(old), str(broken))[0] == 0  # no --fail-on: a report only
    code, out, _ = _cli(capsys, str(old), str(broken), "--format", "json")
    report = json.loads(out)
    assert report["breaking"] == 1 and {c["kind"] for c in report["changes"]} == {"enum-narrowed"}
    request = next(c for c in report["changes"] if c["side"] == "request")
    assert request["old"]["pointer"] == "/components/schemas/Color/enum" and request["old"]["line"]
    assert request["operations"] == ["GET /items", "POST /items"]
    assert request["sites"] == [{"operation": "GET /items", "status": None, "place": "/query/color"},
                                {"operation": "POST /items", "status": None, "place": "/body/color"}]
    code, out, _ = _cli(capsys, str(old), str(broken), "--format", "markdown")
    assert out.startswith("### `mockserver diff`: breaks clients") and "| 🔴 breaking |" in out


def test_unusable_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _write(tmp_path, "old.yaml", _base())
    bad = tmp_path / "bad.yaml"
    bad.write_text("openapi: 3.0.3\npaths: [\n")
    journal = tmp_path / "journal.json"
    journal.write_text('{"requests": 3}')
    unfit = tmp_path / "unfit"
    unfit.mkdir()
    (unfit / "ops.yaml").write_text("operations:\n  noSuchOperation:\n    respond:\n      - status: 200\n")
    entries = tmp_path / "entries.json"
    entries.write_text('{"requests": [{"method": "GET", "path": "/items", "status": "200"}]}')
    for args, named in (([str(old), str(tmp_path / "missing.yaml")], "missing.yaml"),
                        ([str(old), str(bad)], "bad.yaml"),
                        ([str(old), str(old), "--journal", str(journal)], "journal.json"),
                        ([str(old), str(old), "--journal", str(entries)], "entries.json"),
                        ([str(old), str(old), "--url", "http://127.0.0.1:9"], "127.0.0.1:9"),
                        ([str(old), str(old), "--fixtures", str(unfit)], "unfit"),
                        ([str(old), str(old), "--journal", str(tmp_path / "none.json")], "none.json"),
                        ([str(old), str(old), "--fixtures", str(tmp_path / "nofixtures")], "nofixtures")):
        code, out, err = _cli(capsys, *args)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and named in err, err


# -- Kindgi ----------------------------------------------------------------------------------------------
def test_kindgi_against_itself_reports_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, str(KINDGI_SPEC), str(KINDGI_SPEC), "--fixtures", str(KINDGI_FIXTURES),
                        "--fail-on", "any")
    assert code == 0
    assert "0 change(s), 0 breaking" in out and "no changes" in out and "rejects" not in out
    assert re.search(r"evidence checked against NEW: \d+ fixture answers", out)
    assert re.search(r"in [\d.]+ s \(reading both [\d.]+ s, comparing [\d.]+ s, evidence [\d.]+ s\)", out)


def _kindgi_edited(folder: Path) -> Path:
    """The current description with one breaking edit per kind: a removed field, a narrowed enum, a new required
    parameter."""
    text = KINDGI_SPEC.read_text()
    edits = [("        - custom\n        - corrections\n", "        - custom\n"),
             ("        description:\n          type: string\n        spec:\n          type: object\n",
              "        spec:\n          type: object\n"),
             ("        - $ref: '#/components/parameters/Cursor'\n        - name: kind\n",
              "        - $ref: '#/components/parameters/Cursor'\n        - name: region\n          in: query\n"
              "          required: true\n          schema: {type: string}\n        - name: kind\n")]
    for before, after in edits:
        assert text.count(before) >= 1, before
        text = text.replace(before, after, 1)
    path = folder / "kindgi.yaml"
    path.write_text(text)
    return path


def _test_sets() -> list[dict[str, Any]]:
    data = yaml.safe_load((KINDGI_FIXTURES / "collections" / "test-sets.yaml").read_text())
    return data["collections"]["testSets"]["items"]


def _examples_with(field: str, value: Any = None) -> int:
    """The listTestSets examples the mock serves whose test sets carry the field (with that value)."""
    media = SpecIndex(KINDGI_SPEC).operations["listTestSets"].responses["200"].content["application/json"]
    return sum(any(field in s and (value is None or s[field] == value) for s in example.get("data", []))
               for example in media.examples.values())


def test_kindgi_breaking_edits_with_the_fixtures_as_evidence(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    new = _kindgi_edited(tmp_path)
    code, out, _ = _cli(capsys, str(KINDGI_SPEC), str(new), "--fixtures", str(KINDGI_FIXTURES), "--format", "json",
                        "--fail-on", "breaking")
    assert code == 1
    report = json.loads(out)
    by_kind = {(c["kind"], c["side"]): c for c in report["changes"]}
    assert set(by_kind) == {("property-removed", "response"), ("enum-narrowed", "response"),
                            ("enum-narrowed", "request"), ("parameter-added-required", "request")}
    items = _test_sets()
    removed = by_kind[("property-removed", "response")]
    assert removed["old"]["pointer"] == "/components/schemas/TestSet/properties/description"
    assert removed["evidence"]["fixture answers"]["count"] == (sum("description" in i for i in items)
                                                               + _examples_with("description"))
    assert re.match(r"testSets\[\d+\] \(.*test-sets.yaml:\d+\): data\[\d+\]\.description = '",
                    removed["evidence"]["fixture answers"]["instance"])
    narrowed = by_kind[("enum-narrowed", "response")]
    assert not narrowed["breakingForClients"] and narrowed["breaking"]  # breaking by evidence: answers served today
    corrections = sum(i.get("kind") == "corrections" for i in items) + _examples_with("kind", "corrections")
    assert corrections and narrowed["evidence"]["fixture answers"]["count"] == corrections
    assert ".kind = 'corrections'" in narrowed["evidence"]["fixture answers"]["instance"]
    required = by_kind[("parameter-added-required", "request")]
    assert required["breaking"] and required["new"]["pointer"] == "/paths/~1v1~1test-sets/get/parameters/2"
    assert report["unexplained"] == []


def test_kindgi_journal_replayed_through_new(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Real calls made to the mock of OLD, read from its journal (saved and live): requests NEW rejects are
    counted against the change that rejects them."""
    new = _kindgi_edited(tmp_path)
    with MockServer(KINDGI_SPEC, KINDGI_FIXTURES) as mock:
        def call(path: str) -> None:
            with urllib.request.urlopen(urllib.request.Request(mock.url + path, headers=DEMO)) as answer:
                answer.read()

        for path in ("/v1/test-sets?kind=corrections", "/v1/test-sets?kind=accuracy&limit=5", "/v1/test-sets?limit=5"):
            call(path)
        with urllib.request.urlopen(mock.url + "/__mock/requests") as answer:
            saved = answer.read()
        code, live, _ = _cli(capsys, str(KINDGI_SPEC), str(new), "--url", mock.url, "--format", "json")
    assert code == 0
    journal = tmp_path / "requests.json"
    journal.write_bytes(saved)
    code, out, _ = _cli(capsys, str(KINDGI_SPEC), str(new), "--journal", str(journal), "--format", "json")
    assert code == 0
    for report in (json.loads(out), json.loads(live)):
        by_kind = {(c["kind"], c["side"]): c for c in report["changes"]}
        assert report["checked"] == {"journaled answers": 3, "journaled requests": 3}
        required = by_kind[("parameter-added-required", "request")]["evidence"]["journaled requests"]
        assert required["count"] == 3 and "region" in required["instance"]
        enum = by_kind[("enum-narrowed", "request")]["evidence"]["journaled requests"]
        assert enum["count"] == 1 and "kind=corrections" in enum["instance"]
        answers = by_kind[("enum-narrowed", "response")]["evidence"]["journaled answers"]
        assert answers["count"] == 1 and ".kind = 'corrections'" in answers["instance"]


# -- a corpus-sized pair ---------------------------------------------------------------------------------
OPENAI = SHARED / "corpus" / "openai-api.yaml"


@pytest.mark.skipif(not OPENAI.is_file(), reason=f"{OPENAI} is absent: the corpus-sized pair needs /work/shared")
def test_corpus_sized_pair_in_seconds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The 3 MB OpenAI description against a copy with two edits: an operation's method changed, and the last
    value of a component's string enum dropped (reached through `$ref`s from many operations)."""
    text = OPENAI.read_text()
    operation = re.search(r"\n    get:\n      operationId: (\w+)\n", text)
    enum = re.search(r"\n    (\w+):\n      type: string\n(?:      description: .*\n)?      enum:\n(?:        - .*\n)*"
                     r"(        - (.*)\n)", text)
    assert operation and enum
    edited = tmp_path / "openai.yaml"
    text = text.replace(operation.group(0), operation.group(0).replace("get:", "head:"), 1)
    edited.write_text(text[:enum.start(2)] + text[enum.end(2):])
    code, out, _ = _cli(capsys, str(OPENAI), str(edited), "--fail-on", "breaking", "--format", "json")
    assert code == 1
    report = json.loads(out)
    kinds = {(c["kind"], c["side"]): c for c in report["changes"]}
    assert f"({operation.group(1)}) is removed" in kinds[("operation-removed", "request")]["message"]
    narrowed = next(c for c in report["changes"] if c["kind"] == "enum-narrowed"
                    and c["old"]["pointer"] == f"/components/schemas/{enum.group(1)}/enum")
    assert enum.group(3).strip("'\"") in narrowed["message"] and narrowed["operations"]
    assert report["seconds"]["compare"] < 5, report["seconds"]


# -- evidence on a small pair ------------------------------------------------------------------------------
SHOP_FIXTURES = """
collections:
  items:
    items:
      - {id: a, color: red, note: first}
      - {id: b, color: blue}
      - {id: c, color: blue, note: third}
operations:
  listItems:
    list: {from: items}
  createItem:
    respond:
      - status: 201
        body: {id: z, color: blue, note: made}
scenarios:
  - id: nothing-here
    operationId: listItems
    status: 404
    body: {message: none}
"""


def _shop_pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    new = _base()
    _schemas(new)["Color"]["enum"].remove("blue")
    _schemas(new)["Item"]["properties"].pop("note")
    _get(new)["responses"].pop("404")
    _get(new)["parameters"][2]["name"] = "query"
    delete = new["paths"].pop("/items/{id}")["delete"]  # the same URL, its parameter renamed and narrowed
    delete["parameters"][0].update(name="itemId", schema={"type": "string", "maxLength": 3})
    new["paths"]["/items/{itemId}"] = {"delete": delete}
    _post(new).update(security=[{"bearer": []}])
    new["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / "shop.yaml").write_text(SHOP_FIXTURES)
    return _write(tmp_path, "old.yaml", _base()), _write(tmp_path, "new.yaml", new), fixtures


def test_fixture_answers_items_answers_and_scenarios_are_counted_per_change(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new, fixtures = _shop_pair(tmp_path)
    code, out, _ = _cli(capsys, str(old), str(new), "--fixtures", str(fixtures), "--format", "json")
    report = json.loads(out)
    by_kind = {(c["kind"], c["side"]): c for c in report["changes"]}
    enum = by_kind[("enum-narrowed", "response")]["evidence"]["fixture answers"]
    assert enum["count"] == 3  # items b and c of the listing, the fixed answer of createItem
    assert enum["instance"].startswith("items[1] (") and "data[1].color = 'blue'" in enum["instance"]
    note = by_kind[("property-removed", "response")]["evidence"]["fixture answers"]
    assert note["count"] == 3  # items a and c, the fixed answer of createItem
    assert "data[0].note = 'first' is served today" in note["instance"]
    removed = by_kind[("response-removed", "response")]["evidence"]["fixture answers"]
    assert removed["count"] == 1 and removed["instance"].startswith("scenario nothing-here (")
    assert report["checked"] == {"fixture answers": 5} and report["unexplained"] == []
    code, text_out, _ = _cli(capsys, str(old), str(new), "--fixtures", str(fixtures))
    assert "BREAKING (by evidence) [enum-narrowed, response]" in text_out
    assert "breaks 3 fixture answers" in text_out


def test_a_saved_journal_counts_requests_and_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new, _ = _shop_pair(tmp_path)

    def entry(number: int, method: str, path: str, status: int, body: Any, sent: Any = None,
              source: str = "fixture", query: str = "") -> dict[str, Any]:
        return {"id": number, "method": method, "path": path, "query": query, "status": status, "source": source,
                "requestHeaders": {"Content-Type": "application/json"} if sent else {},
                "requestBody": json.dumps(sent) if sent else None,
                "responseBody": json.dumps(body) if body is not None else None,
                "responseHeaders": {"Content-Type": "application/json"}}

    journal = tmp_path / "requests.json"
    journal.write_text(json.dumps({"requests": [
        entry(1, "POST", "/items", 201, {"id": "z", "color": "red"}, {"color": "red"}),
        entry(2, "GET", "/items", 404, {"message": "none"}, source="scenario"),
        entry(3, "GET", "/items", 200, {"data": [{"id": "b", "color": "blue"}]}, query="q=blu"),
        entry(4, "POST", "/items", 400, {"message": "bad"}, {"color": 3}, source="error"),
        entry(5, "DELETE", "/items/abcdef", 204, None),
    ]}))
    code, out, _ = _cli(capsys, str(old), str(new), "--journal", str(journal), "--format", "json",
                        "--fail-on", "breaking")
    assert code == 1
    report = json.loads(out)
    by_kind = {(c["kind"], c["side"]): c for c in report["changes"]}
    security = by_kind[("security-added", "request")]["evidence"]["journaled requests"]
    assert security["count"] == 1 and security["instance"].startswith("journal #1 POST /items → 201")
    status = by_kind[("response-removed", "response")]["evidence"]["journaled answers"]
    assert status["count"] == 1 and status["instance"].startswith("journal #2 GET /items → 404")
    enum = by_kind[("enum-narrowed", "response")]["evidence"]["journaled answers"]
    assert enum["count"] == 1 and "data[0].color = 'blue'" in enum["instance"]
    renamed = by_kind[("parameter-renamed", "request")]["evidence"]["journaled requests"]
    assert renamed["count"] == 1
    assert renamed["instance"] == "journal #3 GET /items?q=blu → 200: /query/q = 'blu' is sent today"
    bound = by_kind[("bound-narrowed", "request")]
    assert bound["sites"] == [{"operation": "DELETE /items/{id}", "status": None, "place": "/path/itemId"}]
    assert bound["evidence"]["journaled requests"]["count"] == 1
    assert bound["evidence"]["journaled requests"]["instance"].startswith("journal #5 DELETE /items/abcdef → 204")
    # the request OLD refused (entry 4) is the client's own error: not replayed
    assert report["checked"] == {"journaled answers": 5, "journaled requests": 4}
    assert report["unexplained"] == []  # entry 4's undeclared 400 broke OLD as much as NEW: no change's doing


def test_what_new_rejects_without_a_change_to_explain_it_still_fails(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A keyword the diff does not compare (here `propertyNames`) still rejects served answers: said apart, and
    `--fail-on breaking` is met."""
    new = _base()
    _schemas(new)["Item"]["propertyNames"] = {"pattern": "^[a-z]{1,4}$"}  # `color` is too long now
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / "shop.yaml").write_text(SHOP_FIXTURES)
    old = _write(tmp_path, "old.yaml", _base())
    code, out, _ = _cli(capsys, str(old), str(_write(tmp_path, "new.yaml", new)), "--fixtures", str(fixtures),
                        "--fail-on", "breaking")
    assert code == 1
    assert "0 change(s), 0 breaking; NEW rejects 4 more answer(s) or request(s) no change explains" in out
    assert "GET /items /body/data/* [pattern]: 3 fixture answers" in out
    assert "POST /items /body [pattern]: 1 fixture answers" in out


def test_a_removed_request_body_counts_the_requests_that_send_one(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    new = _base()
    _post(new).pop("requestBody")
    journal = tmp_path / "requests.json"
    journal.write_text(json.dumps({"requests": [
        {"id": 7, "method": "POST", "path": "/items", "query": "", "status": 201, "source": "fixture",
         "requestHeaders": {"Content-Type": "application/json"}, "requestBody": '{"color": "red"}',
         "responseHeaders": {"Content-Type": "application/json"}, "responseBody": '{"id": "z", "color": "red"}'}]}))
    code, out, _ = _cli(capsys, str(_write(tmp_path, "old.yaml", _base())), str(_write(tmp_path, "new.yaml", new)),
                        "--journal", str(journal))
    assert code == 0
    assert "BREAKING [request-body-removed, request] POST /items: takes no request body any more" in out
    assert "breaks 1 journaled requests" in out
    assert "e.g. journal #7 POST /items → 201: /body = {\"color\": \"red\"} is sent today" in out
