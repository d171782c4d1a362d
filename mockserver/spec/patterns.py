"""A description's `pattern`s are ECMA-262 regular expressions; Python's `re` reads most of them, but not the
Unicode property classes (`\\p{L}`, `\\p{Lu}`, `\\P{N}`, …) that descriptions of names and titles use. Such a
pattern is read with the `regex` module, which knows them, so checking a value against it is never the mock's own
500; one that neither can read is left unchecked, with one warning naming it. Generation (rstr, which parses with
`re`) gets the pattern with each property class in ASCII terms, so what it makes still matches."""
from __future__ import annotations

import logging
import re
from typing import Any

import regex

from ..base.bounded import BoundedCache

log = logging.getLogger("mockserver")
_CACHE_SIZE = 4096
_COMPILED: BoundedCache[str, Any] = BoundedCache(_CACHE_SIZE)
# the property classes a generated string is made from, in ASCII (they match the classes they stand for)
_ASCII = {"L": "A-Za-z", "Lu": "A-Z", "Ll": "a-z", "N": "0-9", "Nd": "0-9", "Letter": "A-Za-z",
          "Uppercase_Letter": "A-Z", "Lowercase_Letter": "a-z", "Number": "0-9", "Decimal_Number": "0-9"}
_PROPERTY = re.compile(r"\\p\{(?:General_Category=|gc=)?(\w+)\}")


def matcher(pattern: str) -> Any:
    """The compiled pattern (`search`, as JSON Schema's `pattern` asks), or None when it cannot be read."""
    return _COMPILED.made(pattern, lambda: _compiled(pattern))


def _compiled(pattern: str) -> Any:
    try:
        return re.compile(pattern)
    except re.error:
        pass
    try:
        return regex.compile(pattern, regex.V1)
    except regex.error as exc:
        log.warning("the pattern %r is no regular expression this mock can read (%s): values are not checked "
                    "against it", pattern, exc)
        return None


def for_generation(pattern: str) -> str:
    """The pattern with each Unicode property class `re` cannot parse written in ASCII (`\\p{Lu}` → `A-Z`), inside
    a class or as one; an unknown one is left as it is (generation then says it cannot use the pattern)."""
    if "\\p{" not in pattern:
        return pattern
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            found = _PROPERTY.match(pattern, i)
            if found and found.group(1) in _ASCII:
                ascii_class = _ASCII[found.group(1)]
                out.append(ascii_class if in_class else f"[{ascii_class}]")
                i = found.end()
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        i += 1
    return "".join(out)
