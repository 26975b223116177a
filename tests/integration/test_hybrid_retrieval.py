"""Hybrid retriever over a real index (Milvus Lite + tantivy + bundled MiniLM)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from factdebate.tools.base import RetrieverSettings, clear_retriever_cache, get_retriever
from factdebate.tools.hybrid import MIN_CANDIDATES, HybridRetriever
from factdebate.tools.indexing import build_indexes, read_manifest

PASSAGES = {
    "mars": ("Mars", "Mars is the fourth planet from the Sun, called the Red Planet."),
    "tokyo": ("Tokyo", "Tokyo is the capital of Japan and a huge metropolitan area."),
    "fleming": ("Alexander Fleming", "The Scottish physician discovered penicillin in 1928."),
    "whale": ("Blue whale", "The blue whale is the largest animal known to have existed."),
    "everest": ("Mount Everest", "Earth's highest mountain above sea level, in the Himalayas."),
    "zorblax": ("Zorblax Kettering", "A fictional cartographer used as a rare keyword."),
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RetrieverSettings]:
    root = tmp_path_factory.mktemp("hybrid")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": k, "title": t, "text": x}) + "\n"
                              for k, (t, x) in PASSAGES.items()), encoding="utf-8")
    build_indexes(corpus, root / "index", batch_size=4)
    yield RetrieverSettings(index_dir=str(root / "index"),
                            milvus_uri=str(root / "index" / "milvus.db"))
    clear_retriever_cache()


def test_manifest_records_the_vector_index(settings: RetrieverSettings) -> None:
    manifest = read_manifest(settings.index_dir)
    assert manifest["vector_index"]["index_type"] == "HNSW"
    assert manifest["vector_index"]["build_params"] == {"M": 16, "efConstruction": 200}


@pytest.mark.asyncio
@pytest.mark.parametrize(("query", "doc_id"), [
    ("Which planet is known as the Red Planet?", "mars"),
    ("Penicillin was discovered by Alexander Fleming.", "fleming"),  # name only in the title
    ("zorblax", "zorblax"),  # a rare token the dense model does not know
    ("the biggest animal that ever lived", "whale"),  # paraphrase, little word overlap
])
async def test_hybrid_ranks_the_relevant_passage_first(
    settings: RetrieverSettings, query: str, doc_id: str
) -> None:
    hybrid = get_retriever("hybrid", settings)
    hits = await hybrid.search(query, k=3)
    assert hits[0]["id"] == doc_id
    assert {h["source"] for h in hits} == {"hybrid"} and len(hits) == 3
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert hits[0]["text"] == PASSAGES[doc_id][1]


@pytest.mark.asyncio
async def test_hybrid_returns_every_passage_once_and_handles_empty_queries(
    settings: RetrieverSettings,
) -> None:
    hybrid = get_retriever("hybrid", settings)
    assert isinstance(hybrid, HybridRetriever) and MIN_CANDIDATES >= len(PASSAGES)
    hits = await hybrid.search("planet mountain animal capital", k=10)
    assert sorted(h["id"] for h in hits) == sorted(PASSAGES)
    assert await hybrid.search("planet", k=0) == []
    assert await hybrid.search("   ", k=3) == []
