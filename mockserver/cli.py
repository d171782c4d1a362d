"""`mockserver serve` and `mockserver validate`."""
from __future__ import annotations

import argparse
import os
import secrets
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .base.errors import LoadError
from .base.json_values import MAX_DEPTH
from .cache import default_cache
from .pipeline.pipeline import Options, Pipeline
from .pipeline.stateful import ITEMS_LIMIT
from .spec.documents import use_parse_cache
from .state import SESSION_TTL, STATE_TIMEOUT, StateError

if TYPE_CHECKING:
    from flask import Flask

# Python threads per worker for what may block for long (web/rsgi.py): the control API (a change waits for every
# process to take it) and the answers behind `mockserver proxy`; the API's own answers are made on the event loop
# and a scenario's latency holds no thread. 2: one call waiting leaves another answering
THREADS = 2
# a request's body is read by the mock (web/rsgi.py): the whole of it within BODY_TIMEOUT_S (else 408), at most
# MAX_BODIES at once per worker (else 503 mock-busy); each may hold up to --max-body bytes while it arrives
BODY_TIMEOUT_S = 10.0
MAX_BODIES = 1024
CONVENTIONAL_SPECS = ("openapi.yaml", "openapi.yml", "openapi.json")  # looked for in the working folder
CONVENTIONAL_FIXTURES = "fixtures"


class NoDescription(Exception):
    """No --spec, no MOCKSERVER_SPEC and no conventional file where the command runs."""


def _add_allow_outside(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-ref-outside", dest="allow_outside", action="append", default=[], type=_folder,
                        metavar="DIR", help="a folder outside the description's (and the fixtures') own that its "
                                            "$refs and files may read, shared on purpose (repeatable; default: "
                                            "none, every file must lie in its own folder)")


def _folder(text: str) -> Path:
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a folder")
    return Path(text)


def _add_sources(parser: argparse.ArgumentParser) -> None:
    _add_allow_outside(parser)
    parser.add_argument("--spec", type=Path, default=None,
                        help="OpenAPI description (default: MOCKSERVER_SPEC, else openapi.yaml, .yml or .json here)")
    parser.add_argument("--fixtures", type=Path, default=None,
                        help="fixtures folder (default: MOCKSERVER_FIXTURES with MOCKSERVER_SPEC, fixtures/ here with "
                             "the conventional description; none otherwise)")


