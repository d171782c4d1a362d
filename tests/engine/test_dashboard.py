"""The dashboard in a real browser (Playwright driving Debian's Chromium): the operations with their fixtures,
statuses and calls; a call made with the page's own controls; a one-click 503 that the next call meets; the
scenario form; a journal row in full with Authorization masked; the control token asked for once; Swagger UI's
"Try it out" against the mock. No request leaves the mock: every asset is its own.

`make test` installs Chromium when it is missing; where it cannot be (no apt), these tests are skipped.
`MOCKSERVER_SCREENSHOT=docs/dashboard.png pytest tests/engine/test_dashboard.py -k screenshot` renews the
dashboard's picture."""
from __future__ import annotations

import json
import logging
import os
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, SAMPLE_PROJECT, body, serving
from mockserver import create_app
from mockserver.testing import MockServer

pytestmark = pytest.mark.browser  # a real Chromium

CHROMIUM = Path("/usr/bin/chromium")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
expect = sync_api.expect
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
TIMEOUT_MS = 10_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (`make test` installs Debian's chromium where apt works)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per poll
    with MockServer(KINDGI_SPEC, KINDGI_FIXTURES) as started:
        yield started


def open_page(browser: Any, url: str) -> tuple[Any, list[str]]:
    """A fresh page, and the list of every request it tried outside the mock (aborted): it must stay empty."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    outside: list[str] = []

    def only_the_mock(route: Any) -> None:
        if route.request.url.startswith(url) or route.request.url.startswith("blob:"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", only_the_mock)
    return context.new_page(), outside


@pytest.fixture()
def page(browser: Any, server: MockServer) -> Iterator[Any]:
    server.reset()
    opened, outside = open_page(browser, server.url)
    opened.goto(server.url + "/__mock/")
    expect(opened.locator("#caller")).to_have_value("Bearer demo-token")  # the callers came: the page is live
    yield opened
    opened.context.close()
    assert outside == []


def card(page: Any, operation_id: str) -> Any:
    return page.locator(f'.operation[data-operation="{operation_id}"]')


def call(server: MockServer, path: str) -> None:
    call_url(server.url, path)


def call_url(mock: str, path: str) -> None:
    urllib.request.urlopen(urllib.request.Request(mock + path, headers=DEMO), timeout=10).close()


def test_operations_show_fixtures_statuses_and_live_calls(page, server):
    expect(page.locator("h3.group")).to_have_text(["Test sets", "Agents", "Eval suites"])
    test_sets = card(page, "listTestSets")
    expect(test_sets.locator(".fixtures")).to_have_text("167 fixture items")
    expect(test_sets.locator(".statuses .status")).to_have_text(["200", "400", "401", "503"])
    expect(test_sets.locator("[data-calls]")).to_have_text("0 calls")
    call(server, "/v1/test-sets?limit=1")  # made elsewhere: the page sees it by polling
    expect(test_sets.locator("[data-calls]")).to_have_text("1 call")
    expect(test_sets.locator('.statuses [data-status="200"]')).to_have_class(re.compile(r"\bseen\b"))
    expect(page.locator("#journal tbody tr").first).to_contain_text("/v1/test-sets?limit=1")


def test_a_call_with_the_pages_own_controls(page):
    agents = card(page, "listAgentTestSetCases")
    expect(agents.locator("input[name=url]")).to_have_value(re.compile(r"^/v1/agents/acme\.drafting/test-set/cases"))
    agents.get_by_role("button", name="Try").click()
    expect(agents.locator(".result")).to_have_text("200 OK")
    row = page.locator("#journal tbody tr").first
    expect(row.locator("td")).to_have_text([re.compile(r"\d+"), re.compile(r"\d\d:\d\d:\d\d"), "GET",
                                            re.compile(r"^/v1/agents/acme\.drafting/test-set/cases\?projectId="),
                                            "200", "fixture", re.compile(r"[\d.]+")])
    expect(agents.locator("[data-percent]")).to_have_text("18.2 % (2 of 11)")


@pytest.mark.parametrize("operation_id", ["listTestSets", "listTestSetVersionCases", "listAgentTestSetCases",
                                          "listEvalSuiteVersionCases"])
def test_every_try_answers_on_its_first_click(page, operation_id):
    """The forms are filled with ids the fixtures hold (not the description's examples), so no first click 404s."""
    operation = card(page, operation_id)
    operation.get_by_role("button", name="Try").click()
    expect(operation.locator(".result")).to_have_text("200 OK")


@contextmanager
def other_origin() -> Iterator[str]:
    """A page served on another loopback port: another origin (and the same site, as a dev server would be)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = b"<!doctype html><title>other origin</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    other = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{other.server_address[1]}"
    finally:
        other.shutdown()
        other.server_close()


def run_on(browser: Any, origin: str, script: str, mock: str) -> Any:
    """What `script` (an async function of the mock's URL) gives, run in a page of `origin`."""
    context = browser.new_context()
    try:
        opened = context.new_page()
        opened.goto(origin + "/")
        return opened.evaluate(script, mock)
    finally:
        context.close()


def test_a_page_of_a_control_origin_sets_its_own_error_case(browser):
    """Storybook, Cypress or a component test in the browser, its origin named with --control-origin: the control
    API answers it CORS, so it sets a scenario and then sees it."""
    with other_origin() as origin, MockServer(KINDGI_SPEC, KINDGI_FIXTURES, control_origins=(origin,)) as server:
        statuses = run_on(browser, origin, """async (mock) => {
            const set = await fetch(mock + "/__mock/scenarios", {method: "POST", headers: {"Content-Type":
              "application/json"}, body: JSON.stringify({operationId: "listTestSets", status: 503, times: 1})});
            const first = await fetch(mock + "/v1/test-sets", {headers: {Authorization: "Bearer demo-token"}});
            const refused = await fetch(mock + "/v1/test-sets");
            return [set.status, first.status, first.headers.get("Retry-After"), refused.status,
                    refused.headers.get("WWW-Authenticate") !== null];
        }""", server.url)
    assert statuses == [201, 503, "2", 401, True]


ATTACK = """async (mock) => {
    const tried = async (url, options) => {
        try {
            const answer = await fetch(mock + url, options);
            return answer.type === "opaque" ? "sent" : `read ${answer.status} ${await answer.text()}`;
        } catch (error) {
            return "blocked";
        }
    };
    const plain = {method: "POST", headers: {"Content-Type": "text/plain"}};
    const busy = JSON.stringify({operationId: "listTestSets", status: 503});
    return {
        reset: await tried("/__mock/reset", plain),
        resetUnseen: await tried("/__mock/reset", {...plain, mode: "no-cors"}),
        scenario: await tried("/__mock/scenarios?session=alice", {...plain, body: busy}),
        scenarioJson: await tried("/__mock/scenarios?session=alice",
                                  {...plain, headers: {"Content-Type": "application/json"}, body: busy}),
        journal: await tried("/__mock/requests"),
        coverage: await tried("/__mock/coverage"),
    };
}"""


@pytest.mark.slow
def test_a_page_of_another_origin_can_neither_change_nor_read_the_mock(browser):
    """Issue 27: any page the developer has open tries what needs no preflight (text/plain POSTs to reset and to
    alice's scenarios, `no-cors`), a JSON POST, and reads of the journal and coverage against `mockserver serve`
    with the default flags: nothing reaches the page, nothing changes."""
    with other_origin() as origin, serving("--log-level", "warning") as (_, port):
        mock = f"http://127.0.0.1:{port}"
        call_url(mock, "/v1/test-sets?limit=1")
        tried = run_on(browser, origin, ATTACK, mock)
        assert tried == {"reset": "blocked", "resetUnseen": "sent", "scenario": "blocked", "scenarioJson": "blocked",
                         "journal": "blocked", "coverage": "blocked"}
        with urllib.request.urlopen(mock + "/__mock/requests", timeout=10) as answer:
            journal = json.loads(answer.read())["requests"]
        assert [e["path"] for e in journal] == ["/v1/test-sets"]  # no reset, and the page's tries were not calls
        alice = urllib.request.Request(mock + "/v1/test-sets?limit=1", headers={**DEMO, "X-Mock-Session": "alice"})
        with urllib.request.urlopen(alice, timeout=10) as answer:
            assert answer.status == 200  # no scenario was set for alice


def test_one_click_makes_the_next_call_fail(page):
    test_sets = card(page, "listTestSets")
    test_sets.locator('button[data-fail="503"]').click()
    scenario = page.locator("#scenarios tbody tr", has_text="listTestSets")
    expect(scenario.locator("td").nth(2)).to_have_text("status 503")
    expect(scenario.locator("td").nth(3)).to_have_text("1")
    test_sets.get_by_role("button", name="Try").click()
    expect(test_sets.locator(".result")).to_have_text("503 Service Unavailable")
    failed = page.locator("#journal tbody tr").first
    expect(failed.locator("td.status")).to_have_text("503")
    expect(failed.locator("td.source")).to_have_text(re.compile(r"^scenario s\d+$"))
    expect(scenario).to_have_count(0)  # used up: the call after answers as usual
    test_sets.get_by_role("button", name="Try").click()
    expect(page.locator("#journal tbody tr").first.locator("td.status")).to_have_text("200")


def test_scenarios_are_added_and_removed_with_the_form(page):
    form = page.locator("#add-scenario")
    form.locator("select[name=operationId]").select_option("listAgentTestSetCases")
    expect(form.locator("select[name=status] option")).to_have_text(["no status", "200", "400", "401", "404", "503"])
    form.locator("select[name=status]").select_option("404")
    form.locator("input[name=times]").fill("2")
    form.locator("input[name=latency]").fill("5")
    form.get_by_role("button", name="Add").click()
    row = page.locator("#scenarios tbody tr", has_text="listAgentTestSetCases").filter(has_text="404")
    expect(row.locator("td").nth(2)).to_have_text("status 404, 5 ms")
    card(page, "listAgentTestSetCases").get_by_role("button", name="Try").click()
    expect(page.locator("#journal tbody tr").first.locator("td.status")).to_have_text("404")
    expect(row.locator("td").nth(3)).to_have_text("1")
    row.get_by_role("button", name="remove").click()
    expect(row).to_have_count(0)
    form.locator("select[name=status]").select_option("")
    form.locator("input[name=latency]").fill("")  # a scenario that does nothing: the control API says why
    form.get_by_role("button", name="Add").click()
    expect(form.locator(".problem")).to_have_text(
        "a scenario must do something: give a status, a latency, a break, steps or a newState")


def test_a_scenario_shows_where_it_stands(page, server):
    """Calls made elsewhere move a scenario on: the page shows the step it is at, the calls it still lets through
    and its state machine."""
    server.scenario(id="seq", operationId="listTestSets", after=1, state="db", newState="tired",
                    steps=[{"status": 503, "times": 1}, {"latency": 5}])
    row = page.locator("#scenarios tbody tr", has_text="seq")
    expect(row.locator("td").nth(2)).to_have_text("status 503, step 1 of 2, after 1 more call, db is Started, "
                                                  "moves it to tired")
    call(server, "/v1/test-sets?limit=1")  # let through
    with pytest.raises(urllib.error.HTTPError):  # the 503 of step 1
        call(server, "/v1/test-sets?limit=1")
    expect(row.locator("td").nth(2)).to_have_text("5 ms, step 2 of 2, db is tired, moves it to tired")
    expect(row.locator("td").nth(4)).to_have_text("2")


def test_the_pages_own_buttons_change_the_mock(page, server):
    """The dashboard is of the mock's own origin: its bodiless POST and DELETE (Clear journal, Reset, remove all)
    say JSON and are let in."""
    call(server, "/v1/test-sets?limit=1")
    expect(page.locator("#journal tbody tr")).to_have_count(1)
    page.locator("#clear-journal").click()
    expect(page.locator("#journal tbody tr")).to_have_count(0)
    assert server.requests() == []
    server.scenario(operationId="listTestSets", status=503)
    page.locator("#clear-scenarios").click()
    expect(page.locator("#scenarios tbody tr")).to_have_count(0)
    page.locator("#reset").click()
    expect(page.locator("#scenarios tbody tr")).not_to_have_count(0)  # the fixtures' scenarios are back
    assert {s["origin"] for s in server.scenarios()} == {"fixtures"}


def test_a_journal_row_in_full_with_authorization_masked(page):
    card(page, "listTestSets").locator("input[name=url]").fill("/v1/test-sets?limit=2&kind=accuracy")
    card(page, "listTestSets").get_by_role("button", name="Try").click()
    page.locator("#journal tbody tr").first.click()
    detail = page.locator("#detail")
    expect(detail).to_be_visible()
    expect(detail.locator("h2")).to_have_text(re.compile(r"^#\d+ listTestSets · fixture · [\d.]+ ms$"))
    request = detail.locator(".request")
    expect(request).to_contain_text("GET /v1/test-sets?limit=2&kind=accuracy")
    expect(request).to_contain_text("authorization: Bearer demo…")
    expect(request).not_to_contain_text("demo-token")
    response = detail.locator(".response")
    expect(response).to_contain_text(re.compile(r"^200\n", re.M))
    expect(response).to_contain_text('"hasMore": true')  # pretty-printed JSON
    detail.get_by_role("button", name="close").click()
    expect(detail).to_be_hidden()


def test_the_control_token_is_asked_for_once(browser):
    with MockServer(KINDGI_SPEC, KINDGI_FIXTURES, control_token="s3cret") as guarded:
        page, outside = open_page(browser, guarded.url)
        page.goto(guarded.url + "/__mock/")
        dialog = page.locator("#token-dialog")
        expect(dialog).to_be_visible()
        dialog.locator("input[name=token]").fill("wrong")
        dialog.get_by_role("button", name="Use").click()
        expect(dialog.locator(".problem")).to_have_text("That token was refused.")
        dialog.locator("input[name=token]").fill("s3cret")
        dialog.get_by_role("button", name="Use").click()
        expect(dialog).to_be_hidden()
        expect(page.locator("#caller")).to_have_value("Bearer demo-token")
        test_sets = card(page, "listTestSets")
        test_sets.get_by_role("button", name="Try").click()
        expect(test_sets.locator("[data-calls]")).to_have_text("1 call")
        page.reload()  # kept in this browser: not asked again, here or on the docs page
        expect(card(page, "listTestSets").locator("[data-calls]")).to_have_text("1 call")
        expect(dialog).to_be_hidden()
        page.goto(guarded.url + "/__mock/docs")
        expect(page.locator("#operations-Test_sets-listTestSets")).to_be_visible()
        expect(dialog).to_be_hidden()
        page.context.close()
    assert outside == []


def try_it_out(browser, server, operation_id: str, fill: dict[str, str]) -> dict:
    """Swagger UI's Try it out on the docs page, with `fill`'s parameters typed in and the others as it fills
    them in: the journal entry of the call it made, once the page shows a 200 and has called nothing outside."""
    server.reset()
    page, outside = open_page(browser, server.url)
    page.goto(server.url + "/__mock/docs")
    operation = page.locator(f"#operations-{operation_id}")
    operation.locator(".opblock-summary-control").click()
    for name, value in fill.items():
        operation.locator(f"input[placeholder={name}]").fill(value)
    operation.locator("button.execute").click()
    expect(operation.locator(".live-responses-table tbody .response-col_status")).to_have_text("200")
    [entry] = server.requests(operationId=operation_id.rpartition("-")[2])
    page.context.close()
    assert outside == []
    return entry


def test_swagger_ui_tries_it_out_against_the_mock(browser, server):
    entry = try_it_out(browser, server, "Agents-listAgentTestSetCases", {"projectId": SAMPLE_PROJECT})
    assert entry["status"] == 200 and entry["requestHeaders"]["authorization"] == "Bearer demo…"  # preauthorized


def test_screenshot(page, server, tmp_path):
    """The README's picture: a few calls, a scenario, a row opened. Written to $MOCKSERVER_SCREENSHOT if set."""
    call(server, "/v1/test-sets?limit=2&kind=accuracy")
    call(server, f"/v1/agents/acme.drafting/test-set/cases?projectId={SAMPLE_PROJECT}&include=retired")
    card(page, "listTestSets").locator('button[data-fail="503"]').click()
    card(page, "listTestSets").get_by_role("button", name="Try").click()
    expect(page.locator("#journal tbody tr")).to_have_count(3)
    card(page, "listTestSets").locator("details.coverage summary").click()
    path = Path(os.environ.get("MOCKSERVER_SCREENSHOT") or tmp_path / "dashboard.png")
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000


def test_every_asset_is_the_mocks_own_and_split_descriptions_resolve(write):
    """Without a browser: the pages load nothing from elsewhere, and a description split over folders is served
    file by file where its relative `$ref`s point (a folder beside its own let in: `--allow-ref-outside`), its
    servers set to the mock."""
    write("shared/pets.yaml", """
        Pet: {type: object, properties: {name: {type: string, nullable: true}}}
    """)
    spec = write("api/openapi.yaml", """
        openapi: 3.0.3
        info: {title: Split, version: "1"}
        servers: [{url: "https://pets.example/v2"}]
        paths:
          /pets:
            get:
              responses:
                "200": {description: ok, content: {application/json: {schema: {$ref: "../shared/pets.yaml#/Pet"}}}}
    """)
    client = create_app(spec, allow_outside=[spec.parent.parent / "shared"]).test_client()
    for page in ("/__mock/", "/__mock/docs"):
        html = client.get(page).data.decode()
        assets = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert assets and all(a.startswith("/__mock/") or a == "data:," for a in assets), assets
        assert all(client.get(a).status_code == 200 for a in assets if a.startswith("/__mock/") and a != "/__mock/")
    assert 'data-description="/__mock/docs/description/api/openapi.yaml"' in client.get("/__mock/docs").data.decode()
    root = body(client.get("/__mock/docs/description/api/openapi.yaml"))
    assert root["servers"] == [{"url": "/v2", "description": "this mock"}] and root["openapi"] == "3.1.0"
    shared = body(client.get("/__mock/docs/description/shared/pets.yaml"))
    assert shared["Pet"]["properties"]["name"]["type"] == ["string", "null"]  # as the mock reads it
    assert client.get("/__mock/docs/description/../../etc/passwd").status_code == 404
    assert body(client.get("/__mock/callers")) == {"scheme": None, "kind": None, "header": None, "callers": []}


def test_a_journal_emptied_elsewhere_empties_the_page_and_no_later_call_is_lost(page, server):
    """The page learns of a reset made elsewhere from coverage, asked for before the journal: the rows go, and
    calls made around the reset all show (none is dropped with the rows that predate it)."""
    call(server, "/v1/test-sets?limit=1")
    expect(page.locator("#journal tbody tr")).to_have_count(1)
    server.reset()
    expect(page.locator("#journal tbody tr")).to_have_count(0)
    for _ in range(5):
        call(server, "/v1/test-sets?limit=2")
    expect(page.locator("#journal tbody tr")).to_have_count(5)


def test_a_redis_outage_is_shown_with_the_reason_health_gives(browser, own_redis):
    """While Redis is away the mock answers (503 mock-state-unavailable): the page says why, as health does, not
    that the mock does not answer; back to normal once Redis is."""
    with MockServer(KINDGI_SPEC, KINDGI_FIXTURES, state=own_redis.url()) as shared:
        page, outside = open_page(browser, shared.url)
        page.goto(shared.url + "/__mock/")
        expect(page.locator("#caller")).to_have_value("Bearer demo-token")
        problem = page.locator("#problem")
        expect(problem).to_be_hidden()
        own_redis.stop()
        expect(problem).to_be_visible()
        expect(problem).to_contain_text("its state store is unavailable: Redis at redis://127.0.0.1:")
        expect(problem).to_contain_text("503 mock-state-unavailable")
        own_redis.start()
        expect(problem).to_be_hidden()
        page.context.close()
    assert outside == []


def test_coverage_opens_as_a_page(page, server):
    call(server, "/v1/test-sets?limit=2&kind=accuracy")
    expect(page.locator("#coverage-total")).not_to_have_text("–")
    page.locator("#coverage-link").click()
    expect(page).to_have_url(server.url + "/__mock/coverage.html")
    report = page.locator("#coverage-report")
    expect(report.locator("[data-total]")).to_contain_text("1 call")
    listed = report.locator('.operation[data-operation="listTestSets"]')
    expect(listed.locator(".calls")).to_have_text("1 call")
    expect(listed.locator("tr", has_text="statuses")).to_contain_text("200×1")
    expect(listed.locator("tr", has_text=re.compile("^kind values"))).to_contain_text("accuracy×1")


def test_swagger_ui_answers_the_first_execute_with_the_examples_it_fills_in(browser, server):
    """Try it out sends every parameter's example: those of the scope triplet go together (no 400 scope-invalid)."""
    entry = try_it_out(browser, server, "Test_sets-listTestSets", {})
    assert "scopeKind=project" in entry["query"] and "scopeId=" in entry["query"]


def test_a_request_let_through_shows_its_violations_in_the_journal(browser):
    """`--request-validation warn`: the journal row says the call broke the description, its detail how."""
    lenient = Path(__file__).parent.parent / "data" / "lenient" / "items.yaml"
    with MockServer(lenient, request_validation="warn") as started:
        page, outside = open_page(browser, started.url)
        page.goto(started.url + "/__mock/")
        expect(page.locator("#journal")).to_be_visible()
        call_url(started.url, "/items?limit=50")
        row = page.locator("#journal tbody tr").first
        expect(row.locator("td.source")).to_have_text("generated · 1 violation")
        row.click()
        expect(page.locator("#detail .request")).to_contain_text(
            "answered despite breaking the description (--request-validation warn):\n"
            "  query limit (maximum): 50 is greater than the maximum of 10")
        counted = page.locator('.operation[data-operation="listItems"] [data-coverage] tr',
                               has_text="broke the description")
        expect(counted.locator("td").first).to_have_text("1 call")  # counted in coverage too
        page.context.close()
        assert outside == []


@pytest.mark.slow
def test_one_dashboard_switches_between_the_apis_of_a_mock_of_several(browser):
    """Each API's page makes its calls with its `?api=`: its operations, its journal, and links to the others."""
    pets = Path(__file__).parent.parent / "data" / "pets"
    with serving("--log-level", "warning", "--api", f"kindgi={KINDGI_SPEC},fixtures={KINDGI_FIXTURES},prefix=/kindgi",
                 "--api", f"pets={pets / 'openapi.yaml'},fixtures={pets / 'fixtures'},prefix=/pets-api") as (_, port):
        mock = f"http://127.0.0.1:{port}"
        page, outside = open_page(browser, mock)
        page.goto(mock + "/__mock/?api=pets")
        expect(card(page, "getPet")).to_be_visible()
        call_url(mock, "/pets-api/pets/1")
        call_url(mock, "/kindgi/v1/test-sets?limit=1")
        expect(page.locator("#journal tbody tr")).to_have_count(1)  # the pets call, not Kindgi's
        expect(page.locator("#journal tbody tr")).to_contain_text("/pets-api/pets/1")
        expect(page.locator("#problem")).to_be_hidden()  # its health, asked with ?api=pets, is fine
        page.get_by_role("link", name="kindgi", exact=True).click()
        expect(page).to_have_url(mock + "/__mock/?api=kindgi")
        expect(card(page, "listTestSets").locator("input[name=url]")).to_have_value(re.compile(r"^/kindgi/v1/"))
        expect(page.locator("#journal tbody tr")).to_have_count(1)
        expect(page.locator("#journal tbody tr")).to_contain_text("/kindgi/v1/test-sets")
        page.context.close()
    assert outside == []
