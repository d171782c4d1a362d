"""`mockserver contract`: check a server (or the mock, in-process) against the description."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..base.errors import LoadError
from .flags import (
    add_sources,
    api_key,
    api_mount,
    basic_auth,
    callback_seconds,
    header,
    host_port,
    located,
    name_list,
    percent,
    positive,
    report,
)

HELP = "check a server (or the mock, in-process) against the description"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_sources(parser)
    parser.add_argument("--url", help="base URL of the server to check, with the description's base path "
                                      "(default: the mock, in-process; with strict auth when the fixtures declare a "
                                      "token)")
    parser.add_argument("--api", metavar="NAME",
                        help="with --url of a mock of several APIs (serve --api): check its API of this name, at "
                             "the prefix and host it is mounted at (the mock says where; its control token from "
                             "MOCKSERVER_CONTROL_TOKEN)")
    tokens = parser.add_mutually_exclusive_group()
    tokens.add_argument("--token", help="token for the operations that take a bearer token, OAuth 2, OpenID Connect "
                                        "or an API key, sent where each one's security scheme wants it (default "
                                        "in-process: the first usable token of the fixtures)")
    tokens.add_argument("--token-env", metavar="NAME", help="the token, from this environment variable")
    tokens.add_argument("--token-file", type=Path, metavar="FILE", help="the token, from this file")
    parser.add_argument("--auth-bearer", metavar="TOKEN",
                        help="token for the bearer, OAuth 2 and OpenID Connect schemes only (in --token's place)")
    parser.add_argument("--api-key", action="append", default=[], type=api_key, metavar="NAME=VALUE",
                        help="value of the API key named NAME (a header, query parameter or cookie, as its scheme "
                             "says), in --token's place; repeatable")
    parser.add_argument("--basic", "--auth-basic", dest="basic", type=basic_auth, metavar="USER:PASSWORD",
                        help="HTTP basic credentials for the operations that take them (default in-process: the "
                             "token as the user)")
    parser.add_argument("--header", action="append", default=[], type=header, metavar="'NAME: VALUE'",
                        help="another header sent with every call (repeatable)")
    parser.add_argument("--max-examples", type=int, default=None, help="generated examples per operation and phase "
                                                                       "(default 100)")
    parser.add_argument("--mode", choices=["positive", "negative", "all"], default="all",
                        help="what Schemathesis generates: data the description allows (positive), data it forbids "
                             "(negative: the run then expects no success and judges only the credentials) or both "
                             "(default %(default)s)")
    parser.add_argument("--no-auth", action="store_true",
                        help="send no credentials at all (in-process, not even the mock's own): every operation "
                             "that requires them should be refused; with --mode negative that is no failure")
    parser.add_argument("--phases", type=name_list, action="append", default=[], metavar="PHASE,…",
                        help="Schemathesis' phases to run, of examples, coverage, fuzzing, stateful (default: all "
                             "four)")
    parser.add_argument("--coverage-cap", type=positive, metavar="N",
                        help="the coverage phase's first N requests per operation only (it is not bounded by "
                             "--max-examples: over 1,000 for some operations of big descriptions)")
    parser.add_argument("--checks", type=name_list, action="append", default=[], metavar="NAME,…",
                        help="run only these checks (Schemathesis' and the contract's, comma-separated; default: "
                             "all)")
    parser.add_argument("--exclude-checks", type=name_list, action="append", default=[], metavar="NAME,…",
                        help="leave these checks out (comma-separated)")
    parser.add_argument("--seed", type=int, help="repeat a run: the same seed sends the same requests")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report")
    parser.add_argument("--report-json", type=Path, metavar="FILE",
                        help="write the report as JSON: verdict, gaps, per-check and per-operation counts, every "
                             "failure with its curl")
    parser.add_argument("--operation", nargs="+", action="extend", default=[], metavar="ID",
                        help="check only these operations, by operationId or as 'GET /path'")
    parser.add_argument("--min-responses", type=percent, metavar="PERCENT",
                        help="fail when fewer than this percentage of the declared responses (every status of every "
                             "operation) were observed")
    parser.add_argument("--exclude-operation", action="append", default=[], metavar="ID",
                        help="leave this operation out (operationId or 'GET /path'; repeatable): one that would "
                             "stall or sabotage the run, such as a logout")
    parser.add_argument("--stateful", action="store_true",
                        help="without --url: the mock checked remembers writes inferred from the REST shape "
                             "(as `serve --stateful`), so the stateful phase's sequences hold")
    parser.add_argument("--read-only", action="store_true",
                        help="send GET, HEAD and OPTIONS only: no operation or probe that may change the target")
    parser.add_argument("--request-timeout", type=float, metavar="SECONDS",
                        help="give up on an answer after this long (it is reported as a failure)")
    parser.add_argument("--data", type=Path, metavar="FILE",
                        help="YAML of request values that exist on the target: per parameter name and per "
                             "operation (see docs/CONTRACT.md)")
    parser.add_argument("--no-discover", action="store_true",
                        help="against a --url, do not read ids from its list operations before the run")
    parser.add_argument("--no-force", action="store_true",
                        help="do not ask a target that honours `Prefer: code=` (the mock, Prism) for every declared "
                             "response once")
    parser.add_argument("--callback-listen", type=host_port, metavar="HOST:PORT",
                        help="with --url: where the receiver of the deployment's callbacks listens, an address the "
                             "deployment can reach; its URL goes where each callback's expression reads it (default: "
                             "a free port on 127.0.0.1)")
    parser.add_argument("--callback-timeout", type=callback_seconds, metavar="SECONDS",
                        help="with --url: how long to wait for callbacks still due once the run's calls are done "
                             "(default 5, at most 120)")
    parser.add_argument("--allow-untested", action="append", default=[], metavar="ID",
                        help="do not fail the run when this operation (operationId or 'GET /path') never answered "
                             "with success or its checks never applied: for what a team knowingly skips "
                             "(repeatable)")


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


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every check passed, 1 on failures, 2 when the description, fixtures or options are unusable."""
    import logging

    try:
        from .. import contract
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("schemathesis"):
            raise
        print("mockserver: `mockserver contract` needs Schemathesis: pip install 'mockserver[contract]'",
              file=sys.stderr)
        return 2

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # the in-process mock: no line per request
    found = located(args)
    if found is None:
        return 2
    spec, fixtures = found
    try:
        token = _token(args)
        checks, exclude_checks, phases = _contract_choices(args)
        url, headers = _target(args)
    except ValueError as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return 2
    options = contract.RunOptions(spec, fixtures, url=url, token=token, basic=args.basic, bearer=args.auth_bearer,
                               api_keys=dict(args.api_key),
                               headers=headers,
                               max_examples=args.max_examples or contract.DEFAULT_MAX_EXAMPLES, seed=args.seed,
                               operations=args.operation, allow_untested=args.allow_untested,
                               min_responses=args.min_responses, force=not args.no_force,
                               exclude=args.exclude_operation, read_only=args.read_only, stateful=args.stateful,
                               request_timeout=args.request_timeout, data=args.data, discover=not args.no_discover,
                               mode=args.mode, checks=checks, exclude_checks=exclude_checks, phases=phases,
                               coverage_cap=args.coverage_cap, credentials=not args.no_auth,
                               allow_outside=tuple(args.allow_outside), callback_listen=args.callback_listen,
                               callback_timeout=args.callback_timeout or contract.callbacks.DEFAULT_TIMEOUT_S)
    try:
        return contract.check(options, args.junit, json_path=args.report_json)
    except LoadError as exc:
        report(exc)
    except (contract.UnknownOperation, contract.UnusedCredential, contract.DataError, contract.CallbackError) as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
    return 2


def _target(args: argparse.Namespace) -> tuple[str | None, dict[str, str]]:
    """--url and --header; with --api, the URL and Host at which that API of the mock at --url answers."""
    headers = dict(args.header)
    if args.api is None:
        return args.url, headers
    origin, mount = api_mount(args.url, args.api, os.environ.get("MOCKSERVER_CONTROL_TOKEN"))
    if mount["host"]:
        headers.setdefault("Host", mount["host"])
    return origin + mount["basePath"], headers


def _contract_choices(args: argparse.Namespace) -> tuple[list[str], list[str], list[str]]:
    """--checks, --exclude-checks and --phases, each name known (ValueError otherwise), --no-auth alone, and the
    callback flags with --url."""
    from schemathesis.checks import CHECKS, load_all_checks

    from ..contract import PHASES

    if not args.url and (args.callback_listen or args.callback_timeout):
        raise ValueError("--callback-listen and --callback-timeout need --url: callbacks are checked on a deployment")
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

