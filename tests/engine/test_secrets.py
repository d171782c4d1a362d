"""Secrets never stored: no credential the description declares (any name), none of the usual names and no
`writeOnly` value reaches the journal, the store behind it (memory or Redis), the access log or a recording's
files; the answers themselves are unchanged."""
import json
import logging
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from werkzeug.wrappers import Request, Response

from conftest import ROOT, body, free_port, serving
from mockserver import create_app
from stand_ins import Served

SPEC = ROOT / "tests" / "data" / "secrets" / "openapi.yaml"
KEY, SIG, COOKIE, TOKEN = "acme-Key-0123456789", "SIG-5550123456", "COOKIE-Sess-424242", "tok-Body-77777777"
PASSWORD, PIN, FORM_PASSWORD, BASIC = "hunter2-Pass-1", "PIN-98765-4321", "pw-Form-Secret-9", "YWRhOnMzY3JldC1wYXNz"
SECRETS = (KEY, SIG, COOKIE, TOKEN, PASSWORD, PIN, FORM_PASSWORD, BASIC, "tok-Example-Session-0042")
NEW_ACCOUNT = {"name": "Ada", "credentials": {"password": PASSWORD, "hint": "pet"}, "token": TOKEN,
               "devices": [{"label": "phone", "pin": PIN}, {"label": "watch"}]}


def leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def exercise(call: Any) -> dict[str, Any]:
    """Every kind of credential and `writeOnly` value, sent once each; `call(method, path, headers, body,
    content_type)` returns (status, body). Returns the answers by name."""
    json_body = json.dumps(NEW_ACCOUNT).encode()
    form = f"name=Ada&pin={PIN}&password={FORM_PASSWORD}".encode()
    return {
        "json": call("POST", f"/accounts?acme_sig={SIG}", {"X-Acme-Key": KEY}, json_body, "application/json"),
        "form": call("POST", "/accounts", {"X-Acme-Key": KEY}, form, "application/x-www-form-urlencoded"),
        "query": call("GET", f"/accounts/a1?view=full&acme_sig={SIG}&api_key={TOKEN}", {}, b"", None),
        "cookie": call("GET", "/accounts/a1", {"Cookie": f"acme_session={COOKIE}; theme=dark"}, b"", None),
        "basic": call("GET", "/session", {"Authorization": f"Basic {BASIC}"}, b"", None),
    }


def in_process(client: Any) -> Any:
    def call(method: str, path: str, headers: dict[str, str], data: bytes, content_type: str | None) -> Any:
        answer = client.open(path, method=method, headers=headers, data=data, content_type=content_type)
        return answer.status_code, body(answer)
    return call


def over_http(base: str) -> Any:
    def call(method: str, path: str, headers: dict[str, str], data: bytes, content_type: str | None) -> Any:
        sent = {**headers, **({"Content-Type": content_type} if content_type else {})}
        request = urllib.request.Request(base + path, data=data or None, method=method, headers=sent)
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    return call


def test_no_credential_or_write_only_value_reaches_the_journal_and_answers_are_unchanged():
    client = create_app(SPEC).test_client(use_cookies=False)  # the Cookie header as sent
    answers = exercise(in_process(client))
    assert [status for status, _ in answers.values()] == [201, 201, 200, 200, 200]  # each credential still works
    assert answers["basic"][1]["token"] == "tok-Example-Session-0042"  # the client gets the answer as it is

    journal = client.get("/__mock/requests")
    assert leaked(journal.get_data(as_text=True)) == []
    posted, form, query, cookie, basic = body(journal)["requests"]
    assert json.loads(posted["requestBody"]) == {  # keys kept, at every depth the schema says
        "name": "Ada", "credentials": {"password": "[masked]", "hint": "pet"}, "token": "[masked]",
        "devices": [{"label": "phone", "pin": "[masked]"}, {"label": "watch"}]}
    assert posted["query"] == "acme_sig=[masked]" and posted["requestHeaders"]["x-acme-key"] == "acme…"
    assert form["requestBody"] == "name=Ada&pin=[masked]&password=[masked]"
    assert query["query"] == "view=full&acme_sig=[masked]&api_key=[masked]"
    assert cookie["requestHeaders"]["cookie"] == "acme_session=[masked]; theme=[masked]"
    assert basic["requestHeaders"]["authorization"] == "Basic YWRh…"
    assert json.loads(basic["responseBody"]) == {"user": "ada", "token": "[masked]"}


def test_a_body_nested_deeper_than_the_default_limit_is_masked_as_the_mock_read_it():
    """With --max-depth raised, a body the request path reads is masked in the journal from that very value (the
    journal does not read it again under another limit and keep it as sent)."""
    client = create_app(SPEC, max_depth=400).test_client()
    deep: Any = "end"
    for _ in range(300):
        deep = [deep]
    answer = client.post("/accounts", json={**NEW_ACCOUNT, "notes": deep}, headers={"X-Acme-Key": KEY})
    assert answer.status_code in (201, 400)
    kept = body(client.get("/__mock/requests"))["requests"][0]["requestBody"]
    assert leaked(kept) == [] and json.loads(kept)["credentials"]["password"] == "[masked]"


