"""The retrieval ceiling of an ``eval --server`` run (evaluation/ceiling.py): read from a local copy
of the server's corpus, it says what the keyword index of that corpus says; without a copy of the
same SHA-256 there is no figure, only the reason. Real corpus files and a real tantivy index; no
embeddings (the ceiling never reads the vector index)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from factdebate.evaluation.ceiling import CorpusLookup, IndexLookup, gold_in_index, server_corpus
from factdebate.tools.indexing import CHUNK_CHARS, iter_passages
from factdebate.tools.keyword import KEYWORD_SUBDIR, write_keyword_index

LONG = " ".join(f"Sentence number {i} of the long page is here." for i in range(120))
DOCS = [
    {"doc_id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower is a tower in Paris."},
    {"doc_id": "d2", "title": "Long Page", "text": LONG},  # chunks d2#1, d2#2 ...
    {"doc_id": "Nile", "title": "River", "text": "The Nile flows north.",  # a page by its id
     "url": "https://en.wikipedia.org/wiki/Nile_(river)"},
]


def gold(*sets: list[tuple[str, str | None]]) -> dict:
    return {"kind": "feverous", "level": "sentence",
            "sets": [[{"page": p, "sent_id": 0, "text": t} for p, t in s] for s in sets]}


GOLDS = [
    gold([("Eiffel Tower", "a tower in Paris")]),
    gold([("Eiffel Tower", "a tower in Rome")]),
    gold([("Long Page", "Sentence number 119 of the long page")]),  # in a later chunk
    gold([("Nile", "flows north"), ("River", None)]),
    gold([("Danube", "flows east")], [("", "The Nile flows north")]),  # page-less second set
    gold([("", "no passage says this")]),
    None,
]


def test_corpus_lookup_answers_as_the_keyword_index_of_that_corpus(tmp_path: Path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    write_keyword_index(tmp_path / "index" / KEYWORD_SUBDIR, iter_passages(corpus))
    from_index = [gold_in_index(g, IndexLookup(tmp_path / "index")) for g in GOLDS]
    from_corpus = [gold_in_index(g, CorpusLookup(corpus, GOLDS)) for g in GOLDS]
    assert from_corpus == from_index
    assert [r and (r["page"], r["sentence"]) for r in from_corpus] == [
        (True, True), (True, False), (True, True), (True, True), (True, True), (True, False),
        None]
    # a page known only by its Wikipedia URL: every passage is read, none is missed by a query
    url_named = [gold([("Nile (river)", "flows north")])]
    assert gold_in_index(url_named[0], CorpusLookup(corpus, url_named))["page"]


def test_a_server_runs_ceiling_needs_the_servers_corpus_locally(tmp_path: Path):
    data = tmp_path / "data"
    (data / "corpus").mkdir(parents=True)
    corpus = data / "corpus" / "wiki.jsonl"
    corpus.write_text(json.dumps(DOCS[0]) + "\n", encoding="utf-8")
    sha = hashlib.sha256(corpus.read_bytes()).hexdigest()
    served = {"status": "ok", "corpus": "wiki.jsonl", "corpus_sha256": sha,
              "chunk_chars": CHUNK_CHARS, "searched_by": "server"}
    found, line = server_corpus(served, data)
    assert found == corpus and "from the data folder's corpus wiki.jsonl" in line
    found, line = server_corpus(dict(served, corpus_sha256="b" * 64), data)
    assert found is None and line.startswith("not computed: the server's corpus wiki.jsonl")
    assert f"sha256 {sha[:16]}" in line
    found, line = server_corpus(dict(served, chunk_chars=500), data)
    assert found is None and "cuts passages at 500" in line
    found, line = server_corpus(served, tmp_path / "nowhere")
    assert found is None and "no data folder corpus" in line
    found, line = server_corpus({"status": "server", "server": "http://127.0.0.1:1"}, data)
    assert (found, line) == (None, "not computed: the server's index is not recorded")


# -- an imported dump's index: pages and sentence ids looked up by the passage contract -------
DUMP = [  # passages as a FEVER / FEVEROUS importer writes them (page id, element ids held)
    {"id": "Soul_Food_-LRB-film-RRB-#1", "title": "Soul Food (film)", "text": "s0 s1",
     "page": "Soul_Food_-LRB-film-RRB-", "sentences": [0, 1]},
    {"id": "Soul_Food_-LRB-film-RRB-#2", "title": "Soul Food (film)", "text": "s2",
     "page": "Soul_Food_-LRB-film-RRB-", "sentences": [2]},
    {"id": "Korean Air#1", "title": "Korean Air", "text": "cells", "page": "Korean Air",
     "sentences": ["sentence_0", "cell_1_19_0"]},
]


def fever_gold(*sets: list[tuple[str, int]]) -> dict:
    from factdebate.evaluation.evidence_metrics import gold_evidence

    return gold_evidence({"dataset": "fever", "evidence_sets": [
        [{"page": p, "sent_id": i} for p, i in s] for s in sets]})


def test_an_imported_dumps_index_answers_by_page_id_and_sentence_ids(tmp_path: Path):
    from factdebate.evaluation.evidence_metrics import gold_evidence

    write_keyword_index(tmp_path / "dump" / KEYWORD_SUBDIR, iter(DUMP))
    lookup = IndexLookup(tmp_path / "dump")
    assert lookup.has_ids and lookup.has_pages and not lookup.has_pools
    assert lookup.page_elements("Soul_Food_-LRB-film-RRB-") == {0, 1, 2}
    assert lookup.page_elements("Nope") is None
    assert lookup.page_elements("Korean Air\u0301") is None
    nfd = {**DUMP[2], "id": "Beyonc\u00e9#1", "page": "Beyonc\u00e9", "sentences": [0]}
    write_keyword_index(tmp_path / "nfc" / KEYWORD_SUBDIR, iter([nfd]))
    assert IndexLookup(tmp_path / "nfc").page_elements("Beyonce\u0301") == {0}  # an NFD gold id
    results = [gold_in_index(g, lookup) for g in (
        fever_gold([("Soul_Food_-LRB-film-RRB-", 2)]),
        fever_gold([("Soul_Food_-LRB-film-RRB-", 9)], [("Soul_Food_-LRB-film-RRB-", 0),
                                                        ("Korean_Air", 0)]),
        fever_gold([("Soul_Food_-LRB-film-RRB-", 7)]),
        fever_gold([("Absent_page", 0)]),
        gold_evidence({"id": 1, "label": "SUPPORTS", "claim": "c", "evidence": [
            {"content": ["Korean Air_cell_1_19_0", "Korean Air_sentence_0"]}]}))]
    assert [(r["page"], r["sentence"], r["level"], r["ids"]) for r in results] == [
        (True, True, "sentence", True),
        (True, False, "sentence", True),  # (Korean_Air, 0): that page has no sentence 0 here
        (True, False, "sentence", True),  # the page is in, its sentence 7 is not
        (False, False, "sentence", True),
        (True, True, "sentence", True)]
    # an index of a JSONL corpus (passages without sentence ids) keeps the title lookup
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    write_keyword_index(tmp_path / "plain" / KEYWORD_SUBDIR, iter_passages(corpus))
    plain = IndexLookup(tmp_path / "plain")
    assert not plain.has_ids and not plain.has_pools
    assert gold_in_index(GOLDS[0], plain)["sentence"] is True


def test_an_averitec_stores_index_has_pools(tmp_path: Path):
    store = [{"id": f"{c}/https://a.example/{c}#1", "title": "t", "text": "x",
              "page": f"https://a.example/{c}", "sentences": [], "pool": str(c)} for c in (0, 1)]
    write_keyword_index(tmp_path / "store" / KEYWORD_SUBDIR, iter(store))
    lookup = IndexLookup(tmp_path / "store")
    assert lookup.has_pools and not lookup.has_ids
