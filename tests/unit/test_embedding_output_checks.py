"""Vectors are checked before an index stores them: a NaN or infinite value, a missing vector or
another dimension stops the build with one line (tools/embeddings.checked_vectors), for a dump
build (tools/sources/build.py) and the JSONL corpus build (tools/indexing.py) alike, and no index
is left that only the first search would find damaged."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from factdebate.tools import indexing
from factdebate.tools.embeddings import EmbeddingOutputError, checked_vectors
from factdebate.tools.sources import build
from tests.fixtures.sources import fever_quirks


class Broken(Embeddings):
    """Four dimensions; the text ``bad`` (or every text with ``every``) gets ``value``."""

    def __init__(self, value: float, every: bool = False) -> None:
        self.value, self.every = value, every

    def embed_documents(self, texts):
        return [[self.value] * 4 if self.every or i == 1 else [0.5] * 4
                for i, _ in enumerate(texts)]

    def embed_query(self, text):
        return [0.5] * 4


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_vector_is_named(value: float) -> None:
    with pytest.raises(EmbeddingOutputError, match=r"NaN or infinite values \(text 2 of a batch of 3"):
        checked_vectors([[0.1, 0.2], [value, 0.2], [0.3, 0.4]], 3, 2, "m")


def test_a_missing_vector_or_another_dimension_is_named() -> None:
    with pytest.raises(EmbeddingOutputError, match=r"shape \(2, 2\) for 3 texts, expected \(3, 2\)"):
        checked_vectors([[0.1, 0.2], [0.3, 0.4]], 3, 2, "m")
    with pytest.raises(EmbeddingOutputError, match=r"expected \(2, 3\)"):
        checked_vectors([[0.1, 0.2], [0.3, 0.4]], 2, 3, "m")
    with pytest.raises(EmbeddingOutputError, match="uneven length"):
        checked_vectors([[0.1, 0.2], [0.3]], 2, 2, "m")
    assert checked_vectors([[1, 2]], 1, 2, "m") == [[1.0, 2.0]]


def test_a_dump_build_with_nan_vectors_stops_and_leaves_no_index(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(build, "get_embeddings", lambda spec: Broken(math.nan, every=True))
    with pytest.raises(EmbeddingOutputError, match="NaN"):
        build.build_from_source(fever_quirks.wiki_zip(tmp_path), tmp_path / "index",
                                fmt="fever-wiki", embedding_model="broken")
    assert not (tmp_path / "index").exists()


def test_a_corpus_build_with_a_nan_vector_stops_and_leaves_no_index(tmp_path: Path,
                                                                    monkeypatch) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": f"d{i}", "title": f"T{i}", "text": f"text {i}"})
                              + "\n" for i in range(3)))
    monkeypatch.setattr(indexing, "get_embeddings", lambda spec: Broken(math.nan))
    with pytest.raises(EmbeddingOutputError, match=r"text 2 of a batch of 3"):
        indexing.build_indexes(corpus, tmp_path / "index", embedding_model="broken")
    assert not (tmp_path / "index" / "manifest.json").exists()
