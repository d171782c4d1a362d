"""A run as people read it (why it failed first; then per operation, every check with its passes, failures and
the answers it did not apply to; then each failure with what was expected, what came back and a curl that repeats
it) and as CI systems read it (JUnit XML: one test case per operation and check, and one per gap)."""
from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .checks import MUST_APPLY
from .results import Gap, OperationResult, Problem, RunResult

_SOURCES = {"discovered": "ids discovered on the target", "data": "values from --data"}
_MAX_LINES = 12  # of an expected/got/curl field: a schema violation's message can run long
_SHOWN = 5  # operations named in a problem's cause line
# what XML 1.0 forbids (C0 controls but tab, newline and return; lone surrogates; U+FFFE, U+FFFF) and what UTF-8
# cannot write (lone surrogates): a fuzzed name or a server's answer may hold any of them
_UNWRITABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def printable(value: str) -> str:
    """`value` with every character XML 1.0 or UTF-8 cannot carry written as its escape (`\\x0b`, `\\ud800`), so
    a report always parses and still shows what was there."""
    return _UNWRITABLE.sub(lambda found: found.group().encode("unicode_escape", "backslashreplace").decode("ascii"),
                           value)


def _printable_data(value: Any) -> Any:
    """`printable` on every string (keys included) of a JSON value."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(str(key)): _printable_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_printable_data(item) for item in value]
    return value


def text(result: RunResult) -> str:
    mode = f" · {result.mode} mode" if result.mode != "all" else ""
    lines = [f"mockserver contract against {result.target} · seed {result.seed} · "
             f"up to {result.max_examples} examples per operation{mode}", *_why(result)]
    if result.excused:
        lines += ["allowed untested (--allow-untested):", *(f"  {_gap(gap)}" for gap in result.excused)]
    for source, counts in result.values.items():
        shown = ", ".join(f"{op} ({n})" for op, n in counts.items()) or "none"
        lines.append(f"{_SOURCES.get(source, source)}: {shown}")
    if result.examples:
        lines.append("ids from the fixtures: " + ", ".join(f"{op} ({n})" for op, n in result.examples.items()))
    lines += result.notes
    for op in _operations(result):
        probes = f" · {sum(op.probes.values())} probes with other methods: {_seen(op.probes)}" if op.probes else ""
        lines += ["", f"{op.label}  {op.operation_id}  · {sum(op.statuses.values())} answers: {_seen(op.statuses)}"
                      f"{probes}", f"  {_responses(op)}"]
        for check in result.checks:
            mark, detail = _verdict(op, check)
            lines.append(f"  {mark:<4} {check:<30} {detail}")
    for number, problem in enumerate(result.problems(), 1):
        lines += ["", f"{number}. {_problem(problem)}", *_field("cause", _cause(problem))]
        example = problem.findings[0]
        lines += [*_field("expected", example.expected), *_field("got", example.got)]
        lines += [line for curl in problem.examples for line in _field("reproduce", curl)]
    if result.errors:
        lines += ["", "errors (the run could not test everything):"]
        for error in result.errors:
            first, *rest = [line for line in error.splitlines() if line.strip()] or [""]
            lines += [f"  - {first}", *(f"    {line}" for line in rest)]
    verdict = "PASSED" if result.passed else "FAILED"
    observed, declared = result.responses
    lines += ["", f"declared responses: {observed} of {declared} observed ({result.response_percent:.0f} %)"
                  + (f", --min-responses {result.min_responses:g} %" if result.min_responses is not None else "")]
    lines += ["", f"{verdict}: {len(result.operations)} operations, {result.requests} requests, "
                  f"{_problems(result)}, {len(result.errors)} error(s), {len(result.gaps)} untested in "
                  f"{result.elapsed:.1f} s · repeat with --seed {result.seed}"]
    return printable("\n".join(lines))


def _why(result: RunResult) -> list[str]:
    """Why the run failed, before anything else: what it could not check, then how many failures and errors."""
    if result.passed:
        return []
    lines = ["FAILED:", *([f"  - {result.blocked}"] if result.blocked else [])]
    by_kind: dict[str, list[Gap]] = {}
    for gap in result.gaps:
        by_kind.setdefault(gap.kind, []).append(gap)
    if "credentials" in by_kind:
        lines += ["  - the credentials never authenticated: every call that carried them was refused (check --token / "
                  "--basic: expired, revoked, or another deployment's?)",
                  *(f"      {gap.operation} ({gap.detail})" for gap in by_kind["credentials"])]
    if "success" in by_kind:
        lines += ["  - never answered with success, so none of their success answers was checked (call them with "
                  "values that exist there, or --allow-untested OP to skip one knowingly)",
                  *(f"      {gap.operation} ({gap.detail})" for gap in by_kind["success"])]
    for gap in by_kind.get("check", []):
        lines.append(f"  - {_gap(gap)}")
    if result.too_few_responses:
        observed, declared = result.responses
        unseen = ", ".join(f"{op.label} {key}" for op in _operations(result)
                           for key, count in op.observed().items() if not count)
        lines.append(f"  - only {observed} of {declared} declared responses observed "
                     f"({result.response_percent:.1f} %), below --min-responses {result.min_responses:g}; not seen: "
                     + unseen)
    errors = len(result.errors)
    if result.findings():
        lines.append(f"  - {_problems(result)}, listed below")
    if errors:
        lines.append(f"  - {errors} error(s): the run could not test everything, listed below")
    return lines


def _problems(result: RunResult) -> str:
    """Root causes, the failed answers they made, and where: `12 problems (470 occurrences) in 31 operations`."""
    problems = result.problems()
    if not problems:
        return "0 problems"
    occurrences = sum(problem.count for problem in problems)
    operations = len({label for problem in problems for label in problem.operations})
    return (f"{len(problems)} problem{'s' * (len(problems) != 1)} ({occurrences} occurrence"
            f"{'s' * (occurrences != 1)}) in {operations} operation{'s' * (operations != 1)}")


def _problem(problem: Problem) -> str:
    """A problem's heading: its first operation, check and title, and how often, where."""
    first, count, operations, families = problem.findings[0], problem.count, problem.operations, problem.families
    of = f" of {families[0]}" if len(families) == 1 else ""
    where = f" in {len(operations)} operations{of}" if len(operations) > 1 else ""
    times = f" ({count} occurrences{where})" if count > 1 else ""
    return f"{first.operation} · {problem.check}: {first.title}{times}"


