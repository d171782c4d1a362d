"""Start-up refuses what would never finish or never answer: YAML bombs, nesting thousands deep, schemas that
contain themselves. `mockserver validate` as a person runs it: a clear line naming the file, no traceback, within
seconds, in bounded memory."""
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import KINDGI_SPEC, ROOT, body
from mockserver import create_app

HEAD = "openapi: 3.0.3\ninfo: {title: limits, version: '1'}\n"
LAUGHS = "".join([" a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"]
                 + [f" a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10)])  # 9^10 values
MERGES = "".join([" m0: &m0 {a: 1, b: 2, c: 3}\n"]
                 + [f" m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * 4)}]}}\n" for i in range(1, 25)])
DEEP_JSON = "[" * 10_000 + "]" * 10_000
DEEP_YAML = "".join("  " * level + "- \n" for level in range(100)) + "  " * 100 + "x\n"


def validate(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """`mockserver validate` limited to 1 GiB of address space, and how long it took."""
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "mockserver", "validate", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, preexec_fn=limited)
    return done, time.monotonic() - started


def refused(path: Path, *args: str) -> str:
    """The problem lines `validate` prints for `path` (one at least), checked to come quick and clean."""
    done, took = validate(*args)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and took < 10, (took, done.stderr[-2000:])
    lines = [line.strip() for line in done.stderr.splitlines() if str(path) in line]
    assert lines, done.stderr[-2000:]
    return "\n".join(lines)


@pytest.mark.parametrize("text, says", [
    (HEAD + "paths: {}\nx-lol:\n" + LAUGHS, "expands to more than 1,000,000 values"),
    (HEAD + "paths: {}\nx-merge:\n" + MERGES, "expands to more than 1,000,000 values"),
    (HEAD + "paths: {}\nx-self: &s\n  - *s\n", "an alias names a node that contains it"),
    (HEAD + "paths: {}\nx-deep:\n" + DEEP_YAML, "nested deeper than 64 levels"),
], ids=["billion laughs", "merge keys", "alias inside itself", "deep"])
def test_a_hostile_yaml_description_is_one_clear_line(tmp_path, text, says):
    spec = tmp_path / "openapi.yaml"
    spec.write_text(text)
    assert says in refused(spec, "--spec", str(spec))


def test_a_json_description_nested_thousands_deep_is_one_clear_line(tmp_path):
    spec = tmp_path / "openapi.json"
    spec.write_text('{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}, "x-deep": '
                    + DEEP_JSON + "}")
    assert "nested deeper than 64 levels" in refused(spec, "--spec", str(spec))


@pytest.mark.parametrize("name, text, says", [
    ("bomb.yaml", "settings:\n  x-lol:\n" + LAUGHS.replace(" a", "   a"), "expands to more than 1,000,000 values"),
    ("deep.json", DEEP_JSON, "nested deeper than 64 levels"),
], ids=["billion laughs", "deep"])
def test_a_hostile_fixture_file_is_one_clear_line(tmp_path, name, text, says):
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / name).write_text(text)
    assert says in refused(fixtures / name, "--spec", str(KINDGI_SPEC), "--fixtures", str(fixtures))


def test_the_corpus_depth_passes(tmp_path):
    """64 levels load (the corpus' deepest description has 22); the 65th is refused."""
    def nested(levels: int) -> dict:
        value: object = 1
        for _ in range(levels - 2):  # the root and the innermost scalar are levels too
            value = [value]
        return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}, "x-deep": value}

    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(nested(64)))
    assert validate("--spec", str(spec))[0].returncode == 0
    spec.write_text(json.dumps(nested(65)))
    assert "nested deeper than 64 levels" in refused(spec, "--spec", str(spec))


CYCLES = HEAD + """\
paths:
  /things:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Thing"}
components:
  schemas:
"""


