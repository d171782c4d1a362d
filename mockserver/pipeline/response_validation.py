"""Checking an answer against the description before it leaves: a response that would break the contract is
never sent as if it were fine."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from jsonschema.exceptions import ValidationError

from ..base.errors import MockError
from ..spec.index import Header, Operation, Response
from ..spec.schemas import instance_pointer, iter_errors
from .request_validation import coerce


class ContractViolation(MockError):
    """The mock's own fault: rendered as 500 `mock-contract-violation`, naming what broke which rule."""

    def __init__(self, message: str, details: dict[str, Any]) -> None:
        super().__init__(500, message, code="mock-contract-violation", details=details)


def check_response(op: Operation, status: int, media_type: str | None, payload: Any, headers: dict[str, str],
                   source: str, origin: str = "", *, body_checked: bool = False,
                   fixed_headers: frozenset[str] = frozenset()) -> None:
    """Status, media type, body (unless it was checked at start-up) and headers; `fixed_headers` (lower-case
    names) hold values checked at start-up, so only their presence is checked here."""
    where = f"the {source} answer" + (f" from {origin}" if origin else "")
    response = op.response(status)
    if response is None:
        raise ContractViolation(f"{where} has status {status}, which {op.id} does not declare",
                                {"source": source, "origin": origin, "rule": "status", "status": status})
    if response.content:
        media = response.content.get(media_type or "")
        if media is None:
            raise ContractViolation(f"{where} is {media_type}, which {op.id} {status} does not declare",
                                    {"source": source, "origin": origin, "rule": "content-type"})
        if media.schema is not None and not body_checked and not media.schema.fits(payload):
            for error in iter_errors(media.schema.validator, payload):
                pointer = instance_pointer(error)
                raise ContractViolation(
                    f"{where} breaks the {op.id} {status} schema at {pointer or '/'}: {error.message}",
                    {"source": source, "origin": origin, "pointer": pointer, "rule": str(error.validator),
                     "schema": error.schema_path and "/".join(str(p) for p in error.schema_path)})
    lower = {k.lower(): v for k, v in headers.items()}
    for header, error in header_problems(response, lower.get, skip=fixed_headers):
        if error is None:
            raise ContractViolation(f"{where} lacks the required header {header.name}",
                                    {"source": source, "origin": origin, "rule": "required", "header": header.name})
        raise ContractViolation(f"{where} has header {header.name}: {error.message}",
                                {"source": source, "origin": origin, "rule": str(error.validator),
                                 "header": header.name})


def header_problems(response: Response, value_of: Callable[[str], str | None],
                    skip: frozenset[str] = frozenset()) -> Iterator[tuple[Header, ValidationError | None]]:
    """The response's declared headers that are wrong: (header, None) for a required one missing, (header, error)
    for a value that breaks its schema. `value_of` takes a lower-case name; `skip` names headers whose values
    were checked already (only their presence is)."""
    for header in response.headers.values():
        value = value_of(header.name.lower())
        if value is None:
            if header.required:
                yield header, None
            continue
        if header.schema is not None and header.name.lower() not in skip:
            for error in iter_errors(header.schema.validator, coerce(value, header.kinds)):
                yield header, error
