"""Callbacks and webhooks the mock sends, through real HTTP on loopback: a mock in this process (or `mockserver
serve` on Redis) and a receiver in a thread (`mockserver.testing.CallbackReceiver`)."""
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from conftest import SHARED, serving
from mockserver.base.errors import LoadError
from mockserver.testing import CallbackReceiver, ControlError, MockServer
from mockserver.web.control import DESCRIPTION

DATA = Path(__file__).resolve().parent.parent / "data" / "callbacks"
SPEC, FIXTURES = DATA / "openapi.yaml", DATA / "fixtures"
ON_DATA = {"type": "object", "required": ["timestamp", "userData", "subscriptionId"],
           "properties": {"timestamp": {"type": "string"}, "userData": {"type": "string"},
                          "subscriptionId": {"type": "string"}}}
CONTROL = yaml.safe_load(DESCRIPTION.read_text())
OUTGOING_CALL = Draft202012Validator({**CONTROL["components"]["schemas"]["OutgoingCall"],
                                      "$defs": CONTROL["components"]["schemas"]})
PET = {"type": "object", "required": ["id", "name"],
       "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "tag": {"type": "string"}}}


def call(url: str, method: str = "GET", payload: Any = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def settled(mock: Any, count: int = 1, timeout: float = 5.0) -> list[dict[str, Any]]:
    """The journal of outgoing calls once `count` of them have a final verdict."""
    deadline = time.monotonic() + timeout
    while True:
        calls = mock.callbacks()
        if sum(c["verdict"] not in ("sending", "retrying") for c in calls) >= count:
            return calls
        assert time.monotonic() < deadline, f"no final verdict for {count} calls: {calls}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer(SPEC, FIXTURES, callback_retries=2) as server:
        yield server


@pytest.fixture()
def receiver(mock: MockServer) -> Iterator[CallbackReceiver]:
    mock.reset()
    with CallbackReceiver(202) as taker:
        yield taker


def test_a_callback_arrives_where_its_expression_points_with_a_body_that_fits_its_schema(mock, receiver):
    """The corpus' shape: `{$request.query.callbackUrl}/data`, a body generated from the callback's schema, its
    `subscriptionId` the one the answer gave; the receiver's 202 is what the callback declares."""
    status, answer = call(f"{mock.url}/streams?callbackUrl={receiver.url}", "POST")
    assert status == 201
    [arrived] = receiver.wait()
    assert (arrived.method, arrived.path) == ("POST", "/data")
    assert arrived.headers["content-type"] == "application/json"
    assert not list(Draft202012Validator(ON_DATA).iter_errors(arrived.json))
    assert arrived.json["subscriptionId"] == answer["subscriptionId"]
    [noted] = settled(mock)
    assert not list(OUTGOING_CALL.iter_errors(noted))  # as the control API's own description says
    assert noted["verdict"] == "ok" and noted["name"] == "onData" and noted["operationId"] == "subscribeStream"
    assert noted["url"] == f"{receiver.url}/data" and [a["status"] for a in noted["attempts"]] == [202]
    assert noted["id"] == arrived.headers["x-mock-callback-id"]


def test_a_session_s_journal_of_outgoing_calls_holds_the_calls_that_followed_its_requests(mock, receiver):
    ours = mock.session()
    call(f"{mock.url}/streams?callbackUrl={receiver.url}", "POST", headers=ours.headers)
    call(f"{mock.url}/streams?callbackUrl={receiver.url}", "POST")
    settled(mock, 2)
    [own] = ours.callbacks()
    assert own["session"] == ours.session_id and len(mock.callbacks()) == 2


def test_a_callback_url_mixes_text_with_the_request_s_body_and_the_answer_and_its_example_is_sent(mock, receiver):
    status, answer = call(f"{mock.url}/jobs", "POST", {"name": "nightly", "callbackUrl": f"{receiver.url}/done"})
    assert status == 202
    [arrived] = receiver.wait()
    assert (arrived.path, arrived.query) == ("/done", f"job={answer['id']}")
    assert arrived.json == {"id": "job-1", "status": "done"}  # the callback's own example first
    assert settled(mock)[0]["verdict"] == "breach"  # the jobs callback declares 200; the receiver answered 202


def test_no_callback_follows_an_answer_that_is_no_success(mock, receiver):
    status, _ = call(f"{mock.url}/jobs", "POST", {"name": "nightly", "callbackUrl": receiver.url},
                     {"Prefer": "code=400"})
    assert status == 400
    time.sleep(0.3)
    assert receiver.received == [] and mock.callbacks() == []


def test_prefer_callback_delay_holds_the_callback_back_and_a_bad_one_is_a_400(mock, receiver):
    answered = time.monotonic()
    call(f"{mock.url}/streams?callbackUrl={receiver.url}", "POST", headers={"Prefer": "callback-delay=600"})
    receiver.wait(timeout=5)
    assert time.monotonic() - answered >= 0.6
    status, body = call(f"{mock.url}/streams?callbackUrl={receiver.url}", "POST",
                        headers={"Prefer": "callback-delay=soon"})
    assert status == 400 and "callback-delay=soon" in json.dumps(body) and "Prefer" in json.dumps(body)


def test_a_webhook_fired_through_the_control_api_arrives_generated_or_as_given(mock, receiver):
    mock.subscribe("newPet", f"{receiver.url}/hooks")
    assert mock.control("GET", "webhooks")["webhooks"] == [
        {"name": "newPet", "methods": ["POST"], "subscribers": [f"{receiver.url}/hooks"]}]
    mock.fire("newPet")
    [generated] = receiver.wait()
    assert generated.path == "/hooks" and not list(Draft202012Validator(PET).iter_errors(generated.json))
    mock.fire("newPet", body={"id": "p-9", "name": "Given"})
    assert receiver.wait(2)[1].json == {"id": "p-9", "name": "Given"}
    assert [c["verdict"] for c in settled(mock, 2)] == ["breach", "breach"]  # newPet declares 200, not 202


def test_a_created_item_sends_its_webhook_with_the_item(mock, receiver):
    """The fixture's `webhooks: [newPet]` on a create: the event is the created item."""
    mock.subscribe("newPet", receiver.url)
    status, created = call(f"{mock.url}/pets", "POST", {"name": "Tom", "tag": "cat"})
    assert status == 201
    assert receiver.wait()[0].json == created


def test_a_receiver_answering_500_is_retried_and_each_try_journaled(mock):
    mock.reset()
    with CallbackReceiver(202, statuses=(500, 503)) as flaky:
        call(f"{mock.url}/streams?callbackUrl={flaky.url}", "POST")
        assert len(flaky.wait(3)) == 3
        [noted] = settled(mock)
    assert [a["status"] for a in noted["attempts"]] == [500, 503, 202]
    assert noted["verdict"] == "ok" and noted["answer"]["status"] == 202
    with CallbackReceiver(500) as broken:
        mock.reset()
        call(f"{mock.url}/streams?callbackUrl={broken.url}", "POST")
        [noted] = settled(mock)
    assert [a["status"] for a in noted["attempts"]] == [500, 500, 500]  # --callback-retries 2
    assert noted["verdict"] == "breach" and "status 500 is not declared" in noted["reason"]


def test_a_receiver_that_cannot_be_reached_is_journaled_as_failed(mock, receiver):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    call(f"{mock.url}/streams?callbackUrl=http://127.0.0.1:{port}", "POST")
    [noted] = settled(mock)
    assert noted["verdict"] == "failed" and len(noted["attempts"]) == 3 and noted["answer"] is None
    assert "no answer after 3 tries" in noted["reason"]


def test_a_target_outside_the_allow_list_is_refused_journaled_and_never_contacted(mock, receiver):
    call(f"{mock.url}/streams?callbackUrl=http://169.254.169.254/latest", "POST")
    [noted] = settled(mock)
    assert noted["verdict"] == "refused" and noted["attempts"] == []
    assert "169.254.169.254 is neither loopback nor a host --callback-allow names" in noted["reason"]


def test_a_callback_whose_url_the_call_lacks_is_journaled_unsendable_naming_the_expression(tmp_path, receiver):
    optional = SPEC.read_text().replace("required: [callbackUrl, name]", "required: [name]")
    (tmp_path / "openapi.yaml").write_text(optional)
    with MockServer(tmp_path / "openapi.yaml") as mock:
        assert call(f"{mock.url}/jobs", "POST", {"name": "nightly"})[0] == 202
        [noted] = settled(mock)
    assert noted["verdict"] == "unsendable" and noted["attempts"] == []
    assert noted["reason"] == ("its URL cannot be made: $request.body#/callbackUrl: the body has no value at "
                               "/callbackUrl")


def test_a_callback_url_names_a_path_parameter_of_the_call(tmp_path, receiver):
    """`{$request.path.topic}` takes the value the router found in the call's path."""
    described = SPEC.read_text().replace("  /streams:\n", "  /streams/{topic}:\n").replace(
        "        - {name: callbackUrl,", "        - {name: topic, in: path, required: true, schema: {type: string}}\n"
        "        - {name: callbackUrl,").replace("'{$request.query.callbackUrl}/data'",
                                           "'{$request.query.callbackUrl}/data/{$request.path.topic}'")
    (tmp_path / "openapi.yaml").write_text(described)
    with MockServer(tmp_path / "openapi.yaml") as mock:
        assert call(f"{mock.url}/streams/prices?callbackUrl={receiver.url}", "POST")[0] == 201
        [arrived] = receiver.wait()
    assert arrived.path == "/data/prices"


def _own_address() -> str:
    """This machine's address on its network (no packet is sent), or skip where it has only loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            address = probe.getsockname()[0]
        except OSError:
            address = "127.0.0.1"
    if address.startswith("127."):
        pytest.skip("this machine has no address besides loopback")
    return address


def test_callback_allow_lets_a_named_host_through():
    """A receiver on this machine's own network address: refused by default, reached once it is allowed."""
    address = _own_address()
    with CallbackReceiver(202, host="0.0.0.0") as receiver:
        target = f"http://{address}:{receiver.port}"
        for allowed, verdict in (((), "refused"), ((address,), "ok")):
            with MockServer(SPEC, FIXTURES, callback_allow=allowed) as mock:
                call(f"{mock.url}/streams?callbackUrl={target}", "POST")
                assert settled(mock)[0]["verdict"] == verdict
        assert len(receiver.received) == 1


def test_a_reset_forgets_the_outgoing_calls_and_the_subscriptions(mock, receiver):
    mock.subscribe("newPet", receiver.url)
    mock.fire("newPet")
    settled(mock)
    mock.reset()
    assert mock.callbacks() == []
    assert mock.control("GET", "webhooks")["webhooks"][0]["subscribers"] == []


@pytest.mark.parametrize(("path", "payload", "status", "says"), [
    ("webhooks/oldPet", {}, 404, "no webhook 'oldPet' in the description (its webhooks: newPet)"),
    ("webhooks/newPet", {}, 409, "no URL is subscribed to the webhook 'newPet'"),
    ("webhooks/newPet", {"bodee": {}}, 400, "an optional 'body'"),
    ("webhooks/subscriptions", {"webhook": "newPet"}, 400, "'url' is required"),
    ("webhooks/subscriptions", {"webhook": "newPet", "url": "file:///etc/passwd"}, 400, "is not an http(s) URL"),
    ("webhooks/subscriptions", {"webhook": "nope", "url": "http://127.0.0.1/"}, 404, "no webhook 'nope'"),
])
def test_a_bad_control_call_about_webhooks_says_what_is_wrong(mock, receiver, path, payload, status, says):
    with pytest.raises(ControlError) as refused:
        mock.control("POST", path, payload)
    assert refused.value.status == status and says in refused.value.body


def test_the_fixtures_subscribe_urls_to_a_webhook_and_delay_the_callbacks(tmp_path):
    with CallbackReceiver(200) as receiver:
        (tmp_path / "settings.yaml").write_text(
            f"settings:\n  callbacks:\n    delayMs: 500\n    subscriptions:\n      newPet: [{receiver.url}/pets]\n"
            + (FIXTURES / "callbacks.yaml").read_text())
        with MockServer(SPEC, tmp_path) as mock:
            assert mock.control("GET", "webhooks")["webhooks"][0]["subscribers"] == [f"{receiver.url}/pets"]
            answered = time.monotonic()
            status, created = call(f"{mock.url}/pets", "POST", {"name": "Tom"})
            assert status == 201
            [event] = receiver.wait()
            assert time.monotonic() - answered >= 0.5
            assert (event.path, event.json) == ("/pets", created)


def test_a_fixture_naming_an_unknown_webhook_is_a_start_up_problem_with_its_place(tmp_path):
    (tmp_path / "hooks.yaml").write_text("operations:\n  createPet:\n    webhooks: [petGone]\n")
    with pytest.raises(LoadError) as refused:
        MockServer(SPEC, tmp_path)
    assert "hooks.yaml:3: /operations/createPet/webhooks/0: no webhook 'petGone' in the description" \
        in str(refused.value)


def test_a_callback_url_that_is_no_runtime_expression_is_a_warning_naming_it(tmp_path):
    broken = SPEC.read_text().replace("'{$request.query.callbackUrl}/data'", "'{$request.cookie.x}/data'")
    (tmp_path / "openapi.yaml").write_text(broken)
    with MockServer(tmp_path / "openapi.yaml") as mock:
        assert not mock.pipeline.spec.operations["subscribeStream"].callbacks
        [warning] = [w for w in mock.pipeline.warnings if w.rule == "callback"]
    assert "/paths/~1streams/post/callbacks/onData/{$request.cookie.x}~1data" in str(warning)


@pytest.mark.slow
def test_two_replicas_on_redis_send_each_callback_once(redis_server):
    """`mockserver serve` twice on one Redis: every answer's callback is claimed from the shared outbox by one
    replica, so each arrives once, whichever replica answered and however many claim."""
    url = redis_server.url()
    with ExitStack() as stack, CallbackReceiver(202) as receiver:
        ports = [stack.enter_context(serving("--spec", str(SPEC), "--fixtures", str(FIXTURES), "--state", url,
                                             "--log-level", "warning"))[1] for _ in range(2)]
        for n in range(20):
            status, _ = call(f"http://127.0.0.1:{ports[n % 2]}/jobs", "POST",
                             {"name": f"job-{n}", "callbackUrl": f"{receiver.url}/{n}"})
            assert status == 202
        receiver.wait(20, timeout=10)
        time.sleep(1.0)  # a second send of any would have come by now
        assert sorted(r.path for r in receiver.received) == sorted(f"/{n}" for n in range(20))
        ids = [r.headers["x-mock-callback-id"] for r in receiver.received]
        assert len(set(ids)) == 20
        journal = call(f"http://127.0.0.1:{ports[1]}/__mock/callbacks")[1]["calls"]
        assert sorted(c["id"] for c in journal) == sorted(ids)


CORPUS = SHARED / "corpus"


@pytest.mark.skipif(not (CORPUS / "oai-callback-example.json").exists(),
                    reason="the corpus (../shared/corpus) is not on this machine")
def test_the_corpus_callback_example_calls_back_with_a_body_that_fits_its_schema():
    with MockServer(CORPUS / "oai-callback-example.json") as mock, CallbackReceiver(202) as receiver:
        assert call(f"{mock.url}/streams?callbackUrl={receiver.url}", "POST")[0] == 201
        [arrived] = receiver.wait()
        schema = mock.pipeline.spec.operations["POST /streams"].callbacks[0].request_body.content[
            "application/json"].schema
        assert arrived.path == "/data" and schema.validator.is_valid(arrived.json)
        assert settled(mock)[0]["verdict"] == "ok"


@pytest.mark.skipif(not (CORPUS / "oai-webhook-example.yaml").exists(),
                    reason="the corpus (../shared/corpus) is not on this machine")
@pytest.mark.parametrize(("name", "webhook"), [("oai-webhook-example.yaml", "newPet"),
                                               ("redocly-museum.yaml", "publishNewEvent")])
def test_the_corpus_webhooks_fire_with_a_body_that_fits_their_schema(name, webhook):
    with MockServer(CORPUS / name) as mock, CallbackReceiver(200) as receiver:
        mock.fire(webhook, url=receiver.url)
        [arrived] = receiver.wait()
        schema = mock.pipeline.spec.webhooks[webhook][0].request_body.content["application/json"].schema
        assert schema.validator.is_valid(arrived.json)


@pytest.mark.browser
def test_the_dashboard_fires_a_webhook_and_shows_the_outgoing_journal(mock, receiver):
    """Chromium on the dashboard: the webhook's Send button, then the call's row with its receiver's answer."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip(f"no browser: {chromium} is missing")
    mock.subscribe("newPet", f"{receiver.url}/hooks")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=["--headless", "--no-sandbox"])
        page = browser.new_page()
        page.goto(mock.url + "/__mock/")
        section = page.locator("#outgoing")
        sync_api.expect(section).to_be_visible()
        sync_api.expect(section.locator("select[name=webhook]")).to_have_value("newPet")
        section.get_by_role("button", name="Send").click()
        row = section.locator("tbody tr").first
        sync_api.expect(row.locator(".verdict")).to_have_text("breach")  # newPet declares 200; it answered 202
        sync_api.expect(row).to_contain_text(f"POST {receiver.url}/hooks")
        sync_api.expect(row).to_contain_text("202")
        browser.close()
    assert receiver.wait()[0].path == "/hooks"