def _sources(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """--spec (with --fixtures, or none); else MOCKSERVER_SPEC (with --fixtures or MOCKSERVER_FIXTURES); else
    openapi.yaml|yml|json in the working folder, with --fixtures or fixtures/ beside it when present."""
    if args.spec is not None:
        return args.spec, args.fixtures
    if os.environ.get("MOCKSERVER_SPEC"):
        paired = os.environ.get("MOCKSERVER_FIXTURES")
        return Path(os.environ["MOCKSERVER_SPEC"]), args.fixtures or (Path(paired) if paired else None)
    found = next((Path(name) for name in CONVENTIONAL_SPECS if Path(name).is_file()), None)
    if found is None:
        raise NoDescription(f"no description to serve: give --spec FILE (or MOCKSERVER_SPEC), or put "
                            f"{', '.join(CONVENTIONAL_SPECS[:-1])} or {CONVENTIONAL_SPECS[-1]} in {Path.cwd()}")
    conventional = Path(CONVENTIONAL_FIXTURES)
    return found, args.fixtures or (conventional if conventional.is_dir() else None)


def _cursor_secret(state: str | None) -> str | None:
    """MOCKSERVER_CURSOR_SECRET wins; a shared store keeps its own (None here); the memory store's is kept in a
    file of the user's state folder, so a browser tab's "load more" still works after a restart."""
    given = os.environ.get("MOCKSERVER_CURSOR_SECRET")
    if given or state not in (None, "", "memory"):
        return given or None
    path = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "mockserver" / "cursor-secret"
    try:
        return path.read_text().strip() or None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another mock made it just now
        return path.read_text().strip() or None
    except OSError:
        return None  # not writable here: a secret of this run only
    with os.fdopen(descriptor, "w") as out:
        secret = secrets.token_hex(32)
        out.write(secret)
    return secret


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


def _api_key(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not 'NAME=VALUE'")
    return name, value


def _names(text: str) -> list[str]:
    """A comma-separated list (`--checks a,b`, `--phases examples,fuzzing`)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names nothing")
    return names


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage from 0 to 100")
    return value


def _token(args: argparse.Namespace) -> str | None:
    """The token from --token, --token-env or --token-file (the latter two keep it out of `ps`)."""
    if args.token_env:
        if not os.environ.get(args.token_env):
            raise ValueError(f"--token-env {args.token_env}: no such environment variable, or it is empty")
        return os.environ[args.token_env]
    if args.token_file:
        try:
            token = args.token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ValueError(f"--token-file {args.token_file}: {exc.strerror}") from None
        if not token:
            raise ValueError(f"--token-file {args.token_file} is empty")
        return token
    return args.token


def _contract(args: argparse.Namespace, spec: Path, fixtures: Path | None) -> int:
    """Exit 0 when every check passed, 1 on failures, 2 when the description, fixtures or options are unusable."""
    import logging

    try:
        from . import contract
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("schemathesis"):
            raise
        print("mockserver: `mockserver contract` needs Schemathesis: pip install 'mockserver[contract]'",
              file=sys.stderr)
        return 2

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # the in-process mock: no line per request
    try:
        token = _token(args)
        checks, exclude_checks, phases = _contract_choices(args)
    except ValueError as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return 2
    options = contract.Options(spec, fixtures, url=args.url, token=token, basic=args.basic, bearer=args.auth_bearer,
                               api_keys=dict(args.api_key),
                               headers=dict(args.header),
                               max_examples=args.max_examples or contract.DEFAULT_MAX_EXAMPLES, seed=args.seed,
                               operations=args.operation, allow_untested=args.allow_untested,
                               min_responses=args.min_responses, force=not args.no_force,
                               exclude=args.exclude_operation, read_only=args.read_only, stateful=args.stateful,
                               request_timeout=args.request_timeout, data=args.data, discover=not args.no_discover,
                               mode=args.mode, checks=checks, exclude_checks=exclude_checks, phases=phases,
                               coverage_cap=args.coverage_cap, credentials=not args.no_auth,
                               allow_outside=tuple(args.allow_outside))
    try:
        return contract.check(options, args.junit, json_path=args.report_json)
    except LoadError as exc:
        _report(exc)
    except (contract.UnknownOperation, contract.DataError) as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
    return 2


def _contract_choices(args: argparse.Namespace) -> tuple[list[str], list[str], list[str]]:
    """--checks, --exclude-checks and --phases, each name known (ValueError otherwise), and --no-auth alone."""
    from schemathesis.checks import CHECKS, load_all_checks

    from .contract import PHASES

    if args.no_auth and any((args.token, args.token_env, args.token_file, args.auth_bearer, args.api_key, args.basic)):
        raise ValueError("--no-auth sends no credentials: leave out --token, --auth-bearer, --api-key and --basic")
    load_all_checks()
    known = {*CHECKS.get_all_names(), "max_response_time"}
    checks = [name for names in args.checks for name in names] or ["all"]
    excluded = [name for names in args.exclude_checks for name in names]
    unknown = [name for name in [*checks, *excluded] if name not in known and name != "all"]
    if unknown:
        raise ValueError(f"no check {', '.join(unknown)}; there are: {', '.join(sorted(known))}")
    phases = [name for names in args.phases for name in names] or list(PHASES)
    if not set(phases) <= set(PHASES):
        raise ValueError(f"no phase {', '.join(p for p in phases if p not in PHASES)}; there are: {', '.join(PHASES)}")
    return checks, excluded, list(dict.fromkeys(phases))


def _coverage(args: argparse.Namespace) -> int:
    """Exit 0, 1 below --min, 2 when the mock's coverage cannot be read."""
    from .coverage_cli import run

    return run(args.url, args.control_token, args.junit, args.min, args.session)


def _add_serving(parser: argparse.ArgumentParser) -> None:
    """What `serve`, `proxy` and `record` share: sources, address, control API, logging, the server."""
    _add_sources(parser)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4010)
    parser.add_argument("--no-control", action="store_true", help="leave out the control API under /__mock/")
    parser.add_argument("--control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                        help="protect the control API with this token (env MOCKSERVER_CONTROL_TOKEN); needed to "
                             "listen on an address other than loopback, unless --open-control")
    parser.add_argument("--control-origin", action="append", default=[], metavar="ORIGIN",
                        help="a web page origin that may use the control API besides the mock's own, e.g. "
                             "http://localhost:6006 (repeatable; '*': any, only with --control-token)")
    parser.add_argument("--open-control", action="store_true",
                        help="serve the control API without a token on a non-loopback --host: anyone who can reach "
                             "the port can read the journal and change the mock")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                        help="info logs one line per request (buffered); warning only problems")
    parser.add_argument("--threads", type=int, default=THREADS,
                        help="Python threads per worker for what may block: the control API, and the answers of "
                             "proxy and record (they wait on the deployment) (default %(default)s); the API's "
                             "answers are made on the event loop, and a scenario's latency holds no thread")
    parser.add_argument("--runtime-threads", type=int, default=1,
                        help="Granian's Rust threads per worker doing the network I/O (default %(default)s)")
    parser.add_argument("--backpressure", type=_positive, metavar="N", default=MAX_BODIES,
                        help="request bodies a worker reads at once; one more request with a body is answered "
                             "503 mock-busy (Retry-After: 1) at once, never left waiting (default %(default)s)")
    parser.add_argument("--body-timeout", type=_seconds, metavar="SECONDS", default=BODY_TIMEOUT_S,
                        help="seconds a request's whole body may take to arrive; past it the request is answered "
                             "408 request-timeout and its connection closed (default %(default)s)")


