"""What only HTTP adds: CORS, X-Request-Id, Content-Type, no HTML error pages, one log line per request."""
import logging

from conftest import body

KEY = {"X-Api-Key": "reader-key"}


def test_cors_preflight_is_answered(library):
    response = library.options("/api/v2/books", headers={
        "Origin": "http://localhost:5173", "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "x-api-key"})
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"
    assert "GET" in response.headers["Access-Control-Allow-Methods"]
    assert response.headers["Access-Control-Allow-Headers"] == "x-api-key"


def test_cors_headers_on_answers_and_errors(library):
    for headers in (KEY, {}):
        response = library.get("/api/v2/books", headers={**headers, "Origin": "http://app.test"})
        assert response.headers["Access-Control-Allow-Origin"] == "http://app.test"
        assert "X-Request-Id" in response.headers["Access-Control-Expose-Headers"]


def test_request_id_is_kept_when_sane_and_replaced_otherwise(kindgi):
    response = kindgi.get("/v1/test-sets", headers={"X-Request-Id": "abc-123"})
    assert response.headers["X-Request-Id"] == "abc-123" == body(response)["error"]["requestId"]
    response = kindgi.get("/v1/test-sets", headers={"X-Request-Id": "x" * 500})
    assert response.headers["X-Request-Id"].startswith("req_")
    assert response.headers["X-Request-Id"] == body(response)["error"]["requestId"]


def test_every_answer_has_a_request_id_and_its_content_type(library):
    for path in ("/api/v2/books", "/api/v2/books/latest", "/nowhere"):
        response = library.get(path, headers=KEY)
        assert response.headers["X-Request-Id"]
        assert response.content_type in ("application/json", "application/problem+json")


def test_errors_never_are_html(library):
    response = library.open("/api/v2/books", method="BREW")
    assert response.status_code in (404, 405)
    assert response.content_type == "application/problem+json"


def test_one_log_line_per_request(library, caplog):
    with caplog.at_level(logging.INFO, logger="mockserver.access"):
        library.get("/api/v2/books?limit=1", headers=KEY)
    lines = [r.getMessage() for r in caplog.records if r.name == "mockserver.access"]
    assert len(lines) == 1
    assert lines[0].startswith("GET /api/v2/books?limit=1 200 ") and lines[0].endswith("fixture listBooks")
