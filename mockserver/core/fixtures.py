"""Reading the fixtures folder: every YAML file checked against the fixture format, then merged into settings,
collections and operation configs. Every problem is kept with its file, line and pointer."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from .documents import Document, inside, outside_message, pointer_join, read_document
from .errors import LoadError, Problem
from .fixture_format import SCHEMA
from .json_values import find_unservable_fast, unservable_message
from .schemas import instance_pointer, iter_errors

_FORMAT = Draft202012Validator(SCHEMA)


@dataclass
class Located:
    """A piece of a fixture file with where it came from, for messages."""

    value: Any
    doc: Document
    pointer: str

    def problem(self, message: str, rule: str = "", *tokens: Any) -> Problem:
        return self.doc.problem(pointer_join(self.pointer, *tokens), message, rule)


@dataclass
class Collection:
    name: str
    items: list[dict[str, Any]]
    private: frozenset[str]
    key: list[str]
    schema: str | None
    where: Located

    def public(self, item: dict[str, Any]) -> dict[str, Any]:
        """The item as served: private fields left out."""
        if not self.private:
            return item
        return {k: v for k, v in item.items() if k not in self.private}

    def item_problem(self, index: int, message: str, rule: str = "", pointer: str = "") -> Problem:
        doc = self.where.doc
        return doc.problem(pointer_join(self.where.pointer, "items", index) + pointer, message, rule)


@dataclass
class FixtureSet:
    settings: dict[str, Any] = field(default_factory=dict)
    collections: dict[str, Collection] = field(default_factory=dict)
    operations: dict[str, Located] = field(default_factory=dict)
    scenarios: list[Located] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # files with problems are left out of the rest


def load_fixtures(folder: Path | None, allowed: tuple[Path, ...] = ()) -> FixtureSet:
    """Every `*.yaml`/`*.yml`/`*.json` below the folder, in path order. Problems are collected in `problems`
    (not raised) so the caller can add those it finds in the rest and report them all at once. A symlink that
    leads out of the folder (and out of the `allowed` ones, `--allow-ref-outside`) is a problem, its file unread."""
    result = FixtureSet()
    if folder is None:
        return result
    if not folder.is_dir():
        result.problems.append(Problem(str(folder), "", "the fixtures folder does not exist", "read"))
        return result
    problems = result.problems
    paths = sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".yaml", ".yml", ".json") and p.is_file())
    settings_from: dict[str, Located] = {}
    collections_from: dict[str, Located] = {}
    folders = (folder.resolve(), *(f.resolve() for f in allowed))
    for path in paths:
        if not inside(path, folders):
            problems.append(Problem(str(path), "", outside_message(path, folders, "the fixtures folder"),
                                    "outside-folder"))
            continue
        try:
            doc = read_document(path)
        except LoadError as exc:
            problems.extend(exc.problems)
            continue
        result.files.append(path)
        if doc.data is None:
            continue
        errors = list(iter_errors(_FORMAT, doc.data))
        if (unservable := find_unservable_fast(doc.data)) is not None:  # it could be neither served nor stored
            problems.append(doc.problem(unservable[0], unservable_message(None, unservable[1]), unservable[1]))
            continue
        if errors:
            problems.extend(doc.problem(instance_pointer(e), f"not in the fixture format: {e.message}",
                                        str(e.validator))
                            for e in errors)
            continue
        for key, here in _entries(doc, "settings", settings_from, problems):
            result.settings[key] = here.value
        for name, here in _entries(doc, "collections", collections_from, problems):
            raw = here.value
            collection = Collection(name, raw["items"], frozenset(raw.get("private", [])), raw.get("key", []),
                                    raw.get("schema"), here)
            problems.extend(_duplicate_keys(collection))
            result.collections[name] = collection
        _entries(doc, "operations", result.operations, problems)  # recorded in result.operations as they come
        result.scenarios.extend(Located(s, doc, pointer_join("/scenarios", i))
                                for i, s in enumerate(doc.data.get("scenarios") or []))
    return result


def _entries(doc: Document, section: str, seen: dict[str, Located],
             problems: list[Problem]) -> list[tuple[str, Located]]:
    """The entries of one top-level section of a file; a name already given in another file is a problem."""
    fresh = []
    for name, value in (doc.data.get(section) or {}).items():
        here = Located(value, doc, pointer_join("/" + section, name))
        if name in seen:
            problems.append(here.problem(f"{section}.{name} is also given in {seen[name].doc.path}", "duplicate"))
            continue
        seen[name] = here
        fresh.append((name, here))
    return fresh


def _duplicate_keys(collection: Collection) -> list[Problem]:
    if not collection.key:
        return []
    seen: dict[tuple[Any, ...], int] = {}
    problems = []
    for index, item in enumerate(collection.items):
        identity = tuple(repr(item.get(k)) for k in collection.key)
        if identity in seen:
            shown = ", ".join(f"{k}={item.get(k)!r}" for k in collection.key)
            problems.append(collection.item_problem(index, f"two items of {collection.name!r} have the key {shown} "
                                                           f"(the first is item {seen[identity]})", "duplicate-key"))
        else:
            seen[identity] = index
    return problems
