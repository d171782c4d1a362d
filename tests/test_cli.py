"""The commands as a person runs them: `mockserver validate` and `mockserver serve` on a free port."""
import json
import subprocess
import sys
import urllib.request

from conftest import LIBRARY, ROOT, serving


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mockserver", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)


def test_validate_says_all_is_well():
    result = run("validate")
    assert result.returncode == 0, result.stderr
    assert "All is well" in result.stdout


def test_validate_lists_every_problem(write, tmp_path):
    write("fx/a.yaml", "collections:\n  books:\n    items:\n      - {isbn: '1', title: T, year: 1, author: {name: A}}\n"
                       "operations:\n  getBook:\n    item: {from: books, where: [{field: isbn, equals: {path: isbn}}]}\n"
                       "  nope: {}\n")
    result = run("validate", "--spec", str(LIBRARY / "openapi.yaml"), "--fixtures", str(tmp_path / "fx"))
    assert result.returncode == 1
    assert "2 problem(s)" in result.stderr
    assert "a.yaml:4: /collections/books/items/0/isbn" in result.stderr
    assert "no operation 'nope'" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_refuses_a_bad_description_with_exit_2(write):
    result = run("serve", "--spec", str(write("bad.yaml", "swagger: '2.0'\ninfo: {title: x}\n")))
    assert result.returncode == 2
    assert "Swagger 2.0 is not supported" in result.stderr and "Traceback" not in result.stderr


def test_serve_answers_on_its_port():
    with serving() as (_, port):
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/test-sets?limit=1",
                                         headers={"Authorization": "Bearer demo-token"})
        with urllib.request.urlopen(request, timeout=10) as response:
            page = json.loads(response.read())
            assert response.headers["X-Request-Id"]
    assert len(page["data"]) == 1 and page["hasMore"] is True
