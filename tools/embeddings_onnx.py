"""The bundled MiniLM on ONNX Runtime for small batches (queries, RAGAS relevancy questions).

Why: per query, sentence-transformers on torch costs 12-16 ms of CPU on this 2-core machine and
ONNX Runtime 6-7 ms for the same vectors (``max |diff|`` 1.6e-7; measured with 40 queries each,
``python -m factdebate.tools.embeddings``). Queries sit on the debate's critical path (the RAG
debater embeds its query every round) and their CPU limits how many claims run at once.

The ONNX graph is exported from the bundled weights with ``torch.onnx.export`` on first use and
cached under ``$FACTDEBATE_HOME/models/`` (nothing is downloaded); it is checked against torch on
probe sentences before use. Bulk encoding (indexing) stays on torch with all cores. Without
``onnxruntime``/``onnx``, with ``FACTDEBATE_EMBEDDINGS_BACKEND=torch``, or if the export or the
check fails, everything runs on torch and ``MiniLMEmbeddings.backend`` says so.
"""

from __future__ import annotations

import hashlib
import logging
import os
import warnings
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


class OnnxMiniLM:
    """Mean-pooled, L2-normalised MiniLM vectors from an ONNX Runtime session (one thread).

    Not thread-safe (the fast tokenizer is not): callers hold their own lock.
    """

    def __init__(self, path: Path, tokenizer: Any, max_tokens: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = tokenizer
        self._max_tokens = max_tokens

    def encode(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32 unit vectors."""
        enc = self._tokenizer(texts, padding=True, truncation=True, max_length=self._max_tokens,
                              return_tensors="np")
        feeds = {name: enc[name].astype(np.int64) for name in _INPUTS}
        hidden = self._session.run(None, feeds)[0]
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def load(st_model: Any, model_path: str) -> OnnxMiniLM | None:
    """The checked ONNX encoder for ``st_model``, or None (reason logged) to stay on torch."""
    if not wanted():
        return None
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        log.info("onnxruntime is not installed: MiniLM queries run on torch")
        return None
    target = cache_path(model_path)
    try:
        if not target.exists():
            export(st_model, target)
        encoder = OnnxMiniLM(target, st_model.tokenizer, int(st_model.max_seq_length))
        expected = st_model.encode(PROBES, normalize_embeddings=True, show_progress_bar=False)
        diff = float(np.abs(encoder.encode(PROBES) - expected).max())
    except Exception as exc:  # noqa: BLE001 - any failure keeps the torch path
        log.warning("MiniLM ONNX export/load failed (%s: %s): queries run on torch",
                    type(exc).__name__, exc)
        return None
    if diff > MAX_ABS_DIFF:
        log.warning("MiniLM ONNX vectors differ from torch by %.2g: queries run on torch", diff)
        return None
    return encoder
