"""Issues 8, 17 and 19: every published description of ../shared/corpus, mocked with no fixtures, passes the
contract command itself (`mockserver contract --spec FILE …`, as a user runs it) in both of bench/corpus.py's modes:
positive with a credential for each security scheme (no failure of any check), negative without credentials (no
5xx, no error of the mock's that breaks what its status declares). `make corpus` runs it in full; here each
description is cut to a sample of its operations and a few examples, so the file stays within a minute or two on 2
cores. A run whose only failures the description itself causes is an expected failure, with its cause; any other
failure, gap or error fails."""
from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # contract runs in processes of their own

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "bench" / "corpus.py")
assert _spec is not None and _spec.loader is not None
corpus = sys.modules["bench_corpus"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)

SAMPLE = 12  # operations checked of a description that has more
MAX_EXAMPLES = 3  # at most, per operation and phase
COVERAGE_CAP = 10  # the coverage phase's requests per operation, at most


class DescriptionFault(Exception):
    """Only failures the description explains: the expected failure of its test."""


@functools.cache
def outline(name: str) -> Any:
    return corpus.outline(corpus.by_name(name))


def _param(description: Any, mode: Any) -> Any:
    marks = [pytest.mark.skipif(not corpus.CORPUS.is_dir(), reason=f"no corpus at {corpus.CORPUS} (../shared is "
                                                                   "absent: the shared corpus is not checked out)")]
    known = [k for k in description.known if mode.name in k.modes and k.always]
    if known:
        marks.append(pytest.mark.xfail(strict=True, raises=DescriptionFault,
                                       reason="; ".join(k.reason for k in known)))
    return pytest.param(description, mode, id=f"{description.name}-{mode.name}", marks=marks)


@pytest.mark.parametrize(("description", "mode"), [_param(d, m) for d in corpus.DESCRIPTIONS for m in corpus.MODES])
def test_the_contract_command_passes_on_the_description(description: Any, mode: Any) -> None:
    run = corpus.check(description, mode, max_examples=min(description.max_examples, MAX_EXAMPLES), size=SAMPLE,
                       coverage_cap=COVERAGE_CAP, view=outline(description.name))
    assert run.cases > 0 or run.operations == 0, f"the command sent nothing: {run.problem or run.command}"
    if run.verdict == "FAIL":
        pytest.fail(corpus.details([run]) or f"exit {run.exit}: {run.command}", pytrace=False)
    if run.verdict == "known" and any(k.always and mode.name in k.modes for k in description.known):
        raise DescriptionFault(corpus.details([run]))
