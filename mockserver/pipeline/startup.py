"""What `Pipeline` works out and checks once, at start-up, about the description and the fixtures together: the
header values the mock sends, that they and its request ids fit their schemas, that its error envelope fits
every error response declared (and, without one from the fixtures, the API's own error convention), and the
fixtures' scenarios. Each check returns every problem it finds, with
file, line and pointer, so `Pipeline` raises them all at once."""
from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..base.errors import MockError, Problem
from ..base.http import is_json
from ..fixtures.loading import FixtureSet
from ..spec.index import Header, MediaType, Operation, SpecIndex
from ..spec.schemas import instance_pointer, iter_errors
from .answers import pick_media_type
from .envelope import statuses_under
from .request_validation import coerce
from .scenarios import ScenarioError, Scenarios

if TYPE_CHECKING:
    from .answers import Answers
    from .envelope import ErrorRenderer


def declared_header_values(spec: SpecIndex, request_id_header: str,
                           answers: Answers) -> dict[tuple[str, str], dict[str, str]]:
    """Values for the headers each response must carry (`Retry-After` on a 503), from the description's examples
    or defaults, else generated, and for the optional ones it gives an example of (a `nonce` with `example: abc`),
    as Prism sends them: fixed at start-up, per operation and response key (`404`, `4XX`, `default`): a status
    answered under a range or `default` carries that response's headers (`Pipeline.declared_headers`)."""
    values: dict[tuple[str, str], dict[str, str]] = {}
    for op in spec.operations.values():
        for key, response in op.responses.items():
            for header in response.headers.values():
                if not (header.required or header.examples) or header.name.lower() == request_id_header.lower():
                    continue
                values.setdefault((op.id, key), {})[header.name] = _header_example(op, header, answers)
    return values


def _header_example(op: Operation, header: Header, answers: Answers) -> str:
    if header.examples:
        return _text(header.examples[0])
    if header.schema is None:
        return "1"
    rng = answers.rng(f"{op.id}|{header.name}")
    return _text(answers.generator.generate(header.schema.node, header.schema.uri, rng, static=True))


def check_fixed_headers(spec: SpecIndex, header_values: dict[tuple[str, str], dict[str, str]],
                        request_id_header: str, sample_request_id: str) -> list[Problem]:
    """The request id the mock makes, and the header values fixed at start-up, fit their schemas."""
    problems = []
    sample = {request_id_header.lower(): sample_request_id}
    for op in spec.operations.values():
        for status, response in op.responses.items():
            values = {**sample, **{k.lower(): v for k, v in header_values.get((op.id, status), {}).items()}}
            for header in response.headers.values():
                value = values.get(header.name.lower())
                if value is None or header.schema is None:
                    continue
                for error in iter_errors(header.schema.validator, coerce(value, header.kinds)):
                    file, line, pointer = spec.docs.location(header.schema.uri)
                    problems.append(Problem(file, pointer, f"the mock's value {value!r} for {header.name} does not "
                                            f"fit its schema: {error.message}", str(error.validator), line))
                    break
    return problems


def check_error_envelope(spec: SpecIndex, fixtures: FixtureSet, errors: ErrorRenderer,
                         answers: Answers) -> list[Problem]:
    """The envelope, filled, must fit every error response the description declares. An envelope declared in the
    fixtures that does not fit is a problem; the default (RFC 7807) that does not fit an API's own error schema
    gives way to that response's example, or a body generated from its schema, made here once. A response with
    no schema whose example is no object (`example: unauthorized`) is that API's error body as it is."""
    problems = []
    declared = "errors" in fixtures.settings
    for op in spec.operations.values():
        for key, response in op.responses.items():
            media, error = None, None
            for status in _error_samples(op, key):
                media = response.content.get(errors.media_type_for(status, op))
                if media is None or media.schema is None:
                    break
                sample = errors.body(MockError(status, "sample", details={"sample": True}), "req_sample", op)
                error = next(iter_errors(media.schema.validator, sample), None)
                if error is not None:
                    break
            if media is not None and media.schema is None and not declared:
                _use_plain_example(op, key, media, errors)
            if media is None or media.schema is None or error is None:
                continue
            if declared:
                file, line, pointer = spec.docs.location(media.schema.uri)
                problems.append(Problem(file, pointer, f"the error envelope from the fixtures' settings does not fit "
                                        f"{op.id} {key}: {error.message}", str(error.validator), line))
                continue
            body = next(iter(media.examples.values()), None) if media.examples else None
            example = body is not None
            if body is None:
                rng = answers.rng(f"{op.id}|{key}|error")
                body = answers.generator.generate(media.schema.node, media.schema.uri, rng, static=True)
            errors.use_description(op, key, media.name, body, media.schema.validator.is_valid, example=example)
    return problems


