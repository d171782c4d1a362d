"""Issue 8: every published description of ../shared/corpus, served by the mock with no fixtures, passes
Schemathesis' five response checks (server errors, status codes, content types, response schemas, response headers).
The check is bench/corpus.py's (`make corpus` runs it in full); here the big descriptions are cut to a sample of
their operations so the file stays within about a minute and a half on 2 cores. A failure the description itself
causes is an expected failure, with its cause; any other failure, or an operation Schemathesis could not test, fails."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # servers in other processes, or whole contract runs: `-m 'not slow'` skips them

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "bench" / "corpus.py")
assert _spec is not None and _spec.loader is not None
corpus = sys.modules["bench_corpus"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)

SAMPLE = 30  # operations checked of a description that has more
MAX_EXAMPLES = 10  # at most, per operation and phase


class DescriptionFault(Exception):
    """Only failures the description explains: the expected failure of its test."""


def _param(description: corpus.Description) -> object:
    marks = [pytest.mark.skipif(not corpus.CORPUS.is_dir(), reason=f"no corpus at {corpus.CORPUS}")]
    if description.known:
        marks.append(pytest.mark.xfail(strict=True, raises=DescriptionFault,
                                       reason="; ".join(known.reason for known in description.known)))
    return pytest.param(description, id=description.name, marks=marks)


@pytest.mark.parametrize("description", [_param(d) for d in corpus.DESCRIPTIONS])
def test_the_mock_serves_the_description(description: corpus.Description) -> None:
    outcome = corpus.check(description, min(description.max_examples, MAX_EXAMPLES), sample=SAMPLE)
    assert outcome.cases > 0 or outcome.operations == 0, "Schemathesis sent nothing"
    if outcome.unexplained(description) or outcome.errors:
        pytest.fail(corpus.details([outcome]), pytrace=False)
    if outcome.findings:
        raise DescriptionFault(corpus.details([outcome]))
