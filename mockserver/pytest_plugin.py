"""The `mock_server` pytest fixture: a mock of your description on a free port, one per test.

Configure it in pytest.ini / pyproject (`mockserver_spec`, `mockserver_fixtures`) or per test with
`@pytest.mark.mockserver(spec="…", fixtures="…", seed=1)`."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from .testing import MockServer


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("mockserver_spec", "OpenAPI description the mock_server fixture serves", default="spec/kindgi.yaml")
    parser.addini("mockserver_fixtures", "fixtures folder of the mock_server fixture", default="fixtures")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mockserver(spec=None, fixtures=None, **options): how mock_server is made")


@pytest.fixture
def mock_server(request: pytest.FixtureRequest) -> Iterator[MockServer]:
    marker = request.node.get_closest_marker("mockserver")
    options = dict(marker.kwargs) if marker else {}
    root = Path(str(request.config.rootpath))
    spec = options.pop("spec", None) or root / request.config.getini("mockserver_spec")
    fixtures = options.pop("fixtures", None)
    if fixtures is None and "spec" not in (marker.kwargs if marker else {}):
        default = root / request.config.getini("mockserver_fixtures")
        fixtures = default if default.is_dir() else None
    with MockServer(spec, fixtures, **options) as server:
        yield server
