"""`--otel`: a span per request and a child span per stage, sent by the real OTLP/HTTP exporter to a collector on
loopback (the test's own, decoding what arrives with OpenTelemetry's protobuf classes)."""
from __future__ import annotations

import http.server
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, free_port, serving
from mockserver.cli import main

KINDGI = ("--spec", str(KINDGI_SPEC), "--fixtures", str(KINDGI_FIXTURES))
STAGES = {"route, authenticate, validate", "scenarios", "answer"}


class Collector(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP trace receiver: every span it was sent, as (name, kind, trace, span, parent, attributes)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Receive)
        self.spans: list[dict[str, Any]] = []


class _Receive(http.server.BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        sent = ExportTraceServiceRequest.FromString(self.rfile.read(int(self.headers["Content-Length"])))
        for resource in sent.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
            for scope in resource.scope_spans:
                for span in scope.spans:
                    self.server.spans.append({
                        "name": span.name, "kind": span.kind, "trace": span.trace_id, "id": span.span_id,
                        "parent": span.parent_span_id, "service": service, "path": self.path,
                        "attributes": {a.key: a.value.string_value or a.value.int_value for a in span.attributes}})
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def collector() -> Iterator[Collector]:
    server = Collector()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


@pytest.mark.slow
def test_each_request_is_a_span_with_a_child_span_per_stage(collector: Collector) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.server_address[1]}",
           "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_SERVICE_NAME": "kindgi-mock"}
    with serving(*KINDGI, "--otel", env=env) as (_, port):
        call = urllib.request.Request(f"http://127.0.0.1:{port}/v1/test-sets?limit=2", headers=DEMO)
        with urllib.request.urlopen(call, timeout=10) as answer:
            assert answer.status == 200
        deadline = time.monotonic() + 15
        while not any(s["name"] == "GET listTestSets" for s in collector.spans):
            assert time.monotonic() < deadline, collector.spans
            time.sleep(0.1)
        time.sleep(0.3)  # the children were batched with it, or right after
    request = next(s for s in collector.spans if s["name"] == "GET listTestSets")
    assert request["path"] == "/v1/traces" and request["service"] == "kindgi-mock"
    assert request["kind"] == 2 and request["parent"] == b""  # SPAN_KIND_SERVER, a root span
    assert request["attributes"] == {"http.request.method": "GET", "url.path": "/v1/test-sets",
                                     "mockserver.api": "Kindgi API", "http.response.status_code": 200,
                                     "mockserver.source": "fixture", "mockserver.operation": "listTestSets"}
    children = {s["name"] for s in collector.spans if s["parent"] == request["id"]}
    assert children == STAGES
    assert {s["trace"] for s in collector.spans if s["parent"] == request["id"]} == {request["trace"]}


def test_otel_without_its_packages_is_one_line_saying_how_to_install_them(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if not installed
    assert main(["serve", *KINDGI, "--port", str(free_port()), "--otel"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("mockserver: --otel needs the OpenTelemetry SDK") and "mockserver[otel]" in said
