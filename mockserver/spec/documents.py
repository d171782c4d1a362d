"""Reading YAML/JSON documents with the line of every node, and resolving `$ref`s between them.

Everything is read once at start-up. Lines are kept per JSON pointer so a problem found later (a fixture that
breaks its schema, a bad parameter) can be reported as `file:line`.
"""
from __future__ import annotations

import hashlib
import json
import marshal
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import yaml

from ..base.errors import LoadError, Problem
from ..base.pointers import pointer_join, unescape_token

try:  # the C parser is several times faster on large descriptions
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _BaseLoader = yaml.SafeLoader


_READER = 2  # bump when what _build makes of a file changes: entries of the parse cache made before are not read
# what a parse cache entry depends on besides the file's bytes: marshal's format, PyYAML, and how this module reads
_PARSED_BY = f"{sys.version}|{yaml.__version__}|{_BaseLoader.__name__}|{_READER}".encode()


# Limits of one file, so a hostile or broken one is refused at start-up in milliseconds instead of exhausting memory
# or the stack: the deepest description of the corpus (openai's) nests 22 levels, its largest YAML file (openai's,
# 3 MB) has 110,000 nodes. A YAML alias counts as all the nodes it stands for: a 1 kB "billion laughs" expands to
# a billion values when read.
MAX_FILE_DEPTH = 64
MAX_NODES = 1_000_000


class ParseCache(Protocol):
    """Where parsed YAML is kept between starts (mockserver/cache.py); the engine itself writes no file."""

    def get(self, key: str) -> bytes | None: ...

    def put(self, key: str, blob: bytes) -> None: ...


_cache: ParseCache | None = None


def use_parse_cache(cache: ParseCache | None) -> None:
    """Installed once by the command line (tests and embedders parse every time unless they install one)."""
    global _cache
    _cache = cache


class _Loader(_BaseLoader):
    """SafeLoader that leaves timestamps as strings: JSON has no dates, and a fixture's `addedAt` must stay text."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()  # type: ignore[attr-defined]
}


@dataclass
class Document:
    """A parsed file: its data and the line where each JSON pointer starts (empty for JSON files)."""

    path: Path
    data: Any
    lines: dict[str, int]

    def __post_init__(self) -> None:
        self.uri = self.path.resolve().as_uri()  # asked for on every $ref: worked out once

    def line(self, pointer: str) -> int | None:
        """The line of the pointer, or of its nearest parent that has one."""
        while True:
            if pointer in self.lines:
                return self.lines[pointer]
            if not pointer:
                return None
            pointer = pointer.rsplit("/", 1)[0]

    def problem(self, pointer: str, message: str, rule: str = "") -> Problem:
        return Problem(str(self.path), pointer, message, rule, self.line(pointer))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return node.value if isinstance(node, yaml.SequenceNode) else []


def _measure(root: yaml.Node, path: Path) -> None:
    """Refuse a file `_build` would expand past MAX_NODES or MAX_FILE_DEPTH, or an alias inside the node it names (it
    would never end), before anything is built: a walk of the distinct collections, each alias weighted by the size
    of what it names (kept per node), so a bomb costs as little as its text."""
    size: dict[int, int] = {}  # of each collection walked (a scalar is 1)
    height: dict[int, int] = {}
    inside: set[int] = set()  # the collections on the way down to the one being walked
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, level, done = stack.pop()
        key = id(node)
        if done:
            children = _children(node)
            size[key] = total = 1 + sum(size.get(id(child), 1) for child in children)
            height[key] = tall = 1 + max((height.get(id(child), 1) for child in children), default=0)
            inside.discard(key)
            if total > MAX_NODES:
                raise _too_big(path, node, f"expands to more than {MAX_NODES:,} values (YAML aliases count for "
                                           "every node they repeat)", "size")
            if level + tall - 1 > MAX_FILE_DEPTH:
                raise _too_big(path, node, f"nested deeper than {MAX_FILE_DEPTH} levels", "depth")
        elif key in size:  # an alias to a collection walked before
            if level + height[key] - 1 > MAX_FILE_DEPTH:
                raise _too_big(path, node, f"nested deeper than {MAX_FILE_DEPTH} levels", "depth")
        elif key in inside:
            raise _too_big(path, node, "an alias names a node that contains it: it would never end", "alias")
        else:
            inside.add(key)
            stack.append((node, level, True))
            stack.extend((child, level + 1, False) for child in _children(node)
                         if not isinstance(child, yaml.ScalarNode))


def _too_big(path: Path, node: yaml.Node, message: str, rule: str) -> LoadError:
    return LoadError([Problem(str(path), "", message, rule, node.start_mark.line + 1)])


def _build(node: yaml.Node, loader: _Loader, pointer: str, lines: dict[str, int], problems: list[Problem],
           path: Path) -> Any:
    lines[pointer] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                problems.append(Problem(str(path), pointer, f"a mapping key must be a scalar, not {key!r}",
                                        "key", key_node.start_mark.line + 1))
                continue
            key = key if isinstance(key, str) else _scalar_key(key)
            if key in result:
                problems.append(Problem(str(path), pointer_join(pointer, key), f"duplicate key {key!r}",
                                        "duplicate-key", key_node.start_mark.line + 1))
                continue
            child = pointer_join(pointer, key)
            result[key] = _build(value_node, loader, child, lines, problems, path)
            lines[child] = key_node.start_mark.line + 1  # a block mapping's value starts a line below its key
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, loader, pointer_join(pointer, i), lines, problems, path)
                for i, item in enumerate(node.value)]
    try:
        return loader.construct_object(node, deep=True)
    except ValueError as exc:  # an integer longer than Python reads (sys.get_int_max_str_digits)
        problems.append(Problem(str(path), pointer, f"a value Python cannot read: {exc}", "number",
                                node.start_mark.line + 1))
        return None


def _scalar_key(key: Any) -> str:
    """YAML reads `200:` as an int; OpenAPI and JSON keys are strings."""
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    return str(key)


def read_document(path: Path) -> Document:
    """Parse one YAML or JSON file; raise LoadError naming the file and line on bad syntax or duplicate keys."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LoadError([Problem(str(path), "", f"cannot read the file: {exc}", "read")]) from None
    if path.suffix.lower() == ".json":
        return _read_json(path, text)
    cache = _cache
    if cache is None:
        return _parse_yaml(path, text)
    key = hashlib.sha256(_PARSED_BY + text.encode()).hexdigest()
    if (blob := cache.get(key)) is not None:
        try:
            data, lines = marshal.loads(blob)
            return Document(path, data, lines)
        except (EOFError, ValueError, TypeError):  # a torn or foreign entry: parse again (and rewrite it)
            pass
    document = _parse_yaml(path, text)  # a file with problems raises here: only clean parses are kept
    try:
        cache.put(key, marshal.dumps((document.data, document.lines)))
    except ValueError:  # a value marshal cannot hold (an explicit !!timestamp): parsed every time
        pass
    return document


