"""The MiniLM ONNX path: same vectors as torch, cached export, torch fallback when asked."""

from __future__ import annotations

import numpy as np
import pytest

from tools import embeddings_onnx
from tools.embeddings import MiniLMEmbeddings, get_embeddings

TEXTS = ["Who wrote Hamlet?", "The Seine flows through Paris and into the English Channel."]


def test_small_batches_run_on_onnxruntime_with_torch_identical_vectors():
    model = get_embeddings("minilm")
    assert model.backend == "onnxruntime"
    onnx_vectors = np.asarray(model.embed_documents(TEXTS))
    torch_vectors = model._model.encode(TEXTS, normalize_embeddings=True)
    assert np.abs(onnx_vectors - torch_vectors).max() < embeddings_onnx.MAX_ABS_DIFF
    assert np.allclose(np.linalg.norm(onnx_vectors, axis=1), 1.0, atol=1e-5)
    # a bulk batch (indexing) goes through torch and agrees too
    bulk = [f"passage {i} about rivers" for i in range(40)]
    assert np.abs(np.asarray(model.embed_documents(bulk))[:2]
                  - model._onnx.encode(bulk[:2])).max() < embeddings_onnx.MAX_ABS_DIFF


def test_export_is_cached_under_factdebate_home(monkeypatch, tmp_path):
    model = get_embeddings("minilm")
    path = embeddings_onnx.cache_path(model._model_path)
    assert path.exists() and path.stat().st_size > 10_000_000
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path))
    assert embeddings_onnx.cache_path(model._model_path).parent == tmp_path / "models"


@pytest.mark.parametrize("value", ["torch", "TORCH"])
def test_backend_torch_opts_out(monkeypatch, value):
    monkeypatch.setenv("FACTDEBATE_EMBEDDINGS_BACKEND", value)
    model = MiniLMEmbeddings()
    assert model.backend == "torch" and model._onnx is None
    assert len(model.embed_query("Who wrote Hamlet?")) == 384


def test_a_vector_mismatch_keeps_torch(monkeypatch):
    monkeypatch.setattr(embeddings_onnx, "MAX_ABS_DIFF", -1.0)  # no export can pass this check
    model = MiniLMEmbeddings()
    assert model.backend == "torch"
