"""The knowledge sources as really shipped, read in place: AVeriTeC's zipped store of
``output_dev/<n>.json`` members, HotpotQA's abstracts as one ``.tar.bz2`` of bz2 members, HoVer's
``wiki_wo_links.db``, FEVEROUS' database inside its zip. One test per quirk (the module
docstrings in tools/sources list them), the records without a right reading skipped one page at a
time, what is not the format at all refused in one line, and detection that names what it found.
Fixtures: tests/fixtures/sources/make.py (made-up text in the official layouts)."""

from __future__ import annotations

import bz2
import json
import sqlite3
import unicodedata
import zipfile
from pathlib import Path

import pytest

from factdebate.evaluation.datasets import averitec_claim_id
from factdebate.tools.sources import SourceError, detect, open_source, passages_of
from factdebate.tools.sources.hover_db import split_sentences
from tests.fixtures.sources import make


def _pages(path: Path, fmt: str | None = None) -> list:
    return [page for page, _ in open_source(path, fmt).read(None)]


def _sentences(path: Path, fmt: str | None = None) -> list[tuple[str, list, str]]:
    return [(p["page"], p["sentences"], p["text"]) for page in _pages(path, fmt)
            for p in passages_of(page, "sentence")]


def _one_line_error(path: Path, fmt: str | None = None) -> str:
    with pytest.raises(SourceError) as info:
        _pages(path, fmt)
    assert "\n" not in str(info.value)
    return str(info.value)


# --- layouts and detection ----------------------------------------------------------------------

