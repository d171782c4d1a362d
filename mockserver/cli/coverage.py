"""`mockserver coverage`: what a client's calls exercised of the description, read from a running mock's
/__mock/coverage — for people (a report per operation) and for CI (JUnit XML, a minimum percentage)."""
from __future__ import annotations

import argparse
import os
import sys
import textwrap
import urllib.error
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .flags import refusal_message

HELP = "what a client's calls exercised of the description, read from a running mock"

WIDTH = 110
_LABEL = 18  # width of the first column of an operation's lines


class Unreachable(Exception):
    """The mock did not give its coverage: not running, no control API, or the wrong control token."""


def fetch(url: str, control_token: str | None = None, session: str | None = None,
          api: str | None = None) -> dict[str, Any]:
    """The whole mock's coverage, or one session's; of one `api` of a mock of several."""
    from ..testing import ControlError, MockClient  # here: the other commands load no Flask

    try:
        return MockClient(url, control_token=control_token, session=session, api=api).coverage()
    except ControlError as exc:
        hints = {401: ": give its --control-token", 404: ": is its control API on (no --no-control)?",
                 400: f": {refusal_message(exc.body)}"}
        raise Unreachable(f"{url} answered {exc.status} for /__mock/coverage{hints.get(exc.status, '')}") from None
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default="http://127.0.0.1:4010", help="the running mock (default %(default)s)")
    parser.add_argument("--control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                        help="the mock's control token, if it has one (env MOCKSERVER_CONTROL_TOKEN)")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report: a test case per "
                                                                   "status, query parameter and enum value")
    parser.add_argument("--min", type=float, metavar="PERCENT", help="exit 1 below this total percentage")
    parser.add_argument("--session", metavar="NAME", help="only the calls of this session (X-Mock-Session)")
    parser.add_argument("--api", metavar="NAME", help="the API of this name, on a mock of several (serve --api)")


def run(args: argparse.Namespace) -> int:
    """0, or 1 below --min; 2 when the mock's coverage cannot be read."""
    url, minimum = args.url, args.min
    try:
        report = fetch(url, args.control_token, args.session, args.api)
    except Unreachable as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return 2
    print(text(report, url, minimum), flush=True)
    if args.junit is not None:
        junit(report, args.junit)
    return 1 if minimum is not None and report["percent"] < minimum else 0
