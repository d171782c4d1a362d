"""`mockserver serve`: serve a mock of the description (or of several APIs, `--api` or `mockserver.yaml`) on
Granian until stopped."""
from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import LoadError
from . import flags
from .config import CONFIG_FILE, read_config
from .flags import (
    add_options,
    add_serving,
    add_workers,
    cursor_secret,
    load_served,
    options_from,
    report,
    serve_until_stopped,
    serving_sources,
    unservable,
    unshared_workers,
    warn,
    warn_unshared,
)

if TYPE_CHECKING:
    from ..web.mounts import Api

HELP = "serve a mock of the description"
SPLIT = "scenarios, journal and coverage"  # what each worker would keep for itself without a shared store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_serving(parser)
    parser.add_argument("--api", action="append", default=[], type=_api, metavar="NAME=SPEC[,fixtures=DIR]"
                        "[,prefix=/x][,host=h.example]",
                        help="one of several APIs on this mock, instead of --spec (repeatable): its description, "
                             "its fixtures, and where it is mounted, a path prefix and/or a Host; one with neither "
                             "answers every other request")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help=f"the APIs (apis:) and serve's flags from this YAML file; the command line wins "
                             f"(default: {CONFIG_FILE} in the working folder when present)")
    add_options(parser, "seed", "dynamic", "strict_auth", "accept_tokens", "request_validation",
                "violations_header", "validate_responses")
    add_workers(parser)
    add_options(parser, "state", "state_timeout", "session_ttl", "max_items", "max_depth")
    parser.add_argument("--watch", action="store_true",
                        help="reload the description and fixtures when a file changes (an invalid edit keeps the "
                             "last good state)")
    add_options(parser, "stateful", "callback_retries", "callback_timeout", "callback_allow")
    parser.set_defaults(configured=None)  # the config file read (`configure`), with its APIs


def configure(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int | None:
    """The config file's flags as `parser`'s defaults, so that a flag on the command line wins even when it gives
    the default value (`--port 4010` over the file's `port: 5000`); None when there is no file or it is read, 2
    after saying why it cannot be."""
    path = args.config or (Path(CONFIG_FILE) if Path(CONFIG_FILE).is_file() else None)
    if path is None:
        return None
    try:
        config = read_config(path, parser._actions)
    except LoadError as exc:
        report(exc, str(path))
        return 2
    parser.set_defaults(configured=config, **config.flags)
    return None


def run(args: argparse.Namespace) -> int:
    """Serve until stopped (exit 0); 1 for an unusable address; 2 when the description, the fixtures, the state
    store, the options or the config file are unusable."""
    from ..web.app import create_app
    from ..web.serving import configure_logging

    apis = _apis(args)
    if isinstance(apis, int):
        return apis
    if apis:
        return _serve_apis(args, apis)
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


def _api(text: str) -> Api:
    """`--api`'s value, or argparse's error saying what is wrong with it."""
    from ..web.mounts import parse_api

    try:
        return parse_api(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _apis(args: argparse.Namespace) -> list[Api] | int:
    """The APIs to serve (none: one description, as --spec says): --api's, else the config file's (`configure`);
    or, after saying why, exit code 2."""
    from ..web.mounts import check_mounts

    configured: list[Api] = args.configured.apis if args.configured is not None else []
    if args.api and (args.spec or args.fixtures):
        print("mockserver: give --spec (with --fixtures) or --api NAME=SPEC,fixtures=DIR, not both", file=sys.stderr)
        return 2
    if args.spec is not None and configured:
        print(f"mockserver: --spec given: the apis of {args.configured.path} are not served", file=sys.stderr)
        return []
    if not args.api:
        return configured  # checked with the file
    try:
        check_mounts(args.api)
    except ValueError as exc:
        print(f"mockserver: --api: {exc}", file=sys.stderr)
        return 2
    return list(args.api)


def _serve_apis(args: argparse.Namespace, apis: list[Api]) -> int:
    """Serve several APIs (web/mounts.py), each loaded before the workers start; every API that cannot be loaded
    is named with its problems (exit 2)."""
    from ..state import StateError
    from ..web.app import ApisFailed, create_apps, load_apis
    from ..web.serving import configure_logging

    refused = unservable(args)
    if refused is not None:
        return refused
    if unshared_workers(args, SPLIT):
        return 2
    configure_logging(args.log_level)
    try:
        loaded = load_apis(apis, options_from(args, cursor_secret=cursor_secret(args.state),
                                              dashboard=not args.no_control))
    except ApisFailed as exc:
        for api in apis:
            failure = exc.failures.get(api.name)
            if isinstance(failure, LoadError):
                report(failure, f"API {api.name!r} ({api.spec})")
            elif isinstance(failure, StateError):
                print(f"mockserver: API {api.name!r}: {failure}", file=sys.stderr)
        return 2
    for name, pipeline in loaded.items():
        warn(pipeline.warnings, f"API {name!r}")
    first = loaded[apis[0].name]
    warn_unshared(args, first.store.shared, SPLIT)
    origin = flags.origin(args)
    for api in apis:
        spec = loaded[api.name].spec
        print(f'mockserver: serving "{spec.title}" {spec.api_version} ({api.spec}) as {api.name} at {api.where()}',
              file=sys.stderr)
    state = first.store.describe()
    pages = "" if args.no_control else (f" · dashboard {origin}/__mock/?api={apis[0].name} · docs "
                                        f"{origin}/__mock/docs?api={apis[0].name}")
    print(f"mockserver: {len(apis)} APIs on {origin}{pages}" + (
        f" · state shared in {state['url']}" if state["shared"] else ""), file=sys.stderr, flush=True)
    flags.say_tls(args)
    return serve_until_stopped(partial(create_apps, apis, control=not args.no_control,
                                       control_token=args.control_token, control_origins=tuple(args.control_origin),
                                       metrics=args.metrics, otel=args.otel,
                                       watch=args.watch, loaded=loaded), args, args.workers)
