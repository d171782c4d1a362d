"""The access log: a line per request, in the log's format, shown within FLUSH_S even when nothing follows."""
import io
import re
import select
import time
import urllib.request

import pytest

from conftest import serving
from mockserver.web import access

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO mockserver.access: GET /x 200 1.0ms fixture op\n$")


def test_lines_are_written_in_batches_and_never_wait_long(monkeypatch):
    monkeypatch.setattr(access, "FLUSH_S", 0.05)
    stream = io.StringIO()
    log = access.AccessLog()
    log.buffer_into(stream)
    log.write("GET /x 200 1.0ms fixture op")
    deadline = time.monotonic() + 5
    while not stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert LINE.match(stream.getvalue())
    for _ in range(access.BATCH):
        log.write("GET /x 200 1.0ms fixture op")
    assert stream.getvalue().count("\n") >= access.BATCH  # a full batch is written at once


@pytest.mark.slow
def test_mockserver_serve_shows_each_request_at_once():
    with serving() as (proc, port):
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/test-sets?limit=2",
                                         headers={"Authorization": "Bearer demo-token"})
        urllib.request.urlopen(request, timeout=10).read()
        assert proc.stderr is not None
        shown_by = time.monotonic() + 5  # FLUSH_S at most, and some slack for a busy machine
        line = ""
        while "mockserver.access" not in line:
            ready, _, _ = select.select([proc.stderr], [], [], max(shown_by - time.monotonic(), 0))
            assert ready, "the request's access line was not shown within 5 s"
            line = proc.stderr.readline()
    assert re.search(r"INFO mockserver.access: GET /v1/test-sets\?limit=2 200 [\d.]+ms fixture listTestSets$",
                     line.rstrip()), line


@pytest.mark.slow
def test_lines_still_buffered_when_mockserver_stops_are_written():
    with serving() as (proc, port):
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/test-sets?limit=3",
                                         headers={"Authorization": "Bearer demo-token"})
        urllib.request.urlopen(request, timeout=10).read()
        proc.terminate()  # at once: the line waits for the next flush (FLUSH_S) in the worker
        assert proc.wait(timeout=20) == 0
        assert proc.stderr is not None
        assert "INFO mockserver.access: GET /v1/test-sets?limit=3 200 " in proc.stderr.read()
