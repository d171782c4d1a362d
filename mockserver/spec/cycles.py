"""Schemas that contain themselves so that no value can be made or checked, found once at start-up: a description
with one is refused with the schema's file, line and pointer instead of answering 500 on every request.

Two kinds are refused:
- a schema that includes itself through `$ref`s and `allOf` alone (A: allOf [B, …], B: allOf [A]): checking any
  value against it never ends (the validator recurses until the stack is gone);
- a schema each value of which needs another value of the same schema inside it, with no way out: a required
  property, or an array of at least one item, leading back to it (Node: required [next], next: Node).
A recursive schema with a way out is fine and is left alone: an optional property, an array that may be empty,
`null` or another type allowed, a `oneOf`/`anyOf` branch that does not recurse (a tree whose `children` is an
optional array of itself). Where this walk cannot tell, it takes the schema to have a way out.
"""
from __future__ import annotations

from typing import Any

from ..base.errors import Problem
from .documents import DocumentSet, RefError
from .schema_walk import below

_SCALARS = frozenset({"null", "boolean", "string", "number", "integer"})
_OBJECT_KEYWORDS = frozenset({"properties", "required", "additionalProperties", "patternProperties", "minProperties",
                              "maxProperties"})
_ARRAY_KEYWORDS = frozenset({"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"})
_SCALAR_KEYWORDS = frozenset({"minLength", "maxLength", "pattern", "format", "minimum", "maximum", "multipleOf",
                              "exclusiveMinimum", "exclusiveMaximum", "enum", "const"})
_NEVER: list[list[int]] = [[]]  # a group no schema satisfies: the requirement of `false`

Requirement = list[list[int]]  # every group needs one of its schemas (by id) to have a value; [] needs nothing


