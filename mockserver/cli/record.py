"""`mockserver record`: like proxy, and save the answers as fixtures."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base.errors import LoadError
from . import proxy
from .flags import report, serving_sources

HELP = "like proxy, and save the answers as fixtures"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    proxy.add_forwarding(parser)
    parser.set_defaults(workers=1, state=None)  # one process writes the recorded files
    parser.add_argument("--out", type=Path, required=True, help="folder of the recorded fixtures (merged if it "
                                                                "exists)")
    parser.add_argument("--rejected", type=Path, help="folder for answers that break the description "
                                                      "(default: OUT-rejected beside OUT)")
    parser.add_argument("--redact", nargs="+", action="extend", default=[], metavar="FIELD",
                        help="field names or JSON pointers into answers (`*` for any key or index) whose values are "
                             "replaced; Authorization, cookies and API keys always are")


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve() == folder.resolve() or folder.resolve() in path.resolve().parents


def run(args: argparse.Namespace) -> int:
    """Serve until stopped (exit 0); 1 for an unusable address; 2 when the description, the fixtures, the folders
    or the options are unusable."""
    from ..web.recording import Recorder

    found = serving_sources(args)
    if isinstance(found, int):
        return found
    spec, fixtures = found
    rejected = args.rejected or args.out.resolve().with_name(args.out.resolve().name + "-rejected")
    if fixtures is not None and fixtures.is_dir() and _inside(args.out, fixtures):
        print(f"mockserver: --out {args.out} lies inside the fixtures folder {fixtures}: serving {fixtures} would "
              f"read every recorded collection and operation twice. Record into a folder of its own (e.g. --out "
              f"recorded/) and serve it with --fixtures.", file=sys.stderr)
        return 2
    if _inside(rejected, args.out):
        print(f"mockserver: --rejected {rejected} must lie outside --out {args.out}: what it keeps is not fixtures",
              file=sys.stderr)
        return 2
    try:
        recorder = Recorder(args.out, rejected, args.redact)
    except LoadError as exc:
        report(exc)
        return 2
    return proxy.serve_proxy(args, spec, fixtures, recorder)
