"""Learning fixtures is pure: `Recording.observe` returns fixture documents and touches no file; the page names
come from the fixtures' `list` (`query.page_names`), not from Kindgi's spelling."""
from __future__ import annotations

from pathlib import Path

from conftest import DEMO, KINDGI_FIXTURES, KINDGI_SPEC, LIBRARY
from mockserver.base.http import MockRequest
from mockserver.pipeline.pipeline import Pipeline
from mockserver.tools.drift import check
from mockserver.tools.recorder import Recording


def exchange(pipeline: Pipeline, path: str, query: str = "", headers: dict[str, str] | None = None):
    """The pipeline's own answer, seen as a deployment's exchange."""
    request = MockRequest("GET", path, query, {k.lower(): v for k, v in (headers or {}).items()})
    answer = pipeline.handle(request)
    return check(pipeline, request, answer.status, {"Content-Type": answer.media_type or "", **answer.headers},
                 answer.body)


def test_a_page_becomes_collection_documents_and_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pipeline = Pipeline.load(KINDGI_SPEC, KINDGI_FIXTURES)
    learnt = Recording().observe(pipeline, exchange(pipeline, "/v1/test-sets", "limit=3", DEMO))
    assert learnt.outcome == "3 item(s) into collection testSets" and learnt.rejected is None
    assert set(learnt.documents) == {"collections/testSets.yaml", "settings.yaml", "operations.yaml"}
    items = learnt.documents["collections/testSets.yaml"]["collections"]["testSets"]["items"]
    assert len(items) == 3 and list(Path(tmp_path).iterdir()) == []


def test_the_fixtures_own_page_names_are_used(tmp_path):
    """The Library's list pages its items as `items` (not `data`): a recording reads them by that name."""
    pipeline = Pipeline.load(LIBRARY / "openapi.yaml", LIBRARY / "fixtures")
    learnt = Recording().observe(pipeline, exchange(pipeline, "/api/v2/books", "limit=2", {"X-Api-Key": "reader-key"}))
    assert learnt.outcome == "2 item(s) into collection books"
    assert [b["isbn"] for b in learnt.documents["collections/books.yaml"]["collections"]["books"]["items"]] == [
        "9780000000050", "9780000000040"]


def test_an_earlier_recording_is_merged(tmp_path):
    pipeline = Pipeline.load(KINDGI_SPEC, KINDGI_FIXTURES)
    first = Recording().observe(pipeline, exchange(pipeline, "/v1/test-sets", "limit=2", DEMO))
    again = Recording(first.documents).observe(pipeline, exchange(pipeline, "/v1/test-sets", "limit=4", DEMO))
    assert len(again.documents["collections/testSets.yaml"]["collections"]["testSets"]["items"]) == 4


def test_a_kept_filter_that_can_never_match_is_said_once():
    """listTestSets filters scopeKind=org on organizationId, which the deployment never answers (it is private):
    a recording of plain pages would replay `scopeKind=org` as 0 items, so it says so, once per list and field."""
    pipeline = Pipeline.load(KINDGI_SPEC, KINDGI_FIXTURES)
    recording = Recording()
    first = recording.observe(pipeline, exchange(pipeline, "/v1/test-sets", "limit=5", DEMO))
    said = " | ".join(first.warnings)
    assert "listTestSets keeps the filter on organizationId" in said and "scopeKind" in said
    assert "none of the 5 recorded item(s) of testSets carries organizationId" in said
    assert recording.observe(pipeline, exchange(pipeline, "/v1/test-sets", "limit=6", DEMO)).warnings == []
