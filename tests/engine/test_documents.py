from pathlib import Path

import pytest

from mockserver.core.documents import DocumentSet, RefError, read_document
from mockserver.core.errors import LoadError


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
