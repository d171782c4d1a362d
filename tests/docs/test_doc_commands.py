"""Every shell block of README.md and docs/*.md runs as written, from the repository root, against the Kindgi mock
`make run` serves, and answers what the docs say next to it; or it says why it is not run (`<!-- not run: REASON -->`
right before its fence: docs/CONTRIBUTING.md). One test per block, named by its file and line."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import ROOT, free_port, serving

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = {"sh", "bash", "console", "shell"}
FENCE = re.compile(r"^\s*```(\S*)\s*$")
NOT_RUN = re.compile(r"^\s*<!--\s*not run:(.*)-->\s*$")
MOCK_PORT = "4010"  # the port `make run` serves on, which the docs' commands call
ADDRESS = re.compile(r"(127\.0\.0\.1:|localhost:|--port |-p )(\d{4,5})\b")  # `-p`: redis-cli's
STATUSES = re.compile(r"\s*([1-5]\d\d(?:\s+[1-5]\d\d)*)\b")  # `# 401 …`, `# 503 503 200` (a loop's calls)
CODE = re.compile(r"\s+([a-z]+(?:-[a-z]+)*)(?=[\s:,;.]|$)")  # `# 404 agent-not-found`: the error code
HEADER = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*): ([^\s,;]+)")  # `Retry-After: 2`
LOOP = re.compile(r"(?<![\w-])(do|done)(?![\w-])")
PAIR = re.compile(r'"([^"\\]+)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)')  # `"code":"bad-input"`
BLOCK_TIMEOUT = 60
CURL = """\
set -eo pipefail
# every curl of a block keeps its answer's headers and body, and the line of the block it was called on
curl() {
  local n
  n=$(( $(cat "$DOC_CALLS/count") + 1 ))
  echo "$n" >"$DOC_CALLS/count"
  echo "${BASH_LINENO[0]}" >"$DOC_CALLS/$n.line"
  command curl -D "$DOC_CALLS/$n.head" "$@" | tee "$DOC_CALLS/$n.body"
  return "${PIPESTATUS[0]}"
}
"""


@dataclass(frozen=True)
class Block:
    """A shell block of a doc: where its fence is, its text, and why it is not run (None: it is run)."""
    doc: str
    line: int
    text: str
    not_run: str | None


@dataclass
class Command:
    """One command of a block (its lines, first to last, 1-based in the block) and the comments on and below it."""
    first: int
    last: int
    comment: str = ""


@dataclass
class Call:
    """One curl a block ran: the block line bash named, the status, the headers and the body."""
    line: int
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""


def blocks() -> tuple[list[Block], list[str]]:
    """Every shell block of the docs, and every misplaced or empty `not run` mark (as `file:line: why`)."""
    found: list[Block] = []
    problems: list[str] = []
    for path in DOCS:
        name = path.relative_to(ROOT).as_posix()
        lines = path.read_text(encoding="utf-8").split("\n")
        marks = {number for number, line in enumerate(lines) if NOT_RUN.match(line)}
        number = 0
        while number < len(lines):
            opening = FENCE.match(lines[number])
            if opening is None:
                number += 1
                continue
            end = next((i for i in range(number + 1, len(lines)) if FENCE.match(lines[i])), len(lines))
            mark = NOT_RUN.match(lines[number - 1]) if number else None
            if opening.group(1) in SHELLS:
                marks.discard(number - 1)
                reason = mark.group(1).strip() if mark else None
                if reason == "":
                    problems.append(f"{name}:{number}: `not run` needs a reason")
                found.append(Block(name, number + 1, "\n".join(lines[number + 1:end]), reason))
            marks -= set(range(number + 1, end))  # a mark shown inside a block is an example of one
            number = end + 1
        problems += [f"{name}:{mark + 1}: `not run` is not right before a shell block's fence"
                     for mark in sorted(marks)]
    return found, problems


def scan(text: str) -> tuple[bool, list[str]]:
    """Whether `text` ends a command (no open quote, no trailing backslash, a loop's `do` closed by its `done`), and
    its comments, one per line."""
    comments: list[str] = []
    bare: list[str] = []  # the text outside quotes and comments, where `do` and `done` count
    quote = ""
    i = 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\" and quote == '"':
                i += 1
            elif char == quote:
                quote = ""
        elif char == "\\":
            if i + 1 == len(text):
                return False, comments
            i += 1
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or text[i - 1].isspace()):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            comments.append(text[i + 1:end].strip())
            i = end
        else:
            bare.append(char)
        i += 1
    words = LOOP.findall("".join(bare))
    return not quote and words.count("do") == words.count("done"), comments


def commands(text: str) -> list[Command]:
    """The commands of a block; a comment line right below a command (no blank line between) belongs to it."""
    lines = text.split("\n")
    found: list[Command] = []
    number = 0
    attached = False
    while number < len(lines):
        stripped = lines[number].strip()
        if not stripped or stripped.startswith("#"):
            if stripped and attached:
                found[-1].comment += " " + stripped[1:].strip()
            attached = attached and bool(stripped)
            number += 1
            continue
        first = number
        complete, comments = scan(lines[number])
        while not complete and number + 1 < len(lines):
            number += 1
            complete, comments = scan("\n".join(lines[first:number + 1]))
        found.append(Command(first + 1, number + 1, " ".join(comments)))
        attached = True
        number += 1
    return found


def expectations(comment: str) -> tuple[list[int], str | None, dict[str, str], list[tuple[str, str]]]:
    """What a comment states of an answer: `# 404 agent-not-found` the status and error code, `Retry-After: 2` a
    header (after a status), `{"code":"bad-input",…}` the body's members (those elided with … are not checked)."""
    pairs = [(key, value) for key, value in PAIR.findall(comment) if "…" not in value and "..." not in value]
    stated = STATUSES.match(comment)
    if stated is None:
        return [], None, {}, pairs
    code = CODE.match(comment, stated.end())
    return ([int(status) for status in stated.group(1).split()], code.group(1) if code else None,
            dict(HEADER.findall(comment)), pairs)


def read_calls(folder: Path) -> list[Call]:
    """The calls the curl of `CURL` kept, in the order they were made."""
    calls = []
    for n in range(1, int((folder / "count").read_text()) + 1):
        head = (folder / f"{n}.head").read_text(errors="replace") if (folder / f"{n}.head").exists() else ""
        parts = head.split("\n\n")  # read_text made the answer's CRLFs newlines
        response = next((part for part in reversed(parts) if part.startswith("HTTP/")), "HTTP/1.1 0")
        status, *lines = response.split("\n")
        headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
        calls.append(Call(int((folder / f"{n}.line").read_text()), int(status.split()[1]), headers,
                          (folder / f"{n}.body").read_text(errors="replace")))
    return calls


def check(block: Block, calls: list[Call]) -> list[str]:
    """Where the answers differ from what the block's comments state, as `file:line: …`."""
    wrong = []
    for command in commands(block.text):
        statuses, code, headers, pairs = expectations(command.comment)
        if not (statuses or pairs):
            continue
        where = f"{block.doc}:{block.line + command.first}"
        made = [call for call in calls if command.first <= call.line <= command.last]
        if not made:
            wrong.append(f"{where}: the comment states an answer but no curl ran on that line")
            continue
        got = [call.status for call in made]
        if statuses and got != (statuses * len(got) if len(statuses) == 1 else statuses):
            wrong.append(f"{where}: the docs say {statuses}, the mock answered {got}")
        bodies = "\n".join(call.body for call in made)
        if code and f'"{code}"' not in bodies:
            wrong.append(f"{where}: the docs say {code!r}, the answer was {bodies[:300]!r}")
        for name, value in headers.items():
            answered = [call.headers.get(name.lower(), "") for call in made]
            if not any(header.startswith(value) for header in answered):
                wrong.append(f"{where}: the docs say {name}: {value}, the answer had {answered}")
        answered_pairs = set(PAIR.findall(bodies))
        wrong += [f"{where}: the docs say \"{key}\":{value}, the answer was {bodies[:300]!r}"
                  for key, value in pairs if (key, value) not in answered_pairs]
    return wrong


ISSUE = re.compile(r"\b[Ii]ssues? \d+|(?<![\w&])#\d+\b")  # `issue 15`, `#15`
COMMIT = re.compile(r"(?<![\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")  # `4114dab`, not a UUID


def project_references() -> list[str]:
    """Issue numbers and commit hashes in the docs' prose (not in blocks, which show what a tool prints)."""
    found = []
    for path in DOCS:
        inside = False
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            inside = inside != bool(FENCE.match(line))
            hits = [] if inside else ISSUE.findall(line) + COMMIT.findall(line)
            found += [f"{path.relative_to(ROOT).as_posix()}:{number}: {hit}" for hit in hits]
    return found


FOUND, PROBLEMS = blocks()


def test_the_docs_speak_of_no_issue_numbers_or_commits() -> None:
    """A user has neither the project's issues nor a reason to read a commit: the docs say what changed instead."""
    assert project_references() == []


def test_every_not_run_mark_gives_a_reason_right_before_a_shell_block() -> None:
    """A block is run unless it says why not; a mark anywhere else would leave the block after it run unseen."""
    assert PROBLEMS == []


def test_a_comment_that_states_another_answer_is_found() -> None:
    """The comments are read as CONTRIBUTING says: a status (one per call of a loop over several lines), the error
    code after it, a header, the body's members; an answer that differs from any of them is named by its line."""
    block = Block("docs/X.md", 10, "\n".join([
        "curl -s \\",
        "  'http://127.0.0.1:4010/a'   # 404 agent-not-found",
        "for i in 1 2; do",
        "  curl -s -H 'Prefer: code=503' http://127.0.0.1:4010/b",
        "done",
        "# 503 200",
        "curl -si http://127.0.0.1:4010/c   # 503, Retry-After: 2",
        "curl -s http://127.0.0.1:4010/d",
        '# {"error":{"code":"bad-input","requestId":"req_…"}}',
    ]), None)
    envelope = '{"error":{"code":"%s","requestId":"req_1"}}'
    right = [Call(1, 404, {}, envelope % "agent-not-found"), Call(4, 503, {}, ""), Call(4, 200, {}, ""),
             Call(7, 503, {"retry-after": "2"}, ""), Call(8, 400, {}, envelope % "bad-input")]
    assert check(block, right) == []
    wrong = [Call(1, 404, {}, envelope % "not-found"), Call(4, 503, {}, ""), Call(4, 503, {}, ""),
             Call(7, 503, {}, ""), Call(8, 400, {}, envelope % "unauthorized")]
    assert [problem.split(":")[1] for problem in check(block, wrong)] == ["11", "13", "17", "18"]


@pytest.fixture(scope="module")
def mock_port() -> Iterator[int]:
    """The Kindgi mock as `make run` serves it, on a free port; its log (an access line per call) is read away, so
    that a full pipe never stalls it however many commands the docs hold."""
    with serving("--spec", "spec/kindgi.yaml", "--fixtures", "fixtures") as (proc, port):
        assert proc.stderr is not None
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        yield port


@pytest.mark.slow
@pytest.mark.parametrize("block", [block for block in FOUND if block.not_run is None],
                         ids=lambda block: f"{block.doc}:{block.line}")
def test_documented_commands_run_as_written(block: Block, mock_port: int, tmp_path: Path) -> None:
    """The block runs with bash from the repository root (4010 rewritten to the mock's port, any other port a block
    serves on to a free one), exits 0, and every curl answers the status, code, headers and body members its
    comment states."""
    if "redis-server" in block.text and shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (make redis)")
    reset = urllib.request.Request(f"http://127.0.0.1:{mock_port}/__mock/reset", method="POST",
                                   headers={"Content-Type": "application/json"})
    urllib.request.urlopen(reset, timeout=10).close()  # each block starts from the fixtures, as a fresh mock does
    ports = {MOCK_PORT: str(mock_port)}
    script = ADDRESS.sub(lambda m: m.group(1) + ports.setdefault(m.group(2), str(free_port())), block.text)
    (tmp_path / "block.sh").write_text(script + "\n")
    (tmp_path / "curl.sh").write_text(CURL)
    calls = tmp_path / "calls"
    calls.mkdir()
    (calls / "count").write_text("0")
    with open(tmp_path / "out", "w+") as out:
        proc = subprocess.Popen(["bash", str(tmp_path / "block.sh")], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "BASH_ENV": str(tmp_path / "curl.sh"), "DOC_CALLS": str(calls)},
                                start_new_session=True)
        try:
            status = proc.wait(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            status = None
        finally:
            try:  # what the block left running (a server it started in the background), and only that
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            proc.wait()
        out.seek(0)
        output = out.read()
    assert status == 0, f"{block.doc}:{block.line}: exit {status} (None: over {BLOCK_TIMEOUT} s)\n{output[-3000:]}"
    assert check(block, read_calls(calls)) == []
