"""What a user imports: the package's names, typed, and no Flask where it is not needed."""
import subprocess
import sys

import mockserver
from conftest import KINDGI_FIXTURES, KINDGI_SPEC, ROOT


def test_the_public_names():
    assert set(mockserver.__all__) == {"__version__", "create_app", "pipeline_of", "MockServer", "MockClient",
                                       "Options", "MockError", "LoadError", "StateError"}
    app = mockserver.create_app(KINDGI_SPEC, KINDGI_FIXTURES, seed=3, journal_size=5)
    assert mockserver.pipeline_of(app).options == mockserver.Options(seed=3, journal_size=5)
    assert mockserver.__version__ and (ROOT / "mockserver" / "py.typed").is_file()


def test_the_core_and_the_pytest_plugin_load_no_flask():
    code = ("import sys, mockserver.pipeline.pipeline, mockserver.pytest_plugin; "
            "print(sorted(m for m in ('flask', 'werkzeug') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


def test_create_app_and_mock_server_take_the_public_options_with_keywords_over_them():
    options = mockserver.Options(seed=3, strict_auth=True, allow_outside=(ROOT,))
    app = mockserver.create_app(KINDGI_SPEC, KINDGI_FIXTURES, options, journal_size=5)
    assert mockserver.pipeline_of(app).options == mockserver.Options(seed=3, strict_auth=True, journal_size=5,
                                                                    allow_outside=(ROOT,))
    server = mockserver.MockServer(KINDGI_SPEC, KINDGI_FIXTURES, options, seed=4)
    assert server.pipeline.options == mockserver.Options(seed=4, strict_auth=True, allow_outside=(ROOT,))
