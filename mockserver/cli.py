"""`mockserver serve` and `mockserver validate`."""
from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .core.errors import LoadError
from .core.pipeline import Pipeline

if TYPE_CHECKING:
    from flask import Flask

ROOT = Path(__file__).resolve().parent.parent
# Python threads per worker: on 2 cores one thread answers fastest (GIL), but a scenario's latency holds a thread
# while it sleeps, so one slow answer would stall every other; 4 leaves room for a few and stays under the count
# Granian warns about (2 x cores + 1)
THREADS = 4
DEFAULT_SPEC = "spec/kindgi.yaml"
DEFAULT_FIXTURES = "fixtures"


def _default(relative: str) -> Path:
    """Relative to where the command runs if it is there, else the bundled one beside the package."""
    here = Path(relative)
    return here if here.exists() else ROOT / relative


def _add_sources(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spec", type=Path, default=None, help=f"OpenAPI description (default: {DEFAULT_SPEC})")
    parser.add_argument("--fixtures", type=Path, default=None,
                        help=f"fixtures folder (default: {DEFAULT_FIXTURES}/ with the default spec, none otherwise)")


def _sources(args: argparse.Namespace) -> tuple[Path, Path | None]:
    if args.spec is None:
        return _default(DEFAULT_SPEC), args.fixtures or _default(DEFAULT_FIXTURES)
    return args.spec, args.fixtures


def _warn(warnings: list) -> None:
    """Harmless oddities of a description, said once: how many, and the first few with their place."""
    if not warnings:
        return
    print(f"mockserver: {len(warnings)} warning(s):", file=sys.stderr)
    for warning in warnings[:20]:
        print(f"  {warning}", file=sys.stderr)
    if len(warnings) > 20:
        print(f"  … and {len(warnings) - 20} more (mockserver validate lists them all)", file=sys.stderr)


def _report(exc: LoadError) -> None:
    print(f"mockserver: {len(exc.problems)} problem(s) found:", file=sys.stderr)
    for problem in exc.problems:
        print(f"  {problem}", file=sys.stderr)


def _header(text: str) -> tuple[str, str]:
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not 'Name: value'")
    return name.strip(), value.strip()


def _basic(text: str) -> tuple[str, str]:
    user, colon, password = text.partition(":")
    if not colon or not user:
        raise argparse.ArgumentTypeError(f"{text!r} is not 'user:password'")
    return user, password


def _contract(args: argparse.Namespace, spec: Path, fixtures: Path | None) -> int:
    """Exit 0 when every check passed, 1 on failures, 2 when the description, fixtures or options are unusable."""
    import logging

    from . import contract

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # the in-process mock: no line per request
    options = contract.Options(spec, fixtures, url=args.url, token=args.token, basic=args.basic,
                               headers=dict(args.header),
                               max_examples=args.max_examples or contract.DEFAULT_MAX_EXAMPLES, seed=args.seed,
                               operations=args.operation)
    try:
        return contract.check(options, args.junit)
    except LoadError as exc:
        _report(exc)
    except contract.UnknownOperation as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
    return 2


def _coverage(args: argparse.Namespace) -> int:
    """Exit 0, 1 below --min, 2 when the mock's coverage cannot be read."""
    from .coverage_cli import run

    return run(args.url, args.control_token, args.junit, args.min)


def _add_serving(parser: argparse.ArgumentParser) -> None:
    """What `serve`, `proxy` and `record` share: sources, address, control API, logging, the server."""
    _add_sources(parser)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4010)
    parser.add_argument("--no-control", action="store_true", help="leave out the control API under /__mock/")
    parser.add_argument("--control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                        help="protect the control API with this token (env MOCKSERVER_CONTROL_TOKEN)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                        help="info logs one line per request (buffered); warning only problems")
    parser.add_argument("--threads", type=int, default=THREADS,
                        help="Python threads per worker running the mock; a scenario's latency holds one "
                             "(default %(default)s)")
    parser.add_argument("--runtime-threads", type=int, default=1,
                        help="Granian's Rust threads per worker doing the network I/O (default %(default)s)")
    parser.add_argument("--backpressure", type=int, metavar="N",
                        help="requests a worker takes into Python at once; more wait in Rust (default: 1024 / "
                             "workers)")


def _add_proxy_options(parser: argparse.ArgumentParser) -> None:
    _add_serving(parser)
    parser.add_argument("--target", required=True,
                        help="the real deployment's root URL; each request's path is appended to it unchanged")
    parser.add_argument("--fallback", action="store_true",
                        help="when the target cannot answer (refused, timeout, 501), the mock answers from its "
                             "fixtures")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the target (default 10)")


def _run(factory: Callable[[], "Flask"], args: argparse.Namespace, workers: int) -> int:
    """Serve on Granian until stopped; each worker builds its app with `factory` (web/serving.py)."""
    from .web.serving import Settings, serve

    serve(factory, Settings(args.host, args.port, workers, args.threads, args.runtime_threads, args.backpressure),
          args.log_level)
    return 0


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve() == folder.resolve() or folder.resolve() in path.resolve().parents


