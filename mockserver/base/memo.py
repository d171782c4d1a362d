"""One bounded memo for the engine's caches keyed by schema identity (generation's plans and validators, the
validators' branch facts): work done once per schema, without a cache that grows with every description served."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def kept(cache: dict[Any, T], key: Any, make: Callable[[], T], size: int) -> T:
    """`cache[key]`, made once; past `size` entries the cache starts again empty. An entry must hold the schemas
    its key names by id, so that while it lives an id in a key is never another schema's."""
    found = cache.get(key)
    if found is None:
        if len(cache) >= size:
            cache.clear()
        found = cache[key] = make()
    return found
