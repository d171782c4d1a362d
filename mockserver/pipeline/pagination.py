"""Sealed cursors: opaque, signed, bound to one list (operation, path parameters, filters) and one caller, and
valid for a limited time. A replica with the same secret accepts another's cursors.

A cursor carries the rank of the last item served in the operation's order, so the next page starts right after
it: no item twice, none skipped, whatever `limit` each page asks for.
"""
from __future__ import annotations

import hashlib
import secrets
from typing import Any

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from ..base.errors import MockError

DAY = 24 * 60 * 60


class CursorSealer:
    def __init__(self, secret: str | None = None, *, max_age: int = DAY) -> None:
        secret = secret or secrets.token_hex(32)
        # itsdangerous's own SHA-1 is a Python wrapper, which makes `hmac` fall back to its pure-Python HMAC; the
        # same SHA-1 of hashlib seals the same cursors with OpenSSL's (a third of a page of a written list's cost)
        self._serializer = URLSafeTimedSerializer(secret, salt="mockserver.cursor",
                                                  signer_kwargs={"digest_method": hashlib.sha1})
        self._key = hashlib.sha256(f"mockserver.cursor|{secret}".encode()).hexdigest()[:8]  # names the secret
        self.max_age = max_age

    @staticmethod
    def binding(operation_id: str, values: str, caller_key: str) -> str:
        """A digest of everything the cursor is only valid for: the operation, the request values that choose
        the list (canonical JSON of path parameters and filters; not `limit`, which may change between pages)
        and the caller."""
        return hashlib.sha256(f"{operation_id}|{caller_key}|{values}".encode()).hexdigest()[:24]

    def seal(self, binding: str, last_rank: Any) -> str:
        """Called when a page is made: `ListQuery` keeps a page for the second its cursor's timestamp stands for."""
        return self._serializer.dumps({"b": binding, "r": last_rank, "k": self._key})

    def open(self, cursor: str, binding: str, parameter: str = "cursor", ranked: type = int) -> Any:
        """The rank after which the page starts (an int, or for `ranked=list` a collection written at run time's
        list of ints), or 400 saying why the cursor is refused."""
        try:
            payload = self._serializer.loads(cursor, max_age=self.max_age)
        except SignatureExpired:
            raise _refused(parameter, "expired", "the cursor has expired: start the list again without it") from None
        except BadSignature:
            if self._from_another_secret(cursor):
                raise _refused(parameter, "expired", "the cursor comes from an earlier run of the mock (its secret "
                                                     "has changed since): start the list again without it") from None
            raise _refused(parameter, "tampered", "the cursor is not one this server issued (tampered or "
                                                  "malformed): start the list again without it") from None
        if not isinstance(payload, dict) or payload.get("b") != binding or not _is_rank(payload.get("r"), ranked):
            raise _refused(parameter, "foreign", "the cursor belongs to another list, other filters or another "
                                                 "caller: start the list again without it")
        return payload["r"]


    def _from_another_secret(self, cursor: str) -> bool:
        """A well-formed cursor sealed with another secret (an earlier run), not a tampered one."""
        try:
            _, payload = self._serializer.loads_unsafe(cursor)
        except Exception:  # itsdangerous raises its own and the decoders' errors on garbage
            return False
        return isinstance(payload, dict) and isinstance(payload.get("k"), str) and payload["k"] != self._key


def _is_rank(value: Any, ranked: type) -> bool:
    if ranked is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, list) and bool(value) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value)


def _refused(parameter: str, reason: str, message: str) -> MockError:
    return MockError(400, message, details={"violations": [
        {"parameter": parameter, "in": "query", "pointer": "", "rule": f"cursor-{reason}", "message": message}],
        "reason": reason})
