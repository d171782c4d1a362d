"""`mockserver diff OLD NEW`: what changed for clients, with evidence from the fixtures and the journal of real
calls; as text for people, markdown for a pull-request comment, JSON for tools. Exit 1 when `--fail-on` is met,
0 otherwise, 2 when an input is unusable (one line naming the file and what)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.errors import LoadError
from ..fixtures.loading import load_fixtures
from ..pipeline.pipeline import Pipeline
from ..spec.index import SpecIndex
from ..tools.diff import Change, Differ, Location
from ..tools.evidence import Evidence, Tally, gather
from .flags import add_allow_outside, api_mount

HELP = ("what changed between two descriptions, breaking or not for clients, with evidence from fixtures and the "
        "journal of real calls")


class Unusable(Exception):
    """An input the diff cannot read: said in one line, exit 2."""


@dataclass
class Report:
    old: Path
    new: Path
    changes: list[Change]
    evidence: Evidence
    seconds: dict[str, float]

    @property
    def breaking(self) -> list[Change]:
        return [c for c in self.changes if self.is_breaking(c)]

    @property
    def fails(self) -> bool:
        """`--fail-on breaking`: a breaking change, or answers and requests NEW rejects that no change explains
        (a keyword the diff does not compare: they break all the same)."""
        return bool(self.breaking or self.evidence.unexplained)

    def is_breaking(self, change: Change) -> bool:
        """Breaking for clients, or (a narrowed response) rejecting answers the API really serves."""
        return change.breaking or bool(self.evidence.of(change))


def _one_line(exc: LoadError, what: str) -> str:
    first = exc.problems[0] if exc.problems else None
    more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
    return f"{what}: {first}{more}" if first else what


def _spec(path: Path, label: str, allowed: tuple[Path, ...]) -> SpecIndex:
    try:
        return SpecIndex(path, allowed)
    except LoadError as exc:
        raise Unusable(_one_line(exc, f"{label} {path} is not a usable description")) from None


def read_journal(path: Path | None, url: str | None, control_token: str | None,
                 api: str | None = None) -> list[dict[str, Any]] | None:
    """A saved `GET /__mock/requests` (`{"requests": [...]}`), or the journal of a running mock (of its API `api`,
    on a mock of several: its paths read below the prefix the API is mounted at, as OLD describes them)."""
    if path is None and url is None:
        return None
    if api is not None and url is None:
        raise Unusable(f"--api {api} names an API of a running mock of several: give its address with --url")
    prefix = ""
    if path is not None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise Unusable(f"{path}: cannot read the journal: {exc}") from None
        except ValueError as exc:
            raise Unusable(f"{path}: the journal is not JSON: {exc}") from None
        where = str(path)
    else:
        url = str(url)
        from ..testing import ControlError, MockClient  # here: the other commands load no Flask

        try:
            prefix = api_mount(url, api, control_token)[1]["prefix"] if api is not None else ""
        except ValueError as exc:  # where the API is mounted cannot be known
            raise Unusable(str(exc)) from None
        try:
            data = MockClient(url, control_token=control_token, api=api).control("GET", "requests")
        except ControlError as exc:
            hint = {401: ": give its --control-token", 404: ": is its control API on?"}.get(exc.status, "")
            raise Unusable(f"{url} answered {exc.status} for /__mock/requests{hint}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise Unusable(f"cannot read the journal of {url}: {getattr(exc, 'reason', exc)}") from None
        where = f"{url}/__mock/requests"
    entries = data.get("requests") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise Unusable(f"{where}: not a journal: expected {{\"requests\": [...]}} as GET /__mock/requests answers")
    for number, entry in enumerate(entries):
        if not _is_entry(entry):
            raise Unusable(f"{where}: journal entry {number} is not one GET /__mock/requests gives (method and path "
                           "as text, status a number, bodies text or null)")
    if prefix:
        return [{**entry, "path": entry["path"].removeprefix(prefix) or "/"} for entry in entries]
    return entries


def _is_entry(entry: Any) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("method"), str) and isinstance(entry.get("path"), str)
            and isinstance(entry.get("status"), int) and isinstance(entry.get("query") or "", str)
            and all(isinstance(entry.get(k), (str, type(None))) for k in ("requestBody", "responseBody"))
            and all(isinstance(entry.get(k) or {}, dict) for k in ("requestHeaders", "responseHeaders")))


def build(old_path: Path, new_path: Path, fixtures: Path | None, entries: list[dict[str, Any]] | None,
          allowed: tuple[Path, ...] = ()) -> Report:
    """`allowed`: folders besides their own that the descriptions and fixtures may read (`--allow-ref-outside`)."""
    started = time.perf_counter()
    old, new = _spec(old_path, "OLD", allowed), _spec(new_path, "NEW", allowed)
    loaded = time.perf_counter()
    differ = Differ(old, new)
    changes = differ.run()
    compared = time.perf_counter()
    evidence = Evidence()
    if fixtures is not None or entries is not None:
        try:  # what OLD serves from the fixtures: they must fit OLD, as the mock requires
            old_pipeline = Pipeline(old, load_fixtures(fixtures, allowed))
        except LoadError as exc:
            raise Unusable(_one_line(exc, f"the fixtures {fixtures} do not load against OLD {old_path} (they are "
                                          "what is served today)")) from None
        try:  # the journal is replayed through a mock of NEW, as drift checks a deployment
            new_pipeline = Pipeline(new, load_fixtures(None)) if entries is not None else None
        except LoadError as exc:
            raise Unusable(_one_line(exc, f"NEW {new_path} cannot be served to replay the journal")) from None
        evidence = gather(changes, differ, old_pipeline, new_pipeline, fixtures=fixtures is not None, entries=entries)
    done = time.perf_counter()
    return Report(old_path, new_path, changes, evidence,
                  {"load": loaded - started, "compare": compared - loaded, "evidence": done - compared,
                   "total": done - started})


# -- formats -----------------------------------------------------------------------------------------------
def _where(location: Location | None) -> str:
    """A location as a person reads it: `spec/api.yaml:12#/pointer`, relative to here when it is below."""
    if location is None:
        return "-"
    relative = os.path.relpath(location.file)
    shown = location.file if relative.startswith("..") else relative
    return f"{shown}:{location.line or '?'}#{location.pointer or '/'}"


def _evidence_line(tallies: dict[str, Tally]) -> str:
    return ", ".join(f"{t.count} {source}" for source, t in tallies.items())


def _counts(report: Report) -> str:
    rejected = sum(t.count for tallies in report.evidence.unexplained.values() for t in tallies.values())
    also = f"; NEW rejects {rejected} more answer(s) or request(s) no change explains" if rejected else ""
    return f"{len(report.changes)} change(s), {len(report.breaking)} breaking{also}"


def _timing(report: Report) -> str:
    s = report.seconds
    return (f"in {s['total']:.2f} s (reading both {s['load']:.2f} s, comparing {s['compare']:.2f} s, evidence "
            f"{s['evidence']:.2f} s)")


def _checked(report: Report) -> str:
    checked = ", ".join(f"{n} {source}" for source, n in report.evidence.checked.items())
    skipped = ", ".join(f"{n} {why}" for why, n in report.evidence.skipped.items())
    said = f"evidence checked against NEW: {checked}" if checked else ""
    return said + (f"; skipped: {skipped}" if skipped else "")


def text(report: Report) -> str:
    lines = [f"mockserver diff {report.old} → {report.new}: {_counts(report)}"]
    for change in report.changes:
        verdict = "BREAKING" if report.is_breaking(change) else "ok"
        by_evidence = " (by evidence)" if not change.breaking and report.is_breaking(change) else ""
        lines.append(f"  {verdict}{by_evidence} [{change.kind}, {change.side}] {change.message}")
        operations = sorted({s.operation for s in change.sites})
        if len(operations) > 1 or operations and operations[0] not in change.message:
            shown = ", ".join(operations[:5]) + (f" and {len(operations) - 5} more" if len(operations) > 5 else "")
            lines.append(f"      in {shown}")
        lines.append(f"      old {_where(change.old)}")
        lines.append(f"      new {_where(change.new)}")
        tallies = report.evidence.of(change)
        if tallies:
            lines.append(f"      breaks {_evidence_line(tallies)}")
            lines += [f"        e.g. {t.instance}" for t in tallies.values()]
    if not report.changes:
        lines.append("  no changes")
    if report.evidence.unexplained:
        lines.append("  NEW also rejects (no change above explains it):")
        for (operation, place, rule), tallies in report.evidence.unexplained.items():
            lines.append(f"    {operation} {place} [{rule}]: {_evidence_line(tallies)}")
            lines += [f"      e.g. {t.instance}" for t in tallies.values()]
    checked = _checked(report)
    if checked:
        lines.append(checked)
    lines.append(_timing(report))
    return "\n".join(lines)


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def markdown(report: Report) -> str:
    """A pull-request comment: the verdict, a table of the changes, the evidence under each breaking one."""
    head = "breaks clients" if report.fails else "breaks no client"
    lines = [f"### `mockserver diff`: {head}", "", f"`{report.old}` → `{report.new}`: {_counts(report)}", ""]
    if report.changes:
        lines += ["| | change | side | where (old → new) | evidence |", "|---|---|---|---|---|"]
        for change in report.changes:
            mark = "🔴 breaking" if report.is_breaking(change) else "🟢"
            where = f"`{_where(change.old)}` → `{_where(change.new)}`"
            tallies = report.evidence.of(change)
            evidence = "<br>".join(f"{t.count} {s}: e.g. `{_cell(t.instance)}`" for s, t in tallies.items())
            lines.append(f"| {mark} | {_cell(change.message)} ({change.kind}) | {change.side} | {_cell(where)} | "
                         f"{evidence or '-'} |")
    if report.evidence.unexplained:
        lines += ["", "NEW also rejects (no change above explains it):", ""]
        for (operation, place, rule), tallies in report.evidence.unexplained.items():
            first = next(iter(tallies.values()))
            lines.append(f"- `{operation}` `{place}` [{rule}]: {_evidence_line(tallies)}, e.g. `{first.instance}`")
    checked = _checked(report)
    lines += ["", *([f"_{checked}_", ""] if checked else []), f"_{_timing(report)}_"]
    return "\n".join(lines)


def as_json(report: Report) -> str:
    def tallies(found: dict[str, Tally]) -> dict[str, Any]:
        return {source: {"count": t.count, "instance": t.instance} for source, t in found.items()}

    changes = [{**c.as_dict(), "breaking": report.is_breaking(c), "breakingForClients": c.breaking,
                "evidence": tallies(report.evidence.of(c))} for c in report.changes]
    unexplained = [{"operation": op, "place": place, "rule": rule, "evidence": tallies(found)}
                   for (op, place, rule), found in report.evidence.unexplained.items()]
    return json.dumps({"old": str(report.old), "new": str(report.new), "changes": changes,
                       "breaking": len(report.breaking), "unexplained": unexplained,
                       "checked": report.evidence.checked, "skipped": report.evidence.skipped,
                       "seconds": {k: round(v, 3) for k, v in report.seconds.items()}}, indent=2)


FORMATS = {"text": text, "markdown": markdown, "json": as_json}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", type=Path, metavar="OLD")
    parser.add_argument("new", type=Path, metavar="NEW")
    parser.add_argument("--fixtures", type=Path, help="fixtures folder (fitting OLD): every answer it serves is "
                                                      "checked against NEW")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--journal", type=Path, metavar="FILE", help="a saved GET /__mock/requests: every request "
                                                                     "and answer replayed through NEW")
    source.add_argument("--url", metavar="MOCK", help="a running mock (of OLD) whose journal to replay")
    parser.add_argument("--api", metavar="NAME", help="with --url of a mock of several APIs (serve --api): the "
                                                      "journal of its API of this name")
    parser.add_argument("--control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                        help="the mock's control token, with --url (env MOCKSERVER_CONTROL_TOKEN)")
    parser.add_argument("--format", default="text", choices=["text", "markdown", "json"])
    parser.add_argument("--fail-on", choices=["breaking", "any"], help="exit 1 when there is a breaking change (or "
                                                                       "any)")
    add_allow_outside(parser)


def run(args: argparse.Namespace) -> int:
    """Print the report; 1 when --fail-on is met (a breaking change, or any change), 0 otherwise, 2 unusable."""
    fixtures, fail_on = args.fixtures, args.fail_on
    try:
        if fixtures is not None and not fixtures.is_dir():
            raise Unusable(f"{fixtures}: the fixtures folder does not exist")
        report = build(args.old, args.new, fixtures, read_journal(args.journal, args.url, args.control_token, args.api),
                       tuple(args.allow_outside))
    except Unusable as exc:
        print(f"mockserver diff: {exc}", file=sys.stderr)
        return 2
    try:
        print(FORMATS[args.format](report))
        sys.stdout.flush()
    except BrokenPipeError:  # read by `head` or a closed pipe: nothing more to say
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - so the interpreter's own flush at exit stays quiet
    if fail_on == "any" and (report.changes or report.fails) or fail_on == "breaking" and report.fails:
        return 1
    return 0
