"""What a request asks of its answer, and the answer decided before any body is built, as Prism's negotiator
does: `Prefer` read once (RFC 7240), the media type chosen from `Accept` (RFC 9110 §12.5.1: q-values and
wildcards; JSON first when the client accepts anything; nothing acceptable is a 406 listing what there is), and a
`Decision` (status, media type, source) that `Answers.build` turns into a body."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

from ..base.errors import MockError
from ..base.http import bare_media_type, is_json
from ..spec.index import MediaType

T = TypeVar("T")
_PREFER_SEPARATOR = re.compile(r"[,;]")


@dataclass(frozen=True)
class Prefer:
    """What a request's `Prefer` header (RFC 7240: `Prefer: code=503, example=busy`, also `;`-separated, as Prism
    accepts) asks of its answer, read once per request and handed to each step that picks the answer."""

    code: str | None = None  # `code=`: the status to answer (an error's is raised before any answer is made)
    example: str | None = None  # `example=`: the named example
    dynamic: bool = False  # varied generated data: `dynamic=true`, or `--dynamic` when the request says nothing
    asked_dynamic: bool = False  # the request's own `dynamic=true`, which skips the fixtures too
    callback_delay: int | None = None  # `callback-delay=<ms>`: how long after the answer its callbacks are sent

    @classmethod
    def read(cls, header: str, dynamic: bool) -> Prefer:
        """The preferences of `header`; `dynamic` is `--dynamic`, what a request that does not say gets."""
        given: dict[str, str] = {}
        for part in _PREFER_SEPARATOR.split(header):
            name, _, value = part.strip().partition("=")
            if name:
                given[name.strip().lower()] = value.strip().strip('"')
        asked = given.get("dynamic", "").lower()
        delay = given.get("callback-delay")
        if delay is not None and not (delay.isascii() and delay.isdigit()):
            raise MockError(400, f"Prefer: callback-delay={delay[:40]} is not a number of milliseconds",
                            details={"violations": [{"parameter": "Prefer", "in": "header", "pointer": "",
                                                     "rule": "callback-delay",
                                                     "message": "callback-delay takes a whole number of ms"}]})
        return cls(given.get("code"), given.get("example"), asked == "true" if asked else dynamic, asked == "true",
                   None if delay is None else int(delay))


@dataclass(frozen=True)
class Decision:
    """The answer of a request, decided before its body is built: the status, the media type, and where the body
    comes from (`source`: "fixture", "example" or "generated"); the headers the description fixes for the status
    are `Pipeline.declared_headers(op, status)`."""

    status: int
    media: MediaType | None
    source: str
    example: str | None = None  # "example": the example's name
    respond: int | None = None  # "fixture": which of its `respond` answers (None: its list, item or write)
    static: bool = True  # "generated": the examples first and every optional property, else varied data

    @property
    def media_type(self) -> str | None:
        return self.media.name if self.media else None


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
    scored = [(q, -i, name) for i, name in enumerate(names) if (q := _quality(bare_media_type(name), ranges)) > 0]
    if not scored:
        raise MockError(406, f"nothing here matches Accept: {accept}; this answer comes as " + ", ".join(names),
                        code="not-acceptable", details={"accept": accept, "available": names})
    return offered[max(scored)[2]]
