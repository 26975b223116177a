"""The bundled MiniLM on ONNX Runtime for small batches (queries, RAGAS relevancy questions).

Why: per query, sentence-transformers on torch costs 12-16 ms of CPU on this 2-core machine and
ONNX Runtime 6-7 ms for the same vectors (``max |diff|`` 1.6e-7; measured with 40 queries each,
``python -m factdebate.tools.embeddings``). Queries sit on the debate's critical path (the RAG
debater embeds its query every round) and their CPU limits how many claims run at once.

The ONNX graph is exported from the bundled weights with ``torch.onnx.export`` on first use and
cached under ``$FACTDEBATE_HOME/models/`` (nothing is downloaded), beside the torch vectors of the
probe sentences (``*.reference.npz``, written only from a torch run). Every load checks the graph's
vectors of the probes against those torch vectors. Texts are tokenized with the ``tokenizers``
library on the model folder's ``tokenizer.json``, set up as sentence-transformers sets it up
(``max_seq_length`` from ``sentence_bert_config.json``, longest-first truncation, padding to the
longest text, the special tokens of the tokenizer's template). So with a warm cache neither torch
nor sentence-transformers is imported: importing them costs ~10 s of CPU, most of a process's
start-up (``langgraph dev``, every ``factdebate verify``/``check``/``eval``). Bulk encoding
(indexing) stays on torch with all cores. Without ``onnxruntime``/``onnx``, with
``FACTDEBATE_EMBEDDINGS_BACKEND=torch``, or if the export or the check fails, everything runs on
torch and ``MiniLMEmbeddings.backend`` says so.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from factdebate.core.context import factdebate_home

log = logging.getLogger(__name__)
OPSET = 17
MAX_ABS_DIFF = 1e-4
"""Largest element-wise difference from torch's vectors accepted at the load-time check."""
PROBES = ["Who directed the film Titanic released in 1997?",
          "The Eiffel Tower is located in Paris.",
          "A much longer passage about rivers, mountains and the cities built along their banks " * 4]
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def wanted() -> bool:
    """Whether the ONNX path should be tried (``FACTDEBATE_EMBEDDINGS_BACKEND``, default auto)."""
    return os.environ.get("FACTDEBATE_EMBEDDINGS_BACKEND", "auto").lower() in ("auto", "onnx")


