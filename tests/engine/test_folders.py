"""Files stay inside their folder: a description reads no file outside its own folder (nor its fixtures outside
theirs) unless `--allow-ref-outside` lets a shared folder in, and no message ever quotes such a file."""
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import ROOT, body, free_port
from mockserver import create_app
from mockserver.base.errors import LoadError

DESCRIPTION = """\
openapi: 3.1.0
info: {title: Leak, version: "1"}
paths:
  /leak:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object}
              examples:
                secret: %s
"""
LINE = 13  # of the example above
POINTER = "/paths/~1leak/get/responses/200/content/application~1json/examples/secret"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mockserver", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)


@pytest.fixture()
def marker() -> str:
    return f"secret-{uuid.uuid4().hex}"


def layout(tmp_path: Path, marker: str, example: str, secret_in: str = ".") -> Path:
    """`api/openapi.yaml` whose example is `example`, and beside `api/` (in `secret_in`) a secret Example Object
    whose value holds the marker: what a leak would show."""
    (tmp_path / secret_in).mkdir(parents=True, exist_ok=True)
    (tmp_path / secret_in / "secret.yaml").write_text(f"value: {{token: {marker}}}\n")
    (tmp_path / "api").mkdir()
    spec = tmp_path / "api" / "openapi.yaml"
    spec.write_text(DESCRIPTION % example)
    return spec


def refs(tmp_path: Path) -> dict[str, str]:
    return {"relative": '{$ref: "../secret.yaml"}', "encoded-dots": '{$ref: "%2e%2e/secret.yaml"}',
            "file-uri": f'{{$ref: "{(tmp_path / "secret.yaml").as_uri()}"}}', "symlink": '{$ref: "link.yaml"}'}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["relative", "encoded-dots", "file-uri", "symlink"])
def test_a_ref_outside_the_folder_is_refused_naming_file_line_and_pointer(tmp_path, marker, kind):
    spec = layout(tmp_path, marker, refs(tmp_path)[kind])
    (spec.parent / "link.yaml").symlink_to(tmp_path / "secret.yaml")
    checked = run("validate", "--spec", str(spec))
    assert checked.returncode == 1, checked.stdout
    assert marker not in checked.stdout + checked.stderr
    assert f"{spec}:{LINE}: {POINTER}/$ref: unresolved $ref" in checked.stderr
    assert f"lies outside the description's folder {spec.parent}" in checked.stderr
    assert "[outside-folder]" in checked.stderr
    served = run("serve", "--spec", str(spec), "--port", str(free_port()))
    assert served.returncode == 2 and "[outside-folder]" in served.stderr
    assert marker not in served.stdout + served.stderr
    with pytest.raises(LoadError) as refused:  # no app, hence no answer
        create_app(spec)
    assert marker not in str(refused.value)


def test_an_external_value_outside_the_folder_is_refused(tmp_path, marker):
    spec = layout(tmp_path, marker, f'{{externalValue: "{(tmp_path / "secret.yaml").as_uri()}"}}')
    checked = run("validate", "--spec", str(spec))
    assert checked.returncode == 1 and marker not in checked.stdout + checked.stderr
    assert f"{spec}:{LINE}: {POINTER}/externalValue: externalValue" in checked.stderr
    assert "[outside-folder]" in checked.stderr


def test_a_fixtures_symlink_out_of_the_folder_is_refused_unread(tmp_path, marker):
    spec = layout(tmp_path, marker, '{value: {token: inside}}')
    (tmp_path / "secret.yaml").write_text(f"{marker}: the fixture format would quote this key\n")
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / "leak.yaml").symlink_to(tmp_path / "secret.yaml")
    checked = run("validate", "--spec", str(spec), "--fixtures", str(fixtures))
    assert checked.returncode == 1 and marker not in checked.stdout + checked.stderr
    assert (f"{fixtures / 'leak.yaml'}: /: {fixtures / 'leak.yaml'} (a link to {tmp_path / 'secret.yaml'}) lies "
            f"outside the fixtures folder {fixtures}") in checked.stderr


def test_allow_ref_outside_lets_a_shared_folder_in(tmp_path, marker):
    spec = layout(tmp_path, marker, '{$ref: "../shared/secret.yaml"}', secret_in="shared")
    assert run("validate", "--spec", str(spec)).returncode == 1
    shared = str(tmp_path / "shared")
    checked = run("validate", "--spec", str(spec), "--allow-ref-outside", shared)
    assert checked.returncode == 0, checked.stderr
    answer = create_app(spec, allow_outside=[shared]).test_client().get("/leak")
    assert body(answer) == {"token": marker}  # served on purpose: the folder was let in
    for command in (["contract", "--spec", str(spec), "--phases", "coverage"], ["diff", str(spec), str(spec)]):
        refused = run(*command)
        assert refused.returncode == 2 and "[outside-folder]" in refused.stderr and marker not in refused.stderr
        assert run(*command, "--allow-ref-outside", shared).returncode == 0, command
    other = tmp_path / "other"
    other.mkdir()
    alone = run("validate", "--spec", str(spec), "--allow-ref-outside", str(other))
    assert alone.returncode == 1 and "outside the description's folder" in alone.stderr
    missing = run("validate", "--spec", str(spec), "--allow-ref-outside", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "is not a folder" in missing.stderr


def test_refs_across_files_inside_the_folder_keep_working():
    split = ROOT / "tests" / "data" / "split" / "openapi.yaml"
    checked = run("validate", "--spec", str(split))
    assert checked.returncode == 0 and "All is well" in checked.stdout, checked.stderr


def test_a_yaml_error_names_line_and_column_but_quotes_nothing(tmp_path, marker):
    spec = tmp_path / "openapi.yaml"
    spec.write_text(f"openapi: 3.1.0\npaths: x: {marker}\n")
    checked = run("validate", "--spec", str(spec))
    assert checked.returncode == 1 and marker not in checked.stderr
    said = "not valid YAML: mapping values are not allowed in this context (column 9) [syntax]"
    assert f"{spec}:2: /: {said}" in checked.stderr
