"""The dashboard for the people using the mock: one page at /__mock/ with the operations it serves, the request
journal live, scenarios a click away and what a client's calls covered; interactive docs of the described API at
/__mock/docs (Swagger UI, served from the `flask-swagger-ui` package: no CDN); the description as one document
at /__mock/description (what a client generator is fed); the coverage as JSON at /__mock/coverage, and as a page
at /__mock/coverage.html.

Two blueprints: the pages and their assets are open (they hold only what the description says), while the data
they fetch — coverage, callers, the description for the docs — is registered inside the control blueprint, so its
token guards it like the rest of the control API. The page asks for that token once and sends it on each fetch."""
from __future__ import annotations

import base64
import json
import posixpath
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode
from weakref import WeakKeyDictionary

import yaml
from flask import Blueprint, Response, render_template, request, send_from_directory

from ..base.bounded import BoundedCache
from ..base.errors import MockError
from ..pipeline.answers import pick_media_type
from ..pipeline.fixture_values import caller_for, derive, usable_token
from ..pipeline.pipeline import Pipeline
from ..spec.bundle import bundle
from ..spec.index import Operation, SpecIndex, examples_of
from .control import API_PARAM, PREFIX, named, session_param

SWAGGER_UI = str(files("flask_swagger_ui") / "dist")
DESCRIPTION_PATH = "/docs/description/"
YAML_TYPES = ["application/yaml", "application/x-yaml", "text/yaml"]


@dataclass
class OperationView:
    """An operation as the page shows it, with what a "try" sends by default."""

    op: Operation
    fixture_items: int | None  # None: no fixture, answers come from examples or are generated
    errors: list[int]  # declared error statuses: each gets a one-click "next call answers it"
    sample_url: str
    sample_body: str | None  # the request body a "try" sends; None when the operation takes none


@dataclass
class _View:
    """What the pages need of one state of the mock, worked out on first use (a reload makes a new state)."""

    groups: dict[str, list[OperationView]]
    description: dict[str, bytes]  # URL path under DESCRIPTION_PATH -> the document as JSON
    root: str
    # (json/yaml, server URL) -> as served: a few hosts a mock is reached by, at most 16
    bundled: BoundedCache[tuple[str, str], bytes] = field(default_factory=lambda: BoundedCache(16))


