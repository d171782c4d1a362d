"""Who is calling: the description's security requirements checked against the request, and the token looked up
in the fixtures' settings (caller, tenant, expired/revoked)."""
from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any

from .errors import MockError
from .http import MockRequest
from .spec import Operation

_BEARER = re.compile(r"^Bearer +([A-Za-z0-9\-._~+/]+=*) *$", re.IGNORECASE)
_BASIC = re.compile(r"^Basic +([A-Za-z0-9+/]+=*) *$", re.IGNORECASE)


@dataclass(frozen=True)
class Token:
    caller: str
    tenant: str | None = None
    expired: bool = False
    revoked: bool = False


@dataclass(frozen=True)
class Caller:
    id: str
    tenant: str | None
    known: bool
    key: str  # a digest of the credential: binds cursors to the caller without keeping the secret

    def value(self, name: str) -> Any:
        return {"id": self.id, "tenant": self.tenant, "known": self.known}.get(name)


class Authenticator:
    def __init__(self, schemes: dict[str, dict[str, Any]], tokens: dict[str, Token], *,
                 default_tenant: str | None = None, strict: bool = False) -> None:
        self.schemes = schemes
        self.tokens = tokens
        self.default_tenant = default_tenant
        self.strict = strict
        self.anonymous = Caller("anonymous", default_tenant, False, "anonymous")

    def authenticate(self, op: Operation, request: MockRequest) -> Caller:
        """The caller, or a 401 MockError saying what is missing or wrong."""
        if not op.security or any(not requirement for requirement in op.security):
            credential = self._credential_or_none(request)
            return self._caller(credential) if credential else self.anonymous
        reasons: list[str] = []
        for requirement in op.security:
            try:
                credentials = [self._credential(name, request) for name in requirement]
            except _Missing as exc:
                reasons.append(str(exc))
                continue
            return self._caller(credentials[0])
        raise MockError(401, reasons[0] if len(reasons) == 1 else "; or ".join(reasons),
                        details={"schemes": [sorted(r) for r in op.security]},
                        headers={"WWW-Authenticate": 'Bearer realm="mock"'})

    def _caller(self, credential: str) -> Caller:
        key = hashlib.sha256(credential.encode()).hexdigest()[:16]
        token = self.tokens.get(credential)
        if token is None:
            if self.strict:
                raise MockError(401, "the token is not known to this server", details={"reason": "unknown-token"},
                                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
            return Caller("anonymous", self.default_tenant, False, key)
        if token.expired or token.revoked:
            reason = "expired" if token.expired else "revoked"
            raise MockError(401, f"the token has {reason}" if token.expired else "the token was revoked",
                            details={"reason": f"{reason}-token"},
                            headers={"WWW-Authenticate": f'Bearer error="invalid_token", error_description="{reason}"'})
        return Caller(token.caller, token.tenant, True, key)

    def _credential_or_none(self, request: MockRequest) -> str | None:
        return bearer_token(request)

    def _credential(self, scheme_name: str, request: MockRequest) -> str:
        scheme = self.schemes.get(scheme_name) or {}
        kind = str(scheme.get("type", "")).lower()
        if kind == "apikey":
            name, where = str(scheme.get("name", "")), scheme.get("in", "header")
            value = _api_key(request, name, where)
            if not value:
                raise _Missing(f"missing API key {name!r} in the {where}")
            return value
        header = request.header("authorization")
        if kind == "http" and str(scheme.get("scheme", "")).lower() == "basic":
            if not header:
                raise _Missing("missing Authorization header (Basic credentials)")
            m = _BASIC.match(header)
            try:
                user = base64.b64decode(m.group(1), validate=True).decode().split(":", 1)[0] if m else ""
            except (binascii.Error, UnicodeDecodeError):
                user = ""
            if not user:
                raise _Missing("malformed Authorization header: expected 'Basic <base64 of user:password>'")
            return user
        if not header:
            raise _Missing("missing Authorization header: expected 'Bearer <token>'")
        m = _BEARER.match(header)
        if not m:
            raise _Missing("malformed Authorization header: expected 'Bearer <token>'")
        return m.group(1)


def bearer_token(request: MockRequest) -> str | None:
    m = _BEARER.match(request.header("authorization") or "")
    return m.group(1) if m else None


class _Missing(Exception):
    pass


def _api_key(request: MockRequest, name: str, where: str) -> str | None:
    if where == "query":
        values = (request.query() or {}).get(name)
        return values[-1] if values else None
    if where == "cookie":
        jar = SimpleCookie()
        jar.load(request.header("cookie") or "")
        return jar[name].value if name in jar else None
    return request.header(name)
