"""`mockserver serve`: serve a mock of the description on Granian until stopped."""
from __future__ import annotations

import argparse
import sys
from functools import partial

from ..base.errors import LoadError
from ..state import StateError
from .flags import (
    add_options,
    add_serving,
    cursor_secret,
    options_from,
    report,
    serve_until_stopped,
    serving_sources,
    warn,
)

HELP = "serve a mock of the description"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_serving(parser)
    add_options(parser, "seed", "dynamic", "strict_auth", "accept_tokens", "validate_responses")
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes (default 1); more than one needs a shared --state")
    add_options(parser, "state", "state_timeout", "session_ttl", "max_items", "max_depth")
    parser.add_argument("--watch", action="store_true",
                        help="reload the description and fixtures when a file changes (an invalid edit keeps the "
                             "last good state)")
    add_options(parser, "stateful")


def run(args: argparse.Namespace) -> int:
    """Serve until stopped (exit 0); 1 for an unusable address; 2 when the description, the fixtures, the state
    store or the options are unusable."""
    from ..web.app import create_app, load_pipeline
    from ..web.serving import configure_logging

    found = serving_sources(args)
    if isinstance(found, int):
        return found
    spec, fixtures = found
    if args.workers > 1 and args.state is None:
        print(f"mockserver: --workers {args.workers} needs a shared state store, or each worker keeps its own "
              f"scenarios, journal and coverage: add --state redis://HOST:6379/0 (or --state memory to accept that "
              f"split)", file=sys.stderr)
        return 2
    configure_logging(args.log_level)
    options = options_from(args, cursor_secret=cursor_secret(args.state))
    try:
        loaded = load_pipeline(spec, fixtures, options)  # once, before the workers: a bad description exits 2
    except LoadError as exc:
        report(exc)
        return 2
    except StateError as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return 2
    warn(loaded.warnings)
    if args.workers > 1 and not loaded.store.shared:
        print(f"mockserver: warning: --state memory with --workers {args.workers}: each worker keeps its own "
              f"scenarios, journal and coverage", file=sys.stderr)
    state = loaded.store.describe()
    origin = f"http://{args.host}:{args.port}"
    pages = "" if args.no_control else f" · dashboard {origin}/__mock/ · docs {origin}/__mock/docs"
    api = f'"{loaded.spec.title}" {loaded.spec.api_version}'.rstrip()
    print(f"mockserver: serving {api} ({spec}) on {origin}{pages}"
          + (f" · state shared in {state['url']}" if state["shared"] else ""), file=sys.stderr, flush=True)
    return serve_until_stopped(partial(create_app, spec, fixtures, control=not args.no_control,
                                       control_token=args.control_token, control_origins=tuple(args.control_origin),
                                       watch=args.watch, loaded=loaded), args, args.workers)
