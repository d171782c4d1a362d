"""A description made ready for Schemathesis: checked with its fixtures as `mockserver serve` checks them, fed
the fixtures' real ids as explicit examples, annotated for our checks, and with the run's headers on every call.
The CLI runner and the test suite's pytest integration both start here."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import schemathesis
from schemathesis.specs.openapi.schemas import OpenApiSchema

from ..core.documents import read_document
from ..core.pipeline import Pipeline
from .checks import filter_failure
from .examples import add_examples, caller_for, usable_token
from .knowledge import annotate, resolve_local


class UnknownOperation(ValueError):
    """An `--operation` the description does not have."""


@dataclass
class Contract:
    schema: OpenApiSchema
    examples: dict[str, int]  # operationId -> request value combinations taken from the fixtures


def load_contract(spec: Path, fixtures: Path | None, *, token: str | None = None, headers: dict[str, str] | None = None,
                  operations: list[str] | None = None, default_token: bool = False) -> Contract:
    """Raises LoadError (every problem of the description and fixtures) or UnknownOperation. `default_token`: with
    no token given, call as the first usable token the fixtures declare (for the mock itself)."""
    pipeline = Pipeline.load(spec, fixtures)
    unknown = sorted(set(operations or []) - set(pipeline.spec.operations))
    if unknown:
        raise UnknownOperation(f"no operation {', '.join(unknown)} in {spec}; it has "
                               f"{', '.join(pipeline.spec.operations)}")
    settings = pipeline.fixtures.settings
    token = token or (usable_token(settings) if default_token else None)
    caller = caller_for(settings, token)
    raw = read_document(spec).data  # as written (the engine's copy may be rewritten to JSON Schema)
    examples = {op: n for op, n in add_examples(raw, pipeline.spec, pipeline.fixtures, caller).items()
                if not operations or op in operations}
    annotate(raw, pipeline.spec, pipeline.fixtures, caller)
    schema = schemathesis.openapi.from_dict(raw, config=schemathesis.Config())
    schema.location = spec.resolve().as_uri()  # so references to other files resolve, as `from_path` does
    if operations:
        schema = schema.include(operation_id=operations)
    schema.hook(filter_failure)
    sent = {**(_credentials(raw, token) if token else {}), **(headers or {})}
    if sent:
        schema.config.update(headers=sent)
    return Contract(schema, examples)


def _credentials(raw: dict[str, Any], token: str) -> dict[str, str]:
    """The header that carries the token where the description's first security scheme wants it: an API key's
    own header, else `Authorization: Bearer` (an API key in the query or a cookie: pass it with --header)."""
    schemes = (raw.get("components") or {}).get("securitySchemes") or {}
    operations = [op for item in (raw.get("paths") or {}).values() if isinstance(item, dict)
                  for op in item.values() if isinstance(op, dict)]
    requirements = [*(raw.get("security") or []), *(r for op in operations for r in op.get("security") or [])]
    names = [name for requirement in requirements if isinstance(requirement, dict) for name in requirement]
    scheme = resolve_local(raw, schemes.get(names[0])) if names else None
    if isinstance(scheme, dict) and scheme.get("type") == "apiKey" and scheme.get("in") == "header":
        return {str(scheme.get("name")): token}
    return {"Authorization": f"Bearer {token}"}
