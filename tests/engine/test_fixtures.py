"""A bad fixture stops start-up with file, line, JSON pointer and rule; every problem is listed at once."""
import pytest

from conftest import LIBRARY
from mockserver import create_app
from mockserver.base.errors import LoadError

SPEC = LIBRARY / "openapi.yaml"


def problems(fixtures_dir):
    with pytest.raises(LoadError) as caught:
        create_app(SPEC, fixtures_dir)
    return caught.value.problems


def test_an_item_that_breaks_its_schema(write, tmp_path):
    write("fx/books.yaml", """\
        collections:
          books:
            items:
              - {isbn: '9780000000010', title: Fine, year: 2001, author: {name: A}}
              - isbn: '9780000000020'
                title: Too old
                year: 1200
                author: {name: B}
        operations:
          listBooks:
            list: {from: books, page: {items: items, hasMore: more, nextCursor: next}}
        """)
    [problem] = problems(tmp_path / "fx")
    assert problem.file.endswith("books.yaml")
    assert problem.pointer == "/collections/books/items/1/year"
    assert problem.line == 7
    assert problem.rule == "minimum"
    assert "listBooks" in problem.message


def test_every_problem_at_once(write, tmp_path):
    write("fx/a.yaml", """\
        operations:
          noSuchOperation:
            item: {from: books, where: [{field: isbn, equals: {path: isbn}}]}
          getBook:
            item: {from: missing, where: [{field: isbn, equals: {path: isbn}}]}
        """)
    write("fx/b.yaml", "collections:\n  books:\n    items: []\n    unknownKey: 1\n")
    found = problems(tmp_path / "fx")
    assert {p.rule for p in found} == {"operationId", "from", "additionalProperties"}
    assert any(p.file.endswith("b.yaml") and p.line == 2 for p in found)


def test_duplicate_identity_in_a_collection(write, tmp_path):
    write("fx/a.yaml", """\
        collections:
          books:
            key: [isbn]
            items:
              - {isbn: '1'}
              - {isbn: '1'}
        """)
    [problem] = problems(tmp_path / "fx")
    assert problem.rule == "duplicate-key" and problem.pointer == "/collections/books/items/1"


def test_a_fixed_answer_that_breaks_its_schema(write, tmp_path):
    write("fx/a.yaml", """\
        operations:
          getShelf:
            respond:
              - status: 200
                body: {shelf: 1, count: -1}
        """)
    [problem] = problems(tmp_path / "fx")
    assert problem.pointer == "/operations/getShelf/respond/0/body/count" and problem.rule == "minimum"


def test_a_status_the_operation_does_not_declare(write, tmp_path):
    write("fx/a.yaml", """\
        operations:
          getShelf:
            reject:
              - when: {query: verbose, equals: true}
                status: 418
        """)
    [problem] = problems(tmp_path / "fx")
    assert problem.rule == "status" and "418" in problem.message


def test_a_rule_with_no_operator(write, tmp_path):
    write("fx/a.yaml", """\
        collections:
          books: {items: []}
        operations:
          getBook:
            item: {from: books, where: [{field: isbn}]}
        """)
    [problem] = problems(tmp_path / "fx")
    assert problem.pointer.startswith("/operations/getBook/item/where/0")


def test_the_same_name_in_two_files(write, tmp_path):
    write("fx/a.yaml", "collections:\n  books: {items: []}\n")
    write("fx/b.yaml", "collections:\n  books: {items: []}\n")
    [problem] = problems(tmp_path / "fx")
    assert problem.file.endswith("b.yaml") and problem.rule == "duplicate" and "a.yaml" in problem.message