def learn_error_convention(spec: SpecIndex, fixtures: FixtureSet, errors: ErrorRenderer, answers: Answers) -> None:
    """Where the fixtures declare no envelope: the error body most of the description's error responses share
    (the same schema, by `$ref` or written out alike, in two responses at least; FastAPI's 422 aside, which is
    only for validation) answers the errors no response declares a body for, so that a client recognises them
    (a 404 for an unknown id, the mock's own 500); unless RFC 7807 fits it already."""
    if "errors" in fixtures.settings:
        return
    shared: Counter[str] = Counter()
    first: dict[str, tuple[Operation, str, MediaType]] = {}
    for op in spec.operations.values():
        for key, response in op.responses.items():
            if key == "422" or not _is_error(key):
                continue
            media = next((m for m in response.content.values() if is_json(m.name) and m.schema is not None), None)
            if media is None or media.schema is None:
                continue
            node, uri = spec.docs.deref(media.schema.node, media.schema.uri)
            shape = uri if node is not media.schema.node else json.dumps(node, sort_keys=True, default=str)
            shared[shape] += 1
            first.setdefault(shape, (op, key, media))
    if not shared or (most := shared.most_common(1)[0])[1] < 2:
        return
    op, key, media = first[most[0]]
    assert media.schema is not None
    fits = media.schema.validator.is_valid
    if fits(errors.envelope(MockError(400, "sample", details={"sample": True}), "req_sample", op)):
        return
    body = next(iter(media.examples.values()), None) if media.examples else None
    if body is None:
        body = answers.generator.generate(media.schema.node, media.schema.uri, answers.rng(f"{op.id}|{key}|error"),
                                          static=True)
    errors.use_convention(media.name, body, fits)


def _is_error(key: str) -> bool:
    return key in ("4XX", "5XX", "default") or key.isdigit() and int(key) >= 400


def _use_plain_example(op: Operation, key: str, media: MediaType, errors: ErrorRenderer) -> None:
    """An error response declared by an example alone that is no object (a string, a number, a list) cannot
    hold the envelope's fields: its example is the API's answer (any body fits where there is no schema)."""
    example = next(iter(media.examples.values()), None)
    if example is not None and not isinstance(example, dict):
        errors.use_description(op, key, media.name, example, lambda _: True, example=True)


def load_scenarios(fixtures: FixtureSet, scenarios: Scenarios) -> list[Problem]:
    """The fixtures' scenarios, each checked (file, line and pointer of the first problem of each)."""
    problems = []
    for located in fixtures.scenarios:
        try:
            scenarios.compile(located.value, "fixtures")
        except ScenarioError as exc:
            problems.append(located.doc.problem(located.pointer + exc.pointer, str(exc), exc.rule))
    if not problems:
        scenarios.set_baseline([loc.value for loc in fixtures.scenarios])
    return problems


def check_scenario_body(op: Operation, status: int, payload: Any) -> None:
    """A scenario's own body must fit the description, like any fixture."""
    response = op.response(status)
    media = pick_media_type(response.content) if response else None
    if media is None or media.schema is None:
        return
    for error in iter_errors(media.schema.validator, payload):
        raise ScenarioError(f"the body breaks the {op.id} {status} schema: {error.message}",
                            "/body" + instance_pointer(error), str(error.validator))


def _error_samples(op: Operation, key: str) -> list[int]:
    """The statuses a mock-made error is checked with under a response key: `404` itself; for a range or
    `default`, the first 4xx and the first 5xx the mock makes that this response answers (under `4XX` and
    `default` both, a 503 falls to `default`)."""
    if key.isdigit():
        return [int(key)] if int(key) >= 400 else []
    if key not in ("4XX", "5XX", "default"):
        return []
    covered = [s for s in statuses_under(key) if op.response(s) is op.responses[key]]
    return [next(iter(group)) for group in ([s for s in covered if s < 500], [s for s in covered if s >= 500])
            if group]


def _text(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (dict, list, bool)) or value is None else str(value)
