"""What the commands share: their flag groups (sources, serving) and the one table of the flags that set `Options`
fields, the argument types, and the start-up steps of `serve`, `proxy` and `record`."""
from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ..base.errors import LoadError
from ..base.json_values import MAX_DEPTH
from ..pipeline.callbacks import CALLBACK_RETRIES, CALLBACK_TIMEOUT
from ..pipeline.pipeline import Options
from ..pipeline.request_validation import HEADER_NAMES, MODES, VIOLATIONS_HEADER
from ..pipeline.stateful import ITEMS_LIMIT
from ..state import SESSION_TTL, STATE_TIMEOUT, StateError
from ..web.tls import DEV_NAMES, TlsError, TlsFiles, checked, development_files, development_folder

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline
    from ..web.app import MockFlask

# Python threads per worker for the answers that may block for long (web/rsgi.py): those behind `mockserver proxy`
# and Redis round trips (the control API has CONTROL_SHARE times as many); the API's other answers are made on the
# event loop and a scenario's latency holds no thread. 2: one call waiting leaves another answering
THREADS = 2
# a request's body is read by the mock (web/rsgi.py): the whole of it within BODY_TIMEOUT_S (else 408), at most
# MAX_BODIES at once per worker (else 503 mock-busy); each may hold up to --max-body bytes while it arrives
BODY_TIMEOUT_S = 10.0
MAX_BODIES = 1024
CONVENTIONAL_SPECS = ("openapi.yaml", "openapi.yml", "openapi.json")  # looked for in the working folder
CONVENTIONAL_FIXTURES = "fixtures"


class NoDescription(Exception):
    """No --spec, no MOCKSERVER_SPEC and no conventional file where the command runs."""


def add_sources(parser: argparse.ArgumentParser) -> None:
    add_allow_outside(parser)
    parser.add_argument("--spec", type=Path, default=None,
                        help="OpenAPI description (default: MOCKSERVER_SPEC, else openapi.yaml, .yml or .json here)")
    parser.add_argument("--fixtures", type=Path, default=None,
                        help="fixtures folder (default: MOCKSERVER_FIXTURES with MOCKSERVER_SPEC, fixtures/ here with "
                             "the conventional description; none otherwise)")


def sources(args: argparse.Namespace) -> tuple[Path, Path | None]:
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


def cursor_secret(state: str | None) -> str | None:
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


def warn(warnings: list, about: str = "") -> None:
    """Harmless oddities of a description, said once: how many, and the first few with their place; `about`
    names the API they are of, on a mock of several."""
    if not warnings:
        return
    print(f"mockserver: {about + ': ' if about else ''}{len(warnings)} warning(s):", file=sys.stderr)
    for warning in warnings[:20]:
        print(f"  {warning}", file=sys.stderr)
    if len(warnings) > 20:
        print(f"  … and {len(warnings) - 20} more (mockserver validate lists them all)", file=sys.stderr)


def report(exc: LoadError, about: str = "") -> None:
    print(f"mockserver: {about + ': ' if about else ''}{len(exc.problems)} problem(s) found:", file=sys.stderr)
    for problem in exc.problems:
        print(f"  {problem}", file=sys.stderr)


def header(text: str) -> tuple[str, str]:
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not 'Name: value'")
    return name.strip(), value.strip()


def basic_auth(text: str) -> tuple[str, str]:
    user, colon, password = text.partition(":")
    if not colon or not user:
        raise argparse.ArgumentTypeError(f"{text!r} is not 'user:password'")
    return user, password


