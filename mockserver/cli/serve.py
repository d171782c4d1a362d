"""`mockserver serve`: serve a mock of the description on Granian until stopped."""
from __future__ import annotations

import argparse
import sys
from functools import partial

from . import flags
from .flags import (
    add_options,
    add_serving,
    add_workers,
    load_served,
    serve_until_stopped,
    serving_sources,
    unshared_workers,
    warn,
    warn_unshared,
)

HELP = "serve a mock of the description"
SPLIT = "scenarios, journal and coverage"  # what each worker would keep for itself without a shared store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_serving(parser)
    add_options(parser, "seed", "dynamic", "strict_auth", "accept_tokens", "request_validation",
                "violations_header", "validate_responses")
    add_workers(parser)
    add_options(parser, "state", "state_timeout", "session_ttl", "max_items", "max_depth")
    parser.add_argument("--watch", action="store_true",
                        help="reload the description and fixtures when a file changes (an invalid edit keeps the "
                             "last good state)")
    add_options(parser, "stateful", "callback_retries", "callback_timeout", "callback_allow")


def run(args: argparse.Namespace) -> int:
    """Serve until stopped (exit 0); 1 for an unusable address; 2 when the description, the fixtures, the state
    store or the options are unusable."""
    from ..web.app import create_app
    from ..web.serving import configure_logging

    found = serving_sources(args)
    if isinstance(found, int):
        return found
    spec, fixtures = found
    if unshared_workers(args, SPLIT):
        return 2
    configure_logging(args.log_level)
    loaded = load_served(args, spec, fixtures)  # once, before the workers: a bad description exits 2
    if loaded is None:
        return 2
    warn(loaded.warnings)
    warn_unshared(args, loaded.store.shared, SPLIT)
    state = loaded.store.describe()
    origin = flags.origin(args)
    pages = "" if args.no_control else (f" · dashboard {origin}/__mock/ · docs {origin}/__mock/docs"
                                        f" · description {origin}/__mock/description")
    api = f'"{loaded.spec.title}" {loaded.spec.api_version}'.rstrip()
    print(f"mockserver: serving {api} ({spec}) on {origin}{pages}"
          + (f" · state shared in {state['url']}" if state["shared"] else ""), file=sys.stderr, flush=True)
    flags.say_tls(args)
    return serve_until_stopped(partial(create_app, spec, fixtures, control=not args.no_control,
                                       control_token=args.control_token, control_origins=tuple(args.control_origin),
                                       metrics=args.metrics, otel=args.otel,
                                       watch=args.watch, loaded=loaded), args, args.workers)