def test_the_access_log_masks_credentials_in_the_query(caplog: pytest.LogCaptureFixture):
    client = create_app(SPEC).test_client(use_cookies=False)  # the Cookie header as sent
    with caplog.at_level(logging.INFO, logger="mockserver.access"):
        exercise(in_process(client))
        client.options(f"/accounts/a1?acme_sig={SIG}", headers={"Origin": "http://app.example",
                                                                "Access-Control-Request-Method": "GET"})
    lines = [r.getMessage() for r in caplog.records if r.name == "mockserver.access"]
    assert leaked("\n".join(lines)) == []
    assert lines[2].startswith("GET /accounts/a1?view=full&acme_sig=[masked]&api_key=[masked] 200 "), lines
    assert lines[-1].startswith("OPTIONS /accounts/a1?acme_sig=[masked] 204 "), lines


@pytest.mark.slow
def test_a_mock_served_on_redis_keeps_no_secret_in_redis_in_its_journal_or_its_log(redis_url: str):
    with serving("--spec", str(SPEC), "--state", redis_url) as (proc, port):
        base = f"http://127.0.0.1:{port}"
        assert [status for status, _ in exercise(over_http(base)).values()] == [201, 201, 200, 200, 200]
        with urllib.request.urlopen(base + "/__mock/requests", timeout=10) as answer:
            journal = answer.read().decode()
        proc.terminate()
        assert proc.wait(timeout=20) == 0 and proc.stderr is not None
        log = proc.stderr.read()
    assert len(json.loads(journal)["requests"]) == 5 and leaked(journal) == []
    assert "GET /accounts/a1?view=full&acme_sig=[masked]&api_key=[masked] 200 " in log and leaked(log) == []
    prefix = redis_url.rsplit("prefix=", 1)[1]
    with redis.Redis.from_url(redis_url.split("?")[0]) as store:
        kept = [repr(store.dump(key)) for key in store.scan_iter(f"{prefix}:*")]
    assert any("acme_sig=[masked]" in value for value in kept) and leaked("\n".join(kept)) == []


def deployment(request: Request) -> Response:
    """The real API's stand-in: it answers `writeOnly` values (which break the description), a session `token`,
    a cookie, and repeats the query's API key inside an answer."""
    sent = {"Content-Type": "application/json", "Set-Cookie": f"acme_session={COOKIE}; HttpOnly"}
    if request.path == "/accounts/a1":
        account = {"id": "a1", "name": "Ada", "credentials": {"hint": "pet", "password": PASSWORD},
                   "recoveryCode": PIN}
        return Response(json.dumps(account), 200, headers=sent)
    if request.path == "/accounts/a2":
        return Response(json.dumps({"id": "a2", "name": f"signed with {request.args['acme_sig']}"}), 200,
                        headers=sent)
    return Response(json.dumps({"user": "ada", "token": TOKEN}), 200, headers=sent)


@pytest.mark.slow
def test_a_recording_writes_no_credential_to_its_files_journal_drift_or_log(tmp_path: Path):
    target = Served(Request.application(deployment))
    port, out = free_port(), tmp_path / "recorded"
    proc = subprocess.Popen([sys.executable, "-m", "mockserver", "record", "--spec", str(SPEC), "--target",
                             target.url, "--out", str(out), "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    call = over_http(base)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                assert call("GET", f"/accounts/a1?acme_sig={SIG}", {}, b"", None)[1]["recoveryCode"] == PIN
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)
        assert call("GET", f"/accounts/a2?acme_sig={SIG}", {"Cookie": f"acme_session={COOKIE}"}, b"", None)[0] == 200
        assert call("GET", "/session", {"Authorization": f"Basic {BASIC}"}, b"", None)[1]["token"] == TOKEN
        with urllib.request.urlopen(base + "/__mock/requests", timeout=10) as answer:
            journal = answer.read().decode()
        with urllib.request.urlopen(base + "/__mock/drift", timeout=10) as answer:
            drift = answer.read().decode()
        proc.terminate()
        assert proc.wait(timeout=20) == 0 and proc.stderr is not None
        log = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        target.stop()
    files = {p.relative_to(tmp_path).as_posix(): p.read_text() for p in sorted(tmp_path.rglob("*.yaml"))}
    [rejected_file] = [name for name in files if name.startswith("recorded-rejected/getAccount-200-")]
    assert sorted(files) == ["recorded-rejected/" + rejected_file.split("/")[1], "recorded/operations.yaml"]
    assert leaked("\n".join(files.values())) == [] and leaked(journal) == [] and leaked(log) == []
    assert "GET /accounts/a1?acme_sig=[masked]" in drift and leaked(drift) == []
    kept = yaml.safe_load(files["recorded/operations.yaml"])["operations"]
    session = kept["getSession"]["respond"][0]["body"]
    assert session["user"] == "ada" and len(session["token"]) == len(TOKEN)  # a pseudonym of the same shape
    [signed] = kept["getAccount"]["respond"]
    assert signed["when"] == {"path": "id", "equals": "a2"}  # the API key is no condition
    rejected = yaml.safe_load(files[rejected_file])
    assert rejected["response"]["body"]["credentials"]["password"] == "[masked]"
    assert rejected["response"]["body"]["recoveryCode"] == "[masked]"
    assert "Set-Cookie" not in rejected["response"]["headers"]

