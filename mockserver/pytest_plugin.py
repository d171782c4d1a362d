"""The `mock_server` pytest fixture: a mock of your description on a free port, one per test; or, with
`mockserver_url` set (or the MOCKSERVER_URL environment variable), a session of its own on one shared running
mock, so tests running in parallel (pytest-xdist, several CI jobs) never see each other's scenarios or calls.

Configure it in pytest.ini / pyproject (`mockserver_spec`, `mockserver_fixtures`, `mockserver_url`) or per test
with `@pytest.mark.mockserver(spec="…", fixtures="…", seed=1)`. Relative paths, of the ini file and of the marker
alike, are read from pytest's root folder (`rootdir`, the folder of the ini file when there is one), never from
the folder pytest was started in, so a test finds its description wherever it is run from. Send
`mock_server.headers` with the calls of the client under test: on a shared mock they carry the test's session.

The `mock_callbacks` fixture is a receiver on loopback for the callbacks and webhooks the mock sends: put its
`url` where the callback's expression reads it (or subscribe it to a webhook), then `mock_callbacks.wait()`."""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .testing import CallbackReceiver, MockClient


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("mockserver_spec", "OpenAPI description the mock_server fixture serves", default="openapi.yaml")
    parser.addini("mockserver_fixtures", "fixtures folder of the mock_server fixture (when present)",
                  default="fixtures")
    parser.addini("mockserver_url", "a running mock to share: each test gets a session of its own on it "
                                    "(env MOCKSERVER_URL)", default="")
    parser.addini("mockserver_control_token", "the shared mock's control token (env MOCKSERVER_CONTROL_TOKEN)",
                  default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mockserver(spec=None, fixtures=None, **options): how mock_server is made")


@pytest.fixture
def mock_server(request: pytest.FixtureRequest) -> Iterator[MockClient]:
    from .testing import MockClient, MockServer  # here: a pytest run that never asks for the mock loads no Flask

    shared = os.environ.get("MOCKSERVER_URL") or request.config.getini("mockserver_url")
    if shared:
        token = os.environ.get("MOCKSERVER_CONTROL_TOKEN") or request.config.getini("mockserver_control_token")
        # a session the mock names (POST /__mock/sessions): unguessable, as its name is all it takes to use it
        client = MockClient(shared, control_token=token or None).session()
        yield client
        client.reset()  # the session's scenarios, journal and coverage: the shared mock does not grow
        return
    marker = request.node.get_closest_marker("mockserver")
    options = dict(marker.kwargs) if marker else {}
    root = request.config.rootpath
    spec = root / (options.pop("spec", None) or request.config.getini("mockserver_spec"))  # an absolute one wins
    fixtures = options.pop("fixtures", None)
    if fixtures is not None:
        fixtures = root / fixtures
    elif "spec" not in (marker.kwargs if marker else {}):
        default = root / request.config.getini("mockserver_fixtures")
        fixtures = default if default.is_dir() else None
    with MockServer(spec, fixtures, **options) as server:
        yield server


@pytest.fixture
def mock_callbacks() -> Iterator[CallbackReceiver]:
    from .testing import CallbackReceiver

    with CallbackReceiver() as receiver:
        yield receiver