def _open_control(args: argparse.Namespace) -> str | None:
    """Why the control API may not be served as asked (an unusable --control-origin; no token on the network);
    None when it may, after a warning line for --open-control on the network."""
    from .web.cors import ControlOrigins
    from .web.serving import is_loopback

    if args.no_control:
        return None
    try:
        ControlOrigins(tuple(args.control_origin), args.control_token)
    except ValueError as exc:
        return str(exc)
    if args.control_token or is_loopback(args.host):
        return None
    if not args.open_control:
        return (f"--host {args.host} would open the control API (the journal, scenarios, reset) to the network "
                f"without a token: give --control-token TOKEN (or MOCKSERVER_CONTROL_TOKEN), or say --open-control "
                f"if that is what you want")
    print(f"mockserver: warning: --open-control: anyone who can reach {args.host}:{args.port} can read the journal "
          f"and change the mock through /__mock/ (no control token)", file=sys.stderr, flush=True)
    return None


def _add_proxy_options(parser: argparse.ArgumentParser) -> None:
    _add_serving(parser)
    parser.add_argument("--target", required=True,
                        help="the real deployment's root URL; each request's path is appended to it unchanged")
    parser.add_argument("--fallback", action="store_true",
                        help="when the target cannot answer (refused, timeout, 501), the mock answers from its "
                             "fixtures")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the target (default 10)")


def _run(factory: Callable[[], Flask], args: argparse.Namespace, workers: int) -> int:
    """Serve on Granian until stopped; each worker builds its app with `factory` (web/serving.py)."""
    from .web.serving import Settings, serve

    serve(factory, Settings(args.host, args.port, workers, args.threads, args.runtime_threads, args.backpressure,
                            args.body_timeout), args.log_level)
    return 0


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve() == folder.resolve() or folder.resolve() in path.resolve().parents


