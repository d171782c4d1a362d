"""Several APIs on one mock, mounted as werkzeug's `DispatcherMiddleware` mounts apps: each API is a whole mock app
of its own (its pipeline: routes, base path, auth, fixtures; its store: scenarios, journal, coverage), and
`Mounts` picks the one a request is for, by its `Host` first, then by the longest prefix its path starts with.
The prefix stays in the path the API's pipeline sees (its router's base path starts with it), so its journal,
its `Location` headers and its docs show the path as the client sent it. A mock of one API has no `Mounts`: the
transports call its app directly, as they always did."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..base.errors import MockError
from ..base.http import MockRequest
from ..pipeline.pipeline import Pipeline
from .control import API_PARAM, bad_input
from .mock_app import Answer, MockApp

API_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_HOST = re.compile(r"[A-Za-z0-9.-]+")


@dataclass(frozen=True)
class Api:
    """One API of a mock: its name, description, fixtures, and where it is mounted (a path prefix, a host, both, or
    neither: then it answers whatever no other API takes)."""

    name: str
    spec: Path
    fixtures: Path | None = None
    prefix: str = ""
    host: str | None = None

    def where(self) -> str:
        """Where it is mounted, as a user reads it."""
        return (f"host {self.host}" if self.host else "") + (" " if self.host and self.prefix else "") + (
            f"prefix {self.prefix}" if self.prefix else "") or "every other path"


def checked_api(name: str, spec: Path, fixtures: Path | None, prefix: str | None, host: str | None) -> Api:
    """An `Api` whose name, prefix and host are usable; ValueError saying which is not, and why."""
    if not API_NAME.fullmatch(name):
        raise ValueError(f"API name {name!r}: letters, digits, '.', '_' and '-', starting with a letter or digit")
    given = prefix or ""
    if given and (not given.startswith("/") or given.endswith("/") or "//" in given or "?" in given
                  or given.startswith("/__mock")):
        raise ValueError(f"prefix {given!r} of API {name!r}: a path such as /payments (starting with '/', not "
                         f"ending with one, not under /__mock)")
    if host is not None and not _HOST.fullmatch(host):
        raise ValueError(f"host {host!r} of API {name!r}: a host name such as payments.localhost, without port")
    return Api(name, spec, fixtures, given, host.lower() if host else None)


def parse_api(text: str) -> Api:
    """`NAME=SPEC[,fixtures=DIR][,prefix=/x][,host=h.example]`, as `--api` takes it; ValueError saying what is
    wrong."""
    name, equals, rest = text.partition("=")
    spec, *pairs = rest.split(",")
    if not equals or not name or not spec:
        raise ValueError(f"{text!r} is not NAME=SPEC[,fixtures=DIR][,prefix=/x][,host=h.example]")
    given: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if key not in ("fixtures", "prefix", "host") or not equals or key in given:
            raise ValueError(f"{pair!r} in {text!r}: expected fixtures=DIR, prefix=/x or host=h.example, each once")
        given[key] = value
    fixtures = given.get("fixtures")
    return checked_api(name, Path(spec), Path(fixtures) if fixtures else None, given.get("prefix"),
                       given.get("host"))


def check_mounts(apis: list[Api]) -> None:
    """ValueError when there is none, or two APIs share a name or a mount (then one of them could never be
    reached)."""
    if not apis:
        raise ValueError("no API to serve")
    seen: dict[str, Api] = {}
    for api in apis:
        if api.name in seen:
            raise ValueError(f"two APIs are named {api.name!r}")
        clash = next((other for other in seen.values() if (other.host, other.prefix) == (api.host, api.prefix)),
                     None)
        if clash is not None:
            raise ValueError(f"APIs {clash.name!r} and {api.name!r} are both mounted at {api.where()}: give each "
                             f"its own prefix= or host=")
        seen[api.name] = api


def hostname(header: str | None) -> str:
    """The host a `Host` header names, lower-case, without its port."""
    host = (header or "").lower()
    if host.startswith("["):  # an IPv6 literal
        return host.partition("]")[0] + "]"
    return host.partition(":")[0]


class Mounts:
    """The mock apps of several APIs by where they are mounted. Made once per worker: a request is a dict look-up
    by host and a few prefix tests."""

    def __init__(self, mocks: list[tuple[Api, MockApp]]) -> None:
        self.apis = {api.name: api for api, _ in mocks}
        self.mocks = {api.name: mock for api, mock in mocks}
        longest_first = sorted(mocks, key=lambda pair: -len(pair[0].prefix))
        anywhere = [(api.prefix, mock) for api, mock in longest_first if api.host is None]
        self._anywhere = anywhere
        self._hosts: dict[str, list[tuple[str, MockApp]]] = {}
        for api, mock in longest_first:
            if api.host is not None:
                self._hosts.setdefault(api.host, []).append((api.prefix, mock))
        for mounted in self._hosts.values():
            mounted.extend(anywhere)  # a host's own APIs first, then those of every host
        self.first = mocks[0][1]
        self._unmounted = Unmounted(self.first, "; ".join(f"{api.name} at {api.where()}"
                                                          for api in self.apis.values()))

    def pick(self, host: str | None, path: str) -> MockApp | Unmounted:
        """The app of the API `path` on `host` is for; `Unmounted` when no API is mounted there."""
        for prefix, mock in self._hosts.get(hostname(host), self._anywhere) if self._hosts else self._anywhere:
            if not prefix or path == prefix or path.startswith(prefix + "/"):
                return mock
        return self._unmounted

    def named(self, name: str | None) -> MockApp:
        """The app of the API a control call names (`?api=`); the only one when it names none; 400 listing the
        names when it names none of several, or one the mock does not serve."""
        if name is None and len(self.mocks) == 1:
            return self.first
        found = self.mocks.get(name) if name is not None else None
        if found is None:
            names = ", ".join(self.mocks)
            said = f"this mock serves no API {name!r}" if name is not None else "this mock serves several APIs"
            raise bad_input(f"{said}: name one with ?{API_PARAM}= ({names})", f"/{API_PARAM}",
                            "enum" if name is not None else "required", "query")
        return found


class Unmounted:
    """What `Mounts.pick` gives a request no API is mounted for, for a transport to call as it calls an API's
    `MockApp`: the first API answers it, with the mock's own answer (a browser's `/` to the dashboard, the icon),
    else a 404 listing where the APIs are, in its envelope; neither is journaled."""

    def __init__(self, first: MockApp, served: str) -> None:
        self.first = first
        self._served = served  # where the APIs are, as its 404 says

    @property
    def pipeline(self) -> Pipeline:
        return self.first.pipeline  # as a reload left it

    def waits(self, method: str, path: str) -> bool:
        return False  # its answers are the front door's or a 404: no API's route, no round trip

    def body_limit(self) -> int:
        return self.first.body_limit()

    def refuse(self, request: MockRequest, error: MockError, started: float) -> Answer:
        return self.first.refuse(request, error, started)

    def respond(self, request: MockRequest, started: float) -> Answer:
        pipeline = self.first.pipeline
        result = pipeline.front_door.answer(request) or replace(pipeline.error_response(MockError(
            404, f"no API of this mock is mounted at {request.path}"
                 f"{' on host ' + request.headers['host'] if 'host' in request.headers else ''}; it serves "
                 + self._served,
            code="not-found"), pipeline.request_id(request), None), journaled=False)
        return self.first.finish(pipeline, request, result, started)
