"""Accept picks the media type of an answer; nothing acceptable is 406."""
import pytest

from conftest import body
from mockserver import create_app
from mockserver.base.errors import MockError
from mockserver.pipeline.negotiation import negotiate

SPEC = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /report:
    get:
      responses:
        '200':
          description: a report
          content:
            text/csv:
              schema: {type: string}
              example: "a,b\\n1,2\\n"
            application/json:
              schema: {type: object, required: [rows], properties: {rows: {type: integer}}}
              example: {rows: 1}
"""


@pytest.mark.parametrize("accept, chosen", [
    (None, "json"), ("*/*", "json"), ("text/csv", "csv"), ("text/*", "csv"),
    ("application/json;q=0.2, text/csv;q=0.8", "csv"), ("text/csv;q=0, */*", "json"),
])
def test_negotiate(accept, chosen):
    offered = {"text/csv": "csv", "application/json": "json"}
    assert negotiate(offered, accept) == chosen


def test_nothing_acceptable_is_406():
    with pytest.raises(MockError) as caught:
        negotiate({"application/json": 1}, "image/png, text/*;q=0.5")
    assert caught.value.status == 406 and caught.value.details["available"] == ["application/json"]


def test_answers_follow_accept(write):
    client = create_app(write("spec.yaml", SPEC)).test_client()
    assert body(client.get("/report")) == {"rows": 1}
    csv = client.get("/report", headers={"Accept": "text/csv"})
    assert csv.content_type == "text/csv" and csv.data == b"a,b\n1,2\n"
    refused = client.get("/report", headers={"Accept": "application/xml"})
    assert refused.status_code == 406 and body(refused)["code"] == "not-acceptable"


XML = """\
openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /pets/{id}:
    get:
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses:
        '200':
          description: ok
          content:
            application/json: {schema: {$ref: '#/components/schemas/Pet'}}
            application/xml: {schema: {$ref: '#/components/schemas/Pet'}}
        '404':
          description: nope
          content: {application/xml: {schema: {type: object, properties: {message: {type: string}}}}}
components:
  schemas:
    Pet:
      type: object
      xml: {name: pet, prefix: z, namespace: 'urn:zoo'}
      required: [id, name]
      properties:
        id: {type: integer, example: 7, xml: {attribute: true}}
        name: {type: string, example: Tom & Jerry}
        photoUrls:
          type: array
          xml: {wrapped: true}
          items: {type: string, example: 'http://x/1.png', xml: {name: photoUrl}}
        tags: {type: array, items: {type: object, xml: {name: tag}, properties: {label: {type: string, example: cute}}}}
"""


def test_xml_is_answered_as_xml_with_the_schema_s_names(write):
    import xml.etree.ElementTree as ET

    client = create_app(write("spec.yaml", XML)).test_client()
    answer = client.get("/pets/7", headers={"Accept": "application/xml"})
    assert answer.status_code == 200 and answer.content_type == "application/xml"
    pet = ET.fromstring(answer.data)
    assert pet.tag == "{urn:zoo}pet" and pet.get("id") == "7"
    assert pet.findtext("name") == "Tom & Jerry"
    assert [u.text for u in pet.find("photoUrls")] == ["http://x/1.png"]
    assert [t.findtext("label") for t in pet.findall("tag")] == ["cute"]
    assert body(client.get("/pets/1"))["name"] == "Tom & Jerry"  # JSON still first
    missing = client.get("/pets/1", headers={"Accept": "application/xml", "Prefer": "code=404"})
    assert missing.content_type == "application/xml" and ET.fromstring(missing.data).findtext("status") == "404"
