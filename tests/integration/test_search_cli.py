"""Naming an index and looking inside it, through the installed ``factdebate`` command:
``search``, ``ls indexes``, ``index --info``, and ``--index NAME|DIR`` on ``verify`` and ``eval``
(``run.json`` carries the index's source format and granularity).

Real components: the console script in a process of its own (``cli_process.run_cli``), a FEVER
``wiki-pages`` dump written here and indexed by ``factdebate index --format fever-wiki
--keyword-only`` (one passage per sentence), an AVeriTeC knowledge store indexed the same way
(per-claim pools), a JSONL corpus of passages written here indexed with vectors (Milvus Lite and
MiniLM) by ``tools.indexing.build_indexes``, tantivy, SQLite checkpoints. The model of ``verify``
and ``eval`` is the scripted double: what is tested is which index is searched and what is
recorded about it. No shared data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli_process import one_error_line, run_cli
from tests.integration.servers import warm_home

SOUL_FOOD = "Soul_Food_-LRB-film-RRB-"
LONG = ("Milwaukee is the largest city in Wisconsin and the fifth-largest city in the Midwestern "
        "United States, on the western shore of Lake Michigan, where three rivers meet.")
FEVER_PAGES = {  # wiki-pages lines: "N<TAB>sentence<TAB>links..."
    SOUL_FOOD: ["Soul Food is a 1997 American comedy-drama film.",
                "It was directed by George Tillman Jr. in Chicago.",
                "The film stars Vanessa L. Williams."],
    "Milwaukee": [LONG],
}
STORE = {  # AVeriTeC knowledge store: claim id -> (url, sentences); both pools mention the Moon
    "0": [("https://example.org/moon", ["Apollo 11 landed on the Moon in July 1969."])],
    "1": [("https://example.org/studio", ["The Moon landing was filmed in a studio, a hoax "
                                          "site claims."])],
}
PASSAGES = [  # the JSONL corpus: written for this test
    {"doc_id": "Lake_Baikal", "title": "Lake Baikal",
     "text": "Lake Baikal in Siberia is the deepest lake in the world, over 1,600 metres deep."},
    {"doc_id": "Atacama", "title": "Atacama Desert",
     "text": "The Atacama Desert in Chile is one of the driest places on Earth."},
    {"doc_id": "Kosciuszko", "title": "Mount Kosciuszko",
     "text": "Mount Kosciuszko is the highest mountain of mainland Australia."},
]
SCRIPTED = ["--model", "scripted:agree", "--rag-backend", "keyword", "--scoring", "none"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``$FACTDEBATE_HOME`` with three named indexes: ``fever-tiny`` (the FEVER dump, one
    passage per sentence, keyword-only), ``store`` (the AVeriTeC store, keyword-only) and
    ``tiny-jsonl`` (the JSONL corpus, with vectors)."""
    from factdebate.tools.base import clear_retriever_cache
    from factdebate.tools.indexing import build_indexes

    root = tmp_path_factory.mktemp("search")
    home = warm_home(root / "home")
    wiki = root / "wiki-pages"
    wiki.mkdir()
    (wiki / "wiki-001.jsonl").write_text("".join(json.dumps({
        "id": page, "text": " ".join(lines),
        "lines": "\n".join(f"{i}\t{s}\t" for i, s in enumerate(lines))}) + "\n"
        for page, lines in FEVER_PAGES.items()), encoding="utf-8")
    store = root / "knowledge_store"
    store.mkdir()
    for claim, pages in STORE.items():
        (store / f"{claim}.json").write_text("".join(json.dumps({
            "claim_id": claim, "type": "Google", "query": "q", "url": url,
            "url2text": text}) + "\n" for url, text in pages), encoding="utf-8")
    for source, fmt, name, extra in ((wiki, "fever-wiki", "fever-tiny", ["--granularity",
                                                                           "sentence"]),
                                     (store, "averitec-store", "store", [])):
        done = run_cli(["index", str(source), "--format", fmt, "--keyword-only", *extra,
                        "--index-dir", str(home / "indexes" / name)], home)
        assert done.returncode == 0, done.stderr[-2000:]
    corpus = root / "passages.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    build_indexes(corpus, home / "indexes" / "tiny-jsonl")
    clear_retriever_cache()
    return home


