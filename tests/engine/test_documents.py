import marshal
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import LIBRARY, PARSED
from mockserver import cache
from mockserver.base.errors import LoadError
from mockserver.cache import DiskCache
from mockserver.spec.documents import DocumentSet, RefError, read_document, use_parse_cache


def test_lines_are_kept_per_pointer(write):
    path = write("a.yaml", """\
        top:
          list:
            - name: x
            - name: y
        """)
    doc = read_document(path)
    assert doc.line("/top/list/1/name") == 4
    assert doc.line("/top/list/1/missing") == 4  # the nearest parent


def test_timestamps_and_status_keys_stay_text(write):
    doc = read_document(write("a.yaml", "at: 2026-01-02T03:04:05Z\nday: 2026-01-02\nresponses:\n  200: ok\n"))
    assert doc.data == {"at": "2026-01-02T03:04:05Z", "day": "2026-01-02", "responses": {"200": "ok"}}


def test_duplicate_key_names_file_line_and_pointer(write):
    path = write("dup.yaml", "a:\n  b: 1\n  b: 2\n")
    with pytest.raises(LoadError) as caught:
        read_document(path)
    problem = caught.value.problems[0]
    assert (problem.file, problem.line, problem.pointer, problem.rule) == (str(path), 3, "/a/b", "duplicate-key")


def test_bad_yaml_names_the_line(write):
    with pytest.raises(LoadError) as caught:
        read_document(write("bad.yaml", "a: 1\nb: [1, 2\nc: 3\n"))
    assert caught.value.problems[0].rule == "syntax"
    assert caught.value.problems[0].line is not None


def test_bad_json_names_the_line(write):
    with pytest.raises(LoadError) as caught:
        read_document(write("bad.json", '{\n  "a": 1,\n  "a": 2\n}'))
    assert "duplicate key" in caught.value.problems[0].message


def test_refs_resolve_across_files_and_loops_are_refused(write, tmp_path: Path):
    write("common.yaml", "Thing: {type: string}\nLoopA: {$ref: '#/LoopB'}\nLoopB: {$ref: '#/LoopA'}\n")
    root = write("root.yaml", "a: {$ref: 'common.yaml#/Thing'}\n")
    docs = DocumentSet(root)
    node, uri = docs.resolve("common.yaml#/Thing", docs.root.uri)
    assert node == {"type": "string"} and uri.endswith("common.yaml#/Thing")
    with pytest.raises(RefError, match="loop"):
        docs.resolve("common.yaml#/LoopA", docs.root.uri)
    with pytest.raises(RefError, match="points to nothing"):
        docs.resolve("#/nowhere", docs.root.uri)


@pytest.fixture()
def parse_cache(tmp_path: Path) -> Iterator[Path]:
    """The command line's parse cache, installed in a folder of the test's own."""
    folder = tmp_path / "parsed"
    use_parse_cache(DiskCache(folder))
    yield folder
    use_parse_cache(PARSED)  # the test process's own (conftest)


def test_a_file_read_again_comes_from_the_parse_cache_and_an_edited_one_is_parsed_again(write, parse_cache):
    path = write("a.yaml", "top:\n  list:\n    - name: x\n")
    first = read_document(path)
    [entry] = list(parse_cache.iterdir())
    entry.write_bytes(marshal.dumps(({"from": "the cache"}, {"/from": 7})))  # what a second read gets is the entry
    again = read_document(path)
    assert (again.data, again.line("/from")) == ({"from": "the cache"}, 7)
    entry.write_bytes(b"torn")  # an entry that cannot be read: the file is parsed, and the entry written again
    assert (read_document(path).data, read_document(path).lines) == (first.data, first.lines)
    write("a.yaml", "top:\n  list:\n    - name: y\n    - name: z\n")
    edited = read_document(path)
    assert edited.data == {"top": {"list": [{"name": "y"}, {"name": "z"}]}} and edited.line("/top/list/1") == 4
    assert len(list(parse_cache.iterdir())) == 2


def test_a_file_with_problems_is_never_cached_and_still_names_its_line(write, parse_cache):
    path = write("dup.yaml", "a:\n  b: 1\n  b: 2\n")
    for _ in range(2):
        with pytest.raises(LoadError) as caught:
            read_document(path)
        assert caught.value.problems[0].line == 3
    assert not parse_cache.exists() or not list(parse_cache.iterdir())


def test_the_parse_cache_keeps_its_newest_entries_only(write, parse_cache, monkeypatch):
    monkeypatch.setattr(cache, "KEEP", 16)  # the rule, with fewer writes than the thousands KEEP is
    for n in range(cache.KEEP + 5):
        read_document(write("a.yaml", f"n: {n}\n"))
    assert len(list(parse_cache.iterdir())) == cache.KEEP


def test_the_command_line_keeps_its_cache_where_the_environment_says_or_nowhere(tmp_path):
    spec = LIBRARY / "openapi.yaml"
    for chosen, kept in (("cache", True), ("off", False)):
        env = {**os.environ, "MOCKSERVER_CACHE_DIR": str(tmp_path / chosen) if kept else chosen}
        done = subprocess.run([sys.executable, "-m", "mockserver", "validate", "--spec", str(spec)], cwd=tmp_path,
                              capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / chosen).is_dir() is kept
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    env = {**os.environ, "MOCKSERVER_CACHE_DIR": str(blocked)}  # a cache that cannot be written: no cache
    done = subprocess.run([sys.executable, "-m", "mockserver", "validate", "--spec", str(spec)], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and "All is well" in done.stdout, done.stderr
