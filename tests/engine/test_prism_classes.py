"""What a Prism user expects of any description (issue 32's classes, issue 31 item 4), each over a tiny
description under tests/data/prism/, asked through HTTP in process: XML answers, generated objects, 3.1
`examples`, range status codes, values a client parses."""
from __future__ import annotations

import re
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from conftest import body
from mockserver import create_app

DATA = Path(__file__).resolve().parent.parent / "data" / "prism"


def client(name: str) -> FlaskClient:
    return create_app(DATA / name).test_client()


@pytest.fixture(scope="module")
def xml_mock() -> FlaskClient:
    return client("xml.yaml")


def xml_of(mock: FlaskClient, path: str, accept: str = "application/xml") -> ET.Element:
    answer = mock.get(path, headers={"Accept": accept})
    assert answer.status_code == 200 and answer.content_type == accept, answer.data
    return ET.fromstring(answer.data)  # well-formed, or this raises


@pytest.mark.parametrize("path, accept", [("/pets/7", "application/xml"), ("/pets", "application/xml"),
                                          ("/animals", "application/xml"), ("/orders/3", "application/xml"),
                                          ("/notes", "text/xml")])
def test_every_xml_answer_is_well_formed(xml_mock: FlaskClient, path: str, accept: str) -> None:
    xml_of(xml_mock, path, accept)


def test_xml_elements_are_named_by_the_schema_and_its_components(xml_mock: FlaskClient) -> None:
    pet = xml_of(xml_mock, "/pets/7")
    assert pet.tag == "Pet" and pet.get("id") == "7" and pet.findtext("name") == "Rex"  # the $ref'd component
    assert [photo.text for photo in pet.find("photos")] == ["http://x/1.png"]  # wrapped, items by xml.name
    pets = xml_of(xml_mock, "/pets")
    assert pets.tag == "pets" and [p.tag for p in pets] == ["Pet"]  # the list's xml.name; items by component
    animals = xml_of(xml_mock, "/animals")
    assert [a.tag for a in animals] == ["Animal"] and animals[0].findtext("kind") == "cat"  # no unbound `zoo:`


def test_xml_of_any_value_stays_well_formed(xml_mock: FlaskClient) -> None:
    order = xml_of(xml_mock, "/orders/3")
    assert order.tag == "{urn:shop}order" and order.get("id") == "3"
    assert order.findtext("_1st_line") == "a < b & c" and order.findtext("ns_odd") == "x"
    assert order.findtext("_xmlns") == "y" and order.findtext("bell") == "ring\ufffd"
    assert [e.tag for e in order.find("extra")] == ["_", "x_y", "x_y"]
    note = xml_of(xml_mock, "/notes", "text/xml")
    assert note.text == "<b>bold</b> & more"
    down = xml_mock.get("/notes", headers={"Accept": "application/xml", "Prefer": "code=503"})
    assert down.status_code == 503 and ET.fromstring(down.data).text == "down & out"


def test_declared_properties_are_filled_at_every_depth() -> None:
    mock = client("objects.yaml")
    labels = body(mock.get("/labels"))
    owner = labels["data"]["items"][0]["attributes"]["meta"]["owner"]
    assert {"name", "id"} <= owner.keys() and isinstance(owner["name"], str)  # beside additionalProperties
    tree = body(mock.get("/tree"))
    depth, node = 1, tree
    while node.get("children"):
        node, depth = node["children"][0], depth + 1
        assert isinstance(node["name"], str)
    assert depth == 3  # the recursive `$ref` followed, to a bound


def test_an_optional_property_a_closed_part_of_its_all_of_refuses_is_left_out_of_generated_answers() -> None:
    mock = client("objects.yaml")
    for prefer in ("dynamic=false", "dynamic=true"):  # every optional property present; each one by chance
        answer = mock.post("/erasures", headers={"Prefer": prefer})
        assert answer.status_code == 202, answer.data  # not the mock's own 500 mock-contract-violation
        assert "warnings" not in body(answer) and "id" in body(answer)


