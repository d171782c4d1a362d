"""CORS for browser clients: a frontend dev server on another port can call the mock and its control API (a
Storybook or component test sets its own error cases), credentials included."""
from __future__ import annotations

from collections.abc import Mapping

EXPOSED = "X-Request-Id, Retry-After, Location, Link, Allow, WWW-Authenticate"


def cors_headers(request_headers: Mapping[str, str], exposed: str = EXPOSED) -> dict[str, str]:
    """Headers for any answer to a request that came with an Origin (`request_headers` by lower-case name): the
    origin is echoed, not `*`, so cookies and `Authorization` work."""
    origin = request_headers.get("origin")
    if not origin:
        return {}
    return {"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Credentials": "true",
            "Access-Control-Expose-Headers": exposed, "Vary": "Origin"}


def is_preflight(method: str, request_headers: Mapping[str, str]) -> bool:
    return method == "OPTIONS" and "origin" in request_headers and "access-control-request-method" in request_headers


def preflight_headers(request_headers: Mapping[str, str]) -> dict[str, str]:
    asked = request_headers.get("access-control-request-headers", "")
    return {**cors_headers(request_headers),
            "Access-Control-Allow-Methods": "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS",
            "Access-Control-Allow-Headers": asked or "Authorization, Content-Type, Prefer, X-Request-Id, "
                                                     "X-Mock-Session, X-Mock-Control-Token",
            "Access-Control-Max-Age": "600"}
