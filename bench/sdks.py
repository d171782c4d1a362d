"""Issue 31's measure: real SDKs run unchanged against the mock. Each SDK is installed from PyPI into a venv of its
own under the cache (`~/.cache/mockserver/sdks/`, never the project's venv), and its driver (`bench/sdk_NAME.py`,
run by that venv's Python) makes the SDK's calls against each target: `mockserver serve --stateful` of the API's
published description (fetched into the cache, never into the checkout) and, where one can run here, the real
server. Prints per SDK and target: calls that work, read-backs that return what was written, whether the SDK's
getting-started example completes, then every failure with its reason and the issue's defect class.

    .venv/bin/python bench/sdks.py                       # both SDKs, each target once
    .venv/bin/python bench/sdks.py kindgi --runs 2       # the Kindgi SDK only, twice
    .venv/bin/python bench/sdks.py --fetch-only          # print where the official Kindgi description is"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from run import free_port  # bench/ is on the path: the script runs from it

BENCH = Path(__file__).resolve().parent
KINDGI_CLI = "kindgi-cli"
KINDGI_MEMBER = "kindgi_cli/_cli/node_modules/@kindgi/api/openapi.json"
DRIVER_TIMEOUT_S = 900.0  # an SDK's calls, each answered in well under a second when the target works
START_TIMEOUT_S = 120.0  # a 2 MB description, or Prefect's first database migration, on 2 busy cores

# the defect classes (issue 31, "What to build"), by a phrase of the failure's reason; the first match wins
DEFECT_CLASSES = [
    ("after a failed write", r"^(the (read|list) failed: )?after a failed write"),
    ("1 stored items", r"mock-contract-violation|would break the .* response schema"),
    # a read that answers other values than were written did not read the item stored (a generated answer): the
    # mock did not tie its operation to the collection written
    ("2 collections", r"not among \d+ listed|HTTP 404|NotFound|status 404|Not Found|wrote .*, read"),
    ("4 generated values", r"InvalidVersion|not a valid|Input should be|validation error|is not a '"),
    ("5 request validation", r"HTTP 4(00|22)|InvalidRequest|status 4(00|22)|Unprocessable"),
    ("7 errors and pages", r"recognizable error body|problem\+json|hasMore|nextCursor"),
    ("transport", r"ConnectError|ConnectionRefused|Timeout|NetworkError|RemoteProtocolError"),
]


class BenchError(Exception):
    """A download, an install or a server start that did not work: what, from where, and its own last words."""


@dataclass
class Outcome:
    """What one SDK did against one target: its records as the driver printed them."""

    sdk: str
    target: str
    records: list[dict[str, object]] = field(default_factory=list)
    error: str = ""  # the target or the driver could not run at all

    def count(self, kind: str) -> tuple[int, int]:
        mine = [record for record in self.records if record["kind"] == kind]
        return sum(1 for record in mine if record["ok"]), len(mine)

    def example(self) -> str:
        examples = [record for record in self.records if record["kind"] == "example"]
        return "yes" if examples and all(record["ok"] for record in examples) else "no" if examples else "-"

    def failures(self) -> list[dict[str, object]]:
        return [record for record in self.records if not record["ok"]]


def defect_class(reason: str) -> str:
    """The issue's defect class a failure's reason points to ("other" when none says)."""
    return next((name for name, pattern in DEFECT_CLASSES if re.search(pattern, reason)), "other")


def ratio(done: tuple[int, int]) -> str:
    ok, total = done
    return f"{ok}/{total} ({100 * ok // total} %)" if total else "-"


def table(outcomes: Sequence[Outcome]) -> str:
    """The summary (a Markdown table, to quote in docs/COMPATIBILITY.md), then a line per failure."""
    lines = ["| SDK | target | calls that work | read-backs that match | getting-started |",
             "| --- | --- | --- | --- | --- |"]
    for outcome in outcomes:
        lines.append(f"| {outcome.sdk} | {outcome.target} | {ratio(outcome.count('call'))} | "
                     f"{ratio(outcome.count('readback'))} | {outcome.example()} |" if not outcome.error else
                     f"| {outcome.sdk} | {outcome.target} | not run: {outcome.error} | - | - |")
    for outcome in outcomes:
        failed = outcome.failures()
        if failed:
            classes = Counter(defect_class(str(record["reason"])) for record in failed)
            lines.append(f"\n{outcome.sdk} against {outcome.target}: {len(failed)} failure(s) ("
                         + ", ".join(f"{name} {count}" for name, count in sorted(classes.items())) + ")")
        for record in failed:
            why = str(record["reason"])
            lines.append(f"  {record['kind']:<8} {record['name']}: [{defect_class(why)}] {why}")
    return "\n".join(lines)


def parse_records(text: str) -> list[dict[str, object]]:
    """The driver's JSON lines; anything else it printed (the SDK's warnings) is not a record."""
    return [json.loads(line) for line in text.splitlines() if line.startswith('{"sdk"')]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mockserver"


def pip(python: str, *args: str, index_url: str | None, what: str) -> None:
    """pip, failing fast and saying what could not be fetched from where."""
    index = ["--index-url", index_url] if index_url else []
    done = subprocess.run([python, "-m", "pip", *args, "-q", "--retries", "0", "--timeout", "20",
                           "--disable-pip-version-check", *index], capture_output=True, text=True)
    if done.returncode:
        where = index_url or os.environ.get("PIP_INDEX_URL") or "pip's configured index"
        said = [line.removeprefix("ERROR: ").strip() for line in done.stderr.splitlines()
                if line.strip() and "is ignored" not in line]
        raise BenchError(f"could not {what} with pip from {where} (no network, or not there): "
                         + (said[-1] if said else f"pip exited {done.returncode}"))


def fetch_kindgi(index_url: str | None = None) -> Path:
    """The official Kindgi description: `openapi.json` of `@kindgi/api` inside the published `kindgi-cli` wheel,
    downloaded once (`pip download --no-deps`) into the cache."""
    found = sorted((cache_dir() / "kindgi").glob("*/openapi.json"))
    if found:
        return found[-1]
    with tempfile.TemporaryDirectory() as folder:
        pip(sys.executable, "download", "--no-deps", "--only-binary", ":all:", "-d", folder, KINDGI_CLI,
            index_url=index_url, what=f"download {KINDGI_CLI}")
        wheel = next(Path(folder).glob("kindgi_cli-*.whl"))
        target = cache_dir() / "kindgi" / wheel.name.split("-")[1] / "openapi.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as archive:
            if KINDGI_MEMBER not in archive.namelist():
                raise BenchError(f"{wheel.name} holds no {KINDGI_MEMBER}: the wheel's layout changed")
            target.write_bytes(archive.read(KINDGI_MEMBER))
    return target


def sdk_python(name: str, requirement: str, index_url: str | None = None) -> str:
    """The Python of the SDK's own venv under the cache, made and filled once."""
    venv = cache_dir() / "sdks" / name
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if not stamp.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip(str(python), "install", requirement, index_url=index_url, what=f"install {requirement}")
        stamp.write_text(requirement)
    return str(python)