def search(home: Path, *args: str) -> list[dict[str, Any]]:
    done = run_cli(["search", *args, "--json"], home)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_search_json_gives_each_passages_page_and_sentence_numbers(home):
    found = search(home, "Soul Food directed by George Tillman", "--index", "fever-tiny", "--k", "2")
    assert len(found) == 2
    assert {"id", "page", "sentences", "score", "title", "text", "pool"} <= set(found[0])
    top = found[0]
    assert (top["page"], top["sentences"]) == (SOUL_FOOD, [1])
    assert top["id"] == f"{SOUL_FOOD}#2" and top["text"] == FEVER_PAGES[SOUL_FOOD][1]
    assert found[0]["score"] >= found[1]["score"] > 0
    assert all(p["page"] == SOUL_FOOD and len(p["sentences"]) == 1 for p in found)


def test_the_table_cuts_a_long_text_and_json_gives_it_whole(home):
    table = run_cli(["search", "largest city in Wisconsin", "--index", "fever-tiny"], home)
    assert table.returncode == 0, table.stderr[-2000:]
    assert "Milwaukee" in table.stdout and "…" in table.stdout and LONG not in table.stdout
    assert "keyword search of index 'fever-tiny'" in table.stdout
    found = search(home, "largest city in Wisconsin", "--index", "fever-tiny")
    assert found[0]["text"] == LONG and found[0]["sentences"] == [0]


def test_a_folder_names_an_index_too_and_dense_search_finds_by_meaning(home):
    folder = str(home / "indexes" / "tiny-jsonl")
    dense = search(home, "the deepest lake on the planet", "--index", folder, "--k", "1")
    assert dense[0]["page"] == "Lake_Baikal" and dense[0]["sentences"] == []
    assert dense[0]["source"] == "milvus"
    hybrid = search(home, "driest place on Earth", "--index", "tiny-jsonl", "--backend", "hybrid")
    assert hybrid[0]["page"] == "Atacama" and hybrid[0]["source"] == "hybrid"


def test_pool_searches_one_claims_knowledge_store_only(home):
    everything = search(home, "Moon landing filmed in a studio", "--index", "store")
    assert {p["pool"] for p in everything} == {"0", "1"}
    one = search(home, "Moon landing filmed in a studio", "--index", "store", "--pool", "0")
    assert one and {p["pool"] for p in one} == {"0"}
    assert one[0]["page"] == "https://example.org/moon"


def test_no_hit_is_said_and_exits_zero(home):
    done = run_cli(["search", "zzyzx quokka", "--index", "fever-tiny"], home)
    assert done.returncode == 0 and "no passage in index 'fever-tiny'" in done.stdout
    assert "matches 'zzyzx quokka'" in done.stdout
    as_json = run_cli(["search", "zzyzx quokka", "--index", "fever-tiny", "--json"], home)
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == []


@pytest.mark.parametrize("args,expected", [
    (["Soul Food", "--index", "fever-tiny", "--backend", "dense"],
     "is keyword-only (built with --keyword-only) and has no vectors"),
    (["Soul Food", "--index", "fever_tiny"],
     "--index 'fever_tiny': no index of that name. did you mean 'fever-tiny'? indexes in "),
    (["Soul Food", "--index", "fever-tiny", "--backend", "sparse"], "unknown --backend 'sparse'"),
    (["Soul Food", "--index", "fever-tiny", "--k", "0"], "--k 0 is out of range"),
    (["  ", "--index", "fever-tiny"], "the query is empty"),
])
def test_bad_search_input_is_one_error_line(home, args, expected):
    done = run_cli(["search", *args], home)
    line = one_error_line(done)
    assert done.returncode == 2 and expected in line, line
    if "no index of that name" in line:
        assert line.endswith(f"{home / 'indexes' / 'fever_tiny'}")
        assert "fever-tiny, store, tiny-jsonl" in line


