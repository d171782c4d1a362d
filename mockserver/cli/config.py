"""`mockserver.yaml`: the APIs one mock serves and `serve`'s flags, in a file `serve` reads from the working folder
(or `--config FILE`). Its `apis` are what `--api` says; any other key is a flag of `serve` by its name without
`--` (`port: 4011`, `log-level: warning`, `accept-token: [a, b]`), which the command line overrides. Paths are
relative to the file's folder. Every problem is a `Problem` naming the file, the line and the key."""
from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import LoadError, Problem
from ..spec.documents import Document, read_document

if TYPE_CHECKING:
    from ..web.mounts import Api

CONFIG_FILE = "mockserver.yaml"  # read from the working folder when present
API_KEYS = ("name", "spec", "fixtures", "prefix", "host")
NOT_FLAGS = ("api", "config", "help")  # flags a file cannot set: it says `apis`, and it is the config


@dataclass(frozen=True)
class Config:
    path: Path
    apis: list[Api]
    flags: dict[str, Any]  # by argparse dest, converted as the command line would


def read_config(path: Path, actions: Iterable[argparse.Action]) -> Config:
    """The file's APIs and flags (`actions`: those of `serve`'s parser); LoadError with every problem found."""
    from ..web.mounts import check_mounts

    document = read_document(path)
    if not isinstance(document.data, dict):
        raise LoadError([Problem(str(path), "", "expected a mapping: apis, and serve's flags by name", "type", 1)])
    by_flag = {name[2:]: action for action in actions for name in action.option_strings
               if name.startswith("--") and name[2:] not in NOT_FLAGS}
    problems: list[Problem] = []
    apis: list[Api] = []
    flags: dict[str, Any] = {}
    for key, value in document.data.items():
        if key == "apis":
            apis = _apis(document, value, problems)
        elif key in by_flag:
            _flag(document, key, value, by_flag[key], flags, problems)
        else:
            problems.append(_problem(document, f"/{key}", f"unknown key {key!r}: expected apis or a flag of serve "
                                                          f"({', '.join(sorted(by_flag))})", "unknown"))
    if not problems and apis:
        try:
            check_mounts(apis)
        except ValueError as exc:
            problems.append(_problem(document, "/apis", str(exc), "unique"))
    if problems:
        raise LoadError(problems)
    return Config(path, apis, flags)


def _problem(document: Document, pointer: str, message: str, rule: str) -> Problem:
    return Problem(str(document.path), pointer, message, rule, document.line(pointer))


def _apis(document: Document, value: Any, problems: list[Problem]) -> list[Api]:
    from ..web.mounts import checked_api

    if not isinstance(value, list) or not value:
        problems.append(_problem(document, "/apis", "apis: expected a list of APIs, each with name and spec",
                                 "type"))
        return []
    found: list[Api] = []
    folder = document.path.parent
    for index, entry in enumerate(value):
        at = f"/apis/{index}"
        if not isinstance(entry, dict):
            problems.append(_problem(document, at, "expected a mapping with name, spec and optionally fixtures, "
                                                   "prefix, host", "type"))
            continue
        wrong = [key for key in entry if key not in API_KEYS]
        wrong += [key for key, given in entry.items() if key in API_KEYS and not isinstance(given, str)]
        missing = [key for key in ("name", "spec") if key not in entry]
        for key in wrong:
            problems.append(_problem(document, f"{at}/{key}", f"{key!r}: expected one of {', '.join(API_KEYS)}, "
                                                              f"each a string", "unknown"))
        for key in missing:
            problems.append(_problem(document, at, f"API {index} has no {key!r}", "required"))
        if wrong or missing:
            continue
        fixtures = entry.get("fixtures")
        try:
            found.append(checked_api(entry["name"], folder / entry["spec"], folder / fixtures if fixtures else None,
                                     entry.get("prefix"), entry.get("host")))
        except ValueError as exc:
            problems.append(_problem(document, at, str(exc), "format"))
    return found


def _flag(document: Document, key: str, value: Any, action: argparse.Action, flags: dict[str, Any],
          problems: list[Problem]) -> None:
    """`value` as the flag `--key` would set it; a problem when the flag would refuse it."""
    pointer = f"/{key}"
    try:
        if action.nargs == 0:  # a switch: store_true
            if not isinstance(value, bool):
                raise argparse.ArgumentTypeError(f"expected true or false, not {value!r}")
            flags[action.dest] = value if action.const is True else not value
            return
        values = value if isinstance(value, list) and isinstance(action, argparse._AppendAction) else [value]
        converted = []
        for one in values:
            if isinstance(one, (dict, list)) or one is None:
                raise argparse.ArgumentTypeError(f"expected a value, not {one!r}")
            text = str(one).lower() if isinstance(one, bool) else str(one)
            read = action.type(text) if callable(action.type) else text
            if action.choices is not None and read not in action.choices:
                raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(map(str, action.choices))}")
            converted.append(read)
        flags[action.dest] = converted if isinstance(action, argparse._AppendAction) else converted[0]
    except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
        problems.append(_problem(document, pointer, f"{key}: {exc}", "type"))