def version(python: str, package: str) -> str:
    """The version of a package installed in an SDK's venv."""
    return subprocess.run([python, "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                          capture_output=True, text=True, check=True).stdout.strip()


@contextmanager
def started(command: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[None]:
    """A server process, once it takes connections on `port`; stopped at the end."""
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(command, stdout=log, stderr=log, env={**os.environ, **(env or {})})
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    said = log.read().decode(errors="replace").strip().splitlines()
                    raise BenchError(f"{' '.join(command[:4])} did not start: "
                                     + (said[-1] if said else "no output")) from None
                time.sleep(0.2)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# each mock target: its label's words after `mock --stateful`, and its flags. `warn` answers a request that breaks
# the description as if it were valid: a description that says less than its server accepts (Prefect's filters,
# which its client sends as null where they are not nullable) is what `--request-validation warn` is for
MODES = (("", ()), (" --request-validation warn", ("--request-validation", "warn")))


def mock(spec: Path, port: int, flags: Sequence[str] = (), fixtures: Path | None = None) -> list[str]:
    given = ["--fixtures", str(fixtures)] if fixtures else []
    return [sys.executable, "-m", "mockserver", "serve", "--spec", str(spec), "--stateful", "--port", str(port),
            *given, *flags]


def drive(sdk: str, target: str, python: str, url: str, env: dict[str, str] | None = None) -> Outcome:
    """The SDK's driver against one URL, in the SDK's venv."""
    try:
        done = subprocess.run([python, str(BENCH / f"sdk_{sdk}.py"), url], capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, timeout=DRIVER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Outcome(sdk, target, error=f"the driver took over {DRIVER_TIMEOUT_S:.0f} s")
    records = parse_records(done.stdout)
    if done.returncode:
        said = done.stderr.strip().splitlines()
        why = f"the driver stopped: {said[-1] if said else f'exit {done.returncode}'}"
        if not records:
            return Outcome(sdk, target, error=why)
        records.append({"sdk": sdk, "kind": "call", "name": "(the rest)", "ok": False, "reason": why})
    return Outcome(sdk, target, records)


def kindgi(index_url: str | None) -> list[Outcome]:
    """The official SDK against the mock of the official description (no Kindgi server is published to run)."""
    spec = fetch_kindgi(index_url)
    python = sdk_python("kindgi", "kindgi", index_url)
    outcomes = []
    for label, flags in MODES:
        port = free_port()
        with started(mock(spec, port, flags), port):
            outcomes.append(drive("kindgi", f"mock --stateful{label} (kindgi-cli {spec.parent.name}, kindgi "
                                  f"{version(python, 'kindgi')})", python, f"http://127.0.0.1:{port}"))
    return outcomes


@dataclass
class PrefectServer:
    """Prefect's real server, started: its API's URL, the description it publishes, the environment its clients
    need and the Python of its venv."""

    url: str
    spec: Path
    fixtures: Path
    env: dict[str, str]
    python: str


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return bytes(answer.read())


def version_fixture(folder: Path, version: str) -> Path:
    """The mock's one fixture for Prefect: `GET /admin/version` answers the version its real server reported.
    The description leaves it open (a plain string; its `info.version` is FastAPI's default `0.1.0`), and the
    client refuses a server of another major version. Written at run time, into the cache: never a copy of
    Prefect's files in the checkout, never a version of our own."""
    folder.mkdir(parents=True, exist_ok=True)
    answer = {"operations": {"read_version_admin_version_get": {"respond": [{"status": 200, "body": version}]}}}
    (folder / "version.json").write_text(json.dumps(answer, indent=2))
    return folder


@contextmanager
def prefect_server(home: Path, index_url: str | None = None) -> Iterator[PrefectServer]:
    """Prefect's real server from the SDK's venv, its SQLite database and its description (`openapi.json`) in
    `home`, which outlives the server; the mock's fixtures (`version_fixture`) beside the description."""
    python = sdk_python("prefect", "prefect", index_url)
    env = {"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false",
           "PREFECT_LOGGING_LEVEL": "WARNING"}
    port = free_port()
    command = [python, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    with started(command, port, env):
        url = f"http://127.0.0.1:{port}/api"
        spec = cache_dir() / "prefect" / version(python, "prefect") / "openapi.json"  # kept, to serve again
        spec.parent.mkdir(parents=True, exist_ok=True)
        spec.write_bytes(fetch(f"{url}/openapi.json"))
        fixtures = version_fixture(spec.parent / "fixtures", json.loads(fetch(f"{url}/admin/version")))
        yield PrefectServer(url, spec, fixtures, env, python)


def prefect(index_url: str | None) -> list[Outcome]:
    """Prefect's own client against its real server (SQLite in a temp folder) and against the mock of the
    description that server publishes."""
    outcomes = []
    with tempfile.TemporaryDirectory() as home:
        with prefect_server(Path(home), index_url) as server:
            python, spec, fixtures, env = server.python, server.spec, server.fixtures, server.env
            outcomes.append(drive("prefect", f"real server ({version(python, 'prefect')})", python, server.url, env))
        base = json.loads(spec.read_text()).get("servers", [{}])[0].get("url", "")  # `/api`, as served
        for label, flags in MODES:
            port = free_port()
            with started(mock(spec, port, flags, fixtures), port):
                outcomes.append(drive("prefect", f"mock --stateful{label}", python, f"http://127.0.0.1:{port}{base}",
                                      env))
    return outcomes


SDKS = {"kindgi": kindgi, "prefect": prefect}


def run_sdk(sdk: str, index_url: str | None) -> list[Outcome]:
    """One SDK's outcomes; one that cannot be set up is a row that says why, and the other SDKs still run."""
    try:
        return SDKS[sdk](index_url)
    except BenchError as error:
        return [Outcome(sdk, "-", error=str(error))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sdk", nargs="*", help=f"the SDKs to run: {', '.join(SDKS)} (default: all)")
    parser.add_argument("--runs", type=int, default=1, help="run each SDK this many times (default 1)")
    parser.add_argument("--index-url", help="the package index to fetch from (default: pip's configured one)")
    parser.add_argument("--fetch-only", action="store_true",
                        help="fetch the official Kindgi description, print its path")
    args = parser.parse_args()
    unknown = sorted(set(args.sdk) - set(SDKS))
    if unknown:
        parser.error(f"no SDK named {', '.join(unknown)}: there are {', '.join(SDKS)}")
    if args.fetch_only:
        try:
            print(fetch_kindgi(args.index_url))
        except BenchError as error:
            print(f"sdks: {error}", file=sys.stderr)
            return 2
        return 0
    outcomes = [outcome for _ in range(args.runs) for sdk in args.sdk or SDKS
                for outcome in run_sdk(sdk, args.index_url)]
    print(table(outcomes))
    return 1 if any(outcome.error for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
