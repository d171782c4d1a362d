"""Credentials per operation, where the description's security schemes put them: for each operation the first of
its security requirements the run can meet, each scheme of it as that scheme wants it — `Authorization: Bearer`
(HTTP bearer, OAuth 2, OpenID Connect), `Authorization: Basic base64(user:password)` (HTTP basic), an API key in
its own header, query parameter or cookie. Operations may differ (one takes an API key, the next basic auth), so
one `Authorization` header for all would not do."""
from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from schemathesis.config import OperationConfig
from schemathesis.filters import FilterSet
from schemathesis.specs.openapi.schemas import OpenApiSchema

from ..spec.documents import DocumentSet
from ..spec.index import HTTP_METHODS

PLACEHOLDER_TOKEN = "contract-token"  # well-formed: any mock without declared tokens lets it in
PLACEHOLDER_PASSWORD = "secret"  # the mock reads the user of a basic credential as its token


@dataclass(frozen=True)
class Credentials:
    """What the run may send: a token (bearer, OAuth 2, OpenID Connect, API keys) and a basic user and password;
    `bearer` and `api_keys` (by the key's name) take the token's place for their schemes."""

    token: str | None = None
    basic: tuple[str, str] | None = None
    bearer: str | None = None
    api_keys: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(value is not None for value in (self.token, self.basic, self.bearer)) or bool(self.api_keys)


@dataclass
class Sent:
    """Where one operation's credentials go."""

    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    # headers of schemes Schemathesis makes no security parameter for (OAuth 2, OpenID Connect): it would send
    # nothing there, so the run puts them on each of the operation's calls itself
    plain: set[str] = field(default_factory=set)

    def key(self) -> tuple[tuple[tuple[str, str], ...], ...]:
        plain = tuple((name, "") for name in sorted(self.plain))
        return (*(tuple(sorted(part.items())) for part in (self.headers, self.query, self.cookies)), plain)

    def __bool__(self) -> bool:
        return bool(self.headers or self.query or self.cookies)

    def add(self, other: Sent) -> None:
        """`other`'s values where none of that name is here yet (the first scheme wins a header two want)."""
        for mine, theirs in ((self.headers, other.headers), (self.query, other.query), (self.cookies, other.cookies)):
            for name, value in theirs.items():
                mine.setdefault(name, value)
        self.plain |= {name for name in other.plain if self.headers.get(name) == other.headers.get(name)}


