"""Choosing the media type of an answer from the request's `Accept` header (RFC 9110 §12.5.1): q-values and
wildcards; JSON first when the client accepts anything. Nothing acceptable is a 406 listing what there is."""
from __future__ import annotations

from typing import TypeVar

from ..base.errors import MockError
from ..base.http import is_json

T = TypeVar("T")


def _ranges(accept: str) -> list[tuple[str, float]]:
    ranges = []
    for part in accept.split(","):
        media, *params = [p.strip() for p in part.split(";")]
        if not media:
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        ranges.append((media.lower(), q))
    return ranges


def _quality(media: str, ranges: list[tuple[str, float]]) -> float:
    """The q of the most specific range that covers the media type (0 when none does)."""
    major = media.split("/")[0]
    best, specificity = 0.0, -1
    for pattern, q in ranges:
        if pattern == media:
            rank = 2
        elif pattern == f"{major}/*":
            rank = 1
        elif pattern == "*/*":
            rank = 0
        else:
            continue
        if rank > specificity:
            best, specificity = q, rank
    return best


def negotiate(offered: dict[str, T], accept: str | None) -> T | None:
    """The offered media type the client prefers; JSON first among equals; None when nothing is offered."""
    if not offered:
        return None
    names = sorted(offered, key=lambda n: not is_json(n))
    if not accept or not accept.strip():
        return offered[names[0]]
    ranges = _ranges(accept)
    scored = [(q, -i, name) for i, name in enumerate(names) if (q := _quality(name.split(";")[0].lower(), ranges)) > 0]
    if not scored:
        raise MockError(406, f"nothing here matches Accept: {accept}; this answer comes as " + ", ".join(names),
                        code="not-acceptable", details={"accept": accept, "available": names})
    return offered[max(scored)[2]]
