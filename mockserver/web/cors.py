"""CORS for browser clients: a frontend dev server on another port can call the mock, credentials included. The
control API answers only the pages `ControlOrigins` lets in (a Storybook or component test named with
--control-origin sets its own error cases)."""
from __future__ import annotations

import ipaddress
from collections.abc import Mapping

EXPOSED = "X-Request-Id, Retry-After, Location, Link, Allow, WWW-Authenticate, X-Mock-Scenario"


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


class ControlOrigins:
    """Which browser pages may use the control API: the mock's own origin (the dashboard) and those named with
    `--control-origin` (`*`: any, only behind a control token). Any other page could otherwise reset the mock,
    set scenarios for someone's session or read the journal, bodies included, from the developer's browser."""

    def __init__(self, origins: tuple[str, ...] = (), token: str | None = None) -> None:
        named = {origin.rstrip("/").lower() for origin in origins}
        for origin in sorted(named - {"*"}):
            scheme, _, host = origin.partition("://")
            if scheme not in ("http", "https") or not host or "/" in host:
                raise ValueError(f"--control-origin {origin!r} is not an origin: give scheme://host[:port], e.g. "
                                 f"http://localhost:3000")
        if "*" in named and token is None:
            raise ValueError("--control-origin '*' lets every web page use the control API: it needs "
                             "--control-token (or MOCKSERVER_CONTROL_TOKEN) too")
        self.any = "*" in named
        self.named = frozenset(named - {"*"})
        self._hosts = frozenset(origin.partition("://")[2] for origin in self.named)
        self._guarded = token is not None

    def allows(self, request_headers: Mapping[str, str]) -> bool:
        """Whether a request's page may use the control API (a request without Origin is no page's: curl, SDKs)."""
        origin = request_headers.get("origin")
        if origin is None:
            return True
        origin = origin.lower()
        scheme, _, host = origin.partition("://")
        return (self.any or origin in self.named
                or (scheme in ("http", "https") and host == request_headers.get("host", "").lower()))

    def refusal(self, request_headers: Mapping[str, str]) -> str | None:
        """Why a control request is refused as another page's (a foreign Origin, or a browser's `Sec-Fetch-Site`
        saying so where no Origin was sent, or a browser's page at a name another site may have pointed here);
        None when it is not."""
        origin = request_headers.get("origin")
        if origin is not None and not self.allows(request_headers):
            return (f"the control API answers pages of the mock's own origin only, not {origin[:100]!r}: start the "
                    f"mock with --control-origin ORIGIN to let a page of that origin use it")
        if origin is None and request_headers.get("sec-fetch-site", "none") not in ("none", "same-origin"):
            return ("the control API answers pages of the mock's own origin only (Sec-Fetch-Site: "
                    f"{request_headers['sec-fetch-site'][:40]})")
        host = request_headers.get("host", "").lower()
        if (origin is not None or "sec-fetch-site" in request_headers) and not self._trusted(host):
            return (f"the control API answers a browser at {host[:100]!r} only with a control token, or with that "
                    f"origin named with --control-origin: any site can point a name of its own at this machine (DNS "
                    f"rebinding); localhost and IP addresses need neither")
        return None

    def _trusted(self, host: str) -> bool:
        """A Host no other site can have made its own: an IP address, localhost, or a named origin's; any Host
        behind a control token (a page of another site does not have it)."""
        if self._guarded or host in self._hosts:
            return True
        name = host[1:].partition("]")[0] if host.startswith("[") else host.partition(":")[0]
        if name == "localhost" or name.endswith(".localhost"):
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True