def api_key(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not 'NAME=VALUE'")
    return name, value


def name_list(text: str) -> list[str]:
    """A comma-separated list (`--checks a,b`, `--phases examples,fuzzing`)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names nothing")
    return names


def _number(cast: Callable[[str], Any], fits: Callable[[Any], bool], what: str) -> Callable[[str], Any]:
    """An argparse type: `text` read by `cast` and held to `fits`, else one message saying what was wanted."""
    def read(text: str) -> Any:
        try:
            value = cast(text)
        except ValueError:
            value = None
        if value is None or not fits(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value
    return read


positive = _number(int, lambda value: value >= 1, "a whole number from 1")
count = _number(int, lambda value: value >= 0, "a whole number from 0")
seconds = _number(float, lambda value: 0 < value < float("inf"), "a number of seconds above 0")
percent = _number(float, lambda value: 0 <= value <= 100, "a percentage from 0 to 100")
callback_seconds = _number(float, lambda value: 0 < value <= 120, "a number of seconds above 0, at most 120")


def host_port(text: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:8080` for an IPv6 address), the port from 0 (any free one) to 65535."""
    host, colon, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host, int(port)


def _folder(text: str) -> Path:
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a folder")
    return Path(text)


def _violations_header(text: str) -> str:
    """X-Mock-Violations or Prism's sl-violations, however capitalised."""
    found = next((name for name in HEADER_NAMES if name.lower() == text.lower()), None)
    if found is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not {' or '.join(HEADER_NAMES)}")
    return found


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class OptionFlag:
    """A flag that sets one `Options` field: its names, argparse's keywords, and how its value becomes the field's."""

    option: str  # the Options field it sets
    names: tuple[str, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    value: Callable[[Any], Any] = _same

    @property
    def dest(self) -> str:
        return self.kwargs.get("dest") or self.names[0].lstrip("-").replace("-", "_")


# every flag that sets an `Options` field, spelled once: each command adds those it takes (`add_options`) and
# builds its Options from whichever it took (`options_from`)
OPTION_FLAGS = {flag.option: flag for flag in (
    OptionFlag("allow_outside", ("--allow-ref-outside",), dict(
        dest="allow_outside", action="append", default=[], type=_folder, metavar="DIR",
        help="a folder outside the description's (and the fixtures') own that its $refs and files may read, shared "
             "on purpose (repeatable; default: none, every file must lie in its own folder)"), tuple),
    OptionFlag("seed", ("--seed",), dict(type=int, default=0, help="seed of generated data (same seed, same data)")),
    OptionFlag("dynamic", ("--dynamic",), dict(
        action="store_true", help="answer varied generated data instead of the examples, as if every request sent "
                                  "'Prefer: dynamic=true' (a request's 'Prefer: dynamic=false' still gets the static "
                                  "answer)")),
    OptionFlag("strict_auth", ("--strict-auth",), dict(
        action="store_true", help="answer 401 to tokens the fixtures (or --accept-token) do not declare")),
    OptionFlag("accept_tokens", ("--accept-token",), dict(
        action="append", default=[], metavar="TOKEN",
        help="a credential let in as a caller besides the fixtures' tokens (bearer, API key, basic user; "
             "repeatable): with --strict-auth, a description without fixtures refuses every other"), tuple),
    OptionFlag("validate_responses", ("--no-response-validation",), dict(
        action="store_true", help="do not check answers against the description (for load tests)"),
        lambda off: not off),
    OptionFlag("request_validation", ("--request-validation",), dict(
        choices=MODES, default="strict",
        help="a request that breaks the description: 'strict' refuses it (400, or the operation's 422); 'warn' "
             "answers it as if it were valid and keeps its violations in the journal, the dashboard and coverage; "
             "'off' refuses and keeps nothing (default %(default)s)")),
    OptionFlag("violations_header", ("--violations-header",), dict(
        nargs="?", const=VIOLATIONS_HEADER, default=None, type=_violations_header, metavar="NAME",
        help=f"name the violations of a request let through (--request-validation warn) in a header of the answer: "
             f"{VIOLATIONS_HEADER} ('pointer rule; …'), or Prism's sl-violations (its JSON list) (default: none)")),
    OptionFlag("state", ("--state",), dict(
        default=os.environ.get("MOCKSERVER_STATE"), metavar="URL",
        help="where scenarios, the journal, coverage and sessions live: 'memory' (this process, the default) or "
             "redis://host:6379/0 shared by every worker and replica (env MOCKSERVER_STATE)")),
    OptionFlag("state_timeout", ("--state-timeout",), dict(
        type=seconds, default=STATE_TIMEOUT, metavar="SECONDS",
        help="the longest a call waits for a shared --state (connecting, or for an answer); then the call answers "
             "503 mock-state-unavailable (default %(default)g)")),
    OptionFlag("session_ttl", ("--session-ttl",), dict(
        type=float, default=SESSION_TTL, metavar="SECONDS", help="forget a session idle this long (default "
                                                                 "%(default).0f)")),
    OptionFlag("max_items", ("--max-items",), dict(
        type=int, default=ITEMS_LIMIT, metavar="N",
        help="items a collection written at run time may hold per session; past it a create answers 507 (default "
             "%(default)d)")),
    OptionFlag("max_depth", ("--max-depth",), dict(
        type=int, default=MAX_DEPTH, metavar="N",
        help="levels of arrays and objects a JSON request or control body may nest; deeper is a 400 (default "
             "%(default)d)")),
    OptionFlag("stateful", ("--stateful",), dict(
        action="store_true",
        help="infer writes from the REST shape (POST /things creates, GET /things lists, GET|PUT|PATCH|DELETE "
             "/things/{id}) for operations the fixtures declare nothing for; also `stateful: true` in the fixtures' "
             "settings")),
    OptionFlag("callback_retries", ("--callback-retries",), dict(
        type=count, default=CALLBACK_RETRIES, metavar="N",
        help="tries after the first of a callback or webhook whose receiver cannot be reached, times out or answers "
             "5xx or 429, each after twice the last wait from 0.25 s (default %(default)d)")),
    OptionFlag("callback_timeout", ("--callback-timeout",), dict(
        type=seconds, default=CALLBACK_TIMEOUT, metavar="SECONDS",
        help="the longest one try of a callback or webhook waits for its receiver (default %(default)g)")),
    OptionFlag("callback_allow", ("--callback-allow",), dict(
        action="append", default=[], metavar="HOST",
        help="a host callbacks and webhooks may be sent to besides loopback (repeatable; default: loopback only, "
             "any other target is refused and journaled)"), tuple),
)}


def add_options(parser: argparse.ArgumentParser, *fields: str) -> None:
    """The flags of these `Options` fields, in this order (the order `--help` lists them)."""
    for name in fields:
        flag = OPTION_FLAGS[name]
        parser.add_argument(*flag.names, **flag.kwargs)


def options_from(args: argparse.Namespace, **fields: Any) -> Options:
    """The Options the command's flags say (those of `OPTION_FLAGS` it took), with `fields` besides."""
    given = {flag.option: flag.value(getattr(args, flag.dest)) for flag in OPTION_FLAGS.values()
             if hasattr(args, flag.dest)}
    return Options(**{**given, **fields})


def add_allow_outside(parser: argparse.ArgumentParser) -> None:
    add_options(parser, "allow_outside")


def add_serving(parser: argparse.ArgumentParser) -> None:
    """What `serve`, `proxy` and `record` share: sources, address, control API, logging, the server."""
    add_sources(parser)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4010)
    parser.add_argument("--tls-cert", type=Path, metavar="FILE",
                        help="serve HTTPS with this certificate (PEM, the chain after it) and --tls-key")
    parser.add_argument("--tls-key", type=Path, metavar="FILE", help="the private key of --tls-cert (PEM)")
    parser.add_argument("--tls-self-signed", action="store_true",
                        help="serve HTTPS with a development certificate for localhost, signed by a local CA made "
                             "once (its file is printed at start: trust it in a browser or curl --cacert)")
    parser.add_argument("--http", choices=["auto", "1", "2"], default="auto",
                        help="HTTP version: auto (HTTP/1.1, and HTTP/2 where a TLS client offers it by ALPN), 1, "
                             "or 2 (only HTTP/2; over plain HTTP, for clients that speak it without asking)")
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
    parser.add_argument("--metrics", action="store_true",
                        help="count requests by operation, status and source, their latency, sessions and stored "
                             "items, in Prometheus' format at /__mock/metrics (behind the control token)")
    parser.add_argument("--otel", action="store_true",
                        help="send a trace span per request, with its stages, to an OpenTelemetry collector (the "
                             "standard OTEL_EXPORTER_OTLP_* variables; pip install 'mockserver[otel]')")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                        help="info logs one line per request (buffered); warning only problems")
    parser.add_argument("--threads", type=int, default=THREADS,
                        help="Python threads per worker for the answers that wait (proxy and record's on the "
                             "deployment, Redis round trips), and a multiple of it for the control API "
                             "(docs/SERVING.md; default %(default)s); the API's other answers are made on the event "
                             "loop, and a "
                             "scenario's latency holds no thread")
    parser.add_argument("--runtime-threads", type=int, default=1,
                        help="Granian's Rust threads per worker doing the network I/O (default %(default)s)")
    parser.add_argument("--backpressure", type=positive, metavar="N", default=MAX_BODIES,
                        help="request bodies a worker reads at once; one more request with a body is answered "
                             "503 mock-busy (Retry-After: 1) at once, never left waiting (default %(default)s)")
    parser.add_argument("--body-timeout", type=seconds, metavar="SECONDS", default=BODY_TIMEOUT_S,
                        help="seconds a request's whole body may take to arrive; past it the request is answered "
                             "408 request-timeout and its connection closed (default %(default)s)")


