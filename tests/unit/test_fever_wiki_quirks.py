"""FEVER's ``wiki-pages`` as really shipped: every quirk of the release (tests/fixtures/sources/
fever_quirks.py) imports, is repaired or skipped one page at a time, is counted in the manifest
and the build's last line, and keeps the sentence numbers FEVER's gold evidence uses - scored with
the FEVER scorer (evaluation/evidence_metrics.fever_score) on sentences after each quirk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factdebate.evaluation.evidence_metrics import fever_score
from factdebate.tools.sources import SourceError, open_source, passages_of
from factdebate.tools.sources.build import build_from_source, quirks_line
from tests.fixtures.sources import fever_quirks


def _pages(path: Path) -> list:
    return [page for page, _ in open_source(path, "fever-wiki").read(None)]


def _sentence_passages(path: Path) -> list[dict]:
    return [p for page in _pages(path) for p in passages_of(page, "sentence")]


def test_every_gold_sentence_keeps_its_number_after_each_quirk(tmp_path: Path) -> None:
    passages = _sentence_passages(fever_quirks.wiki_zip(tmp_path))
    by_pair = {(p["page"], s): p["text"] for p in passages for s in p["sentences"]}
    for page, sent_id, text in fever_quirks.GOLD:
        assert by_pair[(page, sent_id)] == text, (page, sent_id)
    # empty rows hold no text and give no passage, but the numbers after them do not shift
    assert [p["sentences"] for p in passages if p["page"] == "Saltmarsh_Lane"] == [[0], [3]]
    # the continuation "50<TAB>Super_Cup_50" is part of row 1, not a sentence 50
    assert [p["sentences"] for p in passages if p["page"].startswith("Tern_Cup")] == [[0], [1], [2]]


def test_repaired_skipped_and_empty_pages_are_marked_one_page_each(tmp_path: Path) -> None:
    pages = _pages(fever_quirks.wiki_zip(tmp_path))
    assert {p.page for p in pages if p.repairs} == fever_quirks.REPAIRED
    skipped = [p for p in pages if p.skip]
    assert len(skipped) == fever_quirks.SKIPPED
    assert all("wiki-001.jsonl line" in p.where for p in skipped), [p.where for p in skipped]
    assert {p.page for p in pages if not p.elements and not p.skip} == fever_quirks.EMPTY
    assert pages[-1].page == "Final_Page"  # the file is read to its end


@pytest.mark.parametrize("gold", fever_quirks.GOLD, ids=lambda g: f"{g[0]}-{g[1]}")
def test_fever_score_credits_the_gold_sentence_after_each_quirk(tmp_path: Path, gold) -> None:
    page, sent_id, _ = gold
    passages = _sentence_passages(fever_quirks.wiki_zip(tmp_path))
    cited = next(p for p in passages if p["page"] == page and sent_id in p["sentences"])
    predicted = [[cited["page"], s] for s in cited["sentences"]]
    instance = {"label": "SUPPORTS", "predicted_label": "SUPPORTS",
                "evidence": [[[1, 1, page, sent_id]]], "predicted_evidence": predicted}
    strict, accuracy, precision, recall, _ = fever_score([instance])
    assert (strict, accuracy, precision, recall) == (1.0, 1.0, 1.0, 1.0)


def test_the_build_counts_quirks_in_the_manifest_and_its_last_line(tmp_path: Path) -> None:
    manifest = build_from_source(fever_quirks.wiki_zip(tmp_path), tmp_path / "index",
                                 fmt="fever-wiki", keyword_only=True)
    quirks = manifest["quirks"]
    assert (quirks["repaired"], quirks["skipped"], quirks["empty_pages"]) == (
        len(fever_quirks.REPAIRED), fever_quirks.SKIPPED, len(fever_quirks.EMPTY))
    kinds = [(e["kind"], e["page"]) for e in quirks["examples"]]
    assert ("repaired", "Brassica_Orchestra") in kinds and ("skipped", "Headless_Page") in kinds
    assert all(e["where"] and e["why"] for e in quirks["examples"])
    saved = json.loads((tmp_path / "index" / "manifest.json").read_text())
    assert saved["quirks"] == quirks
    line = quirks_line(quirks)
    assert line.startswith("repaired 2, skipped 3 pages (first repaired: ")
    assert "wiki-001.jsonl line 3 (page Brassica_Orchestra)" in line


def test_strict_stops_at_the_first_repaired_page_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as caught:
        build_from_source(fever_quirks.wiki_zip(tmp_path), tmp_path / "index", fmt="fever-wiki",
                          keyword_only=True, strict=True)
    assert "line 3 (page Brassica_Orchestra)" in str(caught.value)
    assert "--strict" in str(caught.value)
    assert not (tmp_path / "index").exists()
    assert not list(tmp_path.glob(".index.building-*"))


def test_a_file_that_is_not_fever_at_all_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "wiki-pages"
    folder.mkdir()
    (folder / "wiki-001.jsonl").write_text("this is not JSON\n" + fever_quirks.lines())
    with pytest.raises(SourceError) as caught:
        list(open_source(folder, "fever-wiki").read(None))
    message = str(caught.value)
    assert message.startswith(f"{folder / 'wiki-001.jsonl'} line 1: malformed JSON")
    assert "\n" not in message


def test_a_page_without_a_reading_is_skipped_even_as_a_files_first_line(tmp_path: Path) -> None:
    folder = tmp_path / "wiki-pages"
    folder.mkdir()
    (folder / "wiki-001.jsonl").write_text(
        json.dumps({"id": "Headless", "text": "", "lines": "no number\n1\tSecond ."}) + "\n"
        + json.dumps({"id": "Next", "text": "", "lines": "0\tNext page .\n1\t"}) + "\n")
    pages = _pages(folder)
    assert [(p.page, bool(p.skip)) for p in pages] == [("Headless", True), ("Next", False)]


def test_quirks_line_of_a_clean_build() -> None:
    assert quirks_line({"repaired": 0, "skipped": 0, "examples": []}) == \
        "repaired 0, skipped 0 pages"
