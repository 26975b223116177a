"""Milvus Lite fast search path and the explicit HNSW index (real Milvus Lite, no mocks).

The fast path must return exactly what milvus-lite's own executor returns when every row is
visible, and must hand the search back to milvus-lite whenever a row could be hidden (deletes,
unflushed rows, upserts that duplicate a key, filters).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from factdebate import patches
from factdebate.patches import milvus_lite as fastpath
from factdebate.tools import milvus_rag
from factdebate.tools.embeddings import get_embeddings

DIM = 384  # the bundled MiniLM's dimension, so MilvusRetriever accepts the collection
N = 600
COLLECTION = "passages"


def _vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def _rows(start: int, vecs: np.ndarray) -> list[dict[str, Any]]:
    return [milvus_rag.milvus_row({"id": f"p{start + i}", "title": f"T{start + i}",
                                   "text": f"text {start + i}"}, v.tolist())
            for i, v in enumerate(vecs)]


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[tuple[Any, str]]:
    """A Milvus Lite collection built the way ``factdebate index`` builds it, in 2 segments."""
    uri = str(tmp_path / "milvus.db")
    client = milvus_rag.connect(uri, create=True)
    milvus_rag.create_collection(client, COLLECTION, DIM)
    vecs = _vectors(N, seed=1)
    for start in (0, N // 2):  # two flushes -> two immutable segments with their own index
        client.insert(COLLECTION, _rows(start, vecs[start:start + N // 2]))
        client.flush(COLLECTION)
    client.load_collection(COLLECTION)
    yield client, uri
    milvus_rag.disconnect(client, uri)


def _engine_args(uri: str) -> dict[str, Any]:
    """The arguments milvus-lite's Collection.search hands its executor, taken from the engine."""
    from milvus_lite.engine.projection import build_projection_plan, project_record
    from milvus_lite.server_manager import server_manager_instance

    db = server_manager_instance._servers[str(Path(uri).absolute())][1]
    col = db.get_collection(COLLECTION)
    segments, delta = col._read_snapshot()
    plan = build_projection_plan(["title"], col._schema, api_kind="search")
    return dict(
        segments=list(segments), memtable=col._memtable, delta_index=delta, metric_type="COSINE",
        pk_field="id", vector_field="vector", output_fields=["title"],
        project_record_fn=lambda record: project_record(record, col._schema, plan),
    )


def _search(client: Any, query: np.ndarray, k: int, **kwargs: Any) -> list[tuple[str, float]]:
    hits = client.search(COLLECTION, data=[query.tolist()], limit=k, output_fields=["title"],
                         search_params={"metric_type": "COSINE", "params": {"ef": 128}}, **kwargs)
    return [(h["id"], round(h["distance"], 6)) for h in hits[0]]


def test_fast_path_is_installed_for_the_pinned_milvus_lite(lite: tuple[Any, str]) -> None:
    from milvus_lite.engine import collection

    assert patches.enabled("milvus_lite") is True  # the gate admits the pinned milvus-lite
    assert fastpath.install() is True  # idempotent
    assert collection.execute_search_with_index is fastpath.fast_search


def test_fast_path_matches_milvus_lite_executor(lite: tuple[Any, str]) -> None:
    _, uri = lite
    args = _engine_args(uri)
    assert len(args["segments"]) == 2
    assert fastpath._all_rows_visible(args["segments"], args["memtable"], args["delta_index"],
                                      "vector", None, None, args["project_record_fn"])
    queries = _vectors(25, seed=2)
    for k in (1, 5, 20):
        fast = fastpath.fast_search(queries, top_k=k, search_params={"ef": 128}, **args)
        slow = fastpath._original(queries, top_k=k, search_params={"ef": 128}, **args)
        # Same hits, order and entities; distances to float32 rounding (a segment whose index
        # is still being built in the background is searched by brute force on either path).
        assert [[(h["id"], h["entity"]) for h in row] for row in fast] == \
            [[(h["id"], h["entity"]) for h in row] for row in slow]
        assert np.allclose([[h["distance"] for h in row] for row in fast],
                           [[h["distance"] for h in row] for row in slow], atol=1e-5)
        assert all(len(row) == k for row in fast)
        assert all(set(hit["entity"]) == {"title"} for row in fast for hit in row)


