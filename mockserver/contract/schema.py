"""A description made ready for Schemathesis: checked with its fixtures as `mockserver serve` checks them, fed
the fixtures' real ids as explicit examples, annotated for our checks, and with the run's headers on every call.
The CLI runner and the test suite's pytest integration both start here."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from difflib import get_close_matches
from pathlib import Path
from typing import Any, cast
from urllib.parse import urljoin

import schemathesis
from schemathesis.specs.openapi.schemas import OpenApiSchema

from ..pipeline.pipeline import Options, Pipeline
from ..spec.documents import DocumentSet
from ..spec.index import HTTP_METHODS, SpecIndex
from .checks import filter_failure
from .credentials import (
    PLACEHOLDER_PASSWORD,
    PLACEHOLDER_TOKEN,
    Credentials,
    Sent,
    apply,
    operations,
    per_operation,
    unused,
)
from .examples import add_examples, caller_for, usable_token, write
from .fixed import KeepFixed
from .knowledge import annotate

# request values from elsewhere, given the description and each operation's credentials: (source, by operationId)
ValueSources = Callable[[SpecIndex, dict[str, Sent]], list[tuple[str, dict[str, list[dict[tuple[str, str], Any]]]]]]


class UnknownOperation(ValueError):
    """An `--operation` the description does not have."""


class UnusedCredential(ValueError):
    """A credential flag no operation of the description would carry: it would be silently left out."""


NEAREST = 5  # names suggested for one the description does not have


def nearest(name: str, known: Iterable[str]) -> str:
    """At most five of `known` closest to `name`, for a message (every one of 188 operations helps nobody)."""
    return ", ".join(get_close_matches(name, list(known), n=NEAREST, cutoff=0.0))


@dataclass
class Contract:
    schema: OpenApiSchema
    examples: dict[str, int]  # operationId -> request value combinations taken from the fixtures
    labels: dict[str, str] = field(default_factory=dict)  # every operation's label (`GET /path`) by operationId
    credentials: dict[str, Sent] = field(default_factory=dict)  # what each operation sends, by label
    source: Path | None = None  # the description, for messages
    values: dict[str, dict[str, int]] = field(default_factory=dict)  # by source: operationId -> combinations
    spec: SpecIndex | None = None  # the description as the mock reads it (callbacks.py reads its callbacks)

    @property
    def operations(self) -> list[str]:
        """Every operation's label, before selection."""
        return list(self.labels.values())

    def labels_of(self, names: list[str]) -> list[str]:
        """The labels of the operations `names` gives by operationId or label; UnknownOperation for any other."""
        return select(self.labels, names, self.source)


