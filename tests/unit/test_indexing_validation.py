"""Corpus validation of ``factdebate index``: every bad input fails before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factdebate.core.errors import BackendUnavailableError, InputError
from factdebate.tools.indexing import (
    CHUNK_CHARS,
    CorpusError,
    build_indexes,
    chunk_text,
    index_exists,
    iter_passages,
    read_manifest,
    validate_corpus,
)


def _write(tmp_path: Path, lines: list[str | bytes], name: str = "corpus.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path


def _rec(doc_id: object = "d1", title: object = "Title", text: object = "Some text.") -> str:
    return json.dumps({"doc_id": doc_id, "title": title, "text": text})


def _issues(path: Path) -> list[str]:
    with pytest.raises(CorpusError) as info:
        validate_corpus(path)
    assert str(path) in str(info.value)
    return info.value.issues


def test_valid_corpus_counts_documents_and_passages(tmp_path: Path) -> None:
    long_text = "A sentence that repeats. " * 200  # ~5,000 chars -> 3 chunks
    path = _write(tmp_path, [_rec("a"), "", _rec("b", text=long_text) + "  "])
    scan = validate_corpus(path)
    assert (scan.documents, scan.passages) == (2, 4)
    assert len(scan.sha256) == 64
    ids = [p["id"] for p in iter_passages(path)]
    assert ids == ["a", "b#1", "b#2", "b#3"]


def test_non_utf8_names_line_and_byte_offset(tmp_path: Path) -> None:
    first = _rec("a")
    bad = b'{"doc_id": "b", "title": "Caf\xe9", "text": "x"}'
    path = _write(tmp_path, [first, bad])
    (issue,) = _issues(path)
    offset = len(first) + 1 + bad.index(b"\xe9")
    assert issue == f"line 2: not UTF-8 (byte 0xe9 at byte offset {offset})"


def test_malformed_json_names_line(tmp_path: Path) -> None:
    path = _write(tmp_path, [_rec("a"), _rec("b"), '{"doc_id": "c", "title": "T",'])
    (issue,) = _issues(path)
    assert issue.startswith("line 3: malformed JSON")


def test_non_object_line_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, ['["doc", "title", "text"]'])
    assert _issues(path) == ["line 1: expected a JSON object, got list"]


@pytest.mark.parametrize("field", ["doc_id", "title", "text"])
def test_missing_field_names_line_and_field(tmp_path: Path, field: str) -> None:
    record = {"doc_id": "x", "title": "T", "text": "body"}
    del record[field]
    path = _write(tmp_path, [_rec("a"), json.dumps(record)])
    assert _issues(path) == [f"line 2: missing field {field!r}"]


@pytest.mark.parametrize("field", ["doc_id", "title", "text"])
def test_empty_field_names_line_and_field(tmp_path: Path, field: str) -> None:
    record = {"doc_id": "x", "title": "T", "text": "body", field: "   "}
    path = _write(tmp_path, [json.dumps(record)])
    assert _issues(path) == [f"line 1: empty field {field!r}"]


def test_wrong_type_is_reported(tmp_path: Path) -> None:
    path = _write(tmp_path, [_rec("a", text=None), _rec(7, title=["T"])])
    assert _issues(path) == [
        "line 1: field 'text' must be a string, got NoneType",
        "line 2: field 'title' must be a string, got list",
    ]


def test_integer_doc_id_is_accepted(tmp_path: Path) -> None:
    path = _write(tmp_path, [_rec(12)])
    assert [p["id"] for p in iter_passages(path)] == ["12"]


def test_duplicate_doc_id_names_both_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, [_rec("a"), _rec("b"), _rec("a")])
    assert _issues(path) == ["line 3: duplicate doc_id 'a' (first at line 1)"]


def test_chunk_id_colliding_with_a_doc_id_is_reported(tmp_path: Path) -> None:
    path = _write(tmp_path, [_rec("a#2"), _rec("a", text="word " * 1000)])
    assert _issues(path) == ["line 2: duplicate passage id 'a#2' (first at line 1)"]


def test_every_problem_is_listed(tmp_path: Path) -> None:
    path = _write(tmp_path, ["nope", _rec("a", title=""), b"\xff", _rec("a", text="")])
    issues = _issues(path)
    assert [i.split(":")[0] for i in issues] == ["line 1", "line 2", "line 3", "line 4"]


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        validate_corpus(tmp_path / "absent.jsonl")
    with pytest.raises(InputError, match="no passages"):
        validate_corpus(_write(tmp_path, ["", "  "]))


def test_utf8_bom_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _rec("a").encode() + b"\n")
    assert validate_corpus(path).passages == 1


def test_invalid_corpus_writes_nothing(tmp_path: Path) -> None:
    path = _write(tmp_path, [_rec("a"), _rec("a")])
    index_dir = tmp_path / "out" / "index"
    with pytest.raises(CorpusError):
        build_indexes(path, index_dir)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert not index_exists(index_dir)


def test_index_dir_that_is_a_file_is_rejected(tmp_path: Path) -> None:
    target = tmp_path / "index"
    target.write_text("not a folder")
    with pytest.raises(InputError, match="is a file"):
        build_indexes(_write(tmp_path, [_rec("a")]), target)


def test_manifest_absent(tmp_path: Path) -> None:
    assert not index_exists(tmp_path)
    with pytest.raises(BackendUnavailableError, match="factdebate index"):
        read_manifest(tmp_path)


def test_chunk_text_respects_limit_and_keeps_all_words() -> None:
    text = " ".join(f"w{i}." for i in range(3000))
    chunks = chunk_text(text)
    assert all(len(c) <= CHUNK_CHARS for c in chunks)
    assert " ".join(chunks).split() == text.split()
    unbroken = "x" * (CHUNK_CHARS * 2 + 5)
    assert [len(c) for c in chunk_text(unbroken)] == [CHUNK_CHARS, CHUNK_CHARS, 5]
    assert chunk_text("short") == ["short"]