def test_ls_indexes_shows_what_each_index_was_built_from(home):
    done = run_cli(["ls", "indexes", "--json"], home)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["name"]: r for r in json.loads(done.stdout)}
    assert set(rows) == {"fever-tiny", "store", "tiny-jsonl"}  # no default index in this home
    fever, jsonl = rows["fever-tiny"], rows["tiny-jsonl"]
    assert (fever["source_format"], fever["granularity"], fever["pages"], fever["passages"]) == (
        "fever-wiki", "sentence", 2, 4)
    assert fever["keyword_only"] and fever["embedding_model"] is None
    assert (fever["repaired"], fever["skipped"]) == (0, 0)  # the manifest's quirks: a clean dump
    assert fever["source"].endswith("wiki-pages") and fever["status"] == "ok"
    assert (jsonl["source_format"], jsonl["granularity"], jsonl["pages"], jsonl["passages"]) == (
        "jsonl", "chunk", 3, 3)
    assert jsonl["embedding_model"] == "minilm" and (jsonl["repaired"], jsonl["skipped"]) == (
        None, None)
    assert jsonl["created"] and jsonl["build_seconds"] > 0
    table = run_cli(["ls", "indexes"], home)
    assert table.returncode == 0
    for part in ("fever-tiny", "fever-wiki", "sentence", "keyword-only", "tiny-jsonl", "minilm"):
        assert part in table.stdout, part


def test_ls_indexes_lists_the_folder_the_environment_names_too(home, tmp_path):
    elsewhere = tmp_path / "operator-index"
    elsewhere.symlink_to(home / "indexes" / "store", target_is_directory=True)
    done = run_cli(["ls", "indexes", "--json"], home, env={"FACTDEBATE_INDEX_DIR": str(elsewhere)})
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["name"]: r for r in json.loads(done.stdout)}
    assert rows["($FACTDEBATE_INDEX_DIR)"]["index_dir"] == str(elsewhere)
    assert rows["($FACTDEBATE_INDEX_DIR)"]["source_format"] == "averitec-store"
    assert set(rows) == {"($FACTDEBATE_INDEX_DIR)", "fever-tiny", "store", "tiny-jsonl"}


def test_ls_indexes_lists_evals_indexes_of_data_folder_corpora(home):
    corpus_index = home / "corpora" / "0123456789abcdef-minilm"  # as eval names them
    corpus_index.parent.mkdir(exist_ok=True)
    corpus_index.symlink_to(home / "indexes" / "tiny-jsonl", target_is_directory=True)
    try:
        done = run_cli(["ls", "indexes", "--json"], home)
    finally:
        corpus_index.unlink()
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["name"]: r for r in json.loads(done.stdout)}
    assert rows["corpora/0123456789abcdef-minilm"]["source_format"] == "jsonl"
    assert rows["corpora/0123456789abcdef-minilm"]["index_dir"] == str(corpus_index)


def test_index_info_by_name_and_by_folder(home):
    by_name = run_cli(["index", "--info", "fever-tiny", "--json"], home)
    assert by_name.returncode == 0, by_name.stderr[-2000:]
    info = json.loads(by_name.stdout)
    assert (info["name"], info["source_format"], info["passages"]) == ("fever-tiny",
                                                                        "fever-wiki", 4)
    assert info["index_dir"] == str(home / "indexes" / "fever-tiny")
    folder = run_cli(["index", str(home / "indexes" / "tiny-jsonl"), "--info"], home)
    assert folder.returncode == 0, folder.stderr[-2000:]
    lines = dict(line.split(":", 1) for line in folder.stdout.splitlines())
    assert lines["format"].strip() == "jsonl" and lines["embeddings"].strip() == "minilm"
    assert lines["repaired"].strip() == "-" and lines["passages"].strip() == "3"
    missing = run_cli(["index", "--info", "nope"], home)
    assert "no index of that name" in one_error_line(missing) and missing.returncode == 2
    stray = run_cli(["index", "fever-tiny", "--json"], home)
    assert "--json applies to --info" in one_error_line(stray)


def test_verify_searches_the_index_it_names_and_says_which(home):
    done = run_cli(["verify", "Soul Food was directed by George Tillman Jr.", "--index",
                    "fever-tiny", *SCRIPTED, "--json"], home)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["index"]["name"] == "fever-tiny"
    assert result["index"]["index_dir"] == str(home / "indexes" / "fever-tiny")
    assert (result["index"]["source_format"], result["index"]["granularity"]) == (
        "fever-wiki", "sentence")
    seen = result["evidence"] + result["retrieved"]
    assert seen and {p["page"] for p in seen} <= set(FEVER_PAGES)  # the dump's passages only
    assert any(p["page"] == SOUL_FOOD and p["sentences"] == [1] for p in seen)
    printed = run_cli(["verify", "Soul Food was directed by George Tillman Jr.", "--index",
                       "fever-tiny", *SCRIPTED], home)
    assert printed.returncode == 0, printed.stderr[-2000:]
    assert printed.stdout.strip().splitlines()[-1].startswith("index 'fever-tiny' (")
    hint = run_cli(["verify", "Soul Food", "--index-dir", "fever-tiny", *SCRIPTED], home)
    assert "'fever-tiny' is the name of a built index: use --index fever-tiny" in one_error_line(
        hint)