def open_control(args: argparse.Namespace) -> str | None:
    """Why the control API may not be served as asked (an unusable --control-origin; no token on the network);
    None when it may, after a warning line for --open-control on the network."""
    from ..web.cors import ControlOrigins
    from ..web.serving import is_loopback

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


def serving_sources(args: argparse.Namespace) -> tuple[Path, Path | None] | int:
    """What `serve`, `proxy` and `record` serve; or, after saying why, the exit code when they cannot serve as
    asked (an unusable address: 1; a control API that may not be opened so, or no description: 2)."""
    return unservable(args) or located(args) or 2


def unservable(args: argparse.Namespace) -> int | None:
    """None when the command may listen and serve its control API as asked; else, after saying why, its exit code
    (an unusable address: 1; a control API that may not be opened so: 2)."""
    from ..web.serving import unusable_address

    problem = unusable_address(args.host, args.port)
    if problem:
        print(f"mockserver: {problem}", file=sys.stderr)
        return 1
    refused = open_control(args)
    if refused:
        print(f"mockserver: {refused}", file=sys.stderr)
        return 2
    from ..web.otel import missing

    unusable = missing() if args.otel else None
    if unusable:
        print(f"mockserver: {unusable}", file=sys.stderr)
        return 2
    try:
        args.tls = tls_files(args)
    except TlsError as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return 2
    return None


