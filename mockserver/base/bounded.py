"""The one bounded cache of the engine: what a process remembers to answer faster (parsed parameter values, a
list's selected items, generated answers, written collections' views, generation's plans and validators, the
validators' branch facts, parsed patterns), never what it must not forget (that is `state.Store`'s).

`BoundedCache(size)` holds at most `size` entries. When it is full, the next new entry empties it first and the
cache fills again from the requests that follow: no bookkeeping per look-up (a look-up is a plain `dict.get`, so
the request path pays nothing for the bound), and a worker's memory stays flat whatever the traffic, at the price
of recomputing what was dropped. Its users guard it with their own lock where threads share it, or rely on a
dict's single operations being atomic where a lost entry is harmless (it is computed again)."""
from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar, cast

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_MISSING = object()


class BoundedCache(dict[K, V]):
    """A dict of at most `size` entries; full, it starts again empty (see the module)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: K, value: V) -> V:
        """Remember `value` under `key` (emptying the cache first when it is full) and return it."""
        if len(self) >= self.size and key not in self:
            self.clear()
        self[key] = value
        return value

    def made(self, key: K, make: Callable[[], V]) -> V:
        """`self[key]`, made by `make()` the first time (and again once the cache has started over). An entry
        keyed by an object's id must hold that object, so that while it lives the id is never another's."""
        found = self.get(key, _MISSING)
        return self.put(key, make()) if found is _MISSING else cast(V, found)
