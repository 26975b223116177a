"""Retrieval benchmark: gold-evidence recall@1/3/5 and MRR, and query latency, per retriever.

Gold sets (from the data dir, never copied into the repo):

* FEVEROUS dev: the evidence titles of each claim; claims whose evidence pages are all corpus titles.
* HoVer dev: the supporting-fact pages of each claim; claims whose pages are all corpus titles.
The corpus is ``corpus/wiki.jsonl`` (one passage per title), so relevance is judged per title.
Each set is shuffled with ``seed`` and its first ``limit`` claims are reported; the claims after
them are held out (the hybrid fusion defaults in ``tools/hybrid.py`` were tuned on the next
1,000 of each set, never on the reported ones; the latency run queries the first of them).

Latency is measured at the corpus size and at ``pad_to`` passages. Padding passages are generated
filler (random words drawn from the corpus vocabulary) and, for the dense index, random unit
vectors instead of MiniLM embeddings: vector search cost depends on count and dimension, not on the
text, and embedding 100k fillers would take longer than the benchmark budget. The keyword index
holds the real filler text. Only latency is measured on the padded index: the recall of an
approximate index (HNSW) on random vectors says nothing about its recall on embeddings (random
384-d vectors have no neighbourhood structure; they are the slow, worst case for graph search).

What a latency figure includes: at the corpus size, ``milvus`` runs first, so its figure includes
embedding the query with MiniLM; ``hybrid`` then finds the query embedding in the model's cache
(its figure is dense search + BM25 + fusion). At ``pad_to``, ``milvus`` is timed on claims that
were not queried before (query embedding + search, what a debater waits for a new claim), then
``milvus_search_only`` on the same claims again (embedding cached: the vector search alone),
then ``keyword`` and ``hybrid`` (embedding cached).
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import time
import unicodedata
from pathlib import Path
from typing import Any

from factdebate.run.claims import run_async
from factdebate.tools.base import RetrieverSettings, clear_retriever_cache, get_retriever
from factdebate.tools.indexing import build_indexes, index_exists, read_manifest

RETRIEVERS = ("milvus", "keyword", "hybrid")
KS = (1, 3, 5)


def norm_title(title: str) -> str:
    """Corpus title form: underscores as spaces, NFC."""
    return unicodedata.normalize("NFC", title.replace("_", " ")).strip()


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def gold_sets(data_dir: Path, titles: set[str], limit: int, seed: int) -> dict[str, list[dict]]:
    """Per benchmark set: ``[{"claim", "gold": [titles]}]`` with every gold title in the corpus."""
    sets: dict[str, list[dict]] = {}
    feverous = [
        {"claim": r["claim"], "gold": sorted({norm_title(e["title"]) for e in r["evidence"]})}
        for r in _read_jsonl(data_dir / "feverous" / "dev.jsonl") if r.get("evidence")
    ]
    hover = [
        {"claim": r["claim"], "gold": sorted({norm_title(e["page"]) for e in r["evidence_sets"][0]})}
        for r in _read_jsonl(data_dir / "hover" / "dev.jsonl") if r.get("evidence_sets")
    ]
    for name, rows in (("feverous_dev", feverous), ("hover_dev", hover)):
        covered = [r for r in rows if r["gold"] and set(r["gold"]) <= titles]
        random.Random(seed).shuffle(covered)
        sets[name] = covered[:limit]
    return sets


def score_ranking(ranked_titles: list[str], gold: list[str]) -> dict[str, float]:
    """recall@k (share of gold titles in the top k) and reciprocal rank of the first gold title."""
    out = {f"recall@{k}": len(set(ranked_titles[:k]) & set(gold)) / len(gold) for k in KS}
    rank = next((i for i, t in enumerate(ranked_titles, 1) if t in gold), None)
    out["mrr"] = 1.0 / rank if rank else 0.0
    return out


async def _evaluate(settings: RetrieverSettings, claims: list[dict]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in RETRIEVERS:
        retriever = get_retriever(name, settings)
        rows, latencies = [], []
        for item in claims:
            start = time.perf_counter()
            hits = await retriever.search(item["claim"], k=max(KS))
            latencies.append(time.perf_counter() - start)
            rows.append(score_ranking([norm_title(h["title"]) for h in hits], item["gold"]))
        results[name] = {key: round(statistics.fmean(r[key] for r in rows), 4) for key in rows[0]}
        results[name] |= _latency(latencies)
    return results


def _latency(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {"p50_ms": round(statistics.median(ms), 3),
            "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 3)}


def reuse_or_build_bench_index(corpus: Path, index_dir: Path) -> dict[str, Any]:
    """Build the corpus index unless one built from the same file with today's index exists."""
    from factdebate.tools.milvus_rag import index_description

    if index_exists(index_dir):
        manifest = read_manifest(index_dir)
        if (manifest.get("corpus") == str(corpus.resolve())
                and manifest.get("vector_index") == index_description()):
            return manifest
    return build_indexes(corpus, index_dir)


