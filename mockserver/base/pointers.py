"""JSON Pointers (RFC 6901): what every error message uses to say where in a file or a body."""
from __future__ import annotations

from typing import Any


def escape_token(token: str) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def unescape_token(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def pointer_tokens(pointer: str) -> list[str]:
    """A pointer's tokens, unescaped (`/a~1b/0` → `["a/b", "0"]`; the whole value's `""` → `[]`)."""
    return [unescape_token(token) for token in pointer.split("/")[1:]]


def pointer_join(pointer: str, *tokens: Any) -> str:
    return pointer + "".join("/" + escape_token(str(t)) for t in tokens)
