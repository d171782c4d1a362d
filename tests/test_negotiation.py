"""Accept picks the media type of an answer; nothing acceptable is 406."""
import pytest

from conftest import body
from mockserver import create_app
from mockserver.core.errors import MockError
from mockserver.core.negotiation import negotiate

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