def _cause(problem: Problem) -> str:
    """What broke, the distinct rules broken there, and the operations where (when more than one: the first
    `_SHOWN`, the JSON report has them all)."""
    rules = f" · rules: {', '.join(problem.rules)}" if problem.rules else ""
    operations = problem.operations
    more = f" and {len(operations) - _SHOWN} more" if len(operations) > _SHOWN else ""
    return problem.cause + rules + (f" · operations: {', '.join(operations[:_SHOWN])}{more}"
                                    if len(operations) > 1 else "")


def _gap(gap: Gap) -> str:
    if gap.kind == "credentials":
        return f"{gap.operation}: the credentials were refused ({gap.detail})"
    if gap.kind == "success":
        return f"{gap.operation}: never answered with success ({gap.detail})"
    return (f"{gap.detail} never applied to {gap.operation}, which answered with success: it needs "
            f"{MUST_APPLY[gap.detail][1]}")


def _responses(op: OperationResult) -> str:
    seen = op.observed()
    missing = [key for key, count in seen.items() if not count]
    return (f"responses: {len(seen) - len(missing)} of {len(seen)} declared observed"
            + (f" · not seen: {', '.join(missing)}" if missing else ""))


def _seen(statuses: dict[int, int]) -> str:
    return ", ".join(f"{status}×{count}" for status, count in sorted(statuses.items()))


def _operations(result: RunResult) -> list[OperationResult]:
    return sorted(result.operations.values(), key=lambda op: op.label)


def _verdict(op: OperationResult, check: str) -> tuple[str, str]:
    passed, failed, skipped = op.passed[check], op.failed[check], op.skipped(check)
    counts = ", ".join(f"{count} {what}" for count, what in ((failed, "failed"), (passed, "passed"),
                                                              (skipped, "did not apply")) if count)
    if failed:
        return "FAIL", counts
    return ("ok", counts) if passed else ("-", f"did not apply ({op.checked} answers checked)")


def _field(name: str, value: str) -> list[str]:
    text_lines = [line for line in value.strip().splitlines() if line.strip()] or [""]
    if len(text_lines) > _MAX_LINES:
        text_lines = [*text_lines[:_MAX_LINES], f"… ({len(text_lines) - _MAX_LINES} more lines)"]
    label = f"   {name + ':':<11}"
    return [label + text_lines[0], *(" " * len(label) + line for line in text_lines[1:])]