@pytest.mark.parametrize("schemas, line, pointer, says", [
    ("    Thing:\n      allOf:\n        - {$ref: '#/components/schemas/Base'}\n        - {properties: {a: {}}}\n"
     "    Base:\n      allOf:\n        - {$ref: '#/components/schemas/Thing'}\n",
     20, "/components/schemas/Base/allOf/0/$ref", "this schema includes itself through `$ref`s and `allOf` alone"),
    ("    Thing:\n      type: object\n      required: [next]\n      properties:\n"
     "        next: {$ref: '#/components/schemas/Thing'}\n",
     14, "/components/schemas/Thing", "no finite value fits this schema"),
    ("    Thing:\n      type: array\n      minItems: 1\n      items: {$ref: '#/components/schemas/Pair'}\n"
     "    Pair:\n      type: object\n      required: [left]\n      properties:\n"
     "        left: {$ref: '#/components/schemas/Thing'}\n",
     14, "/components/schemas/Thing", "no finite value fits this schema"),
], ids=["allOf", "required property", "non-empty array"])
def test_a_schema_that_contains_itself_is_a_start_up_problem(tmp_path, schemas, line, pointer, says):
    spec = tmp_path / "openapi.yaml"
    spec.write_text(CYCLES + schemas)
    assert f"{spec}:{line}: {pointer}: {says}" in refused(spec, "--spec", str(spec))


@pytest.mark.parametrize("schemas", [
    "    Thing:\n      type: object\n      required: [name]\n      properties:\n        name: {type: string}\n"
    "        children: {type: array, items: {$ref: '#/components/schemas/Thing'}}\n",
    "    Thing:\n      type: object\n      nullable: true\n      required: [next]\n      properties:\n"
    "        next: {$ref: '#/components/schemas/Thing'}\n",
    "    Thing:\n      oneOf:\n        - {type: string}\n        - {type: object, required: [next], properties: "
    "{next: {$ref: '#/components/schemas/Thing'}}}\n",
    "    Thing:\n      type: object\n      required: [kind]\n      properties: {kind: {type: string}}\n"
    "      oneOf: [{$ref: '#/components/schemas/Cat'}]\n"
    "    Cat:\n      allOf: [{$ref: '#/components/schemas/Thing'}, {properties: {claws: {type: integer}}}]\n",
], ids=["optional children", "nullable", "oneOf way out", "oneOf of a part that extends it"])
def test_recursive_schemas_with_a_way_out_still_load(tmp_path, schemas):
    spec = tmp_path / "openapi.yaml"
    spec.write_text(CYCLES + schemas)
    create_app(spec)  # loads: no LoadError


def test_the_tree_is_still_served(tmp_path):
    spec = tmp_path / "openapi.yaml"
    spec.write_text(CYCLES + "    Thing:\n      type: object\n      required: [name]\n      properties:\n"
                             "        name: {type: string}\n"
                             "        children: {type: array, items: {$ref: '#/components/schemas/Thing'}}\n")
    answer = create_app(spec).test_client().get("/things")
    assert answer.status_code == 200 and isinstance(body(answer)["name"], str)


PET_AND_CAT = HEAD + """\
paths:
  /pets:
    get:
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}}
    post:
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}
      responses:
        "201": {description: created, content: {application/json: {schema: {$ref: "#/components/schemas/Pet"}}}}
components:
  schemas:
    Pet:
      oneOf: [{$ref: '#/components/schemas/Cat'}]
    Cat:
      allOf: [{$ref: '#/components/schemas/Pet'}, {type: object, properties: {name: {type: string}}}]
"""


def test_a_choice_of_a_part_that_includes_the_choice_is_served_and_checked(tmp_path):
    """Pet: oneOf [Cat], Cat: allOf [Pet, …]: the value is the branch that leads back (as it is generated), so
    answers are served and request bodies are checked, where checking recursed until the stack was gone (500)."""
    spec = tmp_path / "openapi.yaml"
    spec.write_text(PET_AND_CAT)
    client = create_app(spec).test_client()
    answer = client.get("/pets")
    assert answer.status_code == 200 and isinstance(body(answer)["name"], str)
    assert client.post("/pets", json={"name": "Tom"}).status_code == 201
    refused_body = client.post("/pets", json={"name": 7})
    assert refused_body.status_code == 400 and "7 is not of type 'string'" in refused_body.get_data(as_text=True)
