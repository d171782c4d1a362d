"""`mockserver coverage`: what a client's calls exercised of the description, read from a running mock's
/__mock/coverage — for people (a report per operation) and for CI (JUnit XML, a minimum percentage)."""
from __future__ import annotations

import json
import sys
import textwrap
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

WIDTH = 110
_LABEL = 18  # width of the first column of an operation's lines


class Unreachable(Exception):
    """The mock did not give its coverage: not running, no control API, or the wrong control token."""


def fetch(url: str, control_token: str | None = None, session: str | None = None) -> dict[str, Any]:
    """The whole mock's coverage, or one session's."""
    headers = {"X-Mock-Control-Token": control_token} if control_token else {}
    query = "?" + urlencode({"session": session}) if session else ""
    request = urllib.request.Request(url.rstrip("/") + "/__mock/coverage" + query, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        hint = {401: ": give its --control-token", 404: ": is its control API on (no --no-control)?"}.get(exc.code, "")
        raise Unreachable(f"{url} answered {exc.code} for /__mock/coverage{hint}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise Unreachable(f"cannot read the coverage of {url}: {getattr(exc, 'reason', exc)}") from None


def _groups(operation: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]], Callable[[dict[str, Any]], str]]]:
    """What an operation offers to exercise, by kind: statuses, query parameters, each enum parameter's values."""
    groups: list[tuple[str, list[dict[str, Any]], Callable[[dict[str, Any]], str]]] = [
        ("statuses", operation["statuses"], lambda i: str(i["status"])),
        ("query parameters", operation["queryParameters"], lambda i: i["name"])]
    for name in dict.fromkeys(e["parameter"] for e in operation["enumValues"]):
        groups.append((f"{name} values", [e for e in operation["enumValues"] if e["parameter"] == name],
                       lambda i: str(i["value"])))
    return [group for group in groups if group[1]]


def text(report: dict[str, Any], url: str, minimum: float | None = None) -> str:
    unmatched = f" ({report['unmatched']} to no operation)" if report["unmatched"] else ""
    lines = [f"mockserver coverage of {url} · {report['calls']} calls since the last reset{unmatched}"]
    if report["journalFull"]:
        lines.append("note: past 20,000 distinct calls, further ones are counted but not broken "
                     "down")
    for op in report["operations"]:
        lines += ["", f"{op['method']} {op['path']}  {op['operationId']} · {op['calls']} calls · "
                      f"{op['percent']} % ({op['covered']} of {op['total']})"]
        for label, items, name in _groups(op):
            seen = ", ".join(f"{name(i)}×{i['calls']}" for i in items if i["calls"]) or "none"
            never = ", ".join(name(i) for i in items if not i["calls"]) or "none"
            lines.append(textwrap.fill(f"{label:<{_LABEL}}seen {seen} · never {never}", WIDTH,
                                       initial_indent="  ", subsequent_indent=" " * (_LABEL + 2)))
        if op["undeclaredStatuses"]:
            undeclared = ", ".join(f"{s['status']}×{s['calls']}" for s in op["undeclaredStatuses"])
            lines.append(f"  {'undeclared':<{_LABEL}}{undeclared} (statuses the description does not give it)")
    verdict = ""
    if minimum is not None:
        verdict = (f" · below the minimum of {minimum:g} %" if report["percent"] < minimum
                   else f" · minimum {minimum:g} % met")
    lines += ["", f"TOTAL {report['percent']} % ({report['covered']} of {report['total']}){verdict}"]
    return "\n".join(lines)


def junit(report: dict[str, Any], path: Path) -> None:
    """A test case per operation and status, query parameter or enum value: a failure when never exercised."""
    suite = ET.Element("testsuite", name="mockserver coverage")
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="percent", value=str(report["percent"]))
    tests = failures = 0
    for op in report["operations"]:
        for label, items, name in _groups(op):
            for item in items:
                tests += 1
                case = ET.SubElement(suite, "testcase", classname=f"{op['operationId']} ({op['method']} {op['path']})",
                                     name=f"{label}: {name(item)}")
                if not item["calls"]:
                    failures += 1
                    ET.SubElement(case, "failure", type="coverage",
                                  message=f"{op['operationId']}: {name(item)} ({label}) was never exercised")
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def run(url: str, control_token: str | None, junit_path: Path | None, minimum: float | None,
        session: str | None = None) -> int:
    """0, or 1 below `minimum`; 2 when the mock's coverage cannot be read."""
    try:
        report = fetch(url, control_token, session)
    except Unreachable as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return 2
    print(text(report, url, minimum), flush=True)
    if junit_path is not None:
        junit(report, junit_path)
    return 1 if minimum is not None and report["percent"] < minimum else 0
