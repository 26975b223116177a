"""Hybrid retrieval: dense (Milvus) and keyword (BM25) results fused by reciprocal rank fusion.

RRF (Cormack et al., 2009): ``score(d) = sum over rankers of 1 / (RRF_K + rank)``; it needs no score
calibration between cosine similarities and BM25 scores. Both rankers are asked for a deeper
candidate list than ``k`` and run concurrently.
"""

from __future__ import annotations

import asyncio

from factdebate.state import Evidence
from tools.base import RetrieverSettings, get_retriever

RRF_K = 60
"""The constant of the RRF paper; damps the influence of the very top ranks."""
CANDIDATE_FACTOR = 4
"""Each ranker returns ``k * CANDIDATE_FACTOR`` (at least 20) candidates before fusion."""


def rrf_fuse(rankings: list[list[Evidence]], k: int) -> list[Evidence]:
    """Fuse ranked lists by reciprocal rank; passages are identified by id."""
    scores: dict[str, float] = {}
    first_seen: dict[str, Evidence] = {}
    for ranking in rankings:
        for rank, ev in enumerate(ranking, 1):
            scores[ev["id"]] = scores.get(ev["id"], 0.0) + 1.0 / (RRF_K + rank)
            first_seen.setdefault(ev["id"], ev)
    order = sorted(scores, key=lambda i: -scores[i])[:k]
    return [{**first_seen[i], "source": "hybrid", "score": round(scores[i], 6)} for i in order]


class HybridRetriever:
    """Dense + keyword over the same index folder, fused with RRF."""

    name = "hybrid"

    def __init__(self, settings: RetrieverSettings) -> None:
        self._dense = get_retriever("milvus", settings)
        self._keyword = get_retriever("keyword", settings)

    async def search(self, query: str, *, k: int) -> list[Evidence]:
        """Top-``k`` fused passages for ``query``."""
        depth = max(k * CANDIDATE_FACTOR, 20)
        dense, keyword = await asyncio.gather(
            self._dense.search(query, k=depth), self._keyword.search(query, k=depth)
        )
        return rrf_fuse([dense, keyword], k)


def open_hybrid_retriever(settings: RetrieverSettings) -> HybridRetriever:
    """Registry factory for ``hybrid``."""
    return HybridRetriever(settings)
