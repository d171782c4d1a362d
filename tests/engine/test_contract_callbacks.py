"""`mockserver contract --url` checks a deployment's callbacks: a small stand-in of the tests' own subscribes a
client (`POST /subscriptions` with a `callbackUrl`) and then calls that URL back, rightly or wrongly; the run puts
its receiver's URL in the request and checks what comes back (tests/data/contract_callbacks)."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from werkzeug.wrappers import Request, Response

from conftest import ROOT, free_port
from stand_ins import Served

pytestmark = pytest.mark.slow  # the contract runs as a subprocess against a server on a port

SPEC = ROOT / "tests" / "data" / "contract_callbacks" / "openapi.yaml"
RIGHT = {"subscriptionId": "sub-1", "shippedAt": "2026-12-03T10:00:00Z"}
SIGNED = {"X-Hook-Signature": "sha256=00ff"}


def shipping(send: Callable[[str], None] | None) -> Callable[..., Any]:
    """The stand-in: a subscription is answered 201, then `send(callbackUrl)` runs in a thread (None: it never
    calls back); anything else is a 400."""

    @Request.application
    def app(request: Request) -> Response:
        body = request.get_json(silent=True)
        if (request.path != "/subscriptions" or request.method != "POST" or not isinstance(body, dict)
                or set(body) != {"callbackUrl", "topic"} or body["topic"] != "orders"
                or not isinstance(body["callbackUrl"], str)):
            return Response(json.dumps({"message": "not a subscription"}), 400, content_type="application/json")
        if send is not None:
            threading.Thread(target=send, args=(body["callbackUrl"],), daemon=True).start()
        return Response(json.dumps({"id": "sub-1"}), 201, content_type="application/json")

    return app


def calling_back(path: str, payload: dict[str, Any], headers: dict[str, str],
                 method: str = "POST") -> Callable[[str], None]:
    """A `send` that POSTs (or another `method`) `payload` to the callback URL with `path` after it."""

    def send(url: str) -> None:
        request = urllib.request.Request(url + path, json.dumps(payload).encode(), method=method,
                                         headers={"Content-Type": "application/json", **headers})
        urllib.request.urlopen(request, timeout=5).close()

    return send


@contextmanager
def stand_in(send: Callable[[str], None] | None) -> Iterator[str]:
    server = Served(shipping(send))
    try:
        yield server.url
    finally:
        server.stop()


def contract(url: str | None, *extra: str) -> subprocess.CompletedProcess[str]:
    """The CLI against `url` (None: the mock, in-process), a short positive run of the examples."""
    target = ["--url", url] if url is not None else []
    return subprocess.run([sys.executable, "-m", "mockserver", "contract", *target, "--spec", str(SPEC),
                           "--mode", "positive", "--phases", "examples", "--max-examples", "2", "--seed", "1",
                           "--no-force", "--no-discover", "--exclude-checks", "unsupported_method",
                           "--callback-timeout", "2", *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_a_callback_that_fits_its_description_passes():
    """The receiver's URL reaches the stand-in in the body's `callbackUrl`; the callback it sends (the right
    path, header and body) passes, on the port --callback-listen names."""
    port = free_port()
    with stand_in(calling_back("/events", RIGHT, SIGNED)) as url:
        run = contract(url, "--callback-listen", f"127.0.0.1:{port}")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "  ok   callbacks                      1 passed" in run.stdout, run.stdout


def test_a_callback_with_a_wrong_body_fails_naming_the_field():
    with stand_in(calling_back("/events", {**RIGHT, "shippedAt": 42}, SIGNED)) as url:
        run = contract(url)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "POST /subscriptions · callbacks: Callback body does not match its schema" in run.stdout, run.stdout
    assert "cause:     callback orderShipped body /shippedAt · rules: type" in run.stdout, run.stdout
    assert "expected:  body /shippedAt: 42 is not of type 'string'" in run.stdout
    assert "reproduce: curl -X POST" in run.stdout and "/subscriptions" in run.stdout


def test_a_callback_that_never_comes_fails_with_never_arrived():
    with stand_in(None) as url:
        run = contract(url, "--callback-timeout", "0.5")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "callbacks: Declared callback never arrived" in run.stdout, run.stdout
    assert "got:       nothing arrived" in run.stdout
    assert "callback orderShipped or orderCancelled" in run.stdout  # alternatives: one finding, naming both


def test_a_callback_to_another_path_with_another_method_or_without_its_header_is_found():
    """Sent to `…/event` (the description says `…/events`): a path no request gave, and the one declared never
    came; a PUT where a POST is declared: likewise; sent without its signature header: that header is named."""
    with stand_in(calling_back("/event", RIGHT, SIGNED)) as url:
        run = contract(url, "--callback-timeout", "0.5")
    assert run.returncode == 1 and "callbacks: Callback to a path no request gave" in run.stdout, run.stdout
    assert "Declared callback never arrived" in run.stdout
    with stand_in(calling_back("/events", RIGHT, SIGNED, "PUT")) as url:
        run = contract(url, "--callback-timeout", "0.5")
    assert "cause:     callback orderShipped method · rules: not declared" in run.stdout, run.stdout
    assert "Declared callback never arrived" in run.stdout
    with stand_in(calling_back("/events", RIGHT, {})) as url:
        run = contract(url)
    assert run.returncode == 1, run.stdout
    assert "cause:     callback orderShipped header X-Hook-Signature · rules: missing" in run.stdout, run.stdout


def test_callback_options_that_cannot_be_used_are_refused(tmp_path: Path):
    """Exit 2 before any check: a receiver without a deployment, a description without callbacks, an address
    already taken."""
    in_process = contract(None, "--callback-listen", "127.0.0.1:0")
    assert in_process.returncode == 2 and "need --url" in in_process.stderr, in_process.stderr
    plain = tmp_path / "plain.yaml"
    plain.write_text(SPEC.read_text().split("      callbacks:")[0])
    with stand_in(None) as url:
        run = contract(url, "--spec", str(plain), "--callback-listen", "127.0.0.1:0")
        assert run.returncode == 2 and "no operation of" in run.stderr and "declares a callback" in run.stderr, \
            run.stderr
        port = int(url.rpartition(":")[2])  # taken by the stand-in
        taken = contract(url, "--callback-listen", f"127.0.0.1:{port}")
    assert taken.returncode == 2 and f"--callback-listen 127.0.0.1:{port}: cannot listen there" in taken.stderr, \
        taken.stderr


def test_a_callback_url_that_does_not_parse_is_refused_with_its_place(tmp_path: Path):
    broken = tmp_path / "broken.yaml"
    broken.write_text(SPEC.read_text().replace("{$request.body#/callbackUrl}/events", "{$request.bogus}/events"))
    with stand_in(None) as url:
        run = contract(url, "--spec", str(broken))
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"{broken}:43: /paths/~1subscriptions/post/callbacks/orderShipped/" in run.stderr, run.stderr
    assert "callback orderShipped: '$request.bogus'" in run.stderr and "Traceback" not in run.stderr
