"""`mockserver contract` choosing what it generates and runs (`--mode`, `--no-auth`, `--phases`, `--coverage-cap`,
`--checks`, `--exclude-checks`) and reporting as data (`--report-json`), on Locks: a tiny description written here
whose three operations each take another security scheme (OAuth 2, an API key in a header, HTTP basic), with no
fixtures, as most published descriptions come."""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
from schemathesis.specs.openapi.schemas import OpenApiSchema

from mockserver import create_app
from mockserver.cli import main
from stand_ins import Served

pytestmark = pytest.mark.slow  # whole contract runs

LOCKS = """\
openapi: 3.0.3
info: {title: Locks, version: 1.0.0}
paths:
  /locks:
    get:
      operationId: listLocks
      security: [{oauth: []}]
      parameters:
        - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 10}, example: 3}
      responses:
        '200':
          description: The locks.
          content:
            application/json:
              schema: {type: array, maxItems: 10, items: {type: string, maxLength: 8}}
        '400': {$ref: '#/components/responses/Error'}
        '401': {$ref: '#/components/responses/Error'}
  /keys:
    get:
      operationId: listKeys
      security: [{key: []}]
      responses:
        '200':
          description: How many keys.
          content:
            application/json:
              schema: {type: object, required: [count], properties: {count: {type: integer, minimum: 0}}}
        default: {$ref: '#/components/responses/Error'}
  /admin:
    get:
      operationId: getAdmin
      security: [{basic: []}]
      responses:
        '200':
          description: The admin.
          content:
            application/json:
              schema: {type: object, required: [name], properties: {name: {type: string}}}
        '401': {$ref: '#/components/responses/Error'}
components:
  securitySchemes:
    oauth:
      type: oauth2
      flows: {clientCredentials: {tokenUrl: 'https://locks.example/token', scopes: {}}}
    key: {type: apiKey, in: header, name: X-Key}
    basic: {type: http, scheme: basic}
  responses:
    Error:
      description: Something went wrong.
      content:
        application/json:
          schema:
            type: object
            required: [message]
            properties: {message: {type: string}}
"""
CREDENTIALS = ["--auth-bearer", "lock-token", "--api-key", "X-Key=lock-key", "--basic", "lock-admin:secret"]
QUICK = ["--max-examples", "5", "--seed", "3"]


@pytest.fixture
def locks(tmp_path: Path) -> Path:
    path = tmp_path / "locks.yaml"
    path.write_text(LOCKS)
    return path


def contract(spec: Path, *extra: str) -> int:
    return main(["contract", "--spec", str(spec), *QUICK, *extra])


def report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def statuses(data: dict[str, Any]) -> dict[str, dict[str, int]]:
    """By operation, the statuses its own method answered."""
    return {op["operation"]: op["statuses"] for op in data["operations"]}


@pytest.fixture
def served(locks: Path) -> Iterator[Callable[..., str]]:
    """Serves the mock of Locks (strict: only the CREDENTIALS are callers), wrapped by `change` if given; yields a
    function that starts one and returns its URL."""
    servers: list[Served] = []

    def serve(change: Callable[[dict[str, Any]], None] | None = None) -> str:
        app = create_app(locks, None, strict_auth=True, accept_tokens=("lock-token", "lock-key", "lock-admin"))

        def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            if change is not None:
                change(environ)
            return app(environ, start_response)

        servers.append(Served(wrapped))
        return servers[-1].url

    yield serve
    for server in servers:
        server.stop()


def invalid_limit_ignored(environ: dict[str, Any]) -> None:
    """A server that does not validate `limit`: an invalid one is dropped, and the list answered (200)."""
    pairs = parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    environ["QUERY_STRING"] = urlencode([(k, v) for k, v in pairs
                                         if k != "limit" or (v.isdigit() and 1 <= int(v) <= 10)])


def test_a_description_without_fixtures_lets_the_given_credential_of_each_scheme_in(
        locks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """In-process, the mock of a description without tokens of its own takes the credentials given on the command
    line as its callers, so every operation answers 200 with its own scheme's (OAuth 2 included), and refuses
    any other (ignored_auth)."""
    out = tmp_path / "report.json"
    code = contract(locks, "--mode", "positive", *CREDENTIALS, "--report-json", str(out))
    output = capsys.readouterr().out
    assert code == 0, output
    assert "positive mode" in output.splitlines()[0]
    data = report(out)
    assert data["passed"] and data["mode"] == "positive" and not data["findings"] and not data["gaps"]
    assert all("200" in seen for seen in statuses(data).values()), statuses(data)
    assert data["checks"]["ignored_auth"]["passed"] > 0 and data["checks"]["ignored_auth"]["failed"] == 0


@pytest.mark.parametrize("phase", ["examples", "coverage", "fuzzing"])
def test_an_oauth2_operation_carries_its_bearer_token_in_every_phase(phase: str, locks: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]):
    """Schemathesis makes no security parameter for OAuth 2, so the run puts the token on the operation's cases
    itself: explicit examples, coverage and fuzzing alike."""
    out = tmp_path / "report.json"
    code = contract(locks, "--mode", "positive", *CREDENTIALS, "--operation", "listLocks", "--phases", phase,
                    "--no-force", "--report-json", str(out))
    output = capsys.readouterr().out
    assert code == 0, output
    assert set(statuses(report(out))["GET /locks"]) == {"200"}, output