def run_retrieval_bench(data_dir: Path, work_dir: Path, *, limit: int = 300, seed: int = 13,
                        pad_to: int = 100_000, latency_queries: int = 200) -> dict[str, Any]:
    """The whole retrieval benchmark; returns the JSON-ready result."""
    corpus = data_dir / "corpus" / "wiki.jsonl"
    index_dir = work_dir / "wiki-index"
    manifest = reuse_or_build_bench_index(corpus, index_dir)
    titles = {norm_title(r["title"]) for r in _read_jsonl(corpus)}
    everything = gold_sets(data_dir, titles, limit + latency_queries, seed)
    sets = {name: rows[:limit] for name, rows in everything.items()}
    # Claims never queried in the quality pass (so their embeddings are not cached).
    tails = [rows[limit:] for rows in everything.values()]
    fresh = [c["claim"] for pair in zip(*tails, strict=False) for c in pair]
    settings = RetrieverSettings(index_dir=str(index_dir), milvus_uri=str(index_dir / "milvus.db"))
    quality = {name: run_async(_evaluate(settings, claims)) for name, claims in sets.items()}
    clear_retriever_cache()
    seen = [c["claim"] for claims in sets.values() for c in claims]  # only if too few fresh
    queries = [*fresh, *seen][:latency_queries]
    padded = pad_index(corpus, work_dir / "padded-index", pad_to, seed)
    padded_settings = RetrieverSettings(index_dir=str(padded), milvus_uri=str(padded / "milvus.db"))
    latency_100k = run_async(_latencies(padded_settings, queries))
    clear_retriever_cache()
    return {"corpus_passages": manifest.get("passages"), "sets": {k: len(v) for k, v in sets.items()},
            "quality": quality, "latency_at_pad": {"passages": pad_to, **latency_100k},
            "seed": seed}


async def _latencies(settings: RetrieverSettings, queries: list[str]) -> dict[str, Any]:
    """p50/p95 per retriever at k=5 (see the module docstring for what each includes)."""
    out = {}
    for label, name in (("milvus", "milvus"), ("milvus_search_only", "milvus"),
                        ("keyword", "keyword"), ("hybrid", "hybrid")):
        retriever = get_retriever(name, settings)
        await retriever.search("warm-up query", k=5)  # model load, segment load
        seconds = []
        for q in queries:
            start = time.perf_counter()
            await retriever.search(q, k=5)
            seconds.append(time.perf_counter() - start)
        out[label] = _latency(seconds)
    return out


def pad_index(corpus: Path, target: Path, total: int, seed: int) -> Path:
    """A padded copy of the corpus index with ``total`` passages (see the module docstring)."""
    import numpy as np

    from factdebate.tools import milvus_rag
    from factdebate.tools.embeddings import get_embeddings
    from factdebate.tools.indexing import iter_passages
    from factdebate.tools.keyword import KEYWORD_SUBDIR, write_keyword_index

    marker = target / "padded.json"
    wanted = {"total": total, "seed": seed, "vector_index": milvus_rag.index_description()}
    if marker.is_file() and json.loads(marker.read_text()) == wanted:
        return target
    real = list(iter_passages(corpus))
    rng = random.Random(seed)
    vocab = sorted({w for p in real[:2000] for w in p["text"].split() if w.isalpha()})
    filler = [{"id": f"pad-{i}", "title": f"Filler {i}", "url": "",
               "text": " ".join(rng.choices(vocab, k=60))} for i in range(total - len(real))]
    shutil.rmtree(target, ignore_errors=True)  # a stale padded index (other size or index type)
    target.mkdir(parents=True, exist_ok=True)
    write_keyword_index(target / KEYWORD_SUBDIR, [*real, *filler])
    embeddings = get_embeddings("minilm")
    real_vectors = embeddings.embed_documents([f"{p['title']}\n{p['text']}" for p in real])
    gen = np.random.default_rng(seed)
    uri = str(target / "milvus.db")
    client = milvus_rag.connect(uri, create=True)
    try:
        milvus_rag.create_collection(client, RetrieverSettings.collection, len(real_vectors[0]))
        client.insert(RetrieverSettings.collection,
                      [milvus_rag.milvus_row(p, v) for p, v in zip(real, real_vectors, strict=True)])
        for start in range(0, len(filler), 10_000):
            chunk = filler[start:start + 10_000]
            vecs = gen.normal(size=(len(chunk), len(real_vectors[0])))
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            client.insert(RetrieverSettings.collection,
                          [milvus_rag.milvus_row(p, v.tolist())
                           for p, v in zip(chunk, vecs, strict=True)])
        client.flush(RetrieverSettings.collection)
    finally:
        milvus_rag.disconnect(client, uri)
    marker.write_text(json.dumps(wanted))
    return target
