"""One limit per outside input (core/input_limits.py): the registry, its table in the docs, the
settings' validation, and the record limit of the dump readers (a line over it is read past
without being held and its page skipped and counted, in a plain file, a zip and a bz2 stream)."""

from __future__ import annotations

import bz2
import json
import zipfile
from pathlib import Path

import pytest

from factdebate.core import input_limits
from factdebate.core.errors import ConfigError
from factdebate.tools.sources import open_source
from tests.fixtures.sources import fever_quirks

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_table_is_the_registry() -> None:
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert input_limits.markdown_table() in text


def test_every_limit_names_code_that_enforces_it() -> None:
    for item in input_limits.LIMITS:
        files = [ROOT / part.strip() for part in item.where.split(",")]
        first = files[0]
        assert first.is_file(), item
        if item.setting:
            code = "".join(p.read_text(encoding="utf-8") for p in
                           [first, *(first.parent / f.name for f in files[1:])] if p.is_file())
            assert item.setting in code or item.name in code, item


def test_a_setting_that_is_not_a_positive_number_is_one_config_error(monkeypatch) -> None:
    monkeypatch.setenv("FACTDEBATE_IMPORT_MAX_RECORD_BYTES", "-5")
    with pytest.raises(ConfigError, match="FACTDEBATE_IMPORT_MAX_RECORD_BYTES='-5'"):
        input_limits.limit("dump_record_bytes")
    monkeypatch.setenv("FACTDEBATE_IMPORT_MAX_RECORD_BYTES", "4096")
    assert input_limits.limit("dump_record_bytes") == 4096


def _huge_page_lines() -> bytes:
    good = json.dumps({"id": "Good_Page", "text": "", "lines": "0\tGood page .\n1\t"}).encode()
    huge = json.dumps({"id": "Huge", "text": "", "lines": "0\t" + "a" * 50_000}).encode()
    after = json.dumps({"id": "After_Huge", "text": "", "lines": "0\tAfter .\n1\t"}).encode()
    return b"\n".join([good, huge, after]) + b"\n"


@pytest.mark.parametrize("layout", ["folder", "zip", "bz2-first"])
def test_a_record_over_the_limit_is_skipped_and_reading_goes_on(tmp_path, monkeypatch, layout):
    monkeypatch.setenv("FACTDEBATE_IMPORT_MAX_RECORD_BYTES", "10000")
    data = _huge_page_lines()
    if layout == "folder":
        (tmp_path / "wiki-pages").mkdir()
        (tmp_path / "wiki-pages" / "wiki-001.jsonl").write_bytes(data)
        path = tmp_path / "wiki-pages"
    elif layout == "zip":
        path = tmp_path / "wiki-pages.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("wiki-pages/wiki-001.jsonl", data)
    else:  # the huge record first: still one skipped page, not "not the format"
        path = tmp_path / "wiki-001.jsonl"
        path.write_bytes(data.split(b"\n", 1)[1])
    pages = [page for page, _ in open_source(path, "fever-wiki").read(None)]
    skipped = [p for p in pages if p.skip]
    assert len(skipped) == 1 and "over the limit of 10000" in skipped[0].skip
    assert "line" in skipped[0].where
    assert pages[-1].page == "After_Huge" and pages[-1].elements == [(0, "After ."), (1, "")]


def test_a_resumed_read_after_an_oversize_record_lands_on_the_next_line(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_IMPORT_MAX_RECORD_BYTES", "10000")
    path = tmp_path / "wiki-001.jsonl"
    path.write_bytes(_huge_page_lines())
    source = open_source(path, "fever-wiki")
    cursors = [cursor for _, cursor in source.read(None)]
    again = [page.page for page, _ in source.read(cursors[1])]
    assert again == ["After_Huge"]


def test_the_quirk_fixture_imports_under_a_tight_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_IMPORT_MAX_RECORD_BYTES", "400")
    pages = [page for page, _ in open_source(fever_quirks.wiki_zip(tmp_path), "fever-wiki").read(None)]
    assert pages[-1].page == "Final_Page"


def test_a_bz2_stream_is_bounded_too(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_IMPORT_MAX_RECORD_BYTES", "10000")
    folder = tmp_path / "AA"
    folder.mkdir()
    lines = [json.dumps({"id": "1", "url": "u", "title": "Small", "text": ["One."]}),
             json.dumps({"id": "2", "url": "u", "title": "Huge", "text": ["x" * 50_000]}),
             json.dumps({"id": "3", "url": "u", "title": "After", "text": ["Two."]})]
    (folder / "wiki_00.bz2").write_bytes(bz2.compress(("\n".join(lines) + "\n").encode()))
    pages = [page for page, _ in open_source(tmp_path, "hover-wiki").read(None)]
    assert [(p.page or p.where, bool(p.skip)) for p in pages][-1] == ("After", False)
    assert sum(1 for p in pages if p.skip) == 1


def test_a_corpus_line_over_the_limit_is_a_listed_problem(tmp_path, monkeypatch) -> None:
    from factdebate.tools.indexing import CorpusError, validate_corpus

    monkeypatch.setenv("FACTDEBATE_IMPORT_MAX_RECORD_BYTES", "2000")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"doc_id": "a", "title": "A", "text": "a"}) + "\n"
                      + json.dumps({"doc_id": "b", "title": "B", "text": "b" * 5000}) + "\n")
    with pytest.raises(CorpusError, match=r"line 2: a record of 50\d\d bytes, over the limit of 2000"):
        validate_corpus(corpus)


def test_a_dataset_line_or_json_file_over_the_limit_is_one_error(tmp_path, monkeypatch) -> None:
    from factdebate.core.errors import InputError
    from factdebate.evaluation.formats import read_records

    monkeypatch.setenv("FACTDEBATE_IMPORT_MAX_RECORD_BYTES", "2000")
    data = tmp_path / "claims.jsonl"
    data.write_text(json.dumps({"id": "1", "claim": "c" * 5000}) + "\n")
    with pytest.raises(InputError, match=r"claims.jsonl, line 1: a record of 50\d\d bytes"):
        list(read_records(data))
    monkeypatch.setenv("FACTDEBATE_DATASET_MAX_JSON_BYTES", "100")
    whole = tmp_path / "dev.json"
    whole.write_text(json.dumps([{"id": "1", "claim": "c" * 500}]))
    with pytest.raises(InputError, match="over the limit of 100 bytes read whole"):
        list(read_records(whole))