@pytest.mark.parametrize("flag,index,fmt,granularity", [
    ("--index", "fever-tiny", "fever-wiki", "sentence"),
    ("--index", "tiny-jsonl", "jsonl", "chunk"),
    ("--set", "fever-tiny", "fever-wiki", "sentence"),  # --set index=NAME is --index NAME
])
def test_run_json_records_the_index_source_format_and_granularity(home, tmp_path, flag, index,
                                                                  fmt, granularity):
    data = tmp_path / "claims.jsonl"
    data.write_text(json.dumps({"id": "c1", "dataset": "fever", "label": "SUPPORTS",
                                "claim": "Soul Food was directed by George Tillman Jr."}) + "\n",
                    encoding="utf-8")
    out = tmp_path / "run"
    named = ["--index", index] if flag == "--index" else ["--set", f"index={index}"]
    done = run_cli(["eval", "--framework", "tool_mad", "--dataset", str(data), *named,
                    "--out", str(out), "--model", "scripted:agree", "--set", "rag_backend=keyword",
                    "--set", "scoring_mode=none", "--concurrency", "1"], home)
    assert done.returncode == 0, done.stderr[-2000:]
    recorded = json.loads((out / "run.json").read_text(encoding="utf-8"))["index"]
    assert recorded["name"] == index and recorded["status"] == "ok"
    assert (recorded["source_format"], recorded["granularity"]) == (fmt, granularity)
    assert f"format {fmt}, granularity {granularity}" in " ".join(done.stdout.split())


def test_check_searches_the_index_it_names(home, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("Soul Food is a 1997 American comedy-drama film. It was directed by George "
                    "Tillman Jr. in Chicago.", encoding="utf-8")
    done = run_cli(["check", str(text), "--index", "fever-tiny", "--model", "scripted:check_text",
                    "--rag-backend", "keyword", "--search-backend", "local_search", "--set",
                    "scoring_mode=none", "--json"], home)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["index"]["name"] == "fever-tiny"
    assert result["index"]["source_format"] == "fever-wiki"


def test_eval_refuses_two_indexes_and_a_named_index_on_a_server(home, tmp_path):
    data = tmp_path / "claims.jsonl"
    data.write_text(json.dumps({"id": "c1", "dataset": "fever", "label": "SUPPORTS",
                                "claim": "Soul Food is a film."}) + "\n", encoding="utf-8")
    base = ["eval", "--framework", "tool_mad", "--dataset", str(data), "--out",
            str(tmp_path / "run"), "--model", "scripted:agree"]
    both = run_cli([*base, "--index", "store", "--set", "index=fever-tiny"], home)
    assert "--index and --set index=... both name the index" in one_error_line(both)
    served = run_cli([*base, "--set", "index=fever-tiny", "--server", "http://127.0.0.1:9"], home)
    assert "records the index the server reports" in one_error_line(served)
    assert not (tmp_path / "run").exists()


def test_index_info_counts_the_pages_a_dump_build_repaired_and_skipped(home, tmp_path):
    from tests.fixtures.sources import fever_quirks

    wiki = tmp_path / "wiki-pages"
    wiki.mkdir()
    (wiki / "wiki-001.jsonl").write_text(fever_quirks.lines(), encoding="utf-8")
    target = tmp_path / "quirky"
    built = run_cli(["index", str(wiki), "--format", "fever-wiki", "--keyword-only",
                     "--index-dir", str(target)], home)
    assert built.returncode == 0, built.stderr[-2000:]
    done = run_cli(["index", "--info", str(target), "--json"], home)
    assert done.returncode == 0, done.stderr[-2000:]
    info = json.loads(done.stdout)
    assert (info["repaired"], info["skipped"]) == (len(fever_quirks.REPAIRED), fever_quirks.SKIPPED)
    assert info["name"] == "" and info["index_dir"] == str(target)
    printed = run_cli(["index", "--info", str(target)], home)
    assert f"repaired:    {len(fever_quirks.REPAIRED)}" in printed.stdout
