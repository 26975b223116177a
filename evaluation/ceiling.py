"""The retrieval ceiling: is an item's gold evidence in the index at all?

A run cannot cite what its index does not hold: an evidence figure means little without the share
of items whose gold evidence the index holds. For each sampled item with gold evidence sets
(``evidence_metrics.gold_evidence``) the runner records ``gold_in_index`` in its results row
(computed when the run starts, against the index the run searches):

* ``page``: some gold set's pages are all pages of the index (a page is present when a passage
  goes by its name as :func:`~factdebate.evaluation.evidence_metrics.passage_pages` names it:
  decoded title, or id before a ``#n`` chunk suffix);
* ``sentence`` (gold with sentence text: FEVEROUS): some gold set's sentences are all contained,
  on word boundaries, in a passage of their page (the rule sentence-level scoring applies); None
  for gold without text.

``evidence_metrics.evidence_summary`` turns them into the ceiling beside every evidence figure.

Lookups go through the index's keyword index (tantivy, read-only): per gold page one query for
titles holding all its words and term queries for ids ``page``, ``page#1``, ``page#2`` ...; the
answers are filtered to the exact page name. Nothing is scanned whole, so the cost grows with the
gold pages of the sample, not with the corpus.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from factdebate.evaluation.evidence_metrics import (
    contains_words,
    normal_text,
    passage_pages,
)
from factdebate.tools.keyword import KEYWORD_SUBDIR

MAX_TITLE_HITS = 1000
"""Passages a title query returns before the exact-name filter (the exact title ranks first)."""
MAX_TOKEN_BYTES = 40
"""tantivy's default tokenizer drops longer tokens; a query for them would find nothing."""
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class IndexLookup:
    """Gold pages and sentences looked up in an index folder's keyword index."""

    def __init__(self, index_dir: str | Path) -> None:
        """Open ``<index_dir>/keyword`` read-only (``tools/keyword.py``)."""
        import tantivy

        self._tantivy = tantivy
        self._index = tantivy.Index.open(str(Path(index_dir).expanduser() / KEYWORD_SUBDIR))
        self._schema = self._index.schema
        self._searcher = self._index.searcher()
        self._pages: dict[str, list[str]] = {}

    def _docs(self, query: Any, limit: int) -> list[dict[str, str]]:
        hits = self._searcher.search(query, limit=limit).hits
        out = []
        for _, address in hits:
            doc = self._searcher.doc(address)
            out.append({k: (doc.get_first(k) or "") for k in ("id", "title", "url", "body")})
        return out

    def page_texts(self, page: str) -> list[str]:
        """Normalised texts of the passages of ``page`` (empty when the index holds none)."""
        if page in self._pages:
            return self._pages[page]
        tv = self._tantivy
        found: dict[str, dict[str, str]] = {}
        words = [w for w in _WORD.findall(page.lower()) if len(w.encode()) <= MAX_TOKEN_BYTES]
        if words:
            query = tv.Query.boolean_query([
                (tv.Occur.Must, tv.Query.term_query(self._schema, "title", w)) for w in words])
            for doc in self._docs(query, MAX_TITLE_HITS):
                found[doc["id"]] = doc
        chunk = 0
        while True:  # ids: the page name itself, or its chunks page#1, page#2 ...
            pid = page if chunk == 0 else f"{page}#{chunk}"
            docs = self._docs(tv.Query.term_query(self._schema, "id", pid), 1)
            if not docs and chunk > 0:
                break
            for doc in docs:
                found[doc["id"]] = doc
            chunk += 1
        texts = [normal_text(d["body"]) for d in found.values()
                 if page in passage_pages({"id": d["id"], "title": d["title"], "url": d["url"]})]
        self._pages[page] = texts
        return texts

    def has_sentence(self, page: str, text: str) -> bool:
        """A passage of ``page`` (any page when ``page`` is empty) contains ``text``."""
        needle = normal_text(text)
        if page:
            return any(contains_words(t, needle) for t in self.page_texts(page))
        tv = self._tantivy
        words = [w for w in _WORD.findall(needle) if len(w.encode()) <= MAX_TOKEN_BYTES]
        if not words:
            return False
        query = tv.Query.boolean_query([
            (tv.Occur.Must, tv.Query.term_query(self._schema, "body", w)) for w in set(words)])
        return any(contains_words(normal_text(d["body"]), needle) for d in self._docs(query, 50))


def gold_in_index(gold: dict[str, Any] | None, lookup: IndexLookup) -> dict[str, Any] | None:
    """``{"page": bool, "sentence": bool | None, "level": ...}`` of an item's gold evidence; None
    without gold evidence sets (nothing to find)."""
    if not isinstance(gold, dict):
        return None
    sets = [[e for e in s if isinstance(e, dict)] for s in gold.get("sets") or []]
    sets = [s for s in sets if s]
    if not sets:
        return None
    page = any(all(lookup.page_texts(e["page"]) for e in s if e.get("page")) for s in sets)
    sentence = None
    if gold.get("level") == "sentence":
        sentence = any(all(lookup.has_sentence(str(e.get("page") or ""), str(e["text"]))
                           for e in s if e.get("text")) for s in sets)
    return {"page": page, "sentence": sentence, "level": gold.get("level") or "page"}
