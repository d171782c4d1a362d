"""Form and multipart request bodies are parsed, typed by their schema and validated; paths that differ only by a
query (`/responses?beta=true`) are told apart by it; a bug never shows a traceback."""
from werkzeug.datastructures import MultiDict

from conftest import body
from mockserver import create_app, pipeline_of

SPEC = """\
openapi: 3.0.3
info: {title: t, version: '1'}
paths:
  /upload:
    post:
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema:
              type: object
              required: [file, purpose]
              properties:
                file: {type: string, format: binary}
                purpose: {type: string, enum: [fine-tune, assistants]}
                copies: {type: integer, minimum: 1}
                fidelity:
                  anyOf: [{type: string, enum: [high, low]}, {type: 'null'}]
                label: {type: [string, 'null']}
      responses: {'201': {description: ok}}
  /form:
    post:
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              required: [To]
              properties:
                To: {type: string}
                Retries: {type: integer, maximum: 3}
                Tags: {type: array, items: {type: string}}
      responses: {'204': {description: ok}}
  /things:
    get:
      operationId: plain
      responses: {'200': {description: ok, content: {application/json: {schema: {const: plain}}}}}
  /things?beta=true:
    get:
      operationId: beta
      responses: {'200': {description: ok, content: {application/json: {schema: {const: beta}}}}}
"""


def violations(response):
    assert response.status_code == 400, response.data
    return sorted((v["pointer"], v["rule"]) for v in body(response)["details"]["violations"])


def test_multipart(write):
    import io
    client = create_app(write("spec.yaml", SPEC)).test_client()
    ok = client.post("/upload", data={"file": (io.BytesIO(b"\x00\xffbytes"), "a.bin"), "purpose": "assistants",
                                      "copies": "2"})
    assert ok.status_code == 201
    assert violations(client.post("/upload", data={"purpose": "other", "copies": "0"},
                                  content_type="multipart/form-data")) == [
        ("", "required"), ("/copies", "minimum"), ("/purpose", "enum")]
    broken = client.post("/upload", data=b"no parts here", content_type="multipart/form-data")
    assert violations(broken) == [("", "multipart")]


def test_a_multipart_null_is_null_where_the_text_null_would_not_do(write):
    """Clients spell None as the text `null`: a field that may be null reads it as null when the string does not
    fit (an enum), and keeps the string where a string fits."""
    client = create_app(write("spec.yaml", SPEC)).test_client()
    fields = {"file": "x", "purpose": "assistants"}
    assert client.post("/upload", data={**fields, "fidelity": "null", "label": "null"},
                       content_type="multipart/form-data").status_code == 201
    assert client.post("/upload", data={**fields, "fidelity": "high"},
                       content_type="multipart/form-data").status_code == 201
    assert [pointer for pointer, _ in violations(client.post("/upload", data={**fields, "fidelity": "medium"},
                                                             content_type="multipart/form-data"))] == ["/fidelity"]
    twice = MultiDict([("file", "x"), ("purpose", "assistants"), ("copies", "1"), ("copies", "2")])
    assert violations(client.post("/upload", data=twice, content_type="multipart/form-data")) == [
        ("/copies", "repeated")]
    # with another field wrong, that field is what is reported, not the null
    assert violations(client.post("/upload", data={**fields, "fidelity": "null", "copies": "0"},
                                  content_type="multipart/form-data")) == [("/copies", "minimum")]


def test_form_urlencoded(write):
    client = create_app(write("spec.yaml", SPEC)).test_client()
    form = "application/x-www-form-urlencoded"
    assert client.post("/form", data="To=%2B15551234&Retries=2&Tags=a&Tags=b", content_type=form).status_code == 204
    assert violations(client.post("/form", data="Retries=9", content_type=form)) == [("", "required"),
                                                                                     ("/Retries", "maximum")]


def test_a_query_in_a_path_key_chooses_the_operation(write):
    client = create_app(write("spec.yaml", SPEC)).test_client()
    assert body(client.get("/things")) == "plain"
    assert body(client.get("/things?beta=true")) == "beta"
    assert body(client.get("/things?beta=false")) == "plain"


def test_a_bug_is_a_500_in_the_envelope_without_traceback(write, monkeypatch):
    app = create_app(write("spec.yaml", SPEC))
    pipeline = pipeline_of(app)
    monkeypatch.setattr(pipeline.answers, "generated", lambda *a: 1 / 0)
    response = app.test_client().get("/things")
    assert response.status_code == 500 and body(response)["code"] == "mock-internal-error"
    assert b"Traceback" not in response.data and b"ZeroDivision" not in response.data


