"""`mockserver health`: whether a running mock is up (`--live`) or ready to serve (its state store reachable),
as an exit code. A container's HEALTHCHECK and Kubernetes' probes run it: they cannot carry the control token
themselves, and this reads it from MOCKSERVER_CONTROL_TOKEN like every other command."""
from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request

HELP = "whether a running mock is ready (exit 0), or with --live only whether it answers at all"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default="http://127.0.0.1:4010", help="the running mock (default %(default)s)")
    parser.add_argument("--control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                        help="the mock's control token, if it has one (env MOCKSERVER_CONTROL_TOKEN)")
    parser.add_argument("--live", action="store_true",
                        help="exit 0 while the mock answers at all, even when its shared state is unreachable "
                             "(a liveness probe: restarting the mock would not bring Redis back)")
    parser.add_argument("--timeout", type=float, default=2.0, metavar="SECONDS",
                        help="seconds to wait for the answer (default %(default)s)")


def run(args: argparse.Namespace) -> int:
    """0 when ready (or, with --live, answering); 1 otherwise, after one line that says why."""
    token = {"X-Mock-Control-Token": args.control_token} if args.control_token else {}
    request = urllib.request.Request(f"{args.url.rstrip('/')}/__mock/health", headers=token)
    try:  # urllib, not testing.MockClient: a probe every few seconds should not import Flask
        with urllib.request.urlopen(request, timeout=args.timeout) as response:
            health = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        reason = _state(exc.read())
        if exc.code == 503 and args.live:
            print(f"live: {args.url} answers, but is not ready: {reason}", flush=True)
            return 0
        hints = {401: " (give its --control-token or MOCKSERVER_CONTROL_TOKEN)",
                 404: " (is its control API on: no --no-control?)", 503: f": {reason}"}
        print(f"mockserver: {args.url} is not ready: /__mock/health answered {exc.code}{hints.get(exc.code, '')}",
              file=sys.stderr, flush=True)
        return 1
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"mockserver: {args.url} does not answer: {getattr(exc, 'reason', exc)}", file=sys.stderr, flush=True)
        return 1
    apis = health.get("apis") or [health]  # a mock of several APIs answers for each
    print("ready: " + "; ".join(f"{api.get('title')} · {api.get('operations')} operations · state "
                                f"{api.get('state', {}).get('backend', '?')}" for api in apis), flush=True)
    return 0


def _state(body: bytes) -> str:
    """What a 503 of /__mock/health says of the state store, in a few words."""
    try:
        state = json.loads(body).get("state", {})
    except (ValueError, AttributeError):
        return "state-unavailable"
    return state.get("reason") or f"state store {state.get('backend', '?')} unreachable"