def tls_files(args: argparse.Namespace) -> TlsFiles | None:
    """What HTTPS is served with: the user's files, checked; or the development ones, made when missing."""
    if args.tls_self_signed:
        if args.tls_cert or args.tls_key:
            raise TlsError("--tls-self-signed makes its own certificate: leave out --tls-cert and --tls-key")
        return development_files(development_folder())
    if args.tls_cert is None and args.tls_key is None:
        return None
    return checked(args.tls_cert, args.tls_key)


def origin(args: argparse.Namespace) -> str:
    """Where the server can be reached, as a user types it."""
    return f"{'https' if args.tls else 'http'}://{args.host}:{args.port}"


def say_tls(args: argparse.Namespace) -> None:
    """The line a user needs to trust the development CA (nothing for their own certificate)."""
    if args.tls is not None and args.tls.ca is not None:
        print(f"mockserver: HTTPS with a development certificate for {', '.join(DEV_NAMES)}; trust its CA "
              f"{args.tls.ca} (curl --cacert {args.tls.ca} {origin(args)}/…, or import it in a browser)",
              file=sys.stderr, flush=True)


def located(args: argparse.Namespace) -> tuple[Path, Path | None] | None:
    """`sources`, or None after saying that there is no description."""
    try:
        return sources(args)
    except NoDescription as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
        return None


