"""Stand-ins for a real deployment in the proxy, record and contract tests: the Kindgi mock on a port, a
deliberately drifting Kindgi (the mock's answers, broken in known places), and helpers to call them."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from flask import Flask
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from conftest import DEMO

WSGI = Callable[..., Any]


class Served:
    """A WSGI app on a free port in a thread (the description-less stand-ins MockServer cannot serve)."""

    def __init__(self, app: WSGI) -> None:
        self._server = make_server("127.0.0.1", 0, app, threaded=True)
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def drifting(kindgi: Flask) -> WSGI:
    """Kindgi, wrong on purpose: the test set list calls items 1 and 2 of every page kind `weird` and drops
    X-Request-Id; a 503 has no Retry-After; an agent's cases are a 418 the description does not declare."""
    client = kindgi.test_client()

    @Request.application
    def app(request: Request) -> Response:
        if request.path.startswith("/v1/agents/"):
            return Response(json.dumps({"teapot": True}), 418, content_type="application/json")
        answer = client.open(request.path, method=request.method, query_string=request.query_string.decode(),
                             headers={k: v for k, v in request.headers.items() if k.lower() != "host"})
        body, headers = answer.get_json(), dict(answer.headers)
        if request.path == "/v1/test-sets" and answer.status_code == 200:
            for item in body["data"][1:3]:
                item["kind"] = "weird"
            del headers["X-Request-Id"]
        if answer.status_code == 503:
            del headers["Retry-After"]
        headers.pop("Content-Length")
        return Response(json.dumps(body), answer.status_code, headers=headers)

    return app


def not_implemented(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    start_response("501 Not Implemented", [("Content-Type", "application/json")])
    return [b'{"error": "not yet"}']


def get(base: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    """Status, headers and JSON body of a GET, errors included."""
    request = urllib.request.Request(base + path, headers={**DEMO, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


def ids_elsewhere(kindgi: WSGI) -> WSGI:
    """Kindgi deployed with data of its own: no id of the fixtures exists there (each id in a path is looked up as
    another one), and OPTIONS answers 200 to anything, as CORS-minded frameworks do."""
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ["REQUEST_METHOD"] == "OPTIONS":
            start_response("200 OK", [("Content-Type", "text/plain"), ("Allow", "GET, OPTIONS"),
                                      ("X-Request-Id", "req_options")])
            return [b""]
        for key in ("PATH_INFO", "RAW_URI", "REQUEST_URI"):  # the mock reads the path as sent, when it can
            parts = environ.get(key, "").split("/")  # "", "v1", "agents", "{agentId}", …
            if len(parts) > 3:
                parts[3] += "-elsewhere"
                environ[key] = "/".join(parts)
        return kindgi(environ, start_response)

    return app
