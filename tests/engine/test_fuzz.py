"""Schemathesis with negative data against the in-process mock: no 5xx, no hang, no traceback, and every
standard check holds. Bounded: a few dozen cases per operation and phase."""
import schemathesis
from schemathesis.checks import CHECKS

from conftest import KINDGI_FIXTURES, KINDGI_SPEC
from mockserver import create_app

schema = schemathesis.openapi.from_path(str(KINDGI_SPEC))
schema.app = create_app(KINDGI_SPEC, KINDGI_FIXTURES, strict_auth=True)  # unknown tokens are 401, as for real
schema.config.update(headers={"Authorization": "Bearer demo-token"})
schema.config.generation.update(modes=["positive", "negative"], max_examples=30, deterministic=True,
                                database="none")
schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])

# positive_data_acceptance expects a 2xx for data the schema allows; the API refuses some of it by rules a schema
# cannot state (scopeId without scopeKind is scope-invalid; a made-up cursor is bad-input), so it is left out here
EXCLUDED = [CHECKS.get_one("positive_data_acceptance")]


@schema.parametrize()
def test_the_mock_survives_generated_and_malformed_input(case):
    response = case.call_and_validate(excluded_checks=EXCLUDED, timeout=10)
    assert response.status_code < 500
    assert "Traceback" not in response.text and "<html" not in response.text.lower()