def _proxy(args: argparse.Namespace, spec: Path, fixtures: Path | None) -> int:
    """Serve until stopped (exit 0); 2 when the description, the fixtures or the options are unusable."""
    from .web.app import create_app, load_pipeline
    from .web.proxy import Proxy
    from .web.recording import Recorder
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
        try:
            recorder = Recorder(args.out, rejected, args.redact)
        except LoadError as exc:
            _report(exc)
            return 2
    try:
        proxy = Proxy(args.target, fallback=args.fallback, timeout=args.timeout, recorder=recorder)
    except ValueError as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return 2
    configure_logging(args.log_level)
    try:
        loaded = load_pipeline(spec, fixtures, Options(cursor_secret=_cursor_secret(None),
                                                       allow_outside=tuple(args.allow_outside)))
    except LoadError as exc:
        _report(exc)
        return 2
    what = f"recording into {args.out}" if recorder else "proxying"
    print(f"mockserver: {what}: {proxy.target} on http://{args.host}:{args.port}, checked against {spec}"
          + (" (fallback: the mock)" if args.fallback else ""), file=sys.stderr, flush=True)
    return _run(partial(create_app, spec, fixtures, control=not args.no_control, control_token=args.control_token,
                        control_origins=tuple(args.control_origin), proxy=proxy, loaded=loaded),
                args, 1)  # one process: the drift counts are whole


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mockserver", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve a mock of the description")
    _add_serving(serve)
    serve.add_argument("--seed", type=int, default=0, help="seed of generated data (same seed, same data)")
    serve.add_argument("--dynamic", action="store_true",
                       help="answer varied generated data instead of the examples, as if every request sent "
                            "'Prefer: dynamic=true' (a request's 'Prefer: dynamic=false' still gets the static answer)")
    serve.add_argument("--strict-auth", action="store_true",
                       help="answer 401 to tokens the fixtures (or --accept-token) do not declare")
    serve.add_argument("--accept-token", action="append", default=[], metavar="TOKEN",
                       help="a credential let in as a caller besides the fixtures' tokens (bearer, API key, basic "
                            "user; repeatable): with --strict-auth, a description without fixtures refuses every other")
    serve.add_argument("--no-response-validation", action="store_true",
                       help="do not check answers against the description (for load tests)")
    serve.add_argument("--workers", type=int, default=1,
                       help="worker processes (default 1); more than one needs a shared --state")
    serve.add_argument("--state", default=os.environ.get("MOCKSERVER_STATE"), metavar="URL",
                       help="where scenarios, the journal, coverage and sessions live: 'memory' (this process, the "
                            "default) or redis://host:6379/0 shared by every worker and replica (env "
                            "MOCKSERVER_STATE)")
    serve.add_argument("--state-timeout", type=_seconds, default=STATE_TIMEOUT, metavar="SECONDS",
                       help="the longest a call waits for a shared --state (connecting, or for an answer); then the "
                            "call answers 503 mock-state-unavailable (default %(default)g)")
    serve.add_argument("--session-ttl", type=float, default=SESSION_TTL, metavar="SECONDS",
                       help="forget a session idle this long (default %(default).0f)")
    serve.add_argument("--max-items", type=int, default=ITEMS_LIMIT, metavar="N",
                       help="items a collection written at run time may hold per session; past it a create answers "
                            "507 (default %(default)d)")
    serve.add_argument("--max-depth", type=int, default=MAX_DEPTH, metavar="N",
                       help="levels of arrays and objects a JSON request or control body may nest; deeper is a 400 "
                            "(default %(default)d)")
    serve.add_argument("--watch", action="store_true",
                       help="reload the description and fixtures when a file changes (an invalid edit keeps the last "
                            "good state)")

    validate = commands.add_parser("validate", help="check the description and fixtures; list every problem")
    _add_sources(validate)
    for command in (serve, validate):
        command.add_argument("--stateful", action="store_true",
                             help="infer writes from the REST shape (POST /things creates, GET /things lists, "
                                  "GET|PUT|PATCH|DELETE /things/{id}) for operations the fixtures declare nothing "
                                  "for; also `stateful: true` in the fixtures' settings")

    contract = commands.add_parser("contract", help="check a server (or the mock, in-process) against the description")
    _add_sources(contract)
    contract.add_argument("--url", help="base URL of the server to check, with the description's base path "
                                        "(default: the mock, in-process; with strict auth when the fixtures declare a "
                                        "token)")
    tokens = contract.add_mutually_exclusive_group()
    tokens.add_argument("--token", help="token for the operations that take a bearer token, OAuth 2, OpenID Connect "
                                        "or an API key, sent where each one's security scheme wants it (default "
                                        "in-process: the first usable token of the fixtures)")
    tokens.add_argument("--token-env", metavar="NAME", help="the token, from this environment variable")
    tokens.add_argument("--token-file", type=Path, metavar="FILE", help="the token, from this file")
    contract.add_argument("--auth-bearer", metavar="TOKEN",
                          help="token for the bearer, OAuth 2 and OpenID Connect schemes only (in --token's place)")
    contract.add_argument("--api-key", action="append", default=[], type=_api_key, metavar="NAME=VALUE",
                          help="value of the API key named NAME (a header, query parameter or cookie, as its scheme "
                               "says), in --token's place; repeatable")
    contract.add_argument("--basic", "--auth-basic", dest="basic", type=_basic, metavar="USER:PASSWORD",
                          help="HTTP basic credentials for the operations that take them (default in-process: the "
                               "token as the user)")
    contract.add_argument("--header", action="append", default=[], type=_header, metavar="'NAME: VALUE'",
                          help="another header sent with every call (repeatable)")
    contract.add_argument("--max-examples", type=int, default=None, help="generated examples per operation and phase "
                                                                         "(default 100)")
    contract.add_argument("--mode", choices=["positive", "negative", "all"], default="all",
                          help="what Schemathesis generates: data the description allows (positive), data it forbids "
                               "(negative: the run then expects no success and judges only the credentials) or both "
                               "(default %(default)s)")
    contract.add_argument("--no-auth", action="store_true",
                          help="send no credentials at all (in-process, not even the mock's own): every operation "
                               "that requires them should be refused; with --mode negative that is no failure")
    contract.add_argument("--phases", type=_names, action="append", default=[], metavar="PHASE,…",
                          help="Schemathesis' phases to run, of examples, coverage, fuzzing, stateful (default: all "
                               "four)")
    contract.add_argument("--coverage-cap", type=_positive, metavar="N",
                          help="the coverage phase's first N requests per operation only (it is not bounded by "
                               "--max-examples: over 1,000 for some operations of big descriptions)")
    contract.add_argument("--checks", type=_names, action="append", default=[], metavar="NAME,…",
                          help="run only these checks (Schemathesis' and the contract's, comma-separated; default: "
                               "all)")
    contract.add_argument("--exclude-checks", type=_names, action="append", default=[], metavar="NAME,…",
                          help="leave these checks out (comma-separated)")
    contract.add_argument("--seed", type=int, help="repeat a run: the same seed sends the same requests")
    contract.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report")
    contract.add_argument("--report-json", type=Path, metavar="FILE",
                          help="write the report as JSON: verdict, gaps, per-check and per-operation counts, every "
                               "failure with its curl")
    contract.add_argument("--operation", nargs="+", action="extend", default=[], metavar="ID",
                          help="check only these operations, by operationId or as 'GET /path'")
    contract.add_argument("--min-responses", type=_percent, metavar="PERCENT",
                          help="fail when fewer than this percentage of the declared responses (every status of every "
                               "operation) were observed")
    contract.add_argument("--exclude-operation", action="append", default=[], metavar="ID",
                          help="leave this operation out (operationId or 'GET /path'; repeatable): one that would "
                               "stall or sabotage the run, such as a logout")
    contract.add_argument("--stateful", action="store_true",
                          help="without --url: the mock checked remembers writes inferred from the REST shape "
                               "(as `serve --stateful`), so the stateful phase's sequences hold")
    contract.add_argument("--read-only", action="store_true",
                          help="send GET, HEAD and OPTIONS only: no operation or probe that may change the target")
    contract.add_argument("--request-timeout", type=float, metavar="SECONDS",
                          help="give up on an answer after this long (it is reported as a failure)")
    contract.add_argument("--data", type=Path, metavar="FILE",
                          help="YAML of request values that exist on the target: per parameter name and per "
                               "operation (see docs/CONTRACT.md)")
    contract.add_argument("--no-discover", action="store_true",
                          help="against a --url, do not read ids from its list operations before the run")
    contract.add_argument("--no-force", action="store_true",
                          help="do not ask a target that honours `Prefer: code=` (the mock, Prism) for every declared "
                               "response once")
    contract.add_argument("--allow-untested", action="append", default=[], metavar="ID",
                          help="do not fail the run when this operation (operationId or 'GET /path') never answered "
                               "with success or its checks never applied: for what a team knowingly skips "
                               "(repeatable)")

    coverage = commands.add_parser("coverage", help="what a client's calls exercised of the description, read from "
                                                    "a running mock")
    coverage.add_argument("--url", default="http://127.0.0.1:4010", help="the running mock (default %(default)s)")
    coverage.add_argument("--control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                          help="the mock's control token, if it has one (env MOCKSERVER_CONTROL_TOKEN)")
    coverage.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report: a test case per "
                                                                     "status, query parameter and enum value")
    coverage.add_argument("--min", type=float, metavar="PERCENT", help="exit 1 below this total percentage")
    coverage.add_argument("--session", metavar="NAME", help="only the calls of this session (X-Mock-Session)")

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

    diff = commands.add_parser("diff", help="what changed between two descriptions, breaking or not for clients, "
                                            "with evidence from fixtures and the journal of real calls")
    diff.add_argument("old", type=Path, metavar="OLD")
    diff.add_argument("new", type=Path, metavar="NEW")
    diff.add_argument("--fixtures", type=Path, help="fixtures folder (fitting OLD): every answer it serves is checked "
                                                    "against NEW")
    source = diff.add_mutually_exclusive_group()
    source.add_argument("--journal", type=Path, metavar="FILE", help="a saved GET /__mock/requests: every request "
                                                                     "and answer replayed through NEW")
    source.add_argument("--url", metavar="MOCK", help="a running mock (of OLD) whose journal to replay")
    diff.add_argument("--control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                      help="the mock's control token, with --url (env MOCKSERVER_CONTROL_TOKEN)")
    diff.add_argument("--format", default="text", choices=["text", "markdown", "json"])
    diff.add_argument("--fail-on", choices=["breaking", "any"], help="exit 1 when there is a breaking change (or any)")
    _add_allow_outside(diff)

    args = parser.parse_args(argv)
    use_parse_cache(default_cache())  # a description read before starts in milliseconds (mockserver/cache.py)
    if args.command == "coverage":
        return _coverage(args)
    if args.command == "diff":
        from .diff_cli import run

        return run(args.old, args.new, fixtures=args.fixtures, journal=args.journal, url=args.url,
                   control_token=args.control_token, output=args.format, fail_on=args.fail_on,
                   allow_outside=tuple(args.allow_outside))
    if args.command in ("serve", "proxy", "record"):
        from .web.serving import unusable_address

        problem = unusable_address(args.host, args.port)
        if problem:
            print(f"mockserver: {problem}", file=sys.stderr)
            return 1
        refused = _open_control(args)
        if refused:
            print(f"mockserver: {refused}", file=sys.stderr)
            return 2
    try:
        spec, fixtures = _sources(args)
    except NoDescription as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return 2
    if args.command in ("proxy", "record"):
        return _proxy(args, spec, fixtures)
    if args.command == "contract":
        return _contract(args, spec, fixtures)
    if args.command == "validate":
        try:
            pipeline = Pipeline.load(spec, fixtures, Options(stateful=args.stateful,
                                                             allow_outside=tuple(args.allow_outside)))
        except LoadError as exc:
            _report(exc)
            return 1
        _warn(pipeline.warnings)
        for inferred in pipeline.inferred:
            print(f"stateful: {inferred.operation} {inferred.what}")
        count = sum(len(c.items) for c in pipeline.fixtures.collections.values())
        held = (f"{fixtures}: {len(pipeline.fixtures.files)} files, {len(pipeline.fixtures.collections)} "
                f"collections, {count} items" if fixtures else "no fixtures")
        print(f"{spec}: {len(pipeline.spec.operations)} operations; {held}. All is well.")
        return 0
    from .web.app import create_app, load_pipeline
    from .web.serving import configure_logging

    if args.workers > 1 and args.state is None:
        print(f"mockserver: --workers {args.workers} needs a shared state store, or each worker keeps its own "
              f"scenarios, journal and coverage: add --state redis://HOST:6379/0 (or --state memory to accept that "
              f"split)", file=sys.stderr)
        return 2
    configure_logging(args.log_level)
    options = Options(seed=args.seed, strict_auth=args.strict_auth, validate_responses=not args.no_response_validation,
                      cursor_secret=_cursor_secret(args.state), accept_tokens=tuple(args.accept_token),
                      state=args.state, session_ttl=args.session_ttl, max_items=args.max_items,
                      stateful=args.stateful, dynamic=args.dynamic, allow_outside=tuple(args.allow_outside),
                      max_depth=args.max_depth,
                      state_timeout=args.state_timeout)
    try:
        loaded = load_pipeline(spec, fixtures, options)  # once, before the workers: a bad description exits 2
    except LoadError as exc:
        _report(exc)
        return 2
    except StateError as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return 2
    _warn(loaded.warnings)
    if args.workers > 1 and not loaded.store.shared:
        print(f"mockserver: warning: --state memory with --workers {args.workers}: each worker keeps its own "
              f"scenarios, journal and coverage", file=sys.stderr)
    state = loaded.store.describe()
    origin = f"http://{args.host}:{args.port}"
    pages = "" if args.no_control else f" · dashboard {origin}/__mock/ · docs {origin}/__mock/docs"
    print(f"mockserver: serving {spec} on {origin}{pages}"
          + (f" · state shared in {state['url']}" if state["shared"] else ""), file=sys.stderr, flush=True)
    return _run(partial(create_app, spec, fixtures, control=not args.no_control, control_token=args.control_token,
                        control_origins=tuple(args.control_origin), watch=args.watch, loaded=loaded), args,
                args.workers)
