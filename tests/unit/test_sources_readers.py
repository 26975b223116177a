"""The knowledge-source readers (tools/sources): passages with page ids and element ids exactly as
each dataset's gold evidence names them, format detection, resumable cursors, and one-line errors
for damaged dumps. Fixtures: tiny dumps in each official layout (tests/fixtures/sources/make.py)."""

from __future__ import annotations

import bz2
import json
import sqlite3
from pathlib import Path

import pytest

from factdebate.tools.sources import (
    SourceError,
    detect,
    open_source,
    passages_of,
)
from tests.fixtures.sources import make


def _passages(path: Path, fmt: str | None = None, granularity: str = "chunk") -> list[dict]:
    source = open_source(path, fmt)
    return [p for page, _ in source.read(None) for p in passages_of(page, granularity)]


def test_fever_zip_and_folder_give_the_same_passages(tmp_path: Path) -> None:
    zipped = _passages(make.fever_zip(tmp_path))
    folder = _passages(make.fever_folder(tmp_path / "f"))
    assert zipped == folder
    soul = zipped[0]
    assert soul["id"] == f"{make.SOUL_FOOD}#1" and soul["page"] == make.SOUL_FOOD
    assert soul["title"] == "Soul Food (film)"
    assert soul["sentences"] == [0, 2]  # the empty sentence 1 holds nothing
    assert "( his debut )" in soul["text"] and "George_Tillman" not in soul["text"]
    assert soul["pool"] == "" and soul["url"].endswith(make.SOUL_FOOD)
    assert [p["page"] for p in zipped] == [make.SOUL_FOOD, "Nikolaj_Coster-Waldau", "Telemundo"]


def test_sentence_granularity_is_one_passage_per_sentence(tmp_path: Path) -> None:
    passages = _passages(make.fever_folder(tmp_path), granularity="sentence")
    soul = [p for p in passages if p["page"] == make.SOUL_FOOD]
    assert [(p["id"], p["sentences"]) for p in soul] == [
        (f"{make.SOUL_FOOD}#1", [0]), (f"{make.SOUL_FOOD}#2", [2])]


def test_hover_tree_pages_are_hotpotqa_titles_with_sentence_indices(tmp_path: Path) -> None:
    passages = _passages(make.hover_tree(tmp_path))
    assert [(p["page"], p["sentences"]) for p in passages] == [
        ("Skagen Painters", [0, 1]), ("Anna Ancher", [0, 1, 2]), ("Michael Ancher", [0])]
    assert passages[0]["text"] == ("The Skagen Painters were a community of artists. "
                                   "They worked in Skagen & nearby villages.")


def test_feverous_db_keeps_element_ids_cells_and_items(tmp_path: Path) -> None:
    passages = _passages(make.feverous_db(tmp_path), granularity="sentence")
    algebra = {tuple(p["sentences"]): p["text"] for p in passages if p["page"] == "Algebraic logic"}
    assert list(algebra) == [("sentence_0",), ("section_0",), ("sentence_1",), ("table_caption_0",),
                             ("cell_0_0_0", "cell_0_0_1"), ("cell_0_1_0", "cell_0_1_1"),
                             ("item_0_0",), ("item_0_1",)]
    assert algebra[("sentence_0",)].startswith("In mathematical logic, algebraic logic")
    assert algebra[("cell_0_1_0", "cell_0_1_1")] == "Intuitionistic logic | Heyting algebra"
    chunked = _passages(make.feverous_db(tmp_path / "c"))
    assert chunked[0]["sentences"][:3] == ["sentence_0", "section_0", "sentence_1"]
    assert chunked[0]["id"] == "Algebraic logic#1"


def test_averitec_store_pools_by_claim_and_indexes_a_repeated_url_once(tmp_path: Path) -> None:
    passages = _passages(make.averitec_store(tmp_path))
    assert [(p["pool"], p["page"]) for p in passages] == [
        ("0", make.SHARED_URL), ("0", "https://zero.example/only"),
        ("1", make.SHARED_URL), ("1", "https://one.example/penguins")]
    assert passages[0]["id"] == f"0/{make.SHARED_URL}#1" and passages[0]["sentences"] == []
    assert len({p["id"] for p in passages}) == len(passages)


def test_wikipedia_parquet_and_jsonl_chunk_articles(tmp_path: Path) -> None:
    parquet = _passages(make.wikipedia_parquet(tmp_path))
    assert parquet == _passages(make.wikipedia_jsonl(tmp_path))
    anarchism = [p for p in parquet if p["page"] == "Anarchism"]
    assert len(anarchism) == 2 and all(len(p["text"]) <= 2000 for p in anarchism)
    assert [p["id"] for p in anarchism] == ["Anarchism#1", "Anarchism#2"]


@pytest.mark.parametrize("fmt", sorted(make.MAKERS))
def test_detection_names_each_format(tmp_path: Path, fmt: str) -> None:
    assert detect(make.MAKERS[fmt](tmp_path)) == fmt