def dashboard_blueprints(current: Callable[[], Pipeline], apis: tuple[str, ...] = ()) -> tuple[Blueprint, Blueprint]:
    """(pages, data): register `pages` on the app and `data` inside the control blueprint, whose token guards it.
    On a mock of several APIs (`apis`, their names) each page is for the one its `?api=` names, and the
    dashboard links to the others."""
    pages = Blueprint("dashboard", __name__, static_folder="static", static_url_path="/static",
                      template_folder="templates")
    data = Blueprint("dashboard_data", __name__)
    views: WeakKeyDictionary[Pipeline, _View] = WeakKeyDictionary()
    lock = threading.Lock()

    def view() -> tuple[Pipeline, _View]:
        pipeline = current()
        with lock:
            found = views.get(pipeline)
            if found is None:
                found = views[pipeline] = _build_view(pipeline)
        return pipeline, found

    @pages.get("/")
    def dashboard() -> str:
        pipeline, shown = view()
        model = {op.op.id: {"statuses": op.op.declared_statuses} for group in shown.groups.values() for op in group}
        return render_template("dashboard.html", title=pipeline.spec.title, groups=shown.groups, model=model,
                               apis=apis, api=pipeline.options.api)

    @pages.get("/docs")
    def docs() -> str:
        pipeline, shown = view()
        api = pipeline.options.api  # each API's documents under a path of its own: their relative $refs resolve
        return render_template("docs.html", title=pipeline.spec.title, description_url=PREFIX + (
            f"/apis/{api}" if api else "") + DESCRIPTION_PATH + shown.root)

    @pages.get("/coverage.html")
    def coverage_page() -> str:
        """The coverage as a page (its data comes from /__mock/coverage, which the control token guards)."""
        pipeline = view()[0]
        return render_template("coverage.html", title=pipeline.spec.title, api=pipeline.options.api)

    @pages.get("/docs/assets/<path:name>")
    def swagger_ui(name: str) -> Response:
        return send_from_directory(SWAGGER_UI, name)

    @data.get("/coverage")
    def coverage() -> Response:
        pipeline = current()
        session = session_param(pipeline)
        pipeline.store.sync()
        report = pipeline.coverage.measure(*pipeline.journal.calls(session))
        return Response(json.dumps(named(pipeline, report.as_dict())), content_type="application/json")

    @data.get("/callers")
    def callers() -> Response:
        return Response(json.dumps(_callers(current())), content_type="application/json")

    @data.get("/description")
    @data.get("/description.<suffix>")
    def bundled(suffix: str | None = None) -> Response:
        """The description as one document, for a client generator: JSON or YAML by suffix, else by Accept."""
        if suffix is None:
            suffix = "yaml" if request.accept_mimetypes.best_match(["application/json", *YAML_TYPES]) in YAML_TYPES \
                else "json"
        elif suffix not in ("json", "yaml"):
            raise MockError(404, f"no description.{suffix}: ask for {PREFIX}/description.json or .yaml",
                            code="not-found")
        pipeline, shown = view()
        server = request.host_url.rstrip("/") + pipeline.base_path
        text = shown.bundled.made(
            (suffix, server), lambda: _dumped(_as_served(pipeline.spec, bundle(pipeline.spec.docs), server), suffix))
        return Response(text, content_type="application/yaml" if suffix == "yaml" else "application/json")

    @data.get(DESCRIPTION_PATH + "<path:name>")
    @data.get(f"/apis/<{API_PARAM}>" + DESCRIPTION_PATH + "<path:name>")  # `current()` reads the API's name there
    def description(name: str, api: str | None = None) -> Response:
        document = view()[1].description.get(name)
        if document is None:
            raise MockError(404, f"no document {name!r} in the description", code="not-found")
        return Response(document, content_type="application/json")

    return pages, data


def _build_view(pipeline: Pipeline) -> _View:
    spec = pipeline.spec
    caller = caller_for(pipeline.auth, usable_token(pipeline.auth))
    held = {op_id: found[0] for op_id in spec.operations
            if (found := derive(pipeline.fixtures, op_id, caller))}  # values the fixtures hold, per operation
    groups: dict[str, list[OperationView]] = {}
    for op in spec.operations.values():
        group = op.tags[0] if op.tags else "/" + op.path.strip("/").split("/")[0]
        groups.setdefault(group, []).append(OperationView(
            op, _fixture_items(pipeline, op.id),
            [int(s) for s in op.declared_statuses if s.isdigit() and int(s) >= 400],
            _sample_url(spec, op, held.get(op.id, {}), pipeline.base_path), _sample_body(op)))
    root, description = _description_files(spec, pipeline.base_path)
    return _View(groups, description, root)


def _fixture_items(pipeline: Pipeline, op_id: str) -> int | None:
    fixture = pipeline.answers.fixtures.get(op_id)
    if fixture is None:
        return None
    return (len(fixture.listing.collection.items) if fixture.listing else 0) + (
        len(fixture.item.collection.items) if fixture.item else 0) + len(fixture.respond)


def _sample(spec: SpecIndex, op: Operation, location: str, required_only: bool) -> dict[str, str]:
    """The description's own example (or default, or first enum value) of each parameter in one place."""
    found = {}
    for param in op.parameters:
        if param.location != location or (required_only and not param.required):
            continue
        schema = spec.docs.deref(param.schema.node, param.schema.uri)[0] if param.schema else None
        enum = schema.get("enum") if isinstance(schema, dict) else None
        candidates = examples_of(spec.docs.lookup(param.uri)) + examples_of(schema) + list(enum or [])
        if candidates:
            value = candidates[0]
            found[param.name] = json.dumps(value) if isinstance(value, (bool, dict, list)) else str(value)
    return found


