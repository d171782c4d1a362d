"""mockserver: a mock and contract-testing server for HTTP APIs described in OpenAPI."""
from .web.app import create_app

__all__ = ["create_app"]
