"""The floor and the ceilings the mock is measured against: a bare Flask app, a raw WSGI callable and a raw RSGI
app (the interface `mockserver serve` answers on), each answering the same bytes from memory (the mock's first
page of listTestSets).

Run by bench/run.py as `granian`/`gunicorn bench.baselines:flask_app` / `bench.baselines:wsgi_app`, and
`granian --interface rsgi bench.baselines:rsgi_app`; the payload is read from the file named by BENCH_PAYLOAD."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from flask import Flask, Response

PAYLOAD = Path(os.environ.get("BENCH_PAYLOAD", "/dev/null")).read_bytes()

flask_app = Flask("bare")


@flask_app.get("/<path:anything>")
def everything(anything: str) -> Response:
    return Response(PAYLOAD, content_type="application/json")


def wsgi_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(PAYLOAD)))])
    return [PAYLOAD]


async def rsgi_app(scope: Any, proto: Any) -> None:
    proto.response_bytes(200, [("Content-Type", "application/json"), ("Content-Length", str(len(PAYLOAD)))], PAYLOAD)