def _sample_url(spec: SpecIndex, op: Operation, held: dict[tuple[str, str], Any], base_path: str) -> str:
    """The "Try" form's first URL: values the fixtures hold (a first click answers, not 404), else the
    description's examples."""
    def sample(location: str) -> dict[str, str]:
        wanted = {p.name for p in op.parameters if p.location == location and p.required}
        return {**_sample(spec, op, location, required_only=True),
                **{name: str(value) for (where, name), value in held.items() if where == location and name in wanted}}

    path = op.path
    for name, value in sample("path").items():
        path = path.replace("{" + name + "}", quote(value, safe=""))
    query = urlencode({**op.query_match, **sample("query")}, safe=",")
    return base_path + path + (f"?{query}" if query else "")


def _sample_body(op: Operation) -> str | None:
    if op.request_body is None:
        return None
    media = pick_media_type(op.request_body.content)
    example = next(iter(media.examples.values()), None) if media else None
    return json.dumps(example, indent=2) if example is not None else ""


def _description_files(spec: SpecIndex, base_path: str) -> tuple[str, dict[str, bytes]]:
    """Every document of the description as JSON, by its path relative to their common folder, so the relative
    `$ref`s between them resolve in the browser as they do on disk."""
    paths = {uri: Path(doc.path).resolve() for uri, doc in spec.docs.documents.items()}
    base = Path(posixpath.commonpath([str(p.parent) for p in paths.values()]))
    served: dict[str, bytes] = {}
    root = ""
    for uri, doc in spec.docs.documents.items():
        name = paths[uri].relative_to(base).as_posix()
        data = doc.data
        if doc is spec.docs.root:
            root = name
            data = _as_served(spec, data, base_path or "/")
        served[name] = json.dumps(data, default=str).encode()
    return root, served


def _as_served(spec: SpecIndex, root: dict[str, Any], server: str) -> dict[str, Any]:
    """The root document as the mock serves it: its servers are the mock (so "Try it out" and a generated client
    call it); a 3.0 description is served as the mock reads it (its schemas rewritten to JSON Schema 2020-12),
    hence as 3.1."""
    return {**root, "openapi": "3.1.0" if spec.version.startswith("3.0") else root["openapi"],
            "servers": [{"url": server, "description": "this mock"}]}


def _dumped(document: dict[str, Any], suffix: str) -> bytes:
    if suffix == "yaml":
        return yaml.safe_dump(document, sort_keys=False, allow_unicode=True).encode()
    return json.dumps(document, default=str).encode()


def _callers(pipeline: Pipeline) -> dict[str, Any]:
    """The fixtures' tokens, as the description's first security scheme the page can fill in carries them, so
    the page can call as one of them. Behind the control token: these are the fixtures' own credentials."""
    found = next(((n, s, k) for n, s in pipeline.spec.security_schemes.items() if (k := _kind(s))), None)
    if found is None:
        return {"scheme": None, "kind": None, "header": None, "callers": []}
    name, scheme, kind = found

    def value(token: str) -> str:
        if kind == "basic":
            return "Basic " + base64.b64encode(f"{token}:".encode()).decode()
        return f"Bearer {token}" if kind == "bearer" else token

    return {"scheme": name, "kind": kind, "header": scheme["name"] if kind == "apiKey" else "Authorization",
            "callers": [{"token": token, "caller": t.caller, "tenant": t.tenant,
                         "usable": not (t.expired or t.revoked), "value": value(token)}
                        for token, t in pipeline.auth.tokens.items()]}


def _kind(scheme: dict[str, Any]) -> str | None:
    """bearer, basic or apiKey (in a header): the schemes the page can fill in; None for the others."""
    kind = str(scheme.get("type", "")).lower()
    if kind == "http" and str(scheme.get("scheme", "")).lower() in ("bearer", "basic"):
        return str(scheme["scheme"]).lower()
    return "apiKey" if kind == "apikey" and scheme.get("in", "header") == "header" and scheme.get("name") else None
