"""`mockserver proxy`: forward to a real deployment and check every exchange against the description (drift at
/__mock/drift); `record` serves through it too."""
from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from . import flags

if TYPE_CHECKING:
    from ..web.recording import Recorder

HELP = "forward to a real deployment; check every exchange against the description (drift at /__mock/drift)"
SPLIT = "journal, coverage and drift counts"  # what each worker would keep for itself without a shared store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_forwarding(parser)
    flags.add_workers(parser)
    flags.add_options(parser, "state", "state_timeout")


def add_forwarding(parser: argparse.ArgumentParser) -> None:
    """What `proxy` and `record` share."""
    flags.add_serving(parser)
    parser.add_argument("--target", required=True,
                        help="the real deployment's root URL; each request's path is appended to it unchanged")
    parser.add_argument("--fallback", action="store_true",
                        help="when the target cannot answer (refused, timeout, 501), the mock answers from its "
                             "fixtures")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the target (default 10)")


def run(args: argparse.Namespace) -> int:
    """Serve until stopped (exit 0); 1 for an unusable address; 2 when the description, the fixtures, the state
    store or the options are unusable."""
    found = flags.serving_sources(args)
    if isinstance(found, int):
        return found
    return 2 if flags.unshared_workers(args, SPLIT) else serve_proxy(args, *found)


def serve_proxy(args: argparse.Namespace, spec: Path, fixtures: Path | None, recorder: Recorder | None = None) -> int:
    """Forward (and with a `recorder`, record) until stopped; 2 when the target, description or fixtures are
    unusable."""
    from ..web.app import create_app
    from ..web.proxy import Proxy
    from ..web.serving import configure_logging

    try:
        proxy = Proxy(args.target, fallback=args.fallback, timeout=args.timeout, recorder=recorder)
    except ValueError as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return 2
    configure_logging(args.log_level)
    loaded = flags.load_served(args, spec, fixtures)
    if loaded is None:
        return 2
    flags.warn_unshared(args, loaded.store.shared, SPLIT)
    what = f"recording into {args.out}" if recorder else "proxying"
    print(f"mockserver: {what}: {proxy.target} on {flags.origin(args)}, checked against {spec}"
          + (" (fallback: the mock)" if args.fallback else ""), file=sys.stderr, flush=True)
    flags.say_tls(args)
    return flags.serve_until_stopped(partial(create_app, spec, fixtures, control=not args.no_control,
                                       control_token=args.control_token, control_origins=tuple(args.control_origin),
                                       metrics=args.metrics, otel=args.otel,
                                       proxy=proxy, loaded=loaded),
                               args, args.workers)
