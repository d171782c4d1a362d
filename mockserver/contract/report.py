"""A run as people read it (per operation, every check with its passes and failures, then each failure with what
was expected, what came back and a curl that repeats it) and as CI systems read it (JUnit XML: one test case per
operation and check)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from .runner import Finding, OperationResult, RunResult

_MAX_LINES = 12  # of an expected/got/curl field: a schema violation's message can run long


def text(result: RunResult) -> str:
    lines = [f"mockserver contract against {result.target} · seed {result.seed} · "
             f"up to {result.max_examples} examples per operation"]
    if result.examples:
        lines.append("ids from the fixtures: " + ", ".join(f"{op} ({n})" for op, n in result.examples.items()))
    lines += result.notes
    for op in _operations(result):
        statuses = ", ".join(f"{status}×{count}" for status, count in sorted(op.statuses.items()))
        lines += ["", f"{op.label}  {op.operation_id}  · {sum(op.statuses.values())} requests: {statuses}"]
        for check in result.checks:
            mark, detail = _verdict(op, check)
            lines.append(f"  {mark:<4} {check:<30} {detail}")
    findings = _findings(result)
    for number, finding in enumerate(findings, 1):
        times = f" ({finding.count} times)" if finding.count > 1 else ""
        lines += ["", f"{number}. {finding.operation} · {finding.check}: {finding.title}{times}",
                  *_field("expected", finding.expected), *_field("got", finding.got),
                  *_field("reproduce", finding.curl)]
    if result.errors:
        lines += ["", "errors (the run could not test everything):"]
        for error in result.errors:
            first, *rest = [line for line in error.splitlines() if line.strip()] or [""]
            lines += [f"  - {first}", *(f"    {line}" for line in rest)]
    verdict = "PASSED" if result.passed else "FAILED"
    lines += ["", f"{verdict}: {len(result.operations)} operations, {result.requests} requests, "
                  f"{len(findings)} failure(s), {len(result.errors)} error(s) in {result.elapsed:.1f} s · "
                  f"repeat with --seed {result.seed}"]
    return "\n".join(lines)


def _operations(result: RunResult) -> list[OperationResult]:
    return sorted(result.operations.values(), key=lambda op: op.label)


def _findings(result: RunResult) -> list[Finding]:
    return [finding for op in _operations(result) for finding in op.findings.values()]


def _verdict(op: OperationResult, check: str) -> tuple[str, str]:
    passed, failed = op.passed[check], op.failed[check]
    if failed:
        return "FAIL", f"{failed} failed, {passed} passed"
    return ("ok", f"{passed} passed") if passed else ("-", "did not apply")


def _field(name: str, value: str) -> list[str]:
    text_lines = [line for line in value.strip().splitlines() if line.strip()] or [""]
    if len(text_lines) > _MAX_LINES:
        text_lines = [*text_lines[:_MAX_LINES], f"… ({len(text_lines) - _MAX_LINES} more lines)"]
    label = f"   {name + ':':<11}"
    return [label + text_lines[0], *(" " * len(label) + line for line in text_lines[1:])]


def junit(result: RunResult, path: Path) -> None:
    """JUnit XML: a test case per operation and check (failed, passed, or skipped when it did not apply)."""
    suite = ET.Element("testsuite", name="mockserver contract", time=f"{result.elapsed:.3f}")
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="seed", value=str(result.seed))
    counts = {"tests": 0, "failures": 0, "errors": len(result.errors), "skipped": 0}
    for op in _operations(result):
        for check in result.checks:
            counts["tests"] += 1
            case = ET.SubElement(suite, "testcase", classname=op.label, name=check)
            failed = [f for f in op.findings.values() if f.check == check]
            for finding in failed:
                failure = ET.SubElement(case, "failure", message=finding.title, type=check)
                failure.text = f"expected: {finding.expected}\ngot: {finding.got}\nreproduce: {finding.curl}"
            counts["failures"] += bool(failed)
            if not failed and not op.passed[check]:
                ET.SubElement(case, "skipped", message="did not apply")
                counts["skipped"] += 1
    for error in result.errors:
        counts["tests"] += 1
        ET.SubElement(ET.SubElement(suite, "testcase", classname="mockserver contract", name="run"), "error",
                      message=error.splitlines()[0] if error else "error").text = error
    for name, count in counts.items():
        suite.set(name, str(count))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
