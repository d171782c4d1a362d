"""Secrets never reach a recording: the credentials requests carried, fields named as credentials (`password`,
`token`, … as in `secrets.BODY_NAMES`) and fields a user names, are replaced by pseudonyms of the same shape
wherever they appear (same value, same pseudonym: ids still join, UUIDs still fit their format; keyed by a secret
made per run, so no pseudonym gives its value away)."""
from __future__ import annotations

import hashlib
import secrets
import string
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..base.pointers import unescape_token
from ..spec.secrets import BODY_NAMES, MASK, MIN_SECRET

if TYPE_CHECKING:
    from ..spec.secrets import Secrets



class Redactor:
    """Replaces secrets by same-shaped pseudonyms: credentials wherever they appear, named fields where they stand
    (names, or JSON pointers into an answer's body where `*` is any key or index)."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        names = list(names)
        self.fields = frozenset(n for n in names if not n.startswith("/")) | BODY_NAMES  # a `password` too
        self.pointers = [tuple(unescape_token(t) for t in n.split("/")[1:]) for n in names if n.startswith("/")]
        self._secrets: set[str] = set()
        self._key = secrets.token_bytes(32)

    def learn(self, request: Any, secrets: Secrets) -> None:
        """Remember the credentials a request carries, to replace them wherever an answer repeats them."""
        self._secrets.update(s for s in secrets.carried(request) if len(s) >= MIN_SECRET)

    def body(self, value: Any) -> Any:
        """A copy with named fields replaced, and every known secret replaced inside every string."""
        self._collect(value, ())
        return self._walk(value, ())

    def params(self, values: dict[str, Any]) -> dict[str, Any]:
        """Request values (path or query) by name: named ones replaced, secrets replaced inside the others."""
        self._secrets.update(str(v) for k, v in values.items() if k in self.fields and len(str(v)) >= MIN_SECRET)
        return {k: self._pseudonym(v) if k in self.fields else self._walk(v, ()) for k, v in values.items()}

    def text(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, self._shape(secret))
        return text

    def _named(self, path: tuple[str, ...]) -> bool:
        if path and path[-1] in self.fields:
            return True
        return any(len(p) == len(path) and all(t in ("*", s) for t, s in zip(p, path)) for p in self.pointers)

    def _collect(self, value: Any, path: tuple[str, ...]) -> None:
        """Values of named fields become secrets too: a message that repeats one gets it replaced as well."""
        if self._named(path):
            self._secrets.update(s for s in _leaves(value) if len(s) >= MIN_SECRET and s != MASK)
        elif isinstance(value, dict):
            for key, sub in value.items():
                self._collect(sub, (*path, str(key)))
        elif isinstance(value, list):
            for index, sub in enumerate(value):
                self._collect(sub, (*path, str(index)))

    def _walk(self, value: Any, path: tuple[str, ...]) -> Any:
        if self._named(path):
            return self._pseudonym(value)
        if isinstance(value, dict):
            return {key: self._walk(sub, (*path, str(key))) for key, sub in value.items()}
        if isinstance(value, list):
            return [self._walk(sub, (*path, str(index))) for index, sub in enumerate(value)]
        return self.text(value) if isinstance(value, str) else value

    def _pseudonym(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {key: self._pseudonym(sub) for key, sub in value.items()}
        if isinstance(value, list):
            return [self._pseudonym(sub) for sub in value]
        if isinstance(value, bool) or value is None or value == MASK:  # masked already (a `writeOnly` value)
            return value
        if isinstance(value, (int, float)):
            return type(value)(self._shape(repr(value), letters=False))
        return self._shape(str(value))

    def _shape(self, text: str, letters: bool = True) -> str:
        """Digits stay digits, hex letters stay hex, letters stay letters of the same case; the rest is kept."""
        noise = hashlib.shake_256(self._key + text.encode()).digest(len(text))
        out = []
        for c, n in zip(text, noise):
            for alphabet in (string.digits, "abcdef", string.ascii_lowercase, "ABCDEF", string.ascii_uppercase):
                if c in alphabet and (letters or alphabet is string.digits):
                    c = alphabet[n % len(alphabet)]
                    break
            out.append(c)
        return "".join(out)


def _leaves(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for sub in value.values():
            yield from _leaves(sub)
    elif isinstance(value, list):
        for sub in value:
            yield from _leaves(sub)
    elif value is not None and not isinstance(value, bool):
        yield str(value)
