"""The index, ``verify`` and ``eval --workers`` against a real Milvus server.

Real components: Milvus standalone from PyPI's ``milvus`` package on loopback ports (one server for
the session, ``milvus_server`` in conftest.py; each test in its own Milvus database), the
``factdebate`` CLI in-process, MiniLM embeddings, the scripted model. The same operations the
Lite tests cover - build, reuse, ``--replace``, refusals, damage, ``verify``, ``eval`` with worker
processes - and the same hits as Milvus Lite over the same corpus.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.tools import DEMO_CORPUS_DIR, milvus_rag
from factdebate.tools.base import RetrieverSettings, clear_retriever_cache, get_retriever
from tests.integration.milvus_server import MilvusStandalone, fresh_database

runner = CliRunner()
DATA = os.environ.get("FACTDEBATE_DATA_DIR")
QUERIES = ["Eiffel Tower Paris", "highest mountain", "Nobel Prize physics chemistry",
           "river flowing north", "capital city of Germany", "ancient Egyptian pyramids"]


def corpus(folder: Path, start: int = 0, n: int = 30) -> Path:
    lines = (DEMO_CORPUS_DIR / "passages.jsonl").read_text(encoding="utf-8").splitlines()
    path = folder / f"corpus-{start}-{n}.jsonl"
    path.write_text("\n".join(lines[start:start + n]) + "\n", encoding="utf-8")
    return path


def index(corpus_path: Path, index_dir: Path, uri: str | None, *extra: str) -> Any:
    args = ["index", str(corpus_path), "--index-dir", str(index_dir)]
    return runner.invoke(app, args + (["--milvus-uri", uri] if uri else []) + list(extra))


def rows_on(uri: str, collection: str = "factdebate_passages") -> int:
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri)
    try:
        return int(client.get_collection_stats(collection)["row_count"])
    finally:
        client.close()


def one_error_line(result: Any) -> str:
    lines = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    yield
    clear_retriever_cache()


@pytest.fixture(scope="module")
def server_index(milvus_server: MilvusStandalone, tmp_path_factory: pytest.TempPathFactory):
    """30 demo passages indexed into the server: (index folder, Milvus URI)."""
    uri = fresh_database(milvus_server, "shared")
    folder = tmp_path_factory.mktemp("server-index")
    result = index(corpus(folder), folder / "index", uri)
    assert result.exit_code == 0, result.output
    return folder / "index", uri


@pytest.mark.slow  # three builds on the server (~40 s): the slow tier; on Milvus Lite:
# test_integrity_index.py::test_index_skips_unchanged_requires_replace_and_shows_progress
def test_index_builds_reuses_refuses_and_replaces_on_the_server(milvus_server, tmp_path):
    uri = fresh_database(milvus_server, "build")
    target = tmp_path / "index"
    first = index(corpus(tmp_path), target, uri)
    assert first.exit_code == 0 and "indexed 30 passages" in first.output, first.output
    manifest = json.loads((target / "manifest.json").read_text())
    assert manifest["milvus_uri"] == uri and manifest["passages"] == 30
    assert not (target / "milvus.db").exists() and rows_on(uri) == 30

    again = index(corpus(tmp_path), target, uri)
    assert again.exit_code == 0 and "nothing to do" in again.output, again.output

    other = corpus(tmp_path, start=30, n=12)
    refused = index(other, target, uri)
    assert refused.exit_code == 2 and "--replace" in one_error_line(refused)  # InputError
    assert rows_on(uri) == 30  # nothing written

    replaced = index(other, target, uri, "--replace")
    assert replaced.exit_code == 0 and "indexed 12 passages" in replaced.output, replaced.output
    assert rows_on(uri) == 12
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri)
    assert client.list_collections() == ["factdebate_passages"]  # the staging one was renamed
    client.close()


def test_verify_searches_the_server(server_index):
    folder, uri = server_index
    result = runner.invoke(app, ["verify", "The Eiffel Tower is in Paris.", "--index-dir",
                                 str(folder), "--set", f"milvus_uri={uri}", "--model",
                                 "scripted:agree", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["label"] == "SUPPORTS" and out["ledger"]["tool_calls"]["milvus"] == 1
    rag = [e for t in out["turns"] if t["agent"] == "rag" for e in t["evidence"]]
    assert rag[0]["title"] == "Eiffel Tower" and rag[0]["source"] == "milvus"
    assert out["evidence"] and all(e["cited_by"] for e in out["evidence"])


def test_lite_and_server_return_the_same_hits(server_index, tmp_path):
    folder, uri = server_index
    lite = tmp_path / "lite"
    assert index(corpus(tmp_path), lite, None).exit_code == 0
    on_server = get_retriever("milvus", RetrieverSettings(index_dir=str(folder), milvus_uri=uri))
    on_lite = get_retriever("milvus", RetrieverSettings(index_dir=str(lite),
                                                        milvus_uri=str(lite / "milvus.db")))
    for query in QUERIES:
        a, b = on_lite.search_sync(query, 10), on_server.search_sync(query, 10)
        assert [e["id"] for e in a] == [e["id"] for e in b], query
        assert [e["score"] for e in a] == pytest.approx([e["score"] for e in b], abs=1e-5)
        assert a[0]["text"] == b[0]["text"] and b[0]["source"] == "milvus"


def _verify(folder: Path, uri: str) -> Any:
    return runner.invoke(app, ["verify", "claim", "--index-dir", str(folder), "--set",
                               f"milvus_uri={uri}", "--model", "scripted:agree"])


def test_unreachable_and_wrong_servers_are_one_line_exit_3(server_index, tmp_path):
    folder, _ = server_index
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once the block ends
    nobody = f"http://127.0.0.1:{port}"
    line = one_error_line(_verify(folder, nobody))
    assert f"Milvus at {nobody}" in line and "start the server" in line
    built = index(corpus(tmp_path), tmp_path / "index", nobody)
    assert built.exit_code == 3 and f"Milvus at {nobody}" in one_error_line(built)
    assert not (tmp_path / "index").exists()

    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        wrong = f"http://127.0.0.1:{web.server_address[1]}"
        result = _verify(folder, wrong)
        assert result.exit_code == 3 and f"Milvus at {wrong}" in one_error_line(result)
    finally:
        web.shutdown()


@pytest.mark.slow  # a build on the server and three refusals (~15 s): the slow tier; on Milvus
# Lite: test_integrity_backends.py, test_integrity_index.py
def test_damaged_or_mismatched_server_collections_are_refused(milvus_server, tmp_path):
    from pymilvus import MilvusClient

    uri = fresh_database(milvus_server, "damage")
    target = tmp_path / "index"
    assert index(corpus(tmp_path), target, uri).exit_code == 0
    client = MilvusClient(uri=uri)
    try:  # one passage more than the manifest records: written by someone else
        client.insert("factdebate_passages", [milvus_rag.milvus_row(
            {"id": "extra", "title": "x", "text": "x"}, [0.1] * 384)])
        client.flush("factdebate_passages")
        line = one_error_line(_verify(target, uri))
        assert "is damaged: it holds 31 passages, its manifest says 30" in line and uri in line

        client.drop_collection("factdebate_passages")  # gone from the server
        clear_retriever_cache()
        line = one_error_line(_verify(target, uri))
        assert f"no vector index at {uri} (collection 'factdebate_passages')" in line

        client.create_collection("factdebate_passages", dimension=8)  # another model's vectors
        clear_retriever_cache()
        line = one_error_line(_verify(target, uri))
        assert "has 8-d vectors but the embedding model gives 384-d" in line
    finally:
        client.close()


@pytest.mark.slow  # a 200-passage build on the server and two evaluations (~30 s): the slow tier;
# on Milvus Lite: test_eval_workers.py
@pytest.mark.skipif(not DATA, reason="FACTDEBATE_DATA_DIR is not set (CI sets it to ../shared/data)")
def test_eval_with_two_workers_over_the_server_gives_the_rows_of_lite(
        milvus_server, wiki_index, tmp_path):
    from factdebate.evaluation.runner import RunSpec, run_eval

    uri = fresh_database(milvus_server, "evalw")
    lines = (Path(DATA) / "corpus" / "wiki.jsonl").read_text(encoding="utf-8").splitlines()[:200]
    wiki = tmp_path / "wiki200.jsonl"
    wiki.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert index(wiki, tmp_path / "index", uri).exit_code == 0

    def run(out: Path, index_dir: Path, workers: int, *sets: str) -> dict[str, dict]:
        spec = RunSpec(framework="tool_mad", dataset="fever", out=out, limit=6, seed=3,
                       concurrency=3, model="scripted:disagree", data_dir=DATA, workers=workers,
                       sets=[f"index_dir={index_dir}", *sets])
        asyncio.run(run_eval(spec))
        rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
        return {r["item_id"]: r for r in rows}

    served = run(tmp_path / "served", tmp_path / "index", 2, f"milvus_uri={uri}")
    local = run(tmp_path / "lite", wiki_index, 1)
    assert set(served) == set(local) and len(served) == 6
    for item, row in served.items():
        assert row["status"] == "ok", row
        assert not [f for f in row["flags"] if "fault" in f], row["flags"]
        for key in ("prediction", "final_labels", "contexts", "scores"):
            assert row[key] == local[item][key], (item, key)
