"""Before anything is generated, what would turn every later finding into noise, said first and fast: the base URL
does not answer at all, every first call is a 404 (the base path is wrong), or every first call is refused (the
credentials are). The run then stops: thousands of failed calls would only bury the cause."""
from __future__ import annotations

from urllib.parse import urlsplit

import requests

from ..spec.index import SpecIndex
from .credentials import Sent
from .discovery import call, is_list, label
from .fixed import fixed

CONNECT_TIMEOUT = 2.5  # seconds to open a connection: an unreachable target is said within 3 s
PROBES = 5  # list operations called once each


class Blocked(Exception):
    """What stops the run before any check: its message is the report's first reason."""


def connect(url: str, timeout: float | None) -> None:
    """Raises Blocked when nothing answers at `url` (any answer will do, a 404 or a 500 too)."""
    try:
        requests.get(url, timeout=(CONNECT_TIMEOUT, timeout or 10), allow_redirects=False)
    except requests.ConnectTimeout:
        raise Blocked(f"cannot connect to {url}: no connection within {CONNECT_TIMEOUT:g} s") from None
    except requests.ConnectionError as exc:
        text = str(exc).lower()
        why = ("connection refused" if "refused" in text else "the host name does not resolve"
               if "resolve" in text or "name or service" in text else type(exc).__name__)
        raise Blocked(f"cannot connect to {url}: {why}") from None
    except requests.RequestException:
        return  # it connected: a slow or odd answer is the checks' to judge


def first_calls(spec: SpecIndex, url: str, sent: dict[str, Sent], headers: dict[str, str], timeout: float | None,
          allowed: set[str]) -> None:
    """Calls up to five list operations the run may call (a GET that needs no value), with their credentials;
    raises Blocked when every one answered 404 (the base path) or every one that carried credentials 401/403."""
    answers: list[tuple[str, int, bool]] = []  # label, status, whether it carried credentials
    for op in spec.operations.values():
        if len(answers) >= PROBES:
            break
        name = label(op)
        if name not in allowed or not is_list(op, spec.docs):
            continue
        credentials = sent.get(name) or Sent()
        try:
            response = call(url, op, fixed(op, spec.docs), credentials, headers, timeout)
        except requests.RequestException:
            continue  # the run reports it as an error of its own
        answers.append((name, response.status_code, bool(credentials)))
    seen = ", ".join(f"{name} {status}" for name, status, _ in answers)
    if answers and all(status == 404 for _, status, _ in answers):
        declared, given = spec.base_path or "/", urlsplit(url).path or "/"
        hint = (f"the description's servers say {declared}, so --url should end with it"
                if declared.rstrip("/") != given.rstrip("/") else f"the description's servers say {declared} too")
        raise Blocked(f"every first call answered 404 ({seen}): is the base path of {url} right? {hint}")
    secured = [status for _, status, carried in answers if carried]
    if secured and all(status in (401, 403) for status in secured):
        raise Blocked(f"the credentials never authenticated: every first call that carried them was refused ({seen}); "
                      "check --token / --basic: expired, revoked, or another deployment's?")
