"""How live Wikipedia's passages are ranked: BM25 against MiniLM over the fetched pages' passages.

``rag_backend=wikipedia`` (``tools/wikipedia_live.py``) ranks the passages of the few pages the
wiki's search returned. This benchmark stands in for that step offline: for each claim of
``bench_retrieval``'s gold sets (FEVEROUS and HoVer dev claims whose gold pages are all in the data
folder's corpus), "the wiki's top pages" are the claim's gold pages plus the corpus pages ranked
highest for the claim among the others (hard negatives, up to ``pages`` in all; ``--negatives``
picks them by BM25 or by MiniLM, each the harder set for the method that picked it); each page is
split with ``split_passages`` and the passages ranked against the claim by

* ``bm25``: Okapi BM25 over those passages (``wiki_text.bm25_rank``, title and text);
* ``minilm``: cosine similarity of the bundled MiniLM's embeddings (title and text).

Reported per method: hit@1 and hit@3 (a passage of a gold page among the top k), MRR of the first
gold passage, and the ranking's own milliseconds per claim (passages embedded per claim, as live
pages are).

Run (writes nothing; prints one JSON object)::

    python -m factdebate.evaluation.bench_wikipedia_ranking --data-dir DATA --limit 100 \
        [--negatives minilm] [--pages 5]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from factdebate.evaluation.bench_retrieval import _read_jsonl, gold_sets
from factdebate.tools.wiki_text import bm25_rank, split_passages


def _negatives(scores: list[float], gold: set[str], titles: list[str], n: int) -> list[str]:
    order = sorted(range(len(titles)), key=lambda i: -scores[i])
    return [titles[i] for i in order if titles[i] not in gold][:n]


def _metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {"hit@1": round(sum(r == 1 for r in ranks) / n, 3),
            "hit@3": round(sum(r is not None and r <= 3 for r in ranks) / n, 3),
            "mrr": round(sum(1 / r for r in ranks if r) / n, 3)}


def run(data_dir: Path, limit: int, pages: int, negatives: str = "bm25", seed: int = 0
        ) -> dict[str, Any]:
    """Hit@1/3, MRR and ranking ms per claim of each method (see the module docstring)."""
    import numpy as np

    from factdebate.tools.embeddings import get_embeddings

    corpus = {r["title"]: r["text"] for r in _read_jsonl(data_dir / "corpus" / "wiki.jsonl")}
    titles = sorted(corpus)
    claims = [c for rows in gold_sets(data_dir, set(titles), limit, seed).values() for c in rows]
    embeddings = get_embeddings("minilm")
    page_texts = [f"{t} {corpus[t]}" for t in titles]
    page_vectors = np.asarray(embeddings.embed_documents(page_texts)) \
        if negatives == "minilm" else None
    ranks: dict[str, list[int | None]] = {"bm25": [], "minilm": []}
    seconds = {"bm25": 0.0, "minilm": 0.0}
    sizes = []
    for item in claims:
        gold = set(item["gold"])
        if page_vectors is None:
            page_scores = bm25_rank(item["claim"], page_texts)
        else:
            page_scores = list(page_vectors @ np.asarray(embeddings.embed_query(item["claim"])))
        chosen = sorted(gold) + _negatives(page_scores, gold, titles, max(pages - len(gold), 1))
        passages = [(t, p) for t in chosen for p in split_passages(corpus[t])]
        texts = [f"{t} {p}" for t, p in passages]
        sizes.append(len(texts))
        started = time.perf_counter()
        bm25 = bm25_rank(item["claim"], texts)
        seconds["bm25"] += time.perf_counter() - started
        started = time.perf_counter()
        vectors = np.asarray(embeddings.embed_documents(texts))
        query = np.asarray(embeddings.embed_query(item["claim"]))
        cosine = list(vectors @ query)
        seconds["minilm"] += time.perf_counter() - started
        for name, scores in (("bm25", bm25), ("minilm", cosine)):
            order = sorted(range(len(texts)), key=lambda i: -scores[i])
            hit = next((r for r, i in enumerate(order, 1) if passages[i][0] in gold), None)
            ranks[name].append(hit)
    n = len(claims) or 1
    return {"claims": len(claims), "pages_per_claim": pages, "negatives_by": negatives,
            "passages_per_claim": round(sum(sizes) / n, 1),
            **{name: {**_metrics(ranks[name]), "ms_per_claim": round(1000 * seconds[name] / n, 2)}
               for name in ranks}}


def main() -> None:
    """Command line: ``--data-dir``, ``--limit`` (claims per gold set), ``--pages``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--pages", type=int, default=3)
    parser.add_argument("--negatives", choices=("bm25", "minilm"), default="bm25",
                        help="Which ranking picks the hard negative pages.")
    args = parser.parse_args()
    print(json.dumps(run(args.data_dir, args.limit, args.pages, args.negatives), indent=2))


if __name__ == "__main__":
    main()