def cache_path(model_path: str) -> Path:
    """Where the exported graph of the model folder ``model_path`` is kept."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(model_path)):
        file = Path(model_path) / name
        if file.is_file():
            digest.update(f"{name}:{file.stat().st_size}".encode())
    return factdebate_home() / "models" / f"minilm-{digest.hexdigest()[:16]}-opset{OPSET}.onnx"


def remove_dead_exports(folder: Path) -> list[Path]:
    """Delete ``*.<pid>.tmp`` files of exports whose process is gone (a killed export)."""
    removed = []
    for tmp in folder.glob("*.*.tmp"):
        pid = tmp.suffixes[-2].lstrip(".") if len(tmp.suffixes) >= 2 else ""
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def export(st_model: Any, target: Path) -> None:
    """Export the transformer of a sentence-transformers model to ``target`` (atomic)."""
    import torch

    class _Encoder(torch.nn.Module):
        def __init__(self, transformer: Any) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                    token_type_ids=token_type_ids).last_hidden_state

    sample = st_model.tokenizer(["export probe"], return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "last_hidden_state")}
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_exports(target.parent)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # exporter chatter about opset details
        torch.onnx.export(_Encoder(st_model[0].auto_model).eval(),
                          tuple(sample[name] for name in _INPUTS), str(tmp),
                          input_names=list(_INPUTS), output_names=["last_hidden_state"],
                          dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    tmp.replace(target)


class MiniLMTokenizer:
    """The model folder's ``tokenizer.json`` on the ``tokenizers`` library, set up as
    sentence-transformers sets up its tokenizer for this model (no transformers, no torch).

    sentence-transformers calls the tokenizer with ``padding=True`` (to the longest text),
    ``truncation="longest_first"`` and ``max_length`` = ``max_seq_length`` of
    ``sentence_bert_config.json``, special tokens added by the tokenizer's template
    (``[CLS] ... [SEP]``). ``tokenizer.json`` itself carries other settings (fixed padding to 128,
    truncation at 128), replaced here. Raises ``ValueError`` for a folder set up otherwise
    (lower-casing by sentence-transformers, another pooling), which keeps the torch path.
    """

    def __init__(self, model_path: str) -> None:
        from tokenizers import Tokenizer

        folder = Path(model_path)
        config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        if config.get("do_lower_case") or not pooling.get("pooling_mode_mean_tokens") or any(
                v for k, v in pooling.items() if k.startswith("pooling_mode_")
                and k != "pooling_mode_mean_tokens"):
            raise ValueError(f"{folder} is not a mean-pooled model without do_lower_case")
        self.max_tokens = int(config["max_seq_length"])
        settings = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        pad_token = settings.get("pad_token", "[PAD]")
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        pad_id = self._tokenizer.token_to_id(pad_token)
        if pad_id is None:
            raise ValueError(f"{folder}: the pad token {pad_token!r} is not in tokenizer.json")
        self._tokenizer.enable_truncation(self.max_tokens, stride=0, strategy="longest_first",
                                          direction="right")
        self._tokenizer.enable_padding(direction="right", pad_id=pad_id, pad_type_id=0,
                                       pad_token=pad_token, length=None, pad_to_multiple_of=None)

    def __call__(self, texts: list[str]) -> dict[str, np.ndarray]:
        """``input_ids``, ``attention_mask``, ``token_type_ids`` as ``(len(texts), tokens)`` int64."""
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=True)
        return {"input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64)}


class OnnxMiniLM:
    """Mean-pooled, L2-normalised MiniLM vectors from an ONNX Runtime session (one thread).

    Not thread-safe (the tokenizer's settings are shared): callers hold their own lock.
    """

    def __init__(self, path: Path, tokenizer: MiniLMTokenizer) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = tokenizer
        self.dimension = int(self._session.get_outputs()[0].shape[-1])
        """Width of the graph's hidden states (384 for MiniLM), read from the graph itself."""

    def encode(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dimension)`` float32 unit vectors."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        feeds = self._tokenizer(texts)
        hidden = self._session.run(None, feeds)[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def reference_path(graph: Path) -> Path:
    """Where the torch vectors of :data:`PROBES` for the graph at ``graph`` are kept."""
    return graph.with_name(graph.name.removesuffix(".onnx") + ".reference.npz")


def read_reference(path: Path) -> np.ndarray | None:
    """The stored torch vectors of :data:`PROBES`, or None (missing, unreadable, other probes)."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            probes, vectors = list(stored["probes"]), np.asarray(stored["vectors"])
    except Exception as exc:  # noqa: BLE001 - a damaged file means checking on torch again
        if path.exists():
            log.info("MiniLM ONNX reference vectors at %s unreadable (%s): checking on torch",
                     path, exc)
        return None
    if probes != PROBES or vectors.shape != (len(PROBES), vectors.shape[-1]):
        return None
    return vectors


def write_reference(path: Path, vectors: np.ndarray) -> None:
    """Store torch's vectors of :data:`PROBES` at ``path`` (atomic)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as out:
        np.savez(out, probes=np.array(PROBES), vectors=np.asarray(vectors, dtype=np.float32))
    tmp.replace(path)


def load(model_path: str, sentence_transformer: Callable[[], Any]) -> OnnxMiniLM | None:
    """The checked ONNX encoder for the model folder ``model_path``, or None (reason logged) to
    stay on torch.

    ``sentence_transformer`` returns the loaded SentenceTransformer; it is called only when the
    graph or its reference vectors are not cached yet (the export and the check run on torch).
    """
    if not wanted():
        return None
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        log.info("onnxruntime is not installed: MiniLM queries run on torch")
        return None
    target = cache_path(model_path)
    reference = reference_path(target)
    try:
        tokenizer = MiniLMTokenizer(model_path)
        expected = read_reference(reference) if target.exists() else None
        if expected is None:
            st_model = sentence_transformer()
            if not target.exists():
                export(st_model, target)
            expected = st_model.encode(PROBES, normalize_embeddings=True, show_progress_bar=False)
            write_reference(reference, expected)
        encoder = OnnxMiniLM(target, tokenizer)
        diff = float(np.abs(encoder.encode(PROBES) - expected).max())
    except Exception as exc:  # noqa: BLE001 - any failure keeps the torch path
        log.warning("MiniLM ONNX export/load failed (%s: %s): queries run on torch",
                    type(exc).__name__, exc)
        return None
    if diff > MAX_ABS_DIFF:
        log.warning("MiniLM ONNX vectors differ from torch by %.2g: queries run on torch", diff)
        return None
    return encoder