def _parse_yaml(path: Path, text: str) -> Document:
    loader = _Loader(text)
    problems: list[Problem] = []
    try:
        node = loader.get_single_node()
        if node is not None:
            _measure(node, path)
        lines: dict[str, int] = {}
        data = _build(node, loader, "", lines, problems, path) if node is not None else None
    except yaml.YAMLError as exc:
        # the kind of problem and where, never the parser's snippet of the file (`str(exc)` quotes its line)
        mark = getattr(exc, "problem_mark", None)
        where = f" (column {mark.column + 1})" if mark else ""
        raise LoadError([Problem(str(path), "", f"not valid YAML: {getattr(exc, 'problem', None) or type(exc).__name__}"
                                 f"{where}", "syntax", mark.line + 1 if mark else None)]) from None
    finally:
        loader.dispose()
    if problems:
        raise LoadError(problems)
    return Document(path, data, lines)


def _read_json(path: Path, text: str) -> Document:
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise _DuplicateKey(f"duplicate key {key!r}")
            result[key] = value
        return result

    try:
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except RecursionError:  # nested thousands deep: the parser gives up before MAX_FILE_DEPTH is checked
        raise LoadError([Problem(str(path), "", f"nested deeper than {MAX_FILE_DEPTH} levels", "depth")]) from None
    except json.JSONDecodeError as exc:
        raise LoadError([Problem(str(path), "", f"not valid JSON: {exc.msg} (column {exc.colno})", "syntax",
                                 exc.lineno)]) from None
    except _DuplicateKey as exc:
        raise LoadError([Problem(str(path), "", str(exc), "duplicate-key")]) from None
    except ValueError as exc:  # an integer longer than Python reads
        raise LoadError([Problem(str(path), "", f"a value Python cannot read: {exc}", "number")]) from None
    if _deeper_than(data, MAX_FILE_DEPTH):
        raise LoadError([Problem(str(path), "", f"nested deeper than {MAX_FILE_DEPTH} levels", "depth")])
    return Document(path, data, {})


class _DuplicateKey(ValueError):
    """A key given twice in one JSON object."""


def _deeper_than(data: Any, limit: int) -> bool:
    """Whether a JSON value nests more than `limit` levels, its scalars a level too, as YAML's are counted."""
    stack = [(data, 1)]
    while stack:
        value, level = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        if children and level >= limit:
            return True
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return False


class RefError(Exception):
    """A `$ref` that points nowhere, or a chain of refs that loops."""


class OutsideFolder(RefError):
    """A `$ref` to a file outside the folders a description may read: refused before the file is opened, so
    nothing of it can reach an answer, a log line or a message."""


