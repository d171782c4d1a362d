"""Who is calling: the description's security requirements checked against the request, and the token looked up
in the fixtures' settings (caller, tenant, expired/revoked)."""
from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from ..base.errors import MockError
from ..base.http import MockRequest, parse_cookies
from ..spec.index import Operation

_BEARER = re.compile(r"^Bearer +([A-Za-z0-9\-._~+/]+=*) *$", re.IGNORECASE)
_BASIC = re.compile(r"^Basic +([A-Za-z0-9+/]+=*) *$", re.IGNORECASE)
_DIGEST_USER = re.compile(r'(?:^|[\s,])username\s*=\s*"([^"]*)"', re.IGNORECASE)
_REALM = 'realm="mock"'


def challenge(scheme: dict[str, Any]) -> str:
    """The WWW-Authenticate challenge (RFC 9110 §11.6.1) of a security scheme: `Basic realm="mock"` for HTTP
    basic, `Digest …` with a nonce for digest, `Bearer` for bearer, OAuth 2 and OpenID Connect; an API key has
    no standard scheme, so it is named with where it goes (`ApiKey realm="mock", in="header", name="X-Key"`)."""
    kind = str(scheme.get("type", "")).lower()
    if kind == "apikey":
        return f'ApiKey {_REALM}, in="{scheme.get("in", "header")}", name="{scheme.get("name", "")}"'
    if kind == "http":
        name = str(scheme.get("scheme", "bearer")).lower()
        if name == "digest":
            return f'Digest {_REALM}, qop="auth", nonce="{hashlib.sha256(b"mock").hexdigest()[:32]}"'
        return f"{name.capitalize()} {_REALM}"
    return f"Bearer {_REALM}"


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
        self.challenges = {name: challenge(scheme) for name, scheme in schemes.items()}
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
            return self._caller(credentials[0], self._challenge([next(iter(requirement))]))
        raise MockError(401, reasons[0] if len(reasons) == 1 else "; or ".join(reasons),
                        details={"schemes": [sorted(r) for r in op.security]},
                        headers={"WWW-Authenticate": self.challenge_of(op)})

    def challenge_of(self, op: Operation) -> str:
        """The WWW-Authenticate of a 401 the operation is made to answer (`Prefer: code=401`, a scenario): the
        challenge a missing credential gets."""
        return self._challenge([n for r in op.security for n in r])

    def _challenge(self, names: list[str]) -> str:
        """One challenge per scheme the operation takes (RFC 9110 allows several in one header), in order."""
        found = [self.challenges[n] for n in names if n in self.challenges]
        return ", ".join(dict.fromkeys(found)) or f"Bearer {_REALM}"

    def _caller(self, credential: str, challenged: str = f"Bearer {_REALM}") -> Caller:
        key = hashlib.sha256(credential.encode()).hexdigest()[:16]
        token = self.tokens.get(credential)
        scheme = challenged.split(" ", 1)[0]
        if token is None:
            if self.strict:
                raise MockError(401, "the token is not known to this server", details={"reason": "unknown-token"},
                                headers={"WWW-Authenticate": f'{scheme} error="invalid_token"'})
            return Caller("anonymous", self.default_tenant, False, key)
        if token.expired or token.revoked:
            reason = "expired" if token.expired else "revoked"
            raise MockError(401, f"the token has {reason}" if token.expired else "the token was revoked",
                            details={"reason": f"{reason}-token"},
                            headers={"WWW-Authenticate": f'{scheme} error="invalid_token", '
                                                         f'error_description="{reason}"'})
        return Caller(token.caller, token.tenant, True, key)

    def _credential_or_none(self, request: MockRequest) -> str | None:
        return bearer_token(request)

    def _credential(self, scheme_name: str, request: MockRequest) -> str:
        scheme = self.schemes.get(scheme_name) or {}
        kind = str(scheme.get("type", "")).lower()
        if kind == "apikey":
            name, where = str(scheme.get("name", "")), scheme.get("in", "header")
            value = _api_key(request, name, where)
            if value is None:  # present but empty is still a key sent where the scheme takes it
                raise _Missing(f"missing API key {name!r} in the {where}")
            return value
        header = request.header("authorization")
        http_scheme = str(scheme.get("scheme", "bearer")).lower() if kind == "http" else "bearer"
        if http_scheme == "digest":
            named = _DIGEST_USER.search(header or "") if (header or "").lower().startswith("digest ") else None
            if named is None:  # an empty username is still Digest credentials: the scheme's answer is not ours
                raise _Missing("missing or malformed Authorization header: expected 'Digest username=\"…\", …'")
            return named.group(1)
        if http_scheme not in ("basic", "bearer"):  # any other HTTP scheme (hoba, negotiate, …): its name, then text
            given, _, rest = (header or "").partition(" ")
            if given.lower() != http_scheme or not rest.strip():
                raise _Missing("missing or malformed Authorization header: expected "
                               f"'{scheme['scheme']} <credentials>'")
            return rest.strip()
        if http_scheme == "basic":
            if not header:
                raise _Missing("missing Authorization header (Basic credentials)")
            found = _BASIC.match(header)
            try:  # well-formed credentials with an empty user (`Basic Og==`, ":") are credentials all the same
                user = base64.b64decode(found.group(1), validate=True).decode().split(":", 1)[0] if found else None
            except (binascii.Error, UnicodeDecodeError):
                user = None
            if user is None:
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
        return parse_cookies(request.header("cookie")).get(name)
    return request.header(name)
