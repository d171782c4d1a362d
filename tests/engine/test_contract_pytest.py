"""The mock keeps its own contract, one test per operation: Schemathesis' pytest integration on the description as
`mockserver contract` loads it (ids from the fixtures, our checks, the fixtures' token), against the Kindgi mock
served in-process with strict auth. Bounded and derandomized, so `make test` stays quick and repeatable."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from conftest import KINDGI_FIXTURES, KINDGI_SPEC
from mockserver.contract import load_contract
from mockserver.testing import MockServer

pytestmark = pytest.mark.slow  # servers in other processes, or whole contract runs: `-m 'not slow'` skips them

# parametrize() takes the schema's settings as they are when it decorates: the mock must be up by then
mock = MockServer(KINDGI_SPEC, KINDGI_FIXTURES, strict_auth=True).start()
schema = load_contract(KINDGI_SPEC, KINDGI_FIXTURES, default_token=True,
                       pipeline=mock.pipeline).schema  # read once, for both
schema.config.update(base_url=mock.url)
schema.config.generation.update(max_examples=15, deterministic=True, database="none")
schema.config.checks.update(included_check_names=["all"])


@pytest.fixture(scope="module", autouse=True)
def stop_the_mock() -> Iterator[None]:
    yield
    mock.stop()


@schema.parametrize()
def test_the_mock_keeps_its_contract(case):
    case.call_and_validate()
