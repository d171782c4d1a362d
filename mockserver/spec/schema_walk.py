"""Finding the schema of a part of a value (a property, the items of an array) through `$ref`s and the schemas
a schema is made of (`allOf`, `oneOf`, `anyOf`): what the XML writer and the answers' request echo need."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base.bounded import BoundedCache
from ..base.pointers import pointer_join
from .schemas import Resolve

_MAX_DEPTH = 32  # of `$ref`s followed for one part of a value (a loop of refs stops there)
_PARTS = 8192  # schemas whose parts are cached
Parts = Sequence[tuple[dict[str, Any], str]]  # a schema's parts, read only: `parts` gives every caller one tuple


class SchemaWalk:
    """`resolve` follows `$ref`s across the description's files (None: refs are not followed)."""

    def __init__(self, resolve: Resolve | None) -> None:
        self._resolve = resolve
        self._parts: BoundedCache[tuple[int, str], tuple[Any, Parts]] = BoundedCache(_PARTS)  # each with its node

    def deref(self, node: Any, uri: str) -> tuple[Any, str]:
        for _ in range(_MAX_DEPTH):
            if self._resolve is None or not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                break
            node, uri = self._resolve(node["$ref"], uri)
        return node, uri

    def parts(self, node: Any, uri: str) -> Parts:
        """The schema and those it is made of, where properties and items may be declared: found once per schema
        (a stateful write asks for them at every level of the item, on every write)."""
        return self._parts.made((id(node), uri), lambda: (node, tuple(self._parts_of(node, uri))))[1]

    def _parts_of(self, node: Any, uri: str, depth: int = 0) -> list[tuple[dict[str, Any], str]]:
        node, uri = self.deref(node, uri)
        if not isinstance(node, dict) or depth > _MAX_DEPTH:
            return []
        found = [(node, uri)]
        for key in ("allOf", "oneOf", "anyOf"):
            for index, sub in enumerate(node.get(key) or []):
                found += self._parts_of(sub, below(uri, key, index), depth + 1)
        return found

    def property(self, node: Any, uri: str, name: str) -> tuple[Any, str]:
        """The schema of property `name` (None when no part declares it)."""
        for part, part_uri in self.parts(node, uri):
            props = part.get("properties")
            if isinstance(props, dict) and name in props:
                return self.deref(props[name], below(part_uri, "properties", name))
        return None, uri

    def items(self, node: Any, uri: str) -> tuple[Any, str]:
        """The schema of an array's items (None when no part declares one)."""
        for part, part_uri in self.parts(node, uri):
            if isinstance(part.get("items"), dict):
                return self.deref(part["items"], below(part_uri, "items"))
        return None, uri

    def string_enums(self, node: Any, uri: str) -> dict[str, list[str]]:
        """A schema's top-level properties that take one of a few strings (`status: [active, paused]`), with those
        strings: the states an action sets (`pause` → `paused`, fixtures' inference) or a write ends in."""
        found: dict[str, list[str]] = {}
        for part, part_uri in self.parts(node, uri):
            for name in part.get("properties") or {}:
                values = [value for sub, _ in self.parts(*self.property(part, part_uri, name))
                          for value in sub.get("enum") or [] if isinstance(value, str)]
                if values:
                    found.setdefault(name, values)
        return found

    def page_items(self, node: Any, uri: str, field: str) -> tuple[Any, str]:
        """The schema of the items a list's or search's page holds: those of its array property `field`, or its
        own where the page is the array itself (`field` empty); None when no part declares them."""
        return self.items(*(self.property(node, uri, field) if field else self.deref(node, uri)))

    def one_item(self, node: Any, uri: str) -> tuple[Any, str]:
        """The schema of one item of an answer or a body: its items' where it is an array (Prefect's `POST
        /deployments/{id}/schedules` makes and answers several), else its own."""
        node, uri = self.deref(node, uri)
        return self.items(node, uri) if isinstance(node, dict) and node.get("type") == "array" else (node, uri)

    def bounds(self, node: Any, uri: str) -> tuple[int, int | None]:
        """An array's minItems and maxItems, the tightest of its parts."""
        low, high = 0, None
        for part, _ in self.parts(node, uri):
            if isinstance(part.get("minItems"), int):
                low = max(low, part["minItems"])
            if isinstance(part.get("maxItems"), int):
                high = part["maxItems"] if high is None else min(high, part["maxItems"])
        return low, high


def below(uri: str, *tokens: object) -> str:
    """The URI of a node inside the one at `uri` (a document's root has no fragment yet: `file:///a.yml`), so
    relative `$ref`s inside it still resolve against its file."""
    base, _, fragment = uri.partition("#")
    return base + "#" + pointer_join(fragment, *tokens)
