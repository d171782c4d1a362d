"""Issue 17's measure: Apache Airflow's REST API description (FastAPI's, shipped in the `apache-airflow-core` wheel as
`airflow/api_fastapi/core_api/openapi/v2-rest-api-generated.yaml`) served with no fixtures, checked by
`mockserver contract` against the mock itself. The description is fetched with pip (`pip download --no-deps`) into
a cache folder, never into the checkout (its license and size). Prints the run's figures and every failure, each
marked as the description's (see docs/COMPATIBILITY.md) or the mock's; exits 1 while the mock causes any.

    .venv/bin/python bench/airflow.py                      # fetch 3.3.* if needed, run with 5 examples, seed 1
    .venv/bin/python bench/airflow.py --fetch-only         # print where the description is
    .venv/bin/python bench/airflow.py --max-examples 10 --seed 3 --junit /tmp/airflow.xml"""
from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from mockserver.contract import Finding, RunOptions, junit, run, text

VERSION = "3.3.*"
MEMBER = "airflow/api_fastapi/core_api/openapi/v2-rest-api-generated.yaml"
SEED = 1
MAX_EXAMPLES = 5

# failures the description causes (or Schemathesis' reading of it), by check, title and a phrase of what was
# expected: why (docs/COMPATIBILITY.md says more)
DESCRIPTION_CAUSED = [
    ("negative_data_rejection", "Schema-violating request accepted", "parameter `update_mask` in query",
     "`update_mask` is `anyOf: [array of strings, null]` in the query: a value Schemathesis makes as not an array "
     "of strings (`true`, a number, a lone string) reads as one once it is query text (Airflow accepts it too)"),
]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mockserver" / "airflow"


def cached(version: str = VERSION) -> Path | None:
    """The description fetched before (the newest version in the cache that `version` names), or None."""
    prefix = version.rstrip("*").rstrip(".")
    found = sorted(cache_dir().glob(f"{prefix}*/v2-rest-api-generated.yaml"))
    return found[-1] if found else None


def fetch(version: str = VERSION) -> Path:
    """`pip download apache-airflow-core==VERSION --no-deps`, then the description out of the wheel."""
    known = cached(version)
    if known is not None:
        return known
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", folder,
                        f"apache-airflow-core=={version}"], check=True)
        wheel = next(Path(folder).glob("apache_airflow_core-*.whl"))
        got = wheel.name.split("-")[1]
        target = cache_dir() / got / "v2-rest-api-generated.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as archive:
            target.write_bytes(archive.read(MEMBER))
    return target


def cause(finding: Finding) -> str | None:
    """Why the description, not the mock, causes a failure; None when it is the mock's."""
    return next((why for check, title, phrase, why in DESCRIPTION_CAUSED
                 if (finding.check, finding.title) == (check, title) and phrase in finding.expected), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default=VERSION, help="apache-airflow-core version (default %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--max-examples", type=int, default=MAX_EXAMPLES)
    parser.add_argument("--junit", type=Path, metavar="FILE")
    parser.add_argument("--fetch-only", action="store_true", help="fetch the description, print its path")
    args = parser.parse_args()
    spec = fetch(args.version)
    if args.fetch_only:
        print(spec)
        return 0
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)  # a line per request otherwise
    logging.getLogger("mockserver").setLevel(logging.CRITICAL)  # each contract violation is a finding already
    started = time.monotonic()
    result = run(RunOptions(spec, None, seed=args.seed, max_examples=args.max_examples))
    wall = time.monotonic() - started
    print(text(result))
    if args.junit:
        junit(result, args.junit)
    findings = result.findings()
    mock_caused = [f for f in findings if cause(f) is None]
    print(f"\nAirflow {spec.parent.name}: {len(result.operations)} operations, {result.requests} requests, "
          f"{wall:.0f} s wall; failures by check: "
          + (", ".join(f"{check} {count}" for check, count in sorted(result.failures().items())) or "none"))
    for finding in findings:
        print(f"  {'description' if cause(finding) else 'MOCK':<11} {finding.operation} · {finding.check}: "
              f"{finding.title}" + (f" ({cause(finding)})" if cause(finding) else ""))
    print(f"{len(mock_caused)} failure(s) the mock causes, {len(findings) - len(mock_caused)} the description's; "
          f"{len(result.errors)} error(s)")
    return 1 if mock_caused or result.errors else 0


if __name__ == "__main__":
    sys.exit(main())
