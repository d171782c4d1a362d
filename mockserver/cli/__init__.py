"""The `mockserver` command: one module per subcommand, each with `HELP`, `add_arguments(parser)` and
`run(args) -> int` (the exit code), and, when its defaults come from somewhere before the command line (`serve`'s
`mockserver.yaml`), `configure(parser, args) -> int | None`; the flags they share, and the table of those that set
`Options`, in `flags`."""
from __future__ import annotations

import argparse

from ..cache import default_cache
from ..spec.documents import use_parse_cache
from . import contract, coverage, diff, health, proxy, record, serve, validate
from .flags import THREADS

__all__ = ["THREADS", "main"]

COMMANDS = {"serve": serve, "validate": validate, "contract": contract, "coverage": coverage, "proxy": proxy,
            "record": record, "diff": diff, "health": health}
DESCRIPTION = "`mockserver serve` and `mockserver validate`."  # what `mockserver --help` has always said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mockserver", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)
    subparsers = {name: commands.add_parser(name, help=command.HELP) for name, command in COMMANDS.items()}
    for name, command in COMMANDS.items():
        command.add_arguments(subparsers[name])
    args = parser.parse_args(argv)
    command = COMMANDS[args.command]
    configure = getattr(command, "configure", None)
    if configure is not None:  # it sets the command's defaults (an exit code when it cannot): read them again
        unusable = configure(subparsers[args.command], args)
        if unusable is not None:
            return unusable
        args = parser.parse_args(argv)
    use_parse_cache(default_cache())  # a description read before starts in milliseconds (mockserver/cache.py)
    return command.run(args)