def test_3_1_examples_arrays_answer_as_examples() -> None:
    mock = client("examples31.yaml")
    assert body(mock.get("/pets/1")) == {"id": 1, "name": "Fluffy"}
    assert body(mock.get("/count")) == 42
    assert body(mock.get("/listed")) == {"id": 3, "name": "Listed"}
    assert body(mock.get("/listed", headers={"Prefer": "example=1"})) == {"id": 4, "name": "Second"}
    unique = mock.get("/pets")
    assert unique.status_code == 200, unique.data  # unique items, each with the same schema example
    pets = body(unique)
    assert pets[0] == {"id": 1, "name": "Fluffy"} and len({p["id"] for p in pets}) == len(pets) == 2


@pytest.mark.parametrize("path", ["/jobs", "/legacy"])
@pytest.mark.parametrize("code, kind", [("503", "server"), ("502", "server"), ("401", "client")])
def test_prefer_code_answers_the_declared_range(path: str, code: str, kind: str) -> None:
    answer = client("ranges.yaml").get(path, headers={"Prefer": f"code={code}"})
    assert answer.status_code == int(code) and body(answer) == {"kind": kind}


def test_a_text_range_answers_its_content() -> None:
    answer = client("ranges.yaml").get("/outage", headers={"Prefer": "code=503"})
    assert (answer.status_code, answer.content_type, answer.data) == (503, "text/plain", b"down")


SEMVER = re.compile(r"\d+\.\d+\.\d+")


def test_generated_values_are_what_clients_parse() -> None:
    mock = client("values.yaml")
    assert body(mock.get("/version")) == "2.4.1"  # the description's own `info.version`, as its server says
    made: Any = body(mock.get("/build"))
    assert SEMVER.fullmatch(made["version"]) and SEMVER.fullmatch(made["api_version"])
    assert made["limits"] and all(uuid.UUID(key) for key in made["limits"])  # propertyNames: {format: uuid}
    item = made["nested"]["items"][0]
    assert re.fullmatch(r"[A-Z]{3}-[0-9]{4}", item["code"]) and SEMVER.fullmatch(item["schemaVersion"])
    assert all(re.fullmatch(r"[a-z]{2,5}", key) for key in item.get("tags", {}))
    for seed in range(3):  # varied data too, with every key fitting
        varied = body(create_app(DATA / "values.yaml", seed=seed).test_client().get(
            "/build", headers={"Prefer": "dynamic=true"}))
        assert all(uuid.UUID(key) for key in varied["limits"])


ECMA = """\
openapi: 3.0.3
info: {title: ECMA patterns, version: "1"}
paths:
  /people:
    get:
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Person"}}}}
    post:
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: "#/components/schemas/Person"}}}
      responses:
        "201": {description: created, content: {application/json: {schema: {$ref: "#/components/schemas/Person"}}}}
components:
  schemas:
    Person:
      type: object
      required: [name, code]
      properties:
        name: {type: string, pattern: '^\\p{L}+$', example: "Zoë"}
        code: {type: string, pattern: '^[\\p{Lu}\\d]{3}$'}
"""


def test_ecma_unicode_property_classes_are_read_as_ecma_reads_them(tmp_path: Path) -> None:
    """`\\p{L}` (which Python's `re` cannot compile) in a pattern: answers fit it, generated ones too, and a request
    is checked against it (each was the mock's own 500)."""
    spec = tmp_path / "openapi.yaml"
    spec.write_text(ECMA)
    client = create_app(spec).test_client()
    static = client.get("/people")
    assert static.status_code == 200 and body(static)["name"] == "Zoë" and re.fullmatch(r"[A-Z\d]{3}",
                                                                                        body(static)["code"])
    for _ in range(3):
        varied = client.get("/people", headers={"Prefer": "dynamic=true"})
        assert varied.status_code == 200 and body(varied)["name"].isalpha()
    assert client.post("/people", json={"name": "Zoë", "code": "ÉA1"}).status_code == 201
    refused = client.post("/people", json={"name": "Zoë 2", "code": "ab1"})
    assert refused.status_code == 400 and "does not match" in refused.get_data(as_text=True)