def test_hidden_rows_fall_back_to_milvus_lite(lite: tuple[Any, str]) -> None:
    client, uri = lite
    query = _vectors(N, seed=1)[7]  # the stored vector of p7: its own nearest neighbour
    assert _search(client, query, 3)[0][0] == "p7"
    client.delete(COLLECTION, ids=["p7"])  # a tombstone: rows are no longer all visible
    args = _engine_args(uri)
    assert not fastpath._all_rows_visible(
        args["segments"], args["memtable"], args["delta_index"], "vector", None, None,
        args["project_record_fn"])
    assert "p7" not in [pid for pid, _ in _search(client, query, 5)]
    client.upsert(COLLECTION, _rows(7, query[None, :]))  # back, newer seq, in the memtable
    assert _search(client, query, 3)[0][0] == "p7"
    assert [pid for pid, _ in _search(client, query, 3, filter='id != "p7"')][0] != "p7"


def test_duplicate_keys_across_segments_are_not_fast(tmp_path: Path) -> None:
    uri = str(tmp_path / "dup.db")
    client = milvus_rag.connect(uri, create=True)
    try:
        milvus_rag.create_collection(client, COLLECTION, DIM)
        vecs = _vectors(40, seed=3)
        client.insert(COLLECTION, _rows(0, vecs[:20]))
        client.flush(COLLECTION)
        client.upsert(COLLECTION, _rows(0, vecs[20:]))  # same ids p0..p19, new vectors
        client.flush(COLLECTION)
        client.load_collection(COLLECTION)
        args = _engine_args(uri)
        if len(args["segments"]) > 1:  # not yet compacted: the keys repeat across segments
            assert not fastpath._unique_pks(args["segments"])
        hits = _search(client, vecs[25], 20)
        assert hits[0][0] == "p5" and len({pid for pid, _ in hits}) == 20  # newest version only
    finally:
        milvus_rag.disconnect(client, uri)


def test_collection_uses_explicit_hnsw_and_ef_scales_with_k(lite: tuple[Any, str]) -> None:
    client, _ = lite
    assert milvus_rag.vector_index_type(client, COLLECTION) == "HNSW"
    assert milvus_rag.search_params("HNSW", 5) == {"ef": milvus_rag.EF_SEARCH}
    assert milvus_rag.search_params("HNSW", 200) == {"ef": 400}
    assert milvus_rag.search_params("AUTOINDEX", 5) == {}
    description = milvus_rag.index_description()
    assert description["index_type"] == "HNSW" and description["build_params"]["M"] == 16


def test_index_from_previous_version_still_opens(tmp_path: Path) -> None:
    """Indexes built before HNSW was explicit used AUTOINDEX; they open and search as before."""
    from pymilvus import DataType

    uri = str(tmp_path / "old.db")
    client = milvus_rag.connect(uri, create=True)
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    for name in ("title", "text", "url"):
        schema.add_field(name, DataType.VARCHAR, max_length=256)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
    params = client.prepare_index_params()
    params.add_index(field_name="vector", index_type="AUTOINDEX", metric_type="COSINE")
    client.create_collection(COLLECTION, schema=schema, index_params=params)
    embeddings = get_embeddings("minilm")
    texts = ["Mars is the red planet.", "Tokyo is the capital of Japan."]
    client.insert(COLLECTION, [
        {"id": f"d{i}", "title": t.split()[0], "text": t, "url": "", "vector": v}
        for i, (t, v) in enumerate(zip(texts, embeddings.embed_documents(texts), strict=True))])
    client.flush(COLLECTION)
    milvus_rag.disconnect(client, uri)
    retriever = milvus_rag.MilvusRetriever(uri, COLLECTION, embeddings)
    try:
        assert retriever._index_type == "AUTOINDEX"
        hits = retriever.search_sync("capital city of Japan", 2)
        assert [h["id"] for h in hits] == ["d1", "d0"]
    finally:
        retriever.close()