def load_contract(spec: Path, fixtures: Path | None, *, token: str | None = None,
                  basic: tuple[str, str] | None = None, headers: dict[str, str] | None = None,
                  operations: list[str] | None = None, default_token: bool = False,
                  pipeline: Pipeline | None = None, security_parameters: bool = True,
                  values: ValueSources | None = None, bearer: str | None = None,
                  api_keys: dict[str, str] | None = None, fixture_values: bool = True,
                  allow_outside: tuple[Path, ...] = ()) -> Contract:
    """Raises LoadError (every problem of the description and fixtures), UnknownOperation or UnusedCredential (a
    credential given that no security scheme of the description takes).

    `operations`: only these, by operationId or label (`GET /path`). `token` and `basic` go where each operation's
    security requirement puts them (see `credentials.py`), `bearer` and `api_keys` (by the key's name) in the
    token's place for their schemes; `headers` ride on every call. `default_token`: with no
    token given, call as the first usable token the fixtures declare, else as a placeholder any mock without
    declared tokens lets in, and with no basic credential, as that token's user (for the mock itself).
    `pipeline`: the mock's own, already built from `spec` and `fixtures`, so they are not read and checked twice.
    `security_parameters`: whether Schemathesis generates the security schemes' parameters (see `credentials.apply`).
    `values`: request values from elsewhere (the target itself, a `--data` file), given each operation's
    credentials: by source name, the combinations per operationId, sent as examples besides the fixtures'.
    `allow_outside`: folders besides their own the description and fixtures may read (`--allow-ref-outside`).
    `fixture_values`: whether the fixtures' ids are sent as examples too: only when the target is the mock itself
    (a deployment holds data of its own; its ids come from `values`)."""
    pipeline = pipeline or Pipeline.load(spec, fixtures, Options(allow_outside=allow_outside))
    docs = DocumentSet(spec, pipeline.options.allow_outside)  # as written (the engine's is rewritten to JSON Schema)
    raw = docs.root.data
    inline_operations(raw, docs)
    given = Credentials(token, basic, bearer, dict(api_keys or {}))
    refused = unused(pipeline.spec.security_schemes, given)
    if refused:
        raise UnusedCredential("; ".join(f"{flag}: {why} ({spec}), so no call would carry it"
                                         for flag, why in refused)
                               + "; to send a credential on every call anyway: --header 'Authorization: …'")
    if default_token:
        token = token or usable_token(pipeline.auth) or PLACEHOLDER_TOKEN
        basic = basic or (token, PLACEHOLDER_PASSWORD)
    caller = caller_for(pipeline.auth, token)
    labels = dict(_labels(raw, docs))
    chosen = select(labels, operations or [], spec)
    def wanted(op_id: str) -> bool:
        return not operations or op_id in operations or labels.get(op_id) in chosen

    sent = per_operation(raw, docs, pipeline.spec.security_schemes, replace(given, token=token, basic=basic))
    found: dict[str, dict[str, int]] = {}
    for source, combos in (values(pipeline.spec, sent) if values else []):
        for op_id, listed in combos.items():
            write(docs, pipeline.spec.operations[op_id], [(f"{source}-{i}", c) for i, c in enumerate(listed, 1)],
                  f"{source}")
        found[source] = {op_id: len(listed) for op_id, listed in combos.items() if wanted(op_id)}
    added = add_examples(docs, pipeline.spec, pipeline.fixtures, caller) if fixture_values else {}
    examples = {op: n for op, n in added.items() if wanted(op)}
    annotate(docs, pipeline.spec, pipeline.fixtures, caller)
    schema = schemathesis.openapi.from_dict(raw, config=schemathesis.Config())
    schema.location = spec.resolve().as_uri()  # so references to other files resolve, as `from_path` does
    apply(schema, sent, headers or {}, security_parameters=security_parameters)
    if operations:
        schema = cast(OpenApiSchema, schema.include(name=chosen))
    schema.hook(filter_failure)
    schema.hook("map_case")(KeepFixed(pipeline.spec))
    return Contract(schema, examples, labels, sent, spec, found, pipeline.spec)


def _labels(raw: dict[str, Any], docs: DocumentSet) -> list[tuple[str, str]]:
    """(operationId, label) of every operation; an operation without an operationId goes by its label, as the
    mock names it."""
    return [(str(node.get("operationId") or label), label) for label, node in operations(raw, docs)]


def select(labels: dict[str, str], wanted: list[str], spec: Path | None) -> list[str]:
    """The labels of the operations `wanted` names by operationId or label; UnknownOperation for any other."""
    known = set(labels.values())
    unknown = [name for name in wanted if name not in labels and name not in known]
    if unknown:
        raise UnknownOperation("; ".join(f"no operation {name} in {spec} (nearest: "
                                         f"{nearest(name, [*labels, *known])})" for name in unknown))
    return list(dict.fromkeys(labels.get(name, name) for name in wanted))


def inline_operations(raw: dict[str, Any], docs: DocumentSet) -> None:
    """Put in place each operation kept in a file of its own (`get: {$ref: …}`: OpenAPI allows no `$ref` there, but
    digitalocean writes all 659 so), its references made absolute so they resolve as before. Schemathesis would
    read such an operation as one with no parameters and no responses. `docs` reads the description as written."""
    for item in (raw.get("paths") or {}).values():
        for method, node in item.items() if isinstance(item, dict) else ():
            if method in HTTP_METHODS and isinstance(node, dict) and isinstance(node.get("$ref"), str):
                target, uri = docs.resolve(node["$ref"], docs.root.uri)  # the pipeline's load has checked it
                item[method] = absolute_refs(target, uri)


def absolute_refs(node: Any, base: str) -> Any:
    """A copy of `node` with every `$ref` made absolute against `base` (the URI of the document it stands in)."""
    if isinstance(node, dict):
        return {key: urljoin(base, value) if key == "$ref" and isinstance(value, str) else absolute_refs(value, base)
                for key, value in node.items()}
    if isinstance(node, list):
        return [absolute_refs(value, base) for value in node]
    return node
