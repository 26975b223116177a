"""Types as each format says them: no importer coerces a number into the string a format writes
(a HoVer title, an AVeriTeC ``claim_id``, a Wikipedia dump's ``text``); the record is skipped and
counted (a typed parquet column that is not text: the file is not the format, one line)."""

from __future__ import annotations

import bz2
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from factdebate.tools.sources import SourceError, open_source


def _pages(path: Path, fmt: str) -> list:
    return [page for page, _ in open_source(path, fmt).read(None)]


def test_an_integer_hover_title_is_skipped_not_indexed_as_digits(tmp_path: Path) -> None:
    folder = tmp_path / "AA"
    folder.mkdir()
    rows = [{"id": "1", "url": "u", "title": "Real Title", "text": ["One."]},
            {"id": "2", "url": "u", "title": 1234, "text": ["Two."]},
            {"id": "3", "url": "u", "title": "After", "text": ["Three."]}]
    (folder / "wiki_00.bz2").write_bytes(bz2.compress("".join(json.dumps(r) + "\n" for r in rows)
                                                      .encode()))
    pages = _pages(tmp_path, "hover-wiki")
    assert [p.page for p in pages if not p.skip] == ["Real Title", "After"]
    [skipped] = [p for p in pages if p.skip]
    assert "field 'title' must be a string, got int" in skipped.skip
    assert "1234" not in [p.page for p in pages]


def test_a_wikipedia_jsonl_line_with_a_number_for_text_costs_that_line(tmp_path: Path) -> None:
    path = tmp_path / "wiki.jsonl"
    rows = [{"id": "1", "url": "u", "title": "A", "text": "Alpha."},
            {"id": "2", "url": "u", "title": "B", "text": 42},
            {"id": "3", "url": "u", "title": "C", "text": "Gamma."}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pages = _pages(path, "wikipedia")
    assert [(p.page, bool(p.skip)) for p in pages] == [("A", False), ("", True), ("C", False)]


def test_a_parquet_dump_whose_text_column_is_not_text_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "train-00000-of-00001.parquet"
    pq.write_table(pa.table({"id": ["1"], "url": ["u"], "title": ["A"], "text": [7]}), path)
    with pytest.raises(SourceError) as caught:
        open_source(path, "wikipedia")
    assert "parquet columns must be strings (text is int64)" in str(caught.value)


def test_a_parquet_row_without_a_title_is_skipped_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "train-00000-of-00001.parquet"
    pq.write_table(pa.table({"id": ["1", "2", "3"], "url": ["u", "u", "u"],
                             "title": ["A", "", "C"], "text": ["Alpha.", "Beta.", "Gamma."]}), path)
    pages = _pages(path, "wikipedia")
    assert [(p.page, bool(p.skip)) for p in pages] == [("A", False), ("", True), ("C", False)]
