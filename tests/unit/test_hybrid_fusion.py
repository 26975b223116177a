"""Score fusion of the hybrid retriever (pure functions; the retriever itself is tested on a
real index in tests/integration/test_hybrid_retrieval.py)."""

from __future__ import annotations

import statistics

import pytest

from factdebate.tools.hybrid import zscore_fuse


def ev(pid: str, score: float, source: str = "x") -> dict:
    return {"id": pid, "title": pid.upper(), "text": "", "source": source, "url": "",
            "score": score}


def test_fused_score_is_the_weighted_mean_of_z_scores() -> None:
    dense = [ev("a", 0.9, "milvus"), ev("b", 0.8, "milvus"), ev("c", 0.4, "milvus")]
    keyword = [ev("b", 30.0, "keyword"), ev("c", 10.0, "keyword"), ev("a", 5.0, "keyword")]
    fused = zscore_fuse([dense, keyword], [0.5, 0.5], k=3)

    def z(values: list[float], x: float) -> float:
        return (x - statistics.fmean(values)) / statistics.pstdev(values)

    expected = {
        "a": 0.5 * z([0.9, 0.8, 0.4], 0.9) + 0.5 * z([30, 10, 5], 5),
        "b": 0.5 * z([0.9, 0.8, 0.4], 0.8) + 0.5 * z([30, 10, 5], 30),
        "c": 0.5 * z([0.9, 0.8, 0.4], 0.4) + 0.5 * z([30, 10, 5], 10),
    }
    assert [e["id"] for e in fused] == sorted(expected, key=lambda i: -expected[i])
    assert [e["id"] for e in fused] == ["b", "a", "c"]
    assert all(e["score"] == pytest.approx(expected[e["id"]], abs=1e-6) for e in fused)
    assert all(e["source"] == "hybrid" and e["title"] == e["id"].upper() for e in fused)


def test_score_margin_matters_not_only_rank() -> None:
    # Both rankers put a different passage first. RRF would tie them; z-scores prefer the
    # keyword hit that stands far above its list over the dense hit that barely leads.
    dense = [ev("d1", 0.71), ev("k1", 0.70), ev("x", 0.69), ev("y", 0.68)]
    keyword = [ev("k1", 40.0), ev("d1", 8.0), ev("x", 7.5), ev("y", 7.0)]
    assert [e["id"] for e in zscore_fuse([dense, keyword], [0.5, 0.5], k=2)] == ["k1", "d1"]


def test_missing_passage_gets_the_rankings_lowest_score() -> None:
    dense = [ev("a", 0.9), ev("b", 0.5)]
    keyword = [ev("c", 12.0), ev("a", 2.0)]
    fused = {e["id"]: e["score"] for e in zscore_fuse([dense, keyword], [0.5, 0.5], k=5)}
    # b is absent from keyword: it gets keyword's minimum z (that of a, -1); c gets dense's (-1).
    assert fused == pytest.approx({"a": 0.5 * 1 + 0.5 * -1, "b": 0.5 * -1 + 0.5 * -1,
                                   "c": 0.5 * -1 + 0.5 * 1})
    assert set(fused) == {"a", "b", "c"}


def test_empty_or_flat_rankings_do_not_break_fusion() -> None:
    only_dense = zscore_fuse([[ev("a", 0.3), ev("b", 0.2)], []], [0.5, 0.5], k=5)
    assert [e["id"] for e in only_dense] == ["a", "b"]
    flat = zscore_fuse([[ev("a", 1.0), ev("b", 1.0)], [ev("b", 3.0)]], [0.5, 0.5], k=1)
    assert [e["id"] for e in flat] == ["b"]
    assert zscore_fuse([[], []], [0.5, 0.5], k=3) == []
