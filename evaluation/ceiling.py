"""The retrieval ceiling: is an item's gold evidence in the index at all?

A run cannot cite what its index does not hold: an evidence figure means little without the share
of items whose gold evidence the index holds. For each sampled item with gold evidence sets
(``evidence_metrics.gold_evidence``) the runner records ``gold_in_index`` in its results row
(computed when the run starts, against the index the run searches):

* ``page``: some gold set's pages are all pages of the index (a page is present when a passage
  goes by its name as :func:`~factdebate.evaluation.evidence_metrics.passage_pages` names it:
  decoded title, or id before a ``#n`` chunk suffix);
* ``sentence``: over an index of a dump whose passages carry the page id and the element ids
  they hold (``page``/``sentences`` fields of the keyword index; FEVER, HoVer and FEVEROUS
  dumps imported by ``factdebate index --format``), some gold set's
  ``(page, sentence)`` pairs are all held by passages of their page (``ids``: true); for gold
  with sentence text (FEVEROUS as ProgramFC releases it), some gold set's sentences are all
  contained, on word boundaries, in a passage of their page (the rule sentence-level scoring
  applies); None otherwise.

``evidence_metrics.evidence_summary`` turns them into the ceiling beside every evidence figure.

Lookups go through the index's keyword index (tantivy, read-only). An index whose passages carry
element ids is asked one term query per gold page on its ``page`` field (the page id as the gold
names it, then its decoded title), reading the stored ``sentences`` of the answers. Any other
index: per gold
page one query for titles holding all its words and term queries for ids ``page``, ``page#1``,
``page#2`` ...; the answers are filtered to the exact page name. Nothing is scanned whole, so the
cost grows with the gold pages of the sample, not with the corpus.

An ``eval --server`` run searches the server's index, which this process cannot open. Its
ceiling comes from a local copy of the server's corpus (:func:`server_corpus`): the data folder's
corpus when its SHA-256 is the one the server reports and the server cut its passages as
``tools/indexing.py`` does (same ``chunk_chars``). :class:`CorpusLookup` then reads that corpus
once, keeping the passages of the sample's gold pages exactly as an index of it holds them
(``iter_passages``); as it reads every passage, it also finds a page known only by the title in
its Wikipedia URL, which the keyword index's title query misses when the title words differ.
Otherwise there is no ceiling, and ``run.json`` ``index.ceiling`` says why in one line: never a
figure measured on another corpus.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

from factdebate.core.errors import InputError
from factdebate.evaluation.evidence_metrics import (
    contains_words,
    element_id,
    normal_text,
    passage_pages,
)
from factdebate.tools.keyword import KEYWORD_SUBDIR

MAX_TITLE_HITS = 1000
"""Passages a title query returns before the exact-name filter (the exact title ranks first)."""
MAX_PAGE_PASSAGES = 100_000
"""Passages of one page a page lookup reads (a FEVEROUS page cut one passage per table holds a
few hundred)."""
SAMPLE_PASSAGES = 20
"""Passages read (the index's first) to learn whether its passages carry page ids, element ids
and pools: the importers write them on every passage of a dump, or on none."""
PAGE_FIELD = "page"
SENTENCES_FIELD = "sentences"
POOL_FIELD = "pool"
"""Keyword-index fields of the passage contract: the page id, the element ids a passage holds
and its knowledge-store pool."""
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
        self._elements: dict[str, set[Any] | None] = {}
        sample = [self._searcher.doc(address) for _, address in self._searcher.search(
            tantivy.Query.all_query(), limit=SAMPLE_PASSAGES).hits]
        self.has_pages = any(self._first(doc, PAGE_FIELD) for doc in sample)
        """The index's passages carry the page id of the passage contract (an imported dump)."""
        self.has_ids = any(stored_elements(self._all(doc, SENTENCES_FIELD)) for doc in sample)
        """Its passages carry element ids too (a dump's passages all do, or none do)."""
        self.has_pools = any(self._first(doc, POOL_FIELD) for doc in sample)
        """Its passages belong to per-claim pools (AVeriTeC's knowledge store: all of them)."""

    @staticmethod
    def _all(doc: Any, name: str) -> list[Any]:
        """The stored values of ``name`` (none in an index built before the field existed)."""
        try:
            return list(doc.get_all(name))
        except ValueError:
            return []

    def _first(self, doc: Any, name: str) -> Any:
        values = self._all(doc, name)
        return values[0] if values else None

    def page_elements(self, page_id: str, page: str = "") -> set[Any] | None:
        """The element ids (sentence numbers, FEVEROUS element ids) the passages of a page hold,
        found by a term query on the index's ``page`` field (``page_id`` as the gold names it, in
        Unicode NFC, else its decoded title ``page``); None when the index holds no passage of
        that page."""
        key = page_id or page
        if key in self._elements:
            return self._elements[key]
        tv = self._tantivy
        found: set[Any] | None = None
        nfc = unicodedata.normalize("NFC", page_id)  # Tool-MAD's FEVER sample writes NFD ids
        for name in dict.fromkeys(n for n in (page_id, nfc, page) if n):
            query = tv.Query.term_query(self._schema, PAGE_FIELD, name)
            hits = self._searcher.search(query, limit=MAX_PAGE_PASSAGES).hits
            if hits:
                found = set()
                for _, address in hits:
                    found |= stored_elements(self._searcher.doc(address).get_all(SENTENCES_FIELD))
                break
        self._elements[key] = found
        return found

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


def stored_elements(values: list[Any]) -> set[Any]:
    """The element ids of a passage as its keyword index stores them: one JSON list (bytes or
    text), or one value per id; FEVER/HoVer numbers and FEVEROUS ids as
    :func:`~factdebate.evaluation.evidence_metrics.element_id` compares them."""
    out: set[Any] = set()
    for value in values:
        if isinstance(value, bytes | bytearray):
            value = value.decode("utf-8", "replace")
        if isinstance(value, str) and value.lstrip().startswith("["):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                continue
        for one in value if isinstance(value, list) else [value]:
            sid = element_id(one)
            if sid is not None:
                out.add(sid)
    return out


def _gold_elements(golds: list[Any]) -> list[dict[str, Any]]:
    return [e for g in golds if isinstance(g, dict) for s in g.get("sets") or []
            for e in s if isinstance(e, dict)]


class CorpusLookup:
    """Gold pages and sentences looked up in a corpus file, read once: the passages an index of
    it holds (``tools.indexing.iter_passages``) of the pages ``golds`` name, and which of their
    page-less sentences some passage contains. Answers for those golds only."""

    def __init__(self, corpus: str | Path, golds: list[Any]) -> None:
        """Read ``corpus`` (a validated JSONL corpus) for the gold evidence sets ``golds``."""
        from factdebate.tools.indexing import iter_passages

        elements = _gold_elements(golds)
        wanted = {str(e["page"]) for e in elements if e.get("page")}
        anywhere = {normal_text(str(e["text"])) for e in elements
                    if not e.get("page") and e.get("text")}
        self._pages: dict[str, list[str]] = {page: [] for page in wanted}
        self._found: set[str] = set()
        unfound = set(anywhere)
        for passage in iter_passages(Path(corpus).expanduser()):
            pages = [p for p in passage_pages(passage) if p in wanted]
            if not pages and not unfound:
                continue
            text = normal_text(passage["text"])
            for page in pages:
                self._pages[page].append(text)
            found = {n for n in unfound if contains_words(text, n)}
            self._found |= found
            unfound -= found

    def page_texts(self, page: str) -> list[str]:
        """Normalised texts of the passages of ``page`` (empty when the corpus holds none)."""
        return self._pages.get(page, [])

    def has_sentence(self, page: str, text: str) -> bool:
        """A passage of ``page`` (any page when ``page`` is empty) contains ``text``."""
        needle = normal_text(text)
        if page:
            return any(contains_words(t, needle) for t in self.page_texts(page))
        return needle in self._found


def server_corpus(identity: dict[str, Any] | None,
                  data_dir: str | Path | None) -> tuple[Path | None, str]:
    """The local copy of a server's corpus to compute a server run's ceiling from, and one line
    saying so; ``(None, why)`` when there is none (``identity``: ``run.json`` ``index``)."""
    from factdebate.evaluation.datasets import file_sha256
    from factdebate.evaluation.index_identity import data_corpus, data_folder
    from factdebate.tools.indexing import CHUNK_CHARS

    identity = identity or {}
    if identity.get("status") != "ok" or not identity.get("corpus_sha256"):
        status = identity.get("status")
        what = "not recorded" if status in ("server", None) else status
        return None, f"not computed: the server's index is {what}"
    if identity.get("chunk_chars") != CHUNK_CHARS:
        return None, (f"not computed: the server cuts passages at {identity.get('chunk_chars')} "
                      f"characters, this client at {CHUNK_CHARS}")
    try:
        corpus = data_corpus(data_folder(data_dir))
    except InputError as exc:
        return None, f"not computed: {exc}"
    sha = str(identity["corpus_sha256"])
    if corpus is None:
        return None, (f"not computed: no data folder corpus to compare with the server's "
                      f"{identity.get('corpus')} (sha256 {sha[:16]})")
    local = file_sha256(corpus)
    if local != sha:
        return None, (f"not computed: the server's corpus {identity.get('corpus')} (sha256 "
                      f"{sha[:16]}) is not the data folder's {corpus.name} (sha256 {local[:16]})")
    return corpus, (f"from the data folder's corpus {corpus.name}, the server's corpus (same "
                    f"SHA-256)")


def gold_in_index(gold: dict[str, Any] | None,
                  lookup: IndexLookup | CorpusLookup) -> dict[str, Any] | None:
    """``{"page": bool, "sentence": bool | None, "level": ...}`` of an item's gold evidence; None
    without gold evidence sets (nothing to find)."""
    if not isinstance(gold, dict):
        return None
    sets = [[e for e in s if isinstance(e, dict)] for s in gold.get("sets") or []]
    sets = [s for s in sets if s]
    if not sets:
        return None
    if getattr(lookup, "has_ids", False):  # an imported dump: pages and element ids by id
        return _by_ids(gold, sets, lookup)  # type: ignore[arg-type]
    page = any(all(lookup.page_texts(e["page"]) for e in s if e.get("page")) for s in sets)
    sentence = None
    if gold.get("level") == "sentence":
        sentence = any(all(lookup.has_sentence(str(e.get("page") or ""), str(e["text"]))
                           for e in s if e.get("text")) for s in sets)
    return {"page": page, "sentence": sentence, "level": gold.get("level") or "page"}


def _by_ids(gold: dict[str, Any], sets: list[list[dict[str, Any]]],
            lookup: IndexLookup) -> dict[str, Any]:
    """``gold_in_index`` over an index whose passages carry ``page`` and ``sentences``: a set is
    in it at page level when each of its pages has a passage, at sentence level when each of its
    ``(page, element id)`` pairs is held by a passage of that page (None for gold without ids,
    whose sentences have text only - FEVEROUS as ProgramFC releases it - is looked up by text, as
    without ids)."""
    def elements(e: dict[str, Any]) -> set[Any] | None:
        return lookup.page_elements(str(e.get("page_id") or ""), str(e.get("page") or ""))

    page = any(all(elements(e) is not None for e in s if e.get("page")) for s in sets)
    with_ids = all(element_id(e.get("sent_id")) is not None for s in sets for e in s)
    sentence = None
    if with_ids:
        sentence = any(all(element_id(e.get("sent_id")) in (elements(e) or set()) for e in s)
                       for s in sets)
    elif gold.get("level") == "sentence":
        sentence = any(all(lookup.has_sentence(str(e.get("page") or ""), str(e["text"]))
                           for e in s if e.get("text")) for s in sets)
    return {"page": page, "sentence": sentence,
            "level": "sentence" if sentence is not None else "page", "ids": lookup.has_ids}