class _Finder:
    def __init__(self, docs: DocumentSet) -> None:
        self._docs = docs
        self.nodes: dict[int, tuple[Any, str]] = {}  # every schema reached, with its URI
        self.needs: dict[int, Requirement] = {}
        self.targets: set[int] = set()  # schemas a `$ref` names: where a cycle is reported
        self.includes: dict[int, list[int]] = {}  # the schemas each one's `$ref`s and `allOf`s include
        self.problems: list[Problem] = []
        self._loops: set[frozenset[int]] = set()
        self._todo: list[tuple[Any, str]] = []

    def walk(self, roots: list[tuple[Any, str]]) -> None:
        for node, uri in roots:
            self._add(node, uri)
        while self._todo:
            node, uri = self._todo.pop()
            self.needs[id(node)] = self._requirement(node, uri)

    def _add(self, node: Any, uri: str) -> int:
        """A schema met (as a part, a branch, a property or items): walked in its turn."""
        if id(node) not in self.nodes:
            self.nodes[id(node)] = (node, uri)
            self._todo.append((node, uri))
        return id(node)

    def _requirement(self, node: Any, uri: str) -> Requirement:
        """What a value of the schema needs of other schemas (its `$ref` and `allOf` parts merged)."""
        if node is True or not isinstance(node, (dict, bool)):
            return []
        parts = self._conjunction(node, uri)
        if parts is None:
            return _NEVER
        inside = {id(part) for part, _ in parts}
        self.includes[id(node)] = [key for key in inside if key in self.nodes]
        need: Requirement = []
        for part, part_uri in parts:
            for kind in ("oneOf", "anyOf"):
                branches = part.get(kind)
                # a choice one of whose branches this schema already is (Pet: oneOf [Cat], Cat: allOf [Pet]) is
                # made by the value itself, as the generator takes it
                if (isinstance(branches, list) and branches and not any(b is True for b in branches)
                        and not any(id(b) in inside for b in branches)):
                    need.append([self._add(b, below(part_uri, kind, i)) for i, b in enumerate(branches)])
        return need + self._of_kind(parts)

    def _of_kind(self, parts: list[tuple[dict[str, Any], str]]) -> Requirement:
        """What an object (its required properties) or an array (its items, when at least one is required) needs;
        nothing when the schema allows a scalar, or when it cannot be told."""
        declared = [frozenset([p["type"]] if isinstance(p["type"], str) else p["type"]) for p, _ in parts
                    if isinstance(p.get("type"), (str, list))]
        keys = {key for part, _ in parts for key in part}
        if declared:
            kinds = frozenset.intersection(*declared)
        elif keys & _SCALAR_KEYWORDS:
            return []
        else:
            kinds = frozenset({"object"} if keys & _OBJECT_KEYWORDS else ()) | (
                frozenset({"array"}) if keys & _ARRAY_KEYWORDS else frozenset())
        if not kinds or kinds & _SCALARS or len(kinds) > 1 or "enum" in keys or "const" in keys:
            return []
        need: Requirement = []
        if kinds == {"object"}:
            required = {name for part, _ in parts if isinstance(part.get("required"), list)
                        for name in part["required"] if isinstance(name, str)}
            declared_at = [(part["properties"][name], below(uri, "properties", name)) for part, uri in parts
                           if isinstance(part.get("properties"), dict) for name in required
                           if name in part["properties"]]
            if any(isinstance(s, dict) and (s.get("readOnly") is True or s.get("writeOnly") is True)
                   for s, _ in declared_at):
                return []  # left out of a request or of a response: this walk does not tell them apart
            need += [[self._add(schema, schema_uri)] for schema, schema_uri in declared_at]
        elif kinds == {"array"}:
            least = max((p["minItems"] for p, _ in parts if isinstance(p.get("minItems"), int)), default=0)
            if least > 0:
                need += [[self._add(p["items"], below(uri, "items"))] for p, uri in parts if "items" in p]
        return need

    def _conjunction(self, node: dict[str, Any] | bool, uri: str) -> list[tuple[dict[str, Any], str]] | None:
        """The schema and every schema its `$ref`s and `allOf`s include (each once); None when one is `false`.
        A schema that includes itself is a problem (said once per loop); the walk goes on without the repeat."""
        parts: list[tuple[dict[str, Any], str]] = []
        seen: set[int] = set()
        path: list[int] = []
        stack: list[tuple[Any, str, str | None]] = [(node, uri, None)]
        while stack:
            here, here_uri, via = stack.pop()
            if here is None:  # the end of a part's includes
                path.pop()
                continue
            if here is False:
                return None
            if not isinstance(here, dict):
                continue
            if id(here) in path:
                self._loop(path[path.index(id(here)):], via or here_uri)
                continue
            if id(here) in seen:
                continue
            seen.add(id(here))
            path.append(id(here))
            parts.append((here, here_uri))
            stack.append((None, "", None))
            ref = here.get("$ref")
            if isinstance(ref, str):
                try:
                    target, target_uri = self._docs.resolve(ref, here_uri)
                except RefError:  # said when the description was loaded
                    target = None
                if target is not None:
                    self.targets.add(self._add(target, target_uri))
                    stack.append((target, target_uri, below(here_uri, "$ref")))
            for index, sub in enumerate(here.get("allOf") or []):
                stack.append((sub, below(here_uri, "allOf", index), None))
        return parts

    def _loop(self, members: list[int], where: str) -> None:
        if frozenset(members) in self._loops:
            return
        self._loops.add(frozenset(members))
        self.problems.append(self._problem(where, "this schema includes itself through `$ref`s and `allOf` alone "
                                                  "(nothing nests between): no value can be checked against it",
                                           "cycle"))

    def _problem(self, uri: str, message: str, rule: str) -> Problem:
        file, line, pointer = self._docs.location(uri)
        return Problem(file, pointer, message, rule, line)

    def endless(self) -> list[Problem]:
        """The named schemas (targets of a `$ref`) that have no finite value because each needs itself."""
        made: set[int] = set()
        changed = True
        while changed:  # the schemas that have a value: those whose every group has one that has
            changed = False
            for key, need in self.needs.items():
                if key not in made and all(any(k in made for k in group) for group in need):
                    made.add(key)
                    changed = True
        stuck = {key for key in self.needs if key not in made}
        found = []
        for key in sorted(stuck & self.targets, key=lambda k: self.nodes[k][1]):
            if self._reaches(key, key, stuck):
                found.append(self._problem(self.nodes[key][1], "no finite value fits this schema: each value needs "
                                           "another of the same schema inside it (through required properties, "
                                           "non-empty arrays or `allOf`), with no way out (an optional property, "
                                           "null, another type, a `oneOf` branch that does not)", "cycle"))
        return found

    def _reaches(self, start: int, goal: int, within: set[int]) -> bool:
        """Whether `goal` is needed again below `start` (through what it needs, and what that includes)."""
        todo = [k for group in self.needs[start] for k in group if k in within]
        seen: set[int] = set()
        while todo:
            key = todo.pop()
            if key == goal:
                return True
            if key not in seen:
                seen.add(key)
                todo.extend(k for group in self.needs.get(key, []) for k in group if k in within)
                todo.extend(k for k in self.includes.get(key, []) if k in within)
        return False


def impossible_schemas(docs: DocumentSet, roots: list[tuple[Any, str]]) -> list[Problem]:
    """Every problem of the kinds the module names, among the schemas `roots` reach (each given with its URI)."""
    finder = _Finder(docs)
    finder.walk(roots)
    return finder.problems + finder.endless()
