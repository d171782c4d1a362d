"""What the mock answers of its own where the description describes nothing: a browser opening `/` is sent to the
dashboard (an API client still gets the API's 404), `/favicon.ico` is the mock's icon; neither is journaled. A
description that describes them keeps them."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from conftest import KINDGI_FIXTURES, KINDGI_SPEC, body, serving
from mockserver import create_app

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def journal_paths(client) -> list[str]:
    return [entry["path"] for entry in body(client.get("/__mock/requests"))["requests"]]


def test_a_browser_at_the_root_is_sent_to_the_dashboard_and_an_api_client_gets_the_404(kindgi):
    kindgi.delete("/__mock/requests", json={})
    sent = kindgi.get("/", headers=BROWSER)
    assert sent.status_code == 302 and sent.headers["Location"] == "/__mock/"
    assert kindgi.get(sent.headers["Location"], headers=BROWSER).status_code == 200
    for headers in ({}, {"Accept": "application/json"}, {"Accept": "*/*"}):
        missed = kindgi.get("/", headers=headers)
        assert missed.status_code == 404 and body(missed)["error"]["code"] == "not-found"
    assert kindgi.post("/", headers=BROWSER).status_code == 404  # only a page is asked for with GET
    assert journal_paths(kindgi) == ["/", "/", "/", "/"]  # the API's 404s, not the redirect


def test_the_favicon_is_the_mocks_own_and_not_journaled(kindgi):
    kindgi.delete("/__mock/requests", json={})
    icon = kindgi.get("/favicon.ico", headers={"Accept": "image/avif,image/webp,image/*,*/*;q=0.8"})
    assert icon.status_code == 200 and icon.content_type == "image/x-icon"
    assert icon.data[:4] == b"\0\0\1\0"  # an ICO file
    assert journal_paths(kindgi) == []
    assert body(kindgi.get("/__mock/coverage"))["calls"] == 0


def test_a_description_that_describes_them_keeps_them(write):
    spec = write("openapi.yaml", """
        openapi: 3.1.0
        info: {title: Root, version: "1"}
        paths:
          /:
            get:
              responses:
                "200": {description: ok, content: {application/json: {example: {root: true}}}}
          /favicon.ico:
            get:
              responses:
                "200": {description: ok, content: {image/png: {schema: {type: string, format: binary},
                                                               example: "png"}}}
    """)
    client = create_app(spec).test_client()
    assert body(client.get("/", headers=BROWSER)) == {"root": True}
    assert client.get("/favicon.ico").data == b"png"
    assert journal_paths(client) == ["/", "/favicon.ico"]


def test_without_the_control_api_a_browser_gets_the_404_too():
    client = create_app(KINDGI_SPEC, KINDGI_FIXTURES, control=False).test_client()
    assert client.get("/", headers=BROWSER).status_code == 404


@pytest.mark.slow
def test_both_under_granian():
    """The same answers from `mockserver serve` (RSGI), which the in-process tests do not run."""
    with serving("--spec", str(KINDGI_SPEC), "--fixtures", str(KINDGI_FIXTURES), "--log-level", "warning") as (_, port):
        url = f"http://127.0.0.1:{port}"

        class Keep(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: object, **kwargs: object) -> None:
                return None  # the 302 itself is what is checked

        with pytest.raises(urllib.error.HTTPError) as redirected:
            urllib.request.build_opener(Keep).open(urllib.request.Request(url + "/", headers=BROWSER))
        assert redirected.value.code == 302 and redirected.value.headers["Location"] == "/__mock/"
        with urllib.request.urlopen(url + "/favicon.ico") as icon:
            assert icon.headers["Content-Type"] == "image/x-icon" and icon.read()[:4] == b"\0\0\1\0"
        with urllib.request.urlopen(url + "/__mock/requests") as journal:
            assert json.load(journal)["requests"] == []