def credential(scheme: Any, credentials: Credentials) -> Sent | None:
    """How one security scheme carries the run's credentials, or None when the run has none it takes."""
    if not isinstance(scheme, dict):
        return None  # not a Security Scheme Object: nothing to send
    kind, where = str(scheme.get("type", "")).lower(), str(scheme.get("in", "header")).lower()
    http = str(scheme.get("scheme", "")).lower()
    if kind == "http" and http == "basic":
        if credentials.basic is None:
            return None
        user, password = credentials.basic
        return Sent(headers={"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()})
    if kind == "apikey":
        name = str(scheme.get("name", ""))
        key = credentials.api_keys.get(name, credentials.token)
        if key is None:
            return None
        return Sent(query={name: key}) if where == "query" else \
            Sent(cookies={name: key}) if where == "cookie" else Sent(headers={name: key})
    bearer = credentials.bearer or credentials.token
    if bearer is not None and kind == "http" and http == "bearer":
        return Sent(headers={"Authorization": f"Bearer {bearer}"})
    if bearer is not None and kind in ("oauth2", "openidconnect"):
        return Sent(headers={"Authorization": f"Bearer {bearer}"}, plain={"Authorization"})
    return None  # mutual TLS, HTTP digest …, or no credential for the scheme: nothing the run can send


def for_requirements(requirements: list[Any], schemes: dict[str, dict[str, Any]],
                     credentials: Credentials) -> Sent:
    """The first requirement whose every scheme the run can meet, merged (the first scheme wins a header two
    want); nothing when none can be met or the operation needs no credentials."""
    for requirement in requirements:
        if not isinstance(requirement, dict) or not requirement:
            continue
        sent = Sent()
        for name in requirement:
            part = credential(schemes.get(name), credentials)
            if part is None:
                break
            sent.add(part)
        else:
            return sent
    return Sent()


def unused(schemes: dict[str, dict[str, Any]], credentials: Credentials) -> list[tuple[str, str]]:
    """(flag, why) of each credential given that no security scheme of the description takes: `--basic` where it
    declares no HTTP basic scheme would otherwise be sent nowhere, silently. `schemes`: by name, `$ref`s followed."""
    given = [("--token", Credentials(token=credentials.token),
              "the description declares no HTTP bearer, OAuth 2, OpenID Connect or API key scheme"),
             ("--basic", Credentials(basic=credentials.basic), "the description declares no HTTP basic scheme"),
             ("--auth-bearer", Credentials(bearer=credentials.bearer),
              "the description declares no HTTP bearer, OAuth 2 or OpenID Connect scheme"),
             *((f"--api-key {name}", Credentials(api_keys={name: value}),
                f"the description declares no API key scheme named {name}")
               for name, value in credentials.api_keys.items())]
    return [(flag, why) for flag, one, why in given
            if one and not any(credential(scheme, one) is not None for scheme in schemes.values())]


def operations(raw: dict[str, Any], docs: DocumentSet) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every operation of the description as Schemathesis labels it (`GET /path`), with its node."""
    for template, item in (raw.get("paths") or {}).items():
        item, _ = docs.deref(item, docs.root.uri)
        for method, node in item.items() if isinstance(item, dict) else ():
            if method in HTTP_METHODS and isinstance(node, dict):
                yield f"{method.upper()} {template}", node


def per_operation(raw: dict[str, Any], docs: DocumentSet, schemes: dict[str, dict[str, Any]],
                  credentials: Credentials) -> dict[str, Sent]:
    """Each operation's credentials, by label (operations that need none, or that the run cannot meet, left out).
    `schemes`: the description's security schemes by name, `$ref`s followed (`SpecIndex.security_schemes`)."""
    default = raw.get("security") or []
    found: dict[str, Sent] = {}
    for label, node in operations(raw, docs):
        sent = for_requirements(node.get("security", default) or [], schemes, credentials)
        if sent:
            found[label] = sent
    return found


def apply(schema: OpenApiSchema, sent: dict[str, Sent], headers: dict[str, str], *,
          security_parameters: bool = True) -> None:
    """Every operation of `schema` sends its credentials, and every call `headers`.

    With `security_parameters` (Schemathesis' default) Schemathesis adds each security scheme's header, query
    parameter or cookie to the operations that require it, and the credentials are its values for them: they
    reach only their own operation, and `ignored_auth` knows them for explicit ones; OAuth 2 and OpenID Connect
    schemes have no such parameter in Schemathesis, so their bearer token is put on each call of their operations
    (`PlainHeaders`: a configured header would ride along on other operations, over their own credentials).
    Without, they are headers of
    the operation's (a query API key then cannot be sent); Schemathesis 4.32 keeps one HTTP session per thread
    with the headers of the first operation it ran, so a credential header may then ride along on an operation
    that has none of its own — harmless against a mock that lets any well-formed credential in."""
    if headers:
        schema.config.update(headers=headers)
    schema.config.generation.update(with_security_parameters=security_parameters)
    groups: dict[Any, tuple[Sent, list[str]]] = {}
    plain: dict[str, dict[str, str]] = {}
    for label, one in sent.items():
        groups.setdefault(one.key(), (one, []))[1].append(label)
    configs = []
    for one, labels in groups.values():
        filter_set = FilterSet()
        filter_set.include(name=labels)
        if security_parameters:
            parameters = {f"{where}.{name}": value for where, values in (("header", one.headers), ("query", one.query),
                                                                          ("cookie", one.cookies))
                          for name, value in values.items()
                          if where != "header" or (name not in headers and name not in one.plain)}
            configs.append(OperationConfig(filter_set=filter_set, parameters=parameters))
            plain.update({label: {name: one.headers[name] for name in one.plain if name not in headers}
                          for label in labels if one.plain})
        else:
            cookie = "; ".join(f"{name}={value}" for name, value in one.cookies.items())
            configs.append(OperationConfig(filter_set=filter_set,
                                           headers={**one.headers, **({"Cookie": cookie} if cookie else {}),
                                                    **headers}))
    schema.config.operations.operations.extend(configs)
    schema.config.operations._cache.clear()
    if plain:
        added = PlainHeaders(plain)
        schema.hook("map_case")(added)

        def before_add_examples(context: Any, examples: list[Any]) -> None:
            for case in examples:
                added(context, case)

        schema.hook(before_add_examples)


class PlainHeaders:
    """Schemathesis `map_case` hook (generated cases) and `before_add_examples` (explicit examples): the credential
    headers Schemathesis has no security parameter for, on each case of their own operations only (by label)."""

    def __init__(self, by_label: dict[str, dict[str, str]]) -> None:
        self.by_label = by_label

    def __call__(self, context: Any, case: Any) -> Any:
        headers = self.by_label.get(case.operation.label)
        if headers:
            case.headers = {**(case.headers or {}), **headers}
        return case