SHAPES = """\
openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /callback:
    post:
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema:
              oneOf:
                - {$ref: '#/components/schemas/Autocomplete'}
                - {$ref: '#/components/schemas/Update'}
                - {$ref: '#/components/schemas/Coded'}
          multipart/form-data:
            schema: {$ref: '#/components/schemas/Post'}
      responses: {'204': {description: ok}}
  /post:
    post:
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema:
              anyOf: [{$ref: '#/components/schemas/Edit'}, {$ref: '#/components/schemas/Post'}]
          multipart/form-data:
            schema: {$ref: '#/components/schemas/Post'}
      responses: {'204': {description: ok}}
components:
  schemas:
    Data:
      type: object
      required: [choices]
      properties: {choices: {type: array, items: {type: string}}}
    Autocomplete:
      type: object
      required: [type]
      properties:
        type: {type: integer, enum: [8]}
        data: {anyOf: [{$ref: '#/components/schemas/Data'}]}
    Update:
      type: object
      required: [type]
      properties:
        type: {type: integer, enum: [6, 7]}
        data: {oneOf: [{type: 'null'}, {$ref: '#/components/schemas/Data'}]}
        code: {type: integer}
    Coded:
      type: object
      required: [type, code]
      properties:
        type: {type: integer, enum: [9]}
        code: {type: string, pattern: '^[0-9]+$'}
    Post:
      type: object
      properties:
        content: {type: [string, 'null']}
        tags: {oneOf: [{type: 'null'}, {type: array, items: {type: string}}]}
        embed: {oneOf: [{type: 'null'}, {type: object, required: [title], properties: {title: {type: string}}}]}
        embeds:
          type: array
          items: {type: object, required: [title], properties: {title: {type: string}}}
        links: {type: [array, 'null'], items: {type: object}}
    Edit:
      type: object
      properties:
        content: {type: [string, 'null']}
        tags: {type: 'null'}
"""
FORM = "application/x-www-form-urlencoded"


def test_a_form_for_a_oneof_of_objects_is_read_as_its_alternatives_type_it(write):
    """The fields of a body that is one of several objects (told by `type`) are read as any alternative types
    them: `type=6` is the integer the second takes, and `data=null` its null; where the alternatives type a field
    differently, as the alternative under which the body is valid types it (`code=12`: the third's string, not
    the second's integer)."""
    client = create_app(write("spec.yaml", SHAPES)).test_client()
    assert client.post("/callback", data="extra=x&data=null&type=6", content_type=FORM).status_code == 204
    assert client.post("/callback", data="type=9&code=12", content_type=FORM).status_code == 204
    assert [pointer for pointer, _ in violations(client.post("/callback", data="type=5", content_type=FORM))] == [""]


def test_a_repeated_form_field_is_an_array_where_an_alternative_allows_one(write):
    """`tags` is an array in one alternative (through a `oneOf` with null) and null in the other: sent six times,
    it is that array, not a field given too often."""
    client = create_app(write("spec.yaml", SHAPES)).test_client()
    tags = "&".join(f"tags={tag}" for tag in "abcdef")
    assert client.post("/post", data=f"content=hi&{tags}", content_type=FORM).status_code == 204
    assert violations(client.post("/post", data="content=a&content=b", content_type=FORM)) == [
        ("/content", "repeated")]


def test_a_form_null_is_null_for_an_array_of_objects_that_may_be_null(write):
    """`links=null` is a client's None (no object is the text `null`), as it is for a single value."""
    client = create_app(write("spec.yaml", SHAPES)).test_client()
    assert client.post("/post", data={"content": "hi", "links": "null"},
                       content_type="multipart/form-data").status_code == 204


def test_a_multipart_part_of_an_object_or_array_is_read_as_json(write):
    """OpenAPI's default Content-Type of a part whose schema is an object (or an array of objects) is
    application/json: such a part is its JSON, whole."""
    client = create_app(write("spec.yaml", SHAPES)).test_client()
    parts = {"embed": '{"title": "hello"}', "embeds": '[{"title": "a"}, {"title": "b"}]', "content": "hi"}
    assert client.post("/post", data=parts, content_type="multipart/form-data").status_code == 204
    assert violations(client.post("/post", data={"embeds": '[{"title": 1}]'},
                                  content_type="multipart/form-data")) == [("/embeds/0/title", "type")]
    assert violations(client.post("/post", data={"embed": "not json"},
                                  content_type="multipart/form-data")) == [("/embed", "type")]
