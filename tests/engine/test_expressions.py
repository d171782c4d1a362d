"""OpenAPI runtime expressions, as callbacks' URLs and links use them: parsed once, rendered against a call."""
import pytest

from mockserver.spec.expressions import ExpressionError, RequestView, ResponseView, parse

REQUEST = RequestView(
    url="http://127.0.0.1:4010/subscribe?queryUrl=http://q.example/x", method="POST",
    headers={"x-hook": "http://h.example/hook", "content-type": "application/json"},
    query={"queryUrl": ["http://q.example/x", "second"]}, path={"id": "42"},
    body={"callbackUrl": "http://127.0.0.1:9000/cb", "a/b": {"n": 7}, "items": [{"id": "first"}]})
RESPONSE = ResponseView(201, headers={"location": "/jobs/9"}, body={"id": "job-9", "done": False})


@pytest.mark.parametrize(("text", "expected", "sources"), [
    ("{$request.body#/callbackUrl}", "http://127.0.0.1:9000/cb", [("request", "body", "/callbackUrl")]),
    ("{$request.query.queryUrl}", "http://q.example/x", [("request", "query", "queryUrl")]),
    ("{$request.header.X-Hook}", "http://h.example/hook", [("request", "header", "x-hook")]),
    ("{$request.path.id}", "42", [("request", "path", "id")]),
    ("{$response.body#/id}", "job-9", [("response", "body", "/id")]),
    ("{$response.header.Location}", "/jobs/9", [("response", "header", "location")]),
    ("{$url}", REQUEST.url, [("request", "url", "")]),
    ("{$method}", "POST", [("request", "method", "")]),
    ("{$statusCode}", "201", [("response", "status", "")]),
    ("$response.body#/done", "false", [("response", "body", "/done")]),  # bare, as links give them; JSON text
    ("{$request.body#/a~1b/n}", "7", [("request", "body", "/a~1b/n")]),  # escaped tokens, a number as JSON
    ("{$request.body#/items/0/id}", "first", [("request", "body", "/items/0/id")]),
])
def test_each_kind_of_expression_reads_its_part_of_the_call(text, expected, sources):
    template = parse(text)
    assert template.render(REQUEST, RESPONSE) == expected
    assert template.sources == sources


def test_a_template_mixes_text_and_expressions():
    """The corpus' callback URL shape: text, then several expressions in braces."""
    template = parse("http://notify.example/t?transactionId={$request.body#/items/0/id}&job={$response.body#/id}")
    assert template.render(REQUEST, RESPONSE) == "http://notify.example/t?transactionId=first&job=job-9"
    assert template.sources == [("request", "body", "/items/0/id"), ("response", "body", "/id")]
    assert parse("http://fixed.example/hook").render(REQUEST) == "http://fixed.example/hook"
    assert parse("http://fixed.example/hook").sources == []


@pytest.mark.parametrize(("text", "message"), [
    ("{$request.body#/missing}", "{$request.body#/missing}"[1:-1] + ": the body has no value at /missing"),
    ("{$request.query.nope}", "$request.query.nope: the request has no query 'nope'"),
    ("{$request.header.X-None}", "$request.header.X-None: the request has no header 'x-none'"),
    ("{$request.path.other}", "$request.path.other: the request has no path 'other'"),
    ("{$request.body#/items/3}", "$request.body#/items/3: the body has no value at /items/3"),
])
def test_a_value_the_call_lacks_is_an_error_naming_the_expression(text, message):
    with pytest.raises(ExpressionError) as raised:
        parse(text).render(REQUEST, RESPONSE)
    assert str(raised.value) == message


def test_a_response_expression_without_a_response_is_an_error():
    with pytest.raises(ExpressionError, match=r"\$response.body#/id: there is no response"):
        parse("{$response.body#/id}").render(REQUEST)


def test_a_missing_body_is_named():
    with pytest.raises(ExpressionError, match="there is no JSON body"):
        parse("{$request.body}").render(RequestView("http://x/", "GET"))


@pytest.mark.parametrize(("text", "message"), [
    ("{$request.body#/a", "never closed"),
    ("a}b", "has no opening one"),
    ("{$requests.body}", "is not a runtime expression"),
    ("{request.body}", "is not a runtime expression"),
    ("{$request.cookie.x}", "header.NAME, query.NAME, path.NAME or body#/POINTER"),
    ("{$request.header.}", "header.NAME"),
    ("{$response.query.x}", "a response has a header or a body, no query"),
    ("{$request.body#id}", "does not start with /"),
])
def test_a_malformed_template_is_refused_at_parse_time_naming_it(text, message):
    with pytest.raises(ExpressionError, match=message):
        parse(text)