def test_detection_of_folders_files_and_the_jsonl_default(tmp_path: Path) -> None:
    assert detect(make.fever_folder(tmp_path / "a")) == "fever-wiki"
    assert detect(make.wikipedia_jsonl(tmp_path)) == "wikipedia"
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"doc_id": "1", "title": "t", "text": "x"}\n')
    assert detect(corpus) == "jsonl"
    odd = tmp_path / "odd.txt"
    odd.write_text("hello\n")
    assert detect(odd, default="jsonl") == "jsonl"
    with pytest.raises(Exception, match="cannot tell the format"):
        detect(odd)


@pytest.mark.parametrize("fmt", sorted(make.MAKERS))
def test_reading_resumes_from_any_cursor(tmp_path: Path, fmt: str) -> None:
    source = open_source(make.MAKERS[fmt](tmp_path), fmt)
    pages = list(source.read(None))
    done = [source.done(cursor) for _, cursor in pages]
    assert done == sorted(done) and 0 <= done[0] and done[-1] <= source.total()
    for i, (_, cursor) in enumerate(pages):
        rest = [page.page for page, _ in open_source(source.path, fmt).read(cursor)]
        assert rest == [page.page for page, _ in pages[i + 1:]]


def _error(path: Path, fmt: str | None = None) -> str:
    with pytest.raises(SourceError) as info:
        _passages(path, fmt)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_truncated_zip_is_named(tmp_path: Path) -> None:
    path = make.fever_zip(tmp_path)
    path.write_bytes(path.read_bytes()[:200])
    message = _error(path)
    assert str(path) in message and "truncated or damaged" in message


def test_a_sqlite_file_without_feverous_table_is_named(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE documents (id, text)")
    db.commit()
    db.close()
    message = _error(path, "feverous-db")
    assert str(path) in message and "not a FEVEROUS database" in message and "documents" in message


def test_a_bz2_whose_first_line_is_broken_names_file_and_line(tmp_path: Path) -> None:
    tree = make.hover_tree(tmp_path)
    broken = tree / "AB" / "wiki_00.bz2"
    broken.write_bytes(bz2.compress(b'{"title": "half\n{"title": "ok", "text": ["a."]}\n'))
    message = _error(tree)
    assert f"{broken} line 1" in message and "malformed JSON" in message


def test_a_bz2_with_a_broken_later_line_skips_that_page(tmp_path: Path) -> None:
    tree = make.hover_tree(tmp_path)
    broken = tree / "AB" / "wiki_00.bz2"
    broken.write_bytes(bz2.compress(b'{"title": "ok", "text": ["a."]}\n{"title": "half\n'))
    pages = [page for page, _ in open_source(tree).read(None)]
    assert [p.page for p in pages if not p.skip][-1] == "ok"
    skipped = [p for p in pages if p.skip]
    assert len(skipped) == 1 and skipped[0].where == f"{broken} line 2"
    assert skipped[0].skip.startswith("malformed JSON")


def test_a_truncated_bz2_stream_is_named(tmp_path: Path) -> None:
    tree = make.hover_tree(tmp_path)
    broken = tree / "AA" / "wiki_00.bz2"
    broken.write_bytes(broken.read_bytes()[:-20])
    message = _error(tree)
    assert str(broken) in message and "truncated or damaged" in message


def test_a_store_file_not_named_by_claim_and_without_claim_id_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "store.json"
    bad.write_text(json.dumps({"url": "https://u.example", "url2text": ["x"]}) + "\n")
    assert _error(bad, "averitec-store").startswith(
        f"{bad} line 1: missing field 'claim_id' (and the file name is not a claim number). ")


def test_a_fever_page_whose_first_row_has_no_number_is_skipped_not_the_file(tmp_path: Path) -> None:
    folder = make.fever_folder(tmp_path)
    bad = folder / "wiki-002.jsonl"
    bad.write_text(json.dumps({"id": "X", "text": "", "lines": "zero\tno number"}) + "\n"
                   + json.dumps({"id": "Y", "text": "", "lines": "0\tY is read ."}) + "\n")
    pages = [page for page, _ in open_source(folder).read(None)]
    skipped = [p for p in pages if p.skip]
    assert [p.page for p in skipped] == ["X"]
    assert skipped[0].where == f"{bad} line 1 (page X)"
    assert skipped[0].skip.startswith("the first 'lines' row does not start with a sentence number")
    assert pages[-1].page == "Y"


def test_a_feverous_page_whose_order_names_a_missing_element_is_repaired(tmp_path: Path) -> None:
    path = tmp_path / "feverous_wikiv1.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE wiki (id PRIMARY KEY, data json)")
    db.execute("INSERT INTO wiki VALUES (?, ?)", ("P", json.dumps(
        {"order": ["sentence_0", "sentence_1"], "sentence_1": "P is read."})))
    db.commit()
    db.close()
    [(page, _)] = list(open_source(path).read(None))
    assert page.elements == [("sentence_1", "P is read.")] and not page.skip
    assert page.repairs == ["'order' names 'sentence_0', which the page does not hold; left out"]
    assert page.where == f"{path} row 1 (page 'P')"