def add_workers(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes (default 1); more than one needs a shared --state")


def unshared_workers(args: argparse.Namespace, split: str) -> bool:
    """True, after saying why, when --workers N has no --state: each worker would keep its own `split`; the
    memory store, asked for by name, is only warned of (`warn_unshared`)."""
    if args.workers > 1 and args.state is None:
        print(f"mockserver: --workers {args.workers} needs a shared state store, or each worker keeps its own "
              f"{split}: add --state redis://HOST:6379/0 (or --state memory to accept that split)", file=sys.stderr)
        return True
    return False


def warn_unshared(args: argparse.Namespace, shared: bool, split: str) -> None:
    if args.workers > 1 and not shared:
        print(f"mockserver: warning: --state memory with --workers {args.workers}: each worker keeps its own {split}",
              file=sys.stderr)


def load_served(args: argparse.Namespace, spec: Path, fixtures: Path | None) -> Pipeline | None:
    """What `serve` and `proxy` hand their workers, loaded once before they fork, on the store --state names;
    None after saying why it cannot be (the description, the fixtures or the store are unusable)."""
    from ..web.app import load_pipeline

    try:
        return load_pipeline(spec, fixtures, options_from(args, cursor_secret=cursor_secret(args.state),
                                                                dashboard=not args.no_control))
    except LoadError as exc:
        report(exc)
    except StateError as exc:
        print(f"mockserver: {exc}", file=sys.stderr)
    return None


def serve_until_stopped(factory: Callable[[], MockFlask], args: argparse.Namespace, workers: int) -> int:
    """Serve on Granian until stopped; each worker builds its app with `factory` (web/serving.py)."""
    from ..web.serving import Listening, counted, serve

    with counted(args.metrics):
        serve(factory, Listening(args.host, args.port, workers, args.threads, args.runtime_threads,
                                 args.backpressure, args.body_timeout, args.tls, args.http), args.log_level)
    return 0



def refusal_message(body: str) -> str:
    """What a mock's refusal says (its API's envelope: `error.message`, else RFC 7807's `detail`), e.g. the names
    of the APIs a mock of several serves, one of which `--api` must name."""
    try:
        found = json.loads(body)
    except ValueError:
        found = None
    if isinstance(found, dict):
        error = found.get("error")
        said = error.get("message") if isinstance(error, dict) else found.get("detail")
        if isinstance(said, str):
            return said
    return body[:200]


def api_mount(url: str | None, api: str, control_token: str | None) -> tuple[str, dict[str, Any]]:
    """(the mock's origin, where its API `api` is mounted: `host`, `prefix`, `basePath`), as the running mock at
    `url` says (`serve --api`); ValueError saying why it cannot be known."""
    from ..testing import ControlError, MockClient  # here: the other commands load no Flask

    if url is None:
        raise ValueError(f"--api {api} names an API of a running mock of several: give its address with --url")
    try:
        mount = MockClient(url, control_token=control_token, api=api).mount()
    except ControlError as exc:
        raise ValueError(f"{url} answered {exc.status} for /__mock/health?api={api}: "
                         f"{refusal_message(exc.body)}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ValueError(f"cannot ask {url} where API {api} is: {getattr(exc, 'reason', exc)}") from None
    if mount["basePath"] is None:
        raise ValueError(f"{url} serves one API, not several: leave out --api")
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", "")), mount
