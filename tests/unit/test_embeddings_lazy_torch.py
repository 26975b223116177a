"""MiniLM queries without torch: the ``tokenizers`` + ONNX path gives sentence-transformers' vectors,
and a process with the graph cached imports neither torch nor sentence-transformers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from factdebate.tools import embeddings_onnx
from factdebate.tools.embeddings import SMALL_BATCH, MiniLMEmbeddings, get_embeddings

LONG = " ".join(f"river{i} flows past the mountain town of Saint-Étienne number {i}." for i in range(80))
TEXTS = [
    "Who wrote Hamlet?",
    "The Seine flows through Paris and into the English Channel.",
    LONG,  # > max_seq_length tokens: truncated
    "Ünïcödé: Zürich, São Paulo, Kraków, naïve café, Ελληνικά, Русский, 東京は日本の首都です, 🙂👍",
    "עברית ועربية mixed with English",
    "",
    " ",
    "\n\t",
    "?",
    "[CLS] [SEP] [PAD] [MASK] literal special-token text",
]


@pytest.fixture(scope="module")
def warm() -> MiniLMEmbeddings:
    """The process model: its first load exports the graph and writes the torch reference."""
    model = get_embeddings("minilm")
    assert isinstance(model, MiniLMEmbeddings) and model.backend == "onnxruntime"
    return model


def test_the_long_text_is_longer_than_max_seq_length(warm):
    tokenizer = embeddings_onnx.MiniLMTokenizer(warm._model_path)
    assert tokenizer.max_tokens == 256 == warm._model.max_seq_length
    encoding = tokenizer._tokenizer.encode(LONG)
    assert len(encoding.ids) == tokenizer.max_tokens and encoding.overflowing  # cut at 256


def test_tokenizers_give_sentence_transformers_token_ids(warm):
    features = warm._model.tokenize(TEXTS)
    mine = embeddings_onnx.MiniLMTokenizer(warm._model_path)(TEXTS)
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        assert np.array_equal(mine[name], features[name].numpy()), name


def test_onnx_without_torch_gives_sentence_transformer_vectors(warm):
    graph = embeddings_onnx.cache_path(warm._model_path)
    encoder = embeddings_onnx.OnnxMiniLM(graph, embeddings_onnx.MiniLMTokenizer(warm._model_path))
    expected = warm._model.encode(TEXTS, normalize_embeddings=True, show_progress_bar=False)
    batched = encoder.encode(TEXTS)
    assert np.abs(batched - expected).max() <= 1e-5
    one_by_one = np.vstack([encoder.encode([t]) for t in TEXTS])
    assert np.abs(one_by_one - expected).max() <= 1e-5
    assert encoder.encode([]).shape == (0, 384)


def test_a_fresh_process_with_a_warm_cache_embeds_a_query_without_torch(warm):
    code = (
        "import json, sys\n"
        "from factdebate.tools.embeddings import get_embeddings\n"
        "m = get_embeddings('minilm')\n"
        f"v = m.embed_query({TEXTS[3]!r})\n"
        "print(json.dumps({'backend': m.backend, 'vector': v,\n"
        "    'loaded': sorted(n for n in ('torch', 'sentence_transformers', 'transformers')\n"
        "                     if n in sys.modules)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["backend"] == "onnxruntime"
    assert result["loaded"] == []
    expected = warm._model.encode([TEXTS[3]], normalize_embeddings=True)[0]
    assert np.abs(np.asarray(result["vector"]) - expected).max() <= 1e-5


def _home_with_graph(warm: MiniLMEmbeddings, monkeypatch, tmp_path):
    """A ``FACTDEBATE_HOME`` holding the exported graph and nothing else."""
    graph = embeddings_onnx.cache_path(warm._model_path)
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path))
    copy = embeddings_onnx.cache_path(warm._model_path)
    copy.parent.mkdir(parents=True)
    shutil.copy(graph, copy)
    return copy, embeddings_onnx.reference_path(copy)


def _no_torch(monkeypatch):
    def refuse(self):
        raise AssertionError("the SentenceTransformer was loaded")

    monkeypatch.setattr(MiniLMEmbeddings, "_model", property(refuse))


def test_the_reference_is_written_from_torch_and_then_checked_without_it(warm, monkeypatch,
                                                                         tmp_path):
    graph, reference = _home_with_graph(warm, monkeypatch, tmp_path)
    first = MiniLMEmbeddings()  # graph cached, no reference: the check runs on torch and stores it
    assert first.backend == "onnxruntime" and first._st_model is not None
    stored = embeddings_onnx.read_reference(reference)
    torch_vectors = warm._model.encode(embeddings_onnx.PROBES, normalize_embeddings=True)
    assert stored is not None and np.abs(stored - torch_vectors).max() == 0.0

    expected = warm._model.encode([TEXTS[1]], normalize_embeddings=True)[0]
    _no_torch(monkeypatch)
    second = MiniLMEmbeddings()
    assert second.backend == "onnxruntime" and second._st_model is None
    assert np.abs(np.asarray(second.embed_query(TEXTS[1])) - expected).max() <= 1e-5


def test_the_check_compares_against_the_stored_vectors(warm, monkeypatch, tmp_path):
    graph, reference = _home_with_graph(warm, monkeypatch, tmp_path)
    vectors = warm._model.encode(embeddings_onnx.PROBES, normalize_embeddings=True)
    embeddings_onnx.write_reference(reference, vectors[::-1].copy())  # not this graph's vectors
    assert MiniLMEmbeddings().backend == "torch"


def test_a_damaged_reference_is_rewritten_from_torch(warm, monkeypatch, tmp_path):
    graph, reference = _home_with_graph(warm, monkeypatch, tmp_path)
    reference.write_bytes(b"PK\x03\x04 not a zip")
    model = MiniLMEmbeddings()
    assert model.backend == "onnxruntime" and model._st_model is not None
    assert embeddings_onnx.read_reference(reference) is not None


def test_bulk_batches_load_torch_on_demand_and_agree(warm, monkeypatch, tmp_path):
    graph, reference = _home_with_graph(warm, monkeypatch, tmp_path)
    embeddings_onnx.write_reference(
        reference, warm._model.encode(embeddings_onnx.PROBES, normalize_embeddings=True))
    model = MiniLMEmbeddings()
    query = np.asarray(model.embed_documents(TEXTS[:2]))
    assert model._st_model is None  # a small batch ran on ONNX alone
    bulk = [f"passage {i} about rivers" for i in range(SMALL_BATCH)] + TEXTS[:2]
    vectors = np.asarray(model.embed_documents(bulk))
    assert model._st_model is not None  # indexing-size batch: torch, loaded now
    assert np.abs(vectors[-2:] - query).max() <= 1e-5

