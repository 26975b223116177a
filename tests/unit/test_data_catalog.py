"""The data catalogue (evaluation/data_catalog.yaml): it covers the dataset registry and the
datasets' indexes, its converter leaves files the registry's reader loads, a wrong checksum leaves
nothing, and the documentation names every entry."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from factdebate.core.errors import BackendUnavailableError, InputError
from factdebate.evaluation.data_catalog import (
    IMPORT_FORMATS,
    CatalogEntry,
    catalog,
    data_file_record,
    entry,
    markdown_table,
    mirror_url,
    record_fetched,
    to_json_lines,
)
from factdebate.evaluation.data_fetch import verify
from factdebate.evaluation.datasets import DATASETS, load_items

REPO = Path(__file__).resolve().parents[2]


def test_every_registered_dataset_file_and_index_has_an_entry():
    by_reads = {e.reads: e for e in catalog() if e.kind == "dataset"}
    for name in DATASETS.names():
        spec = DATASETS.get(name)
        assert spec.path in by_reads, f"{name} reads {spec.path}, which no catalogue entry fetches"
        if spec.index:
            assert entry(spec.index).kind == "knowledge-source"
    sources = [e for e in catalog() if e.kind == "knowledge-source"]
    assert {e.format for e in sources} <= set(IMPORT_FORMATS)
    assert all(e.urls[0].startswith("https://") for e in catalog())


def test_the_hotpotqa_abstracts_carry_the_publishers_md5_and_nothing_is_invented():
    hotpot = entry("hover-wiki")
    assert hotpot.checksum == "md5:01edf64cd120ecc03a2745352779514c"
    assert hotpot.size_bytes == 1_553_565_403
    assert [e.name for e in catalog() if e.checksum] == ["hover-wiki"]


def test_an_unknown_name_suggests_the_closest():
    with pytest.raises(InputError, match="did you mean 'fever'"):
        entry("fevr")


def test_mirror_url_keeps_host_and_path():
    assert mirror_url("https://fever.ai/download/fever/wiki-pages.zip?x=1", "http://m:8/root/") \
        == "http://m:8/root/fever.ai/download/fever/wiki-pages.zip"


RELEASES = {
    "hover": [{"uid": "a1", "claim": "A is B.", "label": "SUPPORTED", "num_hops": 2,
               "supporting_facts": [["A", 0], ["B", 1]]},
              {"uid": "a2", "claim": "C is D.", "label": "NOT_SUPPORTED", "num_hops": 3,
               "supporting_facts": [["C", 0]]}],
    "averitec": [{"claim": "X said Y.", "label": "Refuted", "questions": []},
                 {"claim": "Z did W.", "label": "Supported", "questions": []}],
    "pubmedqa": {"123": {"QUESTION": "Does A help?", "CONTEXTS": ["ctx"], "LABELS": ["BACKGROUND"],
                         "final_decision": "yes"},
                 "456": {"QUESTION": "Does B hurt?", "CONTEXTS": ["ctx"], "LABELS": ["METHODS"],
                         "final_decision": "no"}},
    "medqa": [{"question": "Q1?", "options": {"A": "a", "B": "b"}, "answer_idx": "B",
               "answer": "b"}],
    "ramdocs": [{"question": "Who?", "documents": [{"text": "t", "type": "correct", "answer": "x"}],
                 "gold_answers": ["x"], "wrong_answers": ["y"]}],
}


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_the_converter_leaves_a_file_the_registry_loads(name, tmp_path):
    item = entry(name)
    official = tmp_path / item.target
    official.parent.mkdir(parents=True)
    release = RELEASES[name]
    if official.suffix == ".jsonl":
        official.write_text("".join(json.dumps(r) + "\n" for r in release))
    else:
        official.write_text(json.dumps(release))
    reads = tmp_path / item.reads
    assert to_json_lines(official, reads) == len(release)
    items = load_items(name, tmp_path)
    assert len(items) == len(release)
    if name == "pubmedqa":
        assert [i.id for i in items] == ["pubmedqa-123", "pubmedqa-456"]
    if name in ("averitec", "medqa", "ramdocs"):
        assert items[0].id == f"{name}-0"


def test_entries_without_a_converter_say_what_is_missing():
    missing = {e.name for e in catalog() if e.kind == "dataset" and e.convert is None}
    assert missing == {"scifact", "bingcheck", "factcheckbench", "factool_qa", "felm_wk",
                       "toolmad_fever", "toolmad_faviq"}
    assert all("converter" in entry(n).missing for n in missing)


def test_a_wrong_checksum_deletes_the_download(tmp_path):
    part = tmp_path / "x.part"
    part.write_bytes(b"payload")
    good = CatalogEntry(name="x", kind="knowledge-source", urls=("https://h/x",), version="1",
                        licence="l", target="x", format="wikipedia",
                        checksum="md5:" + hashlib.md5(b"payload").hexdigest())
    assert verify(good, part, "https://h/x") == hashlib.sha256(b"payload").hexdigest()
    bad = CatalogEntry(**{**good.__dict__, "checksum": "md5:" + "0" * 32})
    with pytest.raises(BackendUnavailableError,
                       match="has md5 .*, the publisher gives 0{32}.*nothing was kept"):
        verify(bad, part, "https://h/x")
    assert not part.exists()


def test_run_json_names_where_a_fetched_file_came_from(tmp_path):
    data = tmp_path / "data"
    (data / "fever").mkdir(parents=True)
    path = data / "fever" / "paper_dev.jsonl"
    path.write_text("{}\n")
    sha = hashlib.sha256(b"{}\n").hexdigest()
    assert data_file_record(path, sha, data)["fetched_from"] is None  # not fetched by us
    record_fetched(data, "fever/paper_dev.jsonl", {"url": "https://fever.ai/x", "sha256": sha,
                                                   "entry": "fever"})
    assert data_file_record(path, sha, data)["fetched_from"] == "https://fever.ai/x"
    changed = data_file_record(path, "f" * 64, data)
    assert changed["fetched_from"] is None
    assert changed["changed_since_fetch_from"] == "https://fever.ai/x"


def test_the_data_page_names_every_entry():
    page = (REPO / "docs" / "data.md").read_text(encoding="utf-8") + markdown_table()
    for item in catalog():
        assert f"[`{item.name}`]" in page
    assert "data_page()" in (REPO / "docs" / "gen_pages.py").read_text(encoding="utf-8")
    assert "../shared" not in page
