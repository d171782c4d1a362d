"""The control API's endpoints for the calls the mock sends (web/outgoing.py): their journal at `/__mock/callbacks`,
the description's 3.1 webhooks with their subscribers, a subscription, and the firing of one. Registered beside
the other control endpoints, behind the same guard, their errors rendered the same way."""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, request

from ..base.errors import MockError
from ..pipeline.pipeline import Pipeline
from .control import _json_body, bad_input, session_param
from .outgoing import Outgoing


def outgoing_blueprint(current: Callable[[], Pipeline], sender: Callable[[], Outgoing]) -> Blueprint:
    """The control API's endpoints for outgoing calls: their journal, the webhooks, their subscriptions and the
    firing of one (registered beside the others, behind the same guard and error rendering); `sender()` is the
    sender of the API `current()` is."""
    bp = Blueprint("outgoing", __name__)

    def ok(payload: Any, status: int = 200) -> Response:
        return Response(json.dumps(payload), status=status, content_type="application/json")

    @bp.get("/callbacks")
    def journal() -> Response:
        """Every outgoing call; with a session, those that followed its calls."""
        pipeline = current()
        session = session_param(pipeline)
        calls = pipeline.store.outgoing()
        return ok({"calls": calls if session is None else [c for c in calls if c["session"] == session]})

    @bp.get("/webhooks")
    def webhooks() -> Response:
        pipeline = current()
        pipeline.store.check()
        subscribers = sender().subscribers(pipeline)
        return ok({"webhooks": [{"name": name, "methods": [hook.method for hook in hooks],
                                 "subscribers": subscribers.get(name, [])}
                                for name, hooks in pipeline.spec.webhooks.items()],
                   "callbacks": [{"operationId": op.id, "names": sorted({c.name for c in op.callbacks})}
                                 for op in pipeline.spec.operations.values() if op.callbacks]})

    @bp.post("/webhooks/subscriptions")
    def subscribe() -> Response:
        pipeline = current()
        given = _json_body(pipeline.options.max_depth)
        if not isinstance(given, dict):
            raise bad_input("the body is an object: {\"webhook\": NAME, \"url\": URL}", "", "type")
        for field in ("webhook", "url"):
            if not isinstance(given.get(field), str):
                raise bad_input(f"{field!r} is required, a string", f"/{field}", "required")
        name, url = given["webhook"], given["url"]
        _known(pipeline, name)
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise bad_input(f"{url!r} is not an http(s) URL", "/url", "format")
        pipeline.store.check()
        pipeline.store.subscribe(name, url)
        return ok({"webhook": name, "url": url, "subscribers": sender().subscribers(pipeline)[name]}, 201)

    @bp.post("/webhooks/<name>")
    def fire(name: str) -> Response:
        """The webhook's event, now, to its subscribers (or the call's `url`); the body its example, generated,
        or the call's `body`."""
        pipeline = current()
        _known(pipeline, name)
        given = _json_body(pipeline.options.max_depth) if request.data else {}
        if not isinstance(given, dict) or set(given) - {"body", "url"}:
            raise bad_input("the body is an object with an optional 'body' (the event's) and 'url' (where to send it)",
                       "", "type")
        pipeline.store.check()
        if "url" in given:
            if not isinstance(given["url"], str):
                raise bad_input("'url' is a string", "/url", "type")
            urls = [given["url"]]
        else:
            urls = sender().subscribers(pipeline).get(name, [])
        if not urls:
            raise MockError(409, f"no URL is subscribed to the webhook {name!r}: POST /__mock/webhooks/subscriptions "
                                 "first, or give a 'url'", code="conflict")
        calls = pipeline.callbacks.webhook(name, urls, given.get("body"), None, time.time())
        return ok({"webhook": name, "queued": sender().queue(pipeline, calls)}, 202)

    return bp


def _known(pipeline: Pipeline, name: str) -> None:
    if name not in pipeline.spec.webhooks:
        known = ", ".join(sorted(pipeline.spec.webhooks)) or "none"
        raise MockError(404, f"no webhook {name!r} in the description (its webhooks: {known})", code="not-found")