def inside(path: Path, folders: Iterable[Path]) -> bool:
    """Whether the file, its symlinks followed, lies in one of the (real, resolved) folders."""
    real = path.resolve()
    return any(real.is_relative_to(folder) for folder in folders)


def outside_message(path: Path, folders: tuple[Path, ...], what: str, *, shared: bool = True) -> str:
    """Names the file, where it leads and the folders it may be in; never anything of its content. `shared`: the
    folders can be widened with `--allow-ref-outside`."""
    real = path.resolve()
    shown = str(path) if real == Path(os.path.normpath(path.absolute())) else f"{path} (a link to {real})"
    others = f" or {', '.join(map(str, folders[1:]))}" if len(folders) > 1 else ""
    hint = " (let a shared folder in with --allow-ref-outside DIR)" if shared else ""
    return f"{shown} lies outside {what} {folders[0]}{others}: not read{hint}"


class DocumentSet:
    """The documents of one description, by URI, loaded on first reference; resolves `$ref`s between them."""

    def __init__(self, root: Path, allowed: Iterable[Path] = ()) -> None:
        """`allowed`: folders besides the root's own that its `$ref`s may read (`--allow-ref-outside`)."""
        self.folders = (root.resolve().parent, *(Path(folder).resolve() for folder in allowed))
        self._transform: Callable[[Any], Any] | None = None
        self._docs: dict[str, Document] = {}
        # what each ($ref, base) resolves to: generation follows the same few hundred $refs for every value it makes
        self._resolved: dict[tuple[str, str], tuple[Any, str]] = {}
        self.root = self._load(root.resolve().as_uri())

    def set_transform(self, transform: Callable[[Any], Any]) -> None:
        """Rewrite every document, loaded and to come (the dialect is known only once the root is read)."""
        self._transform = transform
        self._resolved.clear()
        for doc in self._docs.values():
            doc.data = transform(doc.data)

    def _load(self, uri: str) -> Document:
        doc = self._docs.get(uri)
        if doc is None:
            path = self.file_of(uri)
            if not path.is_file():
                raise RefError(f"no file {path}")
            doc = read_document(path)
            if self._transform is not None:
                doc.data = self._transform(doc.data)
            self._docs[uri] = doc
        return doc

    def file_of(self, uri: str) -> Path:
        """The file a `file:` URI names; RefError for any other URI, OutsideFolder for a file outside the folders
        (symlinks followed)."""
        parts = urlsplit(uri)
        if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
            raise RefError(f"only local files can be referenced, not {uri}")
        path = Path(unquote(parts.path))
        if not inside(path, self.folders):
            raise OutsideFolder(outside_message(path, self.folders, "the description's folder"))
        return path

    def document(self, uri: str) -> Document:
        return self._load(urldefrag(uri)[0])

    @property
    def documents(self) -> dict[str, Document]:
        return self._docs

    def lookup(self, uri: str) -> Any:
        """The node at `file:///doc#/pointer`, without following a `$ref` found there."""
        doc_uri, fragment = urldefrag(uri)
        node = self._load(doc_uri).data
        if not fragment:
            return node
        if not fragment.startswith("/"):
            raise RefError(f"only JSON pointer fragments are supported, not #{fragment}")
        for raw in fragment[1:].split("/"):
            token = unescape_token(unquote(raw))
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise RefError(f"{uri} points to nothing (no {token!r})")
        return node

    def resolve(self, ref: str, base_uri: str) -> tuple[Any, str]:
        """Follow `ref` from `base_uri`, and any `$ref`-only nodes after it; return the node and its URI (kept)."""
        found = self._resolved.get((ref, base_uri))
        if found is None:
            found = self._resolved[ref, base_uri] = self._follow(ref, base_uri)
        return found

    def _follow(self, ref: str, base_uri: str) -> tuple[Any, str]:
        seen: set[str] = set()
        uri = urljoin(base_uri, ref)
        while True:
            if uri in seen:
                raise RefError(f"$ref loop through {uri}")
            seen.add(uri)
            node = self.lookup(uri)
            if isinstance(node, dict) and isinstance(node.get("$ref"), str) and len(node) == 1:
                uri = urljoin(uri, node["$ref"])
                continue
            return node, uri

    def deref(self, node: Any, uri: str) -> tuple[Any, str]:
        """The node itself, or what its `$ref` points to (OpenAPI objects other than schemas are `$ref`-only)."""
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            return self.resolve(node["$ref"], uri)
        return node, uri

    def location(self, uri: str) -> tuple[str, int | None, str]:
        """File, line and pointer of a URI, for messages."""
        doc_uri, fragment = urldefrag(uri)
        doc = self._docs.get(doc_uri)
        path = str(doc.path) if doc else doc_uri
        return path, (doc.line(fragment) if doc else None), fragment
