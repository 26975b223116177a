"""Indexes are never silently wrong.

Real components: Milvus Lite and tantivy indexes built from 30 passages of the bundled demo corpus,
damaged with what a user has (truncation, random bytes, deletion); the ``factdebate`` CLI in
subprocesses (a second process holding the index lock, a build killed with SIGKILL) and in-process.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.core.context import Context
from factdebate.core.errors import IndexDamagedError
from factdebate.nodes.retrieval import search_tool
from factdebate.tools import DEMO_CORPUS_DIR
from factdebate.tools.base import RetrieverSettings, clear_retriever_cache, get_retriever
from factdebate.tools.index_lock import release
from factdebate.tools.indexing import build_indexes, inspect_index

FACTDEBATE = Path(sys.executable).parent / "factdebate"


def _corpus(folder: Path, start: int = 0, n: int = 30) -> Path:
    lines = (DEMO_CORPUS_DIR / "passages.jsonl").read_text(encoding="utf-8").splitlines()
    path = folder / f"corpus-{start}.jsonl"
    path.write_text("\n".join(lines[start:start + n]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pristine")
    build_indexes(_corpus(folder), folder / "index")
    return folder / "index"


@pytest.fixture
def copy(pristine: Path, tmp_path: Path):
    def make(where: Path | None = None) -> Path:
        target = where or tmp_path / "index"
        shutil.copytree(pristine, target)
        return target

    yield make
    clear_retriever_cache()
    release(tmp_path / "index")


def _segment(index: Path, ext: str) -> Path:
    return next((index / "keyword").glob(f"*.{ext}"))


def _parquet(index: Path) -> Path:
    return next((index / "milvus.db").rglob("*.parquet"))


DAMAGE = {
    "manifest deleted": (lambda i: (i / "manifest.json").unlink(), "manifest.json is missing"),
    "manifest truncated": (lambda i: os.truncate(i / "manifest.json", 20), "manifest.json is unreadable"),
    "manifest random bytes": (lambda i: (i / "manifest.json").write_bytes(os.urandom(64)),
                              "manifest.json is unreadable"),
    "keyword deleted": (lambda i: shutil.rmtree(i / "keyword"), "keyword/ (the keyword index) is missing"),
    "keyword store truncated": (lambda i: os.truncate(_segment(i, "store"), 10),
                                "keyword index is unreadable"),
    "keyword term random": (lambda i: _segment(i, "term").write_bytes(os.urandom(500)),
                            "keyword index is unreadable"),
    "keyword positions deleted": (lambda i: _segment(i, "pos").unlink(), "keyword index is unreadable"),
    "milvus deleted": (lambda i: shutil.rmtree(i / "milvus.db"), "milvus.db/ (the vector index) is missing"),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_inspect_index_names_each_damage(copy, case):
    index = copy()
    damage, reason = DAMAGE[case]
    damage(index)
    state = inspect_index(index)
    assert state.status == "damaged" and reason in state.reason, state


def test_inspect_index_absent_and_ok(copy, tmp_path):
    assert inspect_index(tmp_path / "nothing").status == "absent"
    (tmp_path / "empty").mkdir()
    assert inspect_index(tmp_path / "empty").status == "absent"
    (tmp_path / "file").write_text("x")
    assert inspect_index(tmp_path / "file").status == "damaged"
    state = inspect_index(copy())
    assert state.status == "ok" and state.manifest["passages"] == 30


@pytest.mark.parametrize("case", ["manifest truncated", "keyword deleted", "milvus deleted"])
def test_damaged_default_index_is_an_error_never_the_demo_corpus(copy, tmp_path, monkeypatch, case):
    home = tmp_path / "home"
    index = copy(home / "index")
    DAMAGE[case][0](index)
    before = sorted(str(p.relative_to(index)) for p in index.rglob("*"))
    monkeypatch.setenv("FACTDEBATE_HOME", str(home))
    monkeypatch.delenv("FACTDEBATE_INDEX_DIR", raising=False)
    result = CliRunner().invoke(app, ["verify", "Paris is in France", "--model", "scripted:agree"])
    assert result.exit_code == 3, result.output
    assert "is damaged" in result.output and DAMAGE[case][1] in result.output
    assert f"factdebate index CORPUS.jsonl --index-dir {index} --replace" in " ".join(
        result.output.split())
    assert "demo corpus" not in result.output
    assert sorted(str(p.relative_to(index)) for p in index.rglob("*")) == before  # untouched


def test_set_index_dir_without_an_index_is_an_error_not_a_demo_build(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    elsewhere = tmp_path / "elsewhere"
    result = CliRunner().invoke(app, ["verify", "Paris is in France", "--model", "scripted:agree",
                                      "--set", f"index_dir={elsewhere}"])
    assert result.exit_code == 2 and f"no index in {elsewhere}" in result.output
    assert not elsewhere.exists() and not (tmp_path / "home" / "index").exists()


# -- 2: damaged retrieval is a fault, an empty result is not ------------------------------------
def test_vector_index_missing_its_data_is_a_fault_not_zero_passages(copy):
    index = copy()
    _parquet(index).unlink()  # Milvus Lite still opens it and answered 0 hits before
    settings = RetrieverSettings(index_dir=str(index), milvus_uri=str(index / "milvus.db"))
    with pytest.raises(IndexDamagedError, match="holds 0 passages, its manifest says 30"):
        get_retriever("milvus", settings)
    ctx = Context(index_dir=str(index), rag_backend="milvus")
    with pytest.raises(IndexDamagedError):  # the retrieve node raises: no silent empty turn
        asyncio.run(search_tool("milvus", "Eiffel Tower", ctx, k=3, exclude_titles=None, who="t"))


def test_vector_index_random_bytes_is_a_fault(copy):
    index = copy()
    hnsw = next((index / "milvus.db").rglob("*.idx"))
    hnsw.write_bytes(os.urandom(hnsw.stat().st_size))
    settings = RetrieverSettings(index_dir=str(index), milvus_uri=str(index / "milvus.db"))
    with pytest.raises(IndexDamagedError, match="is damaged"):
        get_retriever("milvus", settings)


def test_keyword_segment_lost_is_a_fault_but_no_match_is_a_legit_empty_result(copy):
    index = copy()
    ctx = Context(index_dir=str(index), rag_backend="keyword")
    empty = asyncio.run(search_tool("keyword", "zzqxv", ctx, k=3, exclude_titles=None, who="t"))
    assert empty["evidence"] == [] and not empty.get("flags")  # nothing matches: not a fault
    clear_retriever_cache()
    _segment(index, "pos").unlink()
    with pytest.raises(IndexDamagedError, match="keyword index .* is damaged"):
        asyncio.run(search_tool("keyword", "Eiffel Tower", ctx, k=3, exclude_titles=None, who="t"))


# -- 14: factdebate index ------------------------------------------------------------------------
def _index_cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "FACTDEBATE_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run([str(FACTDEBATE), "index", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_index_skips_unchanged_requires_replace_and_shows_progress(copy, tmp_path, pristine):
    index = copy()
    manifest = json.loads((index / "manifest.json").read_text())
    same = Path(manifest["corpus"])
    done = _index_cli(str(same), "--index-dir", str(index), home=tmp_path)
    assert done.returncode == 0 and "nothing to do" in done.stdout, done.stderr
    assert json.loads((index / "manifest.json").read_text())["created"] == manifest["created"]
    other = _corpus(tmp_path, start=100, n=12)
    refused = _index_cli(str(other), "--index-dir", str(index), home=tmp_path)
    assert refused.returncode == 2 and "holds an index of another corpus" in refused.stderr
    assert "--replace" in refused.stderr
    assert json.loads((index / "manifest.json").read_text())["created"] == manifest["created"]
    replaced = _index_cli(str(other), "--index-dir", str(index), "--replace", home=tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    assert "embedding + indexing passages" in replaced.stderr  # the rich progress display
    assert json.loads((index / "manifest.json").read_text())["passages"] == 12


def test_index_is_refused_while_another_process_reads_it(copy, tmp_path):
    index = copy()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from factdebate.tools.index_lock import "
         f"hold_shared; hold_shared({str(index)!r}); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        done = _index_cli(str(_corpus(tmp_path, 50, 5)), "--index-dir", str(index), "--replace",
                          home=tmp_path)
        assert done.returncode == 6 and "is in use by another process" in done.stderr
        assert inspect_index(index).manifest["passages"] == 30  # untouched
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.slow  # 20-50 s: `make test-slow` (.ci/run runs both tiers)
def test_killed_build_leaves_nothing_the_next_build_keeps(tmp_path):
    target = tmp_path / "idx" / "index"
    corpus = _corpus(tmp_path, 0, 60)
    env = {**os.environ, "FACTDEBATE_HOME": str(tmp_path)}
    build = subprocess.Popen([str(FACTDEBATE), "index", str(corpus), "--index-dir", str(target)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(target.parent.glob(".index.building-*")):
        assert build.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    build.send_signal(signal.SIGKILL)
    build.wait()
    assert list(target.parent.glob(".index.building-*"))  # what a kill leaves behind
    assert inspect_index(target).status == "absent"  # never counted as an index
    done = _index_cli(str(_corpus(tmp_path, 0, 5)), "--index-dir", str(target), home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not list(target.parent.glob(".index.building-*"))
    assert inspect_index(target).status == "ok"


def test_eval_on_a_vector_index_missing_its_data_records_error_rows(copy, tmp_path, monkeypatch):
    index = copy()
    _parquet(index).unlink()
    data = tmp_path / "mini.jsonl"
    data.write_text("".join(json.dumps({"id": f"c{i}", "claim": claim, "label": "SUPPORTS"}) + "\n"
                            for i, claim in enumerate(["The Eiffel Tower is in Paris.",
                                                       "The Louvre is a museum."])))
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, [
        "eval", "--framework", "rag", "--dataset", str(data), "--model", "scripted:agree",
        "--out", str(out), "--set", f"index_dir={index}", "--set", "rag_backend=milvus"])
    assert result.exit_code == 4, result.output  # the run finished, with every item failed
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["error", "error"]
    assert all("holds 0 passages" in r["error"]["message"] for r in rows)