@pytest.mark.parametrize("layout", sorted(make.LAYOUTS))
def test_each_layout_is_detected_and_read_in_place(tmp_path: Path, layout: str) -> None:
    maker, fmt = make.LAYOUTS[layout]
    path = maker(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    assert detect(path) == fmt
    assert open_source(path).name == fmt and _sentences(path)
    assert sorted(tmp_path.rglob("*")) == before  # nothing extracted or written beside it


@pytest.mark.parametrize("layout", ["hover-tar", "hover-db", "averitec-zip"])
def test_reading_the_releases_resumes_from_any_cursor(tmp_path: Path, layout: str) -> None:
    maker, fmt = make.LAYOUTS[layout]
    source = open_source(maker(tmp_path), fmt)
    pages = list(source.read(None))
    done = [source.done(cursor) for _, cursor in pages]
    assert done == sorted(done) and done[-1] <= source.total()
    for i, (_, cursor) in enumerate(pages):
        rest = [page.page for page, _ in open_source(source.path, fmt).read(json.loads(
            json.dumps(cursor)))]
        assert rest == [page.page for page, _ in pages[i + 1:]]


def test_detection_names_what_it_found_instead_of_another_formats_complaint(tmp_path: Path) -> None:
    other_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("data/a.json", json.dumps({"question": "q", "answer": "a"}) + "\n")
        zf.writestr("data/b.json", "{}\n")
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE notes (id, body)")
    con.commit()
    con.close()
    other_bz2 = tmp_path / "records.bz2"
    other_bz2.write_bytes(bz2.compress(json.dumps({"name": "x"}).encode() + b"\n"))
    other_tar = make.hover_tar(tmp_path / "t", members={}, raw={"AA/notes.txt": b"hello"})
    cases = {other_zip: "a zip of 2 members (*.json) whose first record (data/a.json) has keys "
                        "[question, answer]",
             db: "an SQLite database with tables notes(id, body)",
             other_bz2: "a bz2 file whose first record has keys [name]",
             other_tar: "a .tar.bz2 whose first file is "}
    for path, found in cases.items():
        with pytest.raises(Exception) as info:
            detect(path, default="jsonl")
        message = str(info.value)
        assert f"cannot tell the format of {path}: {found}" in message, message
        assert "not UTF-8" not in message and "wiki-NNN" not in message


def test_folder_detection_names_what_it_holds(tmp_path: Path) -> None:
    make.feverous_zip(tmp_path / "fev")
    (tmp_path / "fev" / "unzipped" / "feverous_wikiv1.db").unlink()
    make.hover_tar(tmp_path / "hov")
    odd = tmp_path / "odd"
    odd.mkdir()
    for name in ("a.csv", "b.csv", "c.txt"):
        (odd / name).write_text("x\n")
    cases = {tmp_path / "fev": "a folder holding feverous-wiki-pages-db.zip (feverous-db): pass "
                               "that file itself",
             tmp_path / "hov": f"a folder holding {make.ABSTRACTS_ROOT}.tar.bz2 (hover-wiki): "
                               "pass that file itself",
             odd: "a folder of 3 files (*.csv: 2, *.txt: 1)"}
    for folder, found in cases.items():
        with pytest.raises(Exception, match="cannot tell the format") as info:
            detect(folder)
        assert f"{folder}: {found}" in str(info.value)


# --- AVeriTeC's knowledge store -----------------------------------------------------------------

def test_store_zip_pools_by_member_number_in_numeric_order(tmp_path: Path) -> None:
    pages = _pages(make.averitec_zip(tmp_path))
    assert [(p.pool, p.page) for p in pages] == [
        ("0", make.SHARED_URL), ("0", "https://zero.example/only"),
        ("1", make.SHARED_URL), ("1", "https://one.example/penguins"),
        ("1", "https://one.example/down"), ("2", "https://two.example/bees"),
        ("10", "https://ten.example/tides")]
    down = pages[4]
    assert down.elements == [] and not down.skip  # url2text []: an empty page, no passage
    assert passages_of(down) == []
    assert not any(p.repairs or p.skip for p in pages)


def test_store_pool_is_the_claim_id_evaluation_gives_the_same_claim(tmp_path: Path) -> None:
    path = make.averitec_zip(tmp_path, {"output_dev/12.json": json.dumps(
        {"claim_id": "12", "type": "claim", "query": "q", "url": "https://u.example/x",
         "url2text": ["Text."]}) + "\n"})
    [page] = [p for p in _pages(path) if p.page == "https://u.example/x"]
    item_pool = averitec_claim_id({"id": "averitec-dev-12", "dataset": "averitec"},
                                  "averitec-dev-12", "averitec")
    assert page.pool == item_pool == "12"
    assert passages_of(page)[0]["id"] == "12/https://u.example/x#1"


def test_store_line_naming_another_claim_is_pooled_by_its_member_and_counted(tmp_path: Path) -> None:
    path = make.averitec_zip(tmp_path, {"output_dev/3.json": "".join(json.dumps(r) + "\n" for r in [
        {"claim_id": "7", "url": "https://u.example/y", "url2text": ["Text."]},
        {"claim_id": 7, "url": "https://u.example/z", "url2text": ["Text."]}])})
    pages = {p.page: p for p in _pages(path)}
    page = pages["https://u.example/y"]
    assert page.pool == "3"
    assert page.repairs == ["claim_id '7' in a line of claim 3's file: pooled by the file"]
    assert page.where == f"{path}:output_dev/3.json line 1"
    # a number where the scraper writes a string: pooled by the file too, never coerced silently
    typed = pages["https://u.example/z"]
    assert typed.pool == "3"
    assert typed.repairs == ["claim_id is a int (7), not a string: pooled by the file's number"]


def test_store_lines_without_a_right_reading_are_skipped_one_page_each(tmp_path: Path) -> None:
    lines = [{"claim_id": "4", "url": "https://u.example/ok", "url2text": ["Kept."]},
             {"claim_id": "4", "url": "https://u.example/null", "url2text": None},
             {"claim_id": "4", "url": "", "url2text": ["no url"]}]
    body = "".join(json.dumps(r) + "\n" for r in lines) + "{not json\n"
    path = make.averitec_zip(tmp_path, {"output_dev/4.json": body})
    pages = [p for p in _pages(path) if p.pool == "4" or p.skip]
    assert [(p.page, p.skip) for p in pages] == [
        ("https://u.example/ok", ""),
        ("https://u.example/null", "field 'url2text' is null, not a list of sentences"),
        ("", "field 'url' is empty"),
        ("", pages[3].skip)]
    assert pages[3].skip.startswith("malformed JSON") and pages[3].where.endswith("4.json line 4")


def test_a_store_member_whose_first_line_is_not_the_format_stops_in_one_line(tmp_path: Path) -> None:
    path = make.averitec_zip(tmp_path, {"output_dev/5.json": json.dumps({"title": "t"}) + "\n"})
    message = _one_line_error(path)
    assert message.startswith(f"{path}:output_dev/5.json line 1: not a knowledge-store line")


def test_store_zip_ignores_macos_metadata_and_refuses_two_splits(tmp_path: Path) -> None:
    path = make.averitec_zip(tmp_path / "a", {"__MACOSX/output_dev/._0.json": b"\x00\x05\x16\x07"})
    assert len(_pages(path)) == 7
    mixed = make.averitec_zip(tmp_path / "b", {"output_train/0.json": json.dumps(
        {"claim_id": "0", "url": "https://t.example", "url2text": ["t"]}) + "\n"})
    message = _one_line_error(mixed)
    assert "holds the stores of 2 splits (output_dev, output_train)" in message


def test_a_folder_of_store_zips_is_read_as_one_store(tmp_path: Path) -> None:
    folder = tmp_path / "train"
    make.averitec_zip(folder / "part1")
    pages = _pages(folder)
    assert detect(folder) == "averitec-store" and len(pages) == 7


def test_the_old_store_reader_complaint_is_gone(tmp_path: Path) -> None:
    path = make.averitec_zip(tmp_path)
    assert detect(path) == "averitec-store"
    assert _pages(path, "averitec-store")  # the zip is no longer read as one JSON-lines file


# --- HotpotQA's abstracts: ONE .tar.bz2 of bz2 members ------------------------------------------

def test_abstracts_tar_is_streamed_in_archive_order_with_the_trees_pages(tmp_path: Path) -> None:
    tar = _sentences(make.hover_tar(tmp_path))
    tree = _sentences(make.hover_abstracts_tree(tmp_path / "t"))
    assert sorted(tar) == sorted(tree) and tar != tree  # same pages, the archive's own order
    assert tar[0][0] == "Michael Ancher"  # AB/ comes first in the archive
    assert not list(tmp_path.glob("*/AA"))  # nothing extracted


def test_abstracts_whitespace_sentence_keeps_its_number(tmp_path: Path) -> None:
    odde = [(ids, text) for page, ids, text in _sentences(make.hover_tar(tmp_path))
            if page == "Skagen Odde"]
    assert odde == [([0], "Skagen Odde is a sand spit in Denmark."),
                    ([2], "It lies north of Skagen.")]


def test_abstracts_leading_whitespace_is_stripped_and_links_removed(tmp_path: Path) -> None:
    members = {"AA/wiki_00.bz2": [{"id": "9", "url": "u", "title": "T", "text": [
        'A <a href="B%20C">B C</a> &amp; D.', " Second."]}]}
    assert _sentences(make.hover_tar(tmp_path, members)) == [("T", [0], "A B C & D."),
                                                             ("T", [1], "Second.")]


def test_abstracts_page_with_empty_title_is_skipped_not_the_member(tmp_path: Path) -> None:
    members = {"AA/wiki_00.bz2": [make.ABSTRACT_MEMBERS["AA/wiki_00.bz2"][0],
                                  {"id": "8", "url": "u", "title": " ", "text": ["Orphan."]},
                                  make.ABSTRACT_MEMBERS["AA/wiki_00.bz2"][1]]}
    path = make.hover_tar(tmp_path, members)
    pages = _pages(path)
    assert [p.page for p in pages] == ["Skagen Painters", " ", "Anna Ancher"]
    assert pages[1].skip == "empty field 'title' on a page with 1 sentences"
    assert pages[1].where.endswith(f"{make.ABSTRACTS_ROOT}/AA/wiki_00.bz2 line 2")


def test_the_full_page_dump_is_refused_in_one_line(tmp_path: Path) -> None:
    members = {"AA/wiki_00.bz2": [{"id": "1", "url": "u", "title": "T",
                                   "text": [["T"], ["Para one."]]}]}
    message = _one_line_error(make.hover_tar(tmp_path, members))
    assert "list of paragraphs: this is HotpotQA's full-page dump" in message


def test_a_damaged_member_and_a_truncated_archive_are_one_line_each(tmp_path: Path) -> None:
    good = bz2.compress(b'{"title": "T", "text": ["a."]}\n' * 50)
    damaged = make.hover_tar(tmp_path / "m", members={}, raw={"AA/wiki_00.bz2": good[:-30]})
    message = _one_line_error(damaged)
    assert f"{damaged}:{make.ABSTRACTS_ROOT}/AA/wiki_00.bz2 line" in message
    assert "truncated or damaged" in message
    truncated = make.hover_tar(tmp_path / "t")
    truncated.write_bytes(truncated.read_bytes()[:-200])
    message = _one_line_error(truncated, "hover-wiki")
    assert str(truncated) in message and "truncated or damaged" in message


# --- HoVer's wiki_wo_links.db -------------------------------------------------------------------

def test_hover_db_pages_are_nfc_titles_with_hovers_sentence_ids(tmp_path: Path) -> None:
    path = make.hover_db(tmp_path)
    got: dict[str, list[str]] = {}
    for page, ids, text in _sentences(path):
        assert ids == [len(got.setdefault(page, []))]  # sentence n is the n-th of the page
        got[page].append(text)
    expected = {t: s for t, s in make.HOVER_DB_SENTENCES.items() if s}
    assert got == expected
    assert make.BEYONCE in got and unicodedata.is_normalized("NFC", make.BEYONCE)
    stored = sqlite3.connect(path).execute("SELECT id FROM documents").fetchall()
    assert unicodedata.normalize("NFD", make.BEYONCE) in {r[0] for r in stored}  # NFD in the db


def test_split_sentences_follows_corenlps_tokenizer_rules() -> None:
    text = ('Mr. Smith met Dr. Jones in St. Louis, Mo. on Jan. 5. "It rained!" she said. '
            'It cost approx. 5 dollars... or so. J. R. R. Tolkien wrote it in the U.K. Then '
            'he left.\n\nA new paragraph')
    assert split_sentences(text) == [
        "Mr. Smith met Dr. Jones in St. Louis, Mo. on Jan. 5.", '"It rained!"', "she said.",
        "It cost approx. 5 dollars... or so.", "J. R. R. Tolkien wrote it in the U.K.",
        "Then he left.", "A new paragraph"]
    cases = {  # CoreNLP's abbreviation classes: what follows decides
        "He served in the U.S. Army. He lived in the U.S. The end.":  # acronym, opening word
            ["He served in the U.S. Army.", "He lived in the U.S.", "The end."],
        "Tillman Jr. is a director. He works for Fox Inc. He left.":  # ABBREV1: before a capital
            ["Tillman Jr. is a director.", "He works for Fox Inc.", "He left."],
        "He was approx. two metres. No. 5 is his.":  # ABBREV3: whole only before a number
            ["He was approx.", "two metres.", "No. 5 is his."],
        "She works at Yahoo! in Texas. Really?! Yes.": ["She works at Yahoo! in Texas.",
                                                        "Really?!", "Yes."],
        "Wait.... What happened": ["Wait....", "What happened"],
    }
    for given, expected in cases.items():
        assert split_sentences(given) == expected, given
    assert split_sentences("") == [] and split_sentences("  One.  ") == ["One."]


def test_hover_db_rows_without_a_right_reading_are_skipped_one_row_each(tmp_path: Path) -> None:
    path = make.hover_db(tmp_path, rows=[("Good", "Good is read."), ("", "No id."),
                                         ("Null text", None), ("Latin-1", b"caf\xe9"),
                                         ("Empty", "")])
    pages = _pages(path)
    assert [(p.page, p.skip) for p in pages] == [
        ("Good", ""), ("", "empty or non-text page id (text)"),
        ("Null text", "'text' is NULL, not text"),
        ("Latin-1", "'text' is not UTF-8 (byte 0xe9), not text"), ("Empty", "")]
    assert pages[0].elements == [(0, "Good is read.")] and pages[4].elements == []
    assert pages[2].where == f"{path} row 3 (page 'Null text')"


def test_a_database_without_hovers_table_is_refused_in_one_line(tmp_path: Path) -> None:
    feverous = make.feverous_db(tmp_path)
    message = _one_line_error(feverous, "hover-wiki")
    assert "not HoVer's wiki_wo_links.db: it has no table documents(id, text) (tables: wiki)" \
        in message


# --- FEVEROUS' database -------------------------------------------------------------------------

def test_feverous_zip_is_refused_with_the_unzip_command(tmp_path: Path) -> None:
    path = make.feverous_zip(tmp_path)
    assert detect(path) == "feverous-db"
    message = _one_line_error(path)
    assert message.startswith(f"{path}: is a zip archive holding feverous_wikiv1.db; SQLite "
                              "cannot read a database inside a zip: run "
                              f"`unzip {path} -d {tmp_path}` once, then index "
                              f"{tmp_path / 'feverous_wikiv1.db'}")


def test_feverous_rows_without_a_right_reading_are_skipped_one_row_each(tmp_path: Path) -> None:
    path = tmp_path / "feverous_wikiv1.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE wiki (id PRIMARY KEY, data json)")
    db.executemany("INSERT INTO wiki VALUES (?, ?)", [
        ("Broken", "{not json"), ("No order", json.dumps({"sentence_0": "x"})),
        ("Bad table", json.dumps({"order": ["table_0", "sentence_0"], "table_0": {"rows": []},
                                  "sentence_0": "Kept."})),
        ("Fine", json.dumps({"order": ["sentence_0"], "sentence_0": "Fine is read."}))])
    db.commit()
    db.close()
    pages = _pages(path)
    assert [(p.page, p.skip[:28]) for p in pages] == [
        ("Broken", "data is not page JSON (Expec"), ("No order", "the page JSON has no 'order'"),
        ("Bad table", ""), ("Fine", "")]
    assert pages[2].elements == [("sentence_0", "Kept.")]
    assert pages[2].repairs == ["element 'table_0' is not a FEVEROUS table; left out"]


def test_database_rows_over_the_record_limit_are_skipped_unread(tmp_path: Path,
                                                                 monkeypatch) -> None:
    monkeypatch.setenv("FACTDEBATE_IMPORT_MAX_RECORD_BYTES", "200")
    hover = make.hover_db(tmp_path / "h", rows=[("Big", "Word. " * 100), ("Small", "Kept.")])
    feverous = tmp_path / "f" / "feverous_wikiv1.db"
    feverous.parent.mkdir()
    db = sqlite3.connect(feverous)
    db.execute("CREATE TABLE wiki (id PRIMARY KEY, data json)")
    db.executemany("INSERT INTO wiki VALUES (?, ?)", [
        ("Big", json.dumps({"order": ["sentence_0"], "sentence_0": "x" * 500})),
        ("Small", json.dumps({"order": ["sentence_0"], "sentence_0": "Kept."}))])
    db.commit()
    db.close()
    for path, field in [(hover, "'text'"), (feverous, "data")]:
        big, small = _pages(path)
        assert big.skip.startswith(f"{field} is a record of ") and "over the limit of 200" in big.skip
        assert big.where.endswith("row 1 (page 'Big')") and not small.skip
