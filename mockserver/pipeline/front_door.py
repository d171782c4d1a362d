"""What the mock answers of its own where the description describes nothing: a browser opening the mock's root is
sent to the dashboard, and the icon a browser asks for is the mock's. Asked only where the router found no
operation, so a description that describes `/` or `/favicon.ico` keeps them; neither answer is journaled (they
are no calls of the API). Everything else that reaches no operation stays the API's 404."""
from __future__ import annotations

from importlib.resources import files

from ..base.http import MockRequest, MockResponse

DASHBOARD = "/__mock/"
ICON = files(__package__).joinpath("favicon.ico").read_bytes()


class FrontDoor:
    """`dashboard`: whether the control API and its pages are served (`--no-control`: they are not, and `/` stays
    a 404 for browsers too)."""

    def __init__(self, dashboard: bool) -> None:
        self.dashboard = dashboard

    def answer(self, request: MockRequest) -> MockResponse | None:
        """The mock's own answer to a request no operation takes, or None (then it is the API's 404)."""
        if request.method != "GET":
            return None
        if request.path == "/favicon.ico":
            return MockResponse(200, ICON, "image/x-icon", {"Cache-Control": "max-age=86400"}, "mock",
                                journaled=False)
        if self.dashboard and request.path == "/" and "text/html" in (request.header("accept") or ""):
            return MockResponse(302, b"", None, {"Location": DASHBOARD}, "mock", journaled=False)
        return None
