"""mockserver: a mock and contract-testing server for HTTP APIs described in OpenAPI.

The public API, loaded on first use (so importing the engine never loads Flask):
`create_app`, `pipeline_of`, `MockServer`, `MockClient`, `Options`, `MockError`, `LoadError`, `StateError`."""
from __future__ import annotations

from importlib import import_module, metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base.errors import LoadError, MockError
    from .pipeline.pipeline import Options
    from .state import StateError
    from .testing import MockClient, MockServer
    from .web.app import create_app, pipeline_of

    __version__: str

_WHERE = {"create_app": ".web.app", "pipeline_of": ".web.app", "MockServer": ".testing", "MockClient": ".testing",
          "Options": ".pipeline.pipeline", "MockError": ".base.errors", "LoadError": ".base.errors",
          "StateError": ".state"}
__all__ = ["__version__", "create_app", "pipeline_of", "MockServer", "MockClient", "Options", "MockError",
           "LoadError", "StateError"]


def __getattr__(name: str) -> Any:
    if name == "__version__":  # asked for rarely; reading the package metadata costs every start 30 ms
        try:
            return metadata.version("mockserver")
        except metadata.PackageNotFoundError:  # a checkout on sys.path, not installed
            return "0+unknown"
    if name in _WHERE:
        return getattr(import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module 'mockserver' has no attribute {name!r}")