def test_a_negative_run_without_credentials_passes_when_every_call_is_refused(
        locks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """`--no-auth` sends nothing, so every call is a 401: in a negative run, the outcome expected, not a
    credential failure; the 401s must still fit the schema their status declares."""
    out = tmp_path / "report.json"
    code = contract(locks, "--mode", "negative", "--no-auth", "--report-json", str(out), "--checks",
                    "not_a_server_error,response_schema_conformance,content_type_conformance")
    output = capsys.readouterr().out
    assert code == 0, output
    assert "credentials never authenticated" not in output and "PASSED" in output
    data = report(out)
    assert data["passed"] and not data["gaps"]
    assert all(set(seen) == {"401"} for seen in statuses(data).values()), statuses(data)
    assert data["checks"]["response_schema_conformance"]["passed"] > 0


def test_a_positive_run_without_credentials_fails_as_nothing_succeeded(locks: Path,
                                                                       capsys: pytest.CaptureFixture[str]):
    code = contract(locks, "--mode", "positive", "--no-auth")
    output = capsys.readouterr().out
    assert code == 1, output
    assert "never answered with success" in output
    assert all(f"GET /{path} (401×" in output for path in ("locks", "keys", "admin")), output


def test_a_negative_run_whose_credentials_are_refused_fails_naming_them(locks: Path, served: Callable[..., str],
                                                                        capsys: pytest.CaptureFixture[str]):
    code = contract(locks, "--url", served(), "--mode", "negative", "--auth-bearer", "wrong", "--api-key",
                    "X-Key=wrong", "--basic", "wrong:wrong")
    output = capsys.readouterr().out
    assert code == 1, output
    assert "the credentials never authenticated" in output, output


def test_a_server_accepting_invalid_data_fails_in_negative_mode_only(locks: Path, served: Callable[..., str],
                                                                     tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]):
    url = served(invalid_limit_ignored)
    positive = contract(locks, "--url", url, "--mode", "positive", *CREDENTIALS)
    output = capsys.readouterr().out
    assert positive == 0, output
    out = tmp_path / "report.json"
    negative = contract(locks, "--url", url, "--mode", "negative", *CREDENTIALS, "--report-json", str(out))
    output = capsys.readouterr().out
    assert negative == 1, output
    data = report(out)
    assert not data["passed"] and data["mode"] == "negative"
    found = [f for f in data["findings"] if f["check"] == "negative_data_rejection"]
    assert found and found[0]["operation"] == "GET /locks", data["findings"]
    assert found[0]["curl"].startswith("curl -X GET") and "limit=" in found[0]["curl"]
    assert data["checks"]["negative_data_rejection"]["failed"] >= 1


def test_phases_checks_and_the_coverage_cap_bound_the_run(locks: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "report.json"
    code = contract(locks, "--mode", "positive", *CREDENTIALS, "--phases", "coverage", "--coverage-cap", "2",
                    "--no-force", "--checks", "not_a_server_error,status_code_conformance", "--exclude-checks",
                    "status_code_conformance", "--report-json", str(out))
    captured = capsys.readouterr()
    assert code == 0, captured.out
    data = report(out)
    assert data["phases"] == ["coverage"] and list(data["checks"]) == ["not_a_server_error"]
    assert {line.split()[2] for line in captured.err.splitlines() if line.startswith("mockserver contract:")} == \
        {"coverage"}, captured.err
    for op in data["operations"]:
        assert 0 < sum(op["statuses"].values()) + sum(op["probes"].values()) <= 2, op
    assert not re.search(r"^\s+ok\s+status_code_conformance", captured.out, re.M)


def test_the_coverage_cap_stops_generating_what_it_would_drop(locks: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]):
    """Cases past the cap are never built (for a big description's operation, building the thousand it drops was
    most of the run)."""
    generated: Counter[str] = Counter()
    every = OpenApiSchema.iter_coverage_cases

    def counted(self: OpenApiSchema, operation: Any, **kwargs: Any) -> Iterator[Any]:
        for case in every(self, operation, **kwargs):
            generated[operation.label] += 1
            yield case

    monkeypatch.setattr(OpenApiSchema, "iter_coverage_cases", counted)
    for cap in ("2", None):
        assert contract(locks, *CREDENTIALS, "--phases", "coverage", "--no-force",
                        *(("--coverage-cap", cap) if cap else ())) == 0, capsys.readouterr().out
        if cap:
            assert generated and set(generated.values()) == {2}, generated
            generated.clear()
    assert all(count > 2 for count in generated.values()), generated  # without the cap: more of each


@pytest.mark.parametrize(("options", "says"), [
    (["--checks", "not_a_check"], "no check not_a_check; there are: "),
    (["--exclude-checks", "ignored_auth,nope"], "no check nope"),
    (["--phases", "examples,guessing"], "no phase guessing; there are: examples, coverage, fuzzing, stateful"),
    (["--no-auth", "--auth-bearer", "t"], "--no-auth sends no credentials"),
    (["--coverage-cap", "0"], "is not a whole number from 1"),
    (["--mode", "sideways"], "invalid choice: 'sideways'"),
])
def test_unusable_choices_are_usage_problems(options: list[str], says: str, locks: Path,
                                             capsys: pytest.CaptureFixture[str]):
    try:
        code = contract(locks, *options)
    except SystemExit as exc:  # argparse refuses it before the command runs
        code = int(exc.code or 0)
    assert code == 2
    assert says in capsys.readouterr().err


def test_the_help_names_every_option(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(["contract", "--help"])
    shown = capsys.readouterr().out
    for option in ("--mode", "--no-auth", "--phases", "--coverage-cap", "--checks", "--exclude-checks",
                   "--report-json"):
        assert option in shown, option
