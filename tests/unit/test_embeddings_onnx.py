"""The MiniLM ONNX path: same vectors as torch, cached export, torch fallback when asked."""

from __future__ import annotations

import numpy as np
import pytest

from factdebate.tools import embeddings_onnx
from factdebate.tools.embeddings import MiniLMEmbeddings, get_embeddings

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


def test_embed_queries_embeds_each_new_text_once_and_returns_embed_documents_vectors(monkeypatch):
    model = MiniLMEmbeddings()
    texts = ["Is it true that the Seine flows through Paris?", "Who wrote Hamlet?"]
    expected = np.asarray(model.embed_documents(texts))
    sent: list[list[str]] = []
    real = model.embed_documents
    monkeypatch.setattr(model, "embed_documents", lambda batch: sent.append(batch) or real(batch))
    first = model.embed_queries([texts[0], texts[1], texts[0]])
    again = model.embed_queries([texts[1], texts[0]])
    assert sent == [texts]  # one batch of the two distinct texts; the second call is all hits
    assert np.abs(np.asarray(first) - expected[[0, 1, 0]]).max() < 1e-6
    assert np.abs(np.asarray(again) - expected[[1, 0]]).max() < 1e-6
    assert model.embed_query(texts[1]) == again[0] and sent == [texts]


def test_cached_queries_answers_only_full_hits():
    from factdebate.tools.embeddings import get_embeddings

    emb = get_embeddings("minilm")
    texts = ["cached query one", "cached query two"]
    assert emb.cached_queries(texts + ["never embedded before 1f3a"]) is None
    vectors = emb.embed_queries(texts)
    assert emb.cached_queries(texts) == vectors
    assert emb.cached_queries(list(reversed(texts))) == list(reversed(vectors))


class _SeenInFlight(dict):
    """The in-flight table, telling when a thread found a text there (and will wait for it)."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.found = threading.Event()

    def __contains__(self, key: object) -> bool:
        hit = super().__contains__(key)
        if hit:
            self.found.set()
        return hit


def _held_encoder(model: MiniLMEmbeddings, monkeypatch, fail: bool = False):
    """``model.embed_documents`` that records its batches and blocks until released."""
    import threading

    sent: list[list[str]] = []
    started, release = threading.Event(), threading.Event()
    real = model.embed_documents

    def encode(batch: list[str]) -> list[list[float]]:
        sent.append(list(batch))
        started.set()
        assert release.wait(10)
        if fail:
            raise RuntimeError("encoder fault")
        return real(batch)

    monkeypatch.setattr(model, "embed_documents", encode)
    monkeypatch.setattr(model, "_in_flight", _SeenInFlight())
    return sent, started, release


def test_a_text_another_thread_is_embedding_is_waited_for_not_embedded_again(monkeypatch):
    """Parallel debaters score the same claim at the same time: one encoder call."""
    from concurrent.futures import ThreadPoolExecutor

    model = MiniLMEmbeddings()
    text, other = "Is it true that the Amazon River empties into the Atlantic?", "Who wrote Hamlet?"
    expected = np.asarray(model.embed_documents([text, other]))
    sent, started, release = _held_encoder(model, monkeypatch)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(model.embed_query, text)
        assert started.wait(10)  # the first thread is inside the encoder with the text
        second = pool.submit(model.embed_queries, [other, text])
        assert model._in_flight.found.wait(10)  # the second found it in flight
        release.set()
        one, two = first.result(10), second.result(10)
    assert sent == [[text], [other]]  # the text once; the second thread's new text alone
    assert np.abs(np.asarray(one) - expected[0]).max() < 1e-6
    assert np.abs(np.asarray(two) - expected[[1, 0]]).max() < 1e-6
    assert not model._in_flight and model.cached_queries([text, other]) == [two[1], two[0]]


def test_an_encoder_fault_reaches_the_waiting_thread_and_the_text_is_embedded_on_retry(
        monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    model = MiniLMEmbeddings()
    text = "Is it true that Tokyo was formerly called Edo?"
    sent, started, release = _held_encoder(model, monkeypatch, fail=True)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(model.embed_query, text)
        assert started.wait(10)
        second = pool.submit(model.embed_query, text)
        assert model._in_flight.found.wait(10)
        release.set()
        for future in (first, second):
            with pytest.raises(RuntimeError, match="encoder fault"):
                future.result(10)
    assert sent == [[text]] and not model._in_flight and model.cached_queries([text]) is None
    monkeypatch.undo()  # the real encoder: the text is embedded on the next request
    assert len(model.embed_query(text)) == 384 and model.cached_queries([text]) is not None