def junit(result: RunResult, path: Path, complete: bool = True) -> None:
    """JUnit XML: a test case per operation and check (failed, passed, or skipped when it did not apply), with its
    counts as properties; a failed test case per gap, a skipped one per excused gap. `complete`: False while the
    run goes on (the suite's `complete` property says so); the file is replaced whole, never left half-written."""
    suite = ET.Element("testsuite", name="mockserver contract", time=f"{result.elapsed:.3f}")
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="seed", value=str(result.seed))
    ET.SubElement(properties, "property", name="complete", value=str(complete).lower())
    counts = {"tests": 0, "failures": 0, "errors": len(result.errors), "skipped": 0}
    for op in _operations(result):
        for check in result.checks:
            counts["tests"] += 1
            case = ET.SubElement(suite, "testcase", classname=op.label, name=check)
            properties = ET.SubElement(case, "properties")
            for name, count in (("passed", op.passed[check]), ("failed", op.failed[check]),
                                ("did not apply", op.skipped(check))):
                ET.SubElement(properties, "property", name=name, value=str(count))
            failed = [f for f in op.findings.values() if f.check == check]
            if failed:  # one failure element (as every JUnit schema allows), every cause in its body
                more = f" (and {len(failed) - 1} other cause{'s' * (len(failed) > 2)})" if len(failed) > 1 else ""
                ET.SubElement(case, "failure", message=failed[0].title + more, type=check).text = "\n\n".join(
                    f"cause: {f.cause}{f' ({f.rule})' if f.rule else ''} · {f.count} time{'s' * (f.count != 1)}\n"
                    f"expected: {f.expected}\ngot: {f.got}\nreproduce: {f.curl}" for f in failed)
            counts["failures"] += bool(failed)
            if not failed and not op.passed[check]:
                ET.SubElement(case, "skipped", message="did not apply")
                counts["skipped"] += 1
    for op in _operations(result):
        counts["tests"] += 1
        case = ET.SubElement(suite, "testcase", classname=op.label, name="declared responses")
        properties = ET.SubElement(case, "properties")
        for key, count in op.observed().items():
            ET.SubElement(properties, "property", name=f"observed {key}", value=str(count))
        if result.too_few_responses and not all(op.observed().values()):
            counts["failures"] += 1
            ET.SubElement(case, "failure", type="min_responses",
                          message=f"{_responses(op)} (the run: {result.response_percent:.1f} %, below --min-responses "
                                  f"{result.min_responses:g})")
    for gaps, failing in ((result.gaps, True), (result.excused, False)):
        for gap in gaps:
            counts["tests"] += 1
            counts["failures" if failing else "skipped"] += 1
            case = ET.SubElement(suite, "testcase", classname=gap.operation, name=f"tested: {gap.kind}")
            ET.SubElement(case, "failure" if failing else "skipped", type=f"untested {gap.kind}",
                          message=_gap(gap) if failing else f"allowed untested: {_gap(gap)}")
    if result.blocked:
        counts["tests"] += 1
        counts["failures"] += 1
        ET.SubElement(ET.SubElement(suite, "testcase", classname="mockserver contract", name="preflight"), "failure",
                      type="preflight", message=result.blocked)
    for error in result.errors:
        counts["tests"] += 1
        ET.SubElement(ET.SubElement(suite, "testcase", classname="mockserver contract", name="run"), "error",
                      type="error", message=error.splitlines()[0] if error else "error").text = error
    for name, count in counts.items():
        suite.set(name, str(count))
    root = ET.Element("testsuites")
    root.append(suite)
    for element in root.iter():
        element.attrib = {name: printable(value) for name, value in element.attrib.items()}
        element.text = printable(element.text) if element.text else element.text
    ET.indent(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    ET.ElementTree(root).write(partial, encoding="utf-8", xml_declaration=True)
    os.replace(partial, path)


def as_json(result: RunResult) -> dict[str, Any]:
    """The run as data (`--report-json`): the verdict and why, per check and per operation the answers each check
    passed, failed and did not apply to, and every failure with what was expected, what came back and its curl;
    every string `printable`."""
    totals = {check: {"passed": 0, "failed": 0, "did_not_apply": 0} for check in result.checks}
    operations = []
    for op in _operations(result):
        checks = {check: {"passed": op.passed[check], "failed": op.failed[check], "did_not_apply": op.skipped(check)}
                  for check in result.checks}
        for check, counts in checks.items():
            for name, count in counts.items():
                totals[check][name] += count
        operations.append({"operation": op.label, "operationId": op.operation_id,
                           "statuses": {str(status): n for status, n in sorted(op.statuses.items())},
                           "probes": {str(status): n for status, n in sorted(op.probes.items())},
                           "responses": op.observed(), "checks": checks})
    observed, declared = result.responses
    problems = result.problems()
    data = {"target": result.target, "seed": result.seed, "mode": result.mode, "phases": result.phases,
            "max_examples": result.max_examples, "passed": result.passed, "blocked": result.blocked,
            "elapsed_s": round(result.elapsed, 1),
            "operations_declared": result.declared, "operations_run": len(result.operations),
            "requests": result.requests,
            "responses": {"observed": observed, "declared": declared, "percent": round(result.response_percent, 1)},
            "checks": totals, "problems": [_problem_data(problem) for problem in problems],
            "occurrences": sum(problem.count for problem in problems),
            "findings": [asdict(finding) for op in _operations(result) for finding in op.findings.values()],
            "gaps": [asdict(gap) for gap in result.gaps], "excused": [asdict(gap) for gap in result.excused],
            "errors": result.errors, "set_aside": result.filtered, "notes": result.notes, "operations": operations}
    return _printable_data(data)


def _problem_data(problem: Problem) -> dict[str, Any]:
    first = problem.findings[0]
    return {"check": problem.check, "families": problem.families, "cause": problem.cause, "rules": problem.rules,
            "title": first.title, "count": problem.count, "operations": problem.operations,
            "expected": first.expected, "got": first.got, "examples": problem.examples}


def write_json(result: RunResult, path: Path) -> None:
    """`as_json(result)` into `path`, replaced whole (never left half-written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    partial.write_text(json.dumps(as_json(result), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, path)