def _proxy(args: argparse.Namespace, spec: Path, fixtures: Path | None) -> int:
    """Serve until stopped (exit 0); 2 when the description, the fixtures or the options are unusable."""
    from .core.recorder import Recorder
    from .web.app import create_app, load_pipeline
    from .web.proxy import Proxy
    from .web.serving import configure_logging

    recorder = None
    if args.command == "record":
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
        recorder = Recorder(args.out, rejected, args.redact)
    try:
        proxy = Proxy(args.target, fallback=args.fallback, timeout=args.timeout, recorder=recorder)
    except ValueError as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return 2
    configure_logging(args.log_level)
    options = {"cursor_secret": os.environ.get("MOCKSERVER_CURSOR_SECRET")}
    try:
        loaded = load_pipeline(spec, fixtures, **options)
    except LoadError as exc:
        _report(exc)
        return 2
    what = f"recording into {args.out}" if recorder else "proxying"
    print(f"mockserver: {what}: {proxy.target} on http://{args.host}:{args.port}, checked against {spec}"
          + (" (fallback: the mock)" if args.fallback else ""), file=sys.stderr, flush=True)
    return _run(partial(create_app, spec, fixtures, control=not args.no_control, control_token=args.control_token,
                        proxy=proxy, loaded=loaded, **options), args, 1)  # one process: the drift counts are whole


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mockserver", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve a mock of the description")
    _add_serving(serve)
    serve.add_argument("--seed", type=int, default=0, help="seed of generated data (same seed, same data)")
    serve.add_argument("--strict-auth", action="store_true", help="answer 401 to tokens the fixtures do not declare")
    serve.add_argument("--no-response-validation", action="store_true",
                       help="do not check answers against the description (for load tests)")
    serve.add_argument("--workers", type=int, default=1,
                       help="worker processes, each with its own journal and scenarios (default %(default)s)")
    serve.add_argument("--watch", action="store_true",
                       help="reload the description and fixtures when a file changes (an invalid edit keeps the last "
                            "good state)")

    validate = commands.add_parser("validate", help="check the description and fixtures; list every problem")
    _add_sources(validate)

    contract = commands.add_parser("contract", help="check a server (or the mock, in-process) against the description")
    _add_sources(contract)
    contract.add_argument("--url", help="base URL of the server to check, with the description's base path "
                                        "(default: the mock, in-process; with strict auth when the fixtures declare a "
                                        "token)")
    contract.add_argument("--token", help="token for the operations that take a bearer token, OAuth 2, OpenID Connect "
                                          "or an API key, sent where each one's security scheme wants it (default "
                                          "in-process: the first usable token of the fixtures)")
    contract.add_argument("--basic", type=_basic, metavar="USER:PASSWORD",
                          help="HTTP basic credentials for the operations that take them (default in-process: the "
                               "token as the user)")
    contract.add_argument("--header", action="append", default=[], type=_header, metavar="'NAME: VALUE'",
                          help="another header sent with every call (repeatable)")
    contract.add_argument("--max-examples", type=int, default=None, help="generated examples per operation and phase "
                                                                         "(default 100)")
    contract.add_argument("--seed", type=int, help="repeat a run: the same seed sends the same requests")
    contract.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report")
    contract.add_argument("--operation", nargs="+", action="extend", default=[], metavar="ID",
                          help="check only these operations, by operationId or as 'GET /path'")

    coverage = commands.add_parser("coverage", help="what a client's calls exercised of the description, read from "
                                                    "a running mock")
    coverage.add_argument("--url", default="http://127.0.0.1:4010", help="the running mock (default %(default)s)")
    coverage.add_argument("--control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                          help="the mock's control token, if it has one (env MOCKSERVER_CONTROL_TOKEN)")
    coverage.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report: a test case per "
                                                                     "status, query parameter and enum value")
    coverage.add_argument("--min", type=float, metavar="PERCENT", help="exit 1 below this total percentage")

    proxy = commands.add_parser("proxy", help="forward to a real deployment; check every exchange against the "
                                              "description (drift at /__mock/drift)")
    _add_proxy_options(proxy)
    record = commands.add_parser("record", help="like proxy, and save the answers as fixtures")
    _add_proxy_options(record)
    record.add_argument("--out", type=Path, required=True, help="folder of the recorded fixtures (merged if it exists)")
    record.add_argument("--rejected", type=Path, help="folder for answers that break the description "
                                                      "(default: OUT-rejected beside OUT)")
    record.add_argument("--redact", nargs="+", action="extend", default=[], metavar="FIELD",
                        help="field names or JSON pointers into answers (`*` for any key or index) whose values are "
                             "replaced; Authorization, cookies and API keys always are")

    args = parser.parse_args(argv)
    if args.command == "coverage":
        return _coverage(args)
    spec, fixtures = _sources(args)
    if args.command in ("proxy", "record"):
        return _proxy(args, spec, fixtures)
    if args.command == "contract":
        return _contract(args, spec, fixtures)
    if args.command == "validate":
        try:
            pipeline = Pipeline.load(spec, fixtures)
        except LoadError as exc:
            _report(exc)
            return 1
        _warn(pipeline.warnings)
        count = sum(len(c.items) for c in pipeline.fixtures.collections.values())
        print(f"{spec}: {len(pipeline.spec.operations)} operations; {fixtures}: {len(pipeline.fixtures.files)} "
              f"files, {len(pipeline.fixtures.collections)} collections, {count} items. All is well.")
        return 0
    from .web.app import create_app, load_pipeline
    from .web.serving import configure_logging

    configure_logging(args.log_level)
    options = {"seed": args.seed, "strict_auth": args.strict_auth,
               "validate_responses": not args.no_response_validation,
               "cursor_secret": os.environ.get("MOCKSERVER_CURSOR_SECRET")}
    try:
        loaded = load_pipeline(spec, fixtures, **options)  # once, before the workers: a bad description exits 2
    except LoadError as exc:
        _report(exc)
        return 2
    _warn(loaded.warnings)
    print(f"mockserver: serving {spec} on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    return _run(partial(create_app, spec, fixtures, control=not args.no_control, control_token=args.control_token,
                        watch=args.watch, loaded=loaded, **options), args, args.workers)
