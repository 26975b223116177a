"""``factdebate index DUMP --format NAME``: a searchable index from each official knowledge-source
format, passages that keep their page and element ids, per-claim pools that never leak, one-line
errors that leave nothing behind, and a build killed with SIGKILL that resumes.

Real components: the CLI (in-process and as a process), tantivy, Milvus Lite and MiniLM for the
knowledge-store pool test; dumps written by the tests (tests/fixtures/sources/make.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.core.errors import BackendUnavailableError
from factdebate.evaluation.bench_corpus import generate_fever_dump
from factdebate.tools.base import RetrieverSettings, clear_retriever_cache, get_retriever
from factdebate.tools.index_lock import release
from factdebate.tools.index_state import inspect_index
from factdebate.tools.keyword import KeywordRetriever
from tests.fixtures.sources import make

QUERIES = {  # format -> (query, page id the top passage has, its element ids)
    "fever-wiki": ("Soul Food comedy-drama film 1997", make.SOUL_FOOD, [0, 2]),
    "hover-wiki": ("Anna Ancher Danish painter", "Anna Ancher", [0, 1, 2]),
    "feverous-db": ("Aramais Yepiskoposyan Armenian football manager", "Aramais Yepiskoposyan",
                    ["sentence_0"]),
    "averitec-store": ("Emperor penguins Antarctic winter", "https://one.example/penguins", []),
    "wikipedia": ("Autism neurodevelopmental disorder", "Autism", []),
}


def _index(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["index", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("fmt", sorted(QUERIES))
def test_each_format_builds_a_searchable_keyword_index(tmp_path: Path, fmt: str) -> None:
    dump = make.MAKERS[fmt](tmp_path)
    target = tmp_path / "index"
    code, output = _index(str(dump), "--format", fmt, "--index-dir", str(target), "--keyword-only")
    assert code == 0, output
    assert inspect_index(target).status == "ok"
    manifest = json.loads((target / "manifest.json").read_text())
    assert manifest["source_format"] == fmt and manifest["keyword_only"] is True
    query, page, sentences = QUERIES[fmt]
    top = KeywordRetriever(target).search_sync(query, 1)[0]
    assert (top["page"], top["sentences"]) == (page, sentences)
    assert top["id"].endswith(f"{page}#1")
    release(target)


def test_a_named_index_is_built_where_a_dataset_finds_it(tmp_path: Path, monkeypatch) -> None:
    from factdebate.evaluation.datasets import dataset_index, index_folder

    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FACTDEBATE_DATA_DIR", str(tmp_path / "no-data"))
    dump = make.fever_zip(tmp_path)
    assert dataset_index("fever") is None  # the registry names it only once it is built
    code, output = _index(str(dump), "--name", "fever-wiki", "--keyword-only")
    assert code == 0, output
    target = tmp_path / "home" / "indexes" / "fever-wiki"
    assert index_folder("fever-wiki") == target and inspect_index(target).status == "ok"
    assert dataset_index("fever") == ("fever-wiki", "the dataset 'fever'")  # found: it exists
    release(target)
    code, output = _index(str(dump), "--name", "fever-wiki", "--index-dir", str(tmp_path / "x"))
    assert code == 2 and "--name and --index-dir" in output, output
    code, output = _index(str(dump), "--name", "../up", "--keyword-only")
    assert code == 2 and "not an index name" in output, output
    assert not (tmp_path / "x").exists() and not (tmp_path / "home" / "up").exists()


def test_the_format_is_detected_and_an_unchanged_dump_is_not_rebuilt(tmp_path: Path) -> None:
    dump, target = make.fever_zip(tmp_path), tmp_path / "index"
    code, output = _index(str(dump), "--index-dir", str(target), "--keyword-only")
    assert code == 0 and "indexed 3 passages" in output, output
    code, output = _index(str(dump), "--index-dir", str(target), "--keyword-only")
    assert code == 0 and "nothing to do" in output, output
    settings = RetrieverSettings(index_dir=str(target), milvus_uri=str(target / "milvus.db"))
    with pytest.raises(BackendUnavailableError, match="keyword-only"):
        get_retriever("milvus", settings)  # says so, not "no vector index"


def test_a_store_searched_per_claim_never_returns_another_claims_pool(tmp_path: Path) -> None:
    store, target = make.averitec_store(tmp_path), tmp_path / "index"
    code, output = _index(str(store), "--format", "averitec-store", "--index-dir", str(target))
    assert code == 0, output
    base = RetrieverSettings(index_dir=str(target), milvus_uri=str(target / "milvus.db"))
    try:
        for backend in ("milvus", "keyword"):
            everything = get_retriever(backend, base).search_sync("vaccine approved 2021", 10)
            assert {e["pool"] for e in everything} == {"0", "1"}  # the URL both pools hold
            for claim in ("0", "1"):
                pooled = get_retriever(backend, RetrieverSettings(**{**base.__dict__, "pool": claim}))
                for query in ("penguins Antarctic", "vaccine approved", "hospital capacity Lagos"):
                    found = pooled.search_sync(query, 10)
                    assert {e["pool"] for e in found} <= {claim}, (backend, claim, query)
                    assert found or backend == "keyword"  # dense search always has neighbours
                    # the nodes' path (Milvus: the query embedded on the loop's side) finds the same
                    assert asyncio.run(pooled.search(query, k=10)) == found, (backend, query)
                assert pooled.search_sync("vaccine approved 2021", 10)  # its own copy of the URL
            one = get_retriever(backend, RetrieverSettings(**{**base.__dict__, "pool": "1"}))
            top = one.search_sync("penguins Antarctic", 1)[0]
            assert (top["page"], top["id"]) == ("https://one.example/penguins",
                                                "1/https://one.example/penguins#1")
    finally:
        clear_retriever_cache()
        release(target)


def _broken_zip(tmp: Path) -> Path:
    path = make.fever_zip(tmp)
    path.write_bytes(path.read_bytes()[:300])
    return path


def _foreign_sqlite(tmp: Path) -> Path:
    import sqlite3

    path = tmp / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (id, body)")
    db.commit()
    db.close()
    return path


def _broken_bz2(tmp: Path) -> Path:
    import bz2

    tree = make.hover_tree(tmp)
    (tree / "AB" / "wiki_00.bz2").write_bytes(bz2.compress(b'{oops\n{"title": "x", "text": ["a"]}\n'))
    return tree


def _store_member_not_the_format(tmp: Path) -> Path:
    return make.averitec_zip(tmp, {"output_dev/3.json": json.dumps({"title": "t"}) + "\n"})


def _truncated_abstracts(tmp: Path) -> Path:
    path = make.hover_tar(tmp)
    path.write_bytes(path.read_bytes()[:-200])
    return path


@pytest.mark.parametrize(("maker", "named", "problem"), [
    (_broken_zip, "wiki-pages.zip", "not a readable zip archive"),
    (_foreign_sqlite, "other.db", "an SQLite database with tables notes(id, body)"),
    (_broken_bz2, "AB/wiki_00.bz2 line 1", "malformed JSON"),
    (_store_member_not_the_format, "output_dev/3.json line 1", "not a knowledge-store line"),
    (make.feverous_zip, "feverous-wiki-pages-db.zip", "SQLite cannot read a database inside a "
                                                      "zip: run `unzip "),
    (_truncated_abstracts, "withlinks-abstracts.tar.bz2", "truncated or damaged"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path: Path, maker, named: str,
                                                          problem: str) -> None:
    dump, target = maker(tmp_path), tmp_path / "out" / "index"
    code, output = _index(str(dump), "--index-dir", str(target), "--keyword-only")
    assert code == 2, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 or all("error:" not in line for line in lines[:-1]), output
    error = " ".join(output.split())
    assert named in error and problem in error, output
    assert not target.exists()
    assert not list(target.parent.glob(".index.building-*"))


@pytest.mark.slow  # a 40,000-page build killed and resumed (~15-20 s): the slow tier
def test_a_build_killed_with_sigkill_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    dump = generate_fever_dump(tmp_path / "dump", 40_000)
    target = tmp_path / "index"
    argv = [sys.executable, "-c", "from factdebate.cli.main import app; app()", "index", str(dump),
            "--format", "fever-wiki", "--keyword-only", "--index-dir", str(target)]
    env = {**os.environ, "FACTDEBATE_INDEX_CHECKPOINT_PASSAGES": "1000"}
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    committed, deadline = 0, time.monotonic() + 120
    try:
        while committed == 0 and time.monotonic() < deadline and child.poll() is None:
            for checkpoint in tmp_path.glob(".index.building-*/checkpoint.json"):
                try:
                    committed = json.loads(checkpoint.read_text())["committed"]["passages"]
                except (OSError, ValueError, KeyError):
                    pass
            time.sleep(0.02)
        assert child.poll() is None, "the build ended before its first checkpoint was seen"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait()
    assert committed > 0 and not target.exists()  # a half-built index is never at the target
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "resumed at passage" in done.stdout, done.stdout
    manifest = json.loads((target / "manifest.json").read_text())
    assert manifest["resumes"] == 1 and manifest["resumed_at_passage"] >= committed
    assert manifest["documents"] == 40_000
    assert inspect_index(target).status == "ok"  # keyword doc count == manifest passages
    assert not list(tmp_path.glob(".index.building-*"))


@pytest.mark.slow
def test_an_interrupted_dense_build_resumes_without_duplicate_vectors(tmp_path: Path,
                                                                      monkeypatch) -> None:
    """Ctrl-C mid-way through embedding: the rerun upserts the interval after the last commit,
    so the Milvus collection holds each passage once (its row count is checked on open)."""
    import factdebate.tools.sources.build as build

    dump = generate_fever_dump(tmp_path / "dump", 200)
    monkeypatch.setattr(build, "CHECKPOINT_PASSAGES", 50)
    real, seen = build.passages_of, []

    def interrupted(page, granularity="chunk"):
        seen.append(page.page)
        if len(seen) == 120:
            raise KeyboardInterrupt
        return real(page, granularity)

    monkeypatch.setattr(build, "passages_of", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build.build_from_source(dump, tmp_path / "index")
    assert not (tmp_path / "index").exists() and list(tmp_path.glob(".index.building-*"))
    monkeypatch.setattr(build, "passages_of", real)
    manifest = build.build_from_source(dump, tmp_path / "index")
    assert manifest["resumes"] == 1 and manifest["resumed_at_passage"] == 100
    settings = RetrieverSettings(index_dir=str(tmp_path / "index"),
                                 milvus_uri=str(tmp_path / "index" / "milvus.db"))
    try:
        milvus = get_retriever("milvus", settings)
        assert milvus.passages == manifest["passages"] == 200  # type: ignore[attr-defined]
    finally:
        clear_retriever_cache()
        release(tmp_path / "index")


@pytest.mark.slow
def test_bench_corpus_runs_end_to_end_on_a_small_dump(tmp_path: Path) -> None:
    from factdebate.evaluation.bench_corpus import run_corpus_bench

    result = run_corpus_bench(tmp_path, pages=1000, embed_sample=0)  # embedding: bench_embedding
    runs = result["imports"]
    assert set(runs) == {"1000_chunk", "1000_sentence"}  # one file: the smaller size is the dump
    assert runs["1000_chunk"]["pages"] == 1000
    assert runs["1000_sentence"]["passages"] > runs["1000_chunk"]["passages"]
    assert all(r["peak_rss_mb"] > 0 and r["pages_per_s"] > 0 for r in runs.values())
    assert set(result["budget_met"]) == {"pages_per_s", "rss_under_2gb",
                                         "anon_rss_independent_of_size"}
