"""Wiki page text as ranked passages: split along paragraphs and headings, ranked with BM25.

Used by the live Wikipedia backend (``tools/wikipedia_live.py``) on the plain text of the pages a
search fetched (MediaWiki's TextExtracts ``explaintext``, where headings read ``== History ==``).
Okapi BM25 is computed over those passages alone: a handful of pages is the whole collection, so
the statistics need no index. BM25 rather than embeddings: see ``docs/usage.md`` and
``evaluation/bench_wikipedia_ranking.py``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

PASSAGE_CHARS = 800
"""Most characters of a passage (a paragraph longer than this is cut at sentence ends)."""
PAGE_CHARS = 200_000
"""Most characters of a page's text that are split and ranked (the rest is not read)."""
SKIPPED_SECTIONS = frozenset({"references", "external links", "see also", "further reading",
                              "notes", "bibliography", "sources", "citations", "footnotes"})
"""Sections whose text is not evidence (lists of links and citations): a page is read up to them."""
_HEADING = re.compile(r"^\s*(={2,6})\s*(.*?)\s*\1\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_TOKEN = re.compile(r"\w+")


def split_passages(text: str, limit: int = PASSAGE_CHARS) -> list[str]:
    """A page's plain text as passages of at most ``limit`` characters.

    Paragraphs are packed together up to ``limit``; a heading (``== History ==``) ends the
    passage before it; a longer paragraph is cut at sentence ends (at spaces inside a sentence
    longer than ``limit``). Text from a :data:`SKIPPED_SECTIONS` heading on is dropped.
    """
    out: list[str] = []
    current = ""

    def flush() -> None:
        nonlocal current
        if current.strip():
            out.append(current.strip())
        current = ""

    for line in text[:PAGE_CHARS].splitlines():
        heading = _HEADING.match(line)
        if heading:
            flush()
            if heading.group(2).casefold() in SKIPPED_SECTIONS:
                break
            continue
        paragraph = " ".join(line.split())
        if not paragraph:
            continue
        for piece in _pieces(paragraph, limit):
            if current and len(current) + 1 + len(piece) > limit:
                flush()
            current = f"{current} {piece}" if current else piece
    flush()
    return out


def _pieces(paragraph: str, limit: int) -> Iterable[str]:
    """``paragraph`` in pieces of at most ``limit`` characters, cut at sentence ends."""
    if len(paragraph) <= limit:
        yield paragraph
        return
    piece = ""
    for sentence in _SENTENCE_END.split(paragraph):
        while len(sentence) > limit:  # one sentence over the limit: cut at a space
            cut = sentence.rfind(" ", 0, limit)
            cut = cut if cut > limit // 4 else limit
            if piece:
                yield piece
                piece = ""
            yield sentence[:cut].strip()
            sentence = sentence[cut:].strip()
        if piece and len(piece) + 1 + len(sentence) > limit:
            yield piece
            piece = ""
        piece = f"{piece} {sentence}" if piece else sentence
    if piece:
        yield piece


def tokens(text: str) -> list[str]:
    """Lower-case word tokens (Unicode letters and digits)."""
    return _TOKEN.findall(text.casefold())


def bm25_rank(query: str, texts: list[str], *, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """Okapi BM25 score of each of ``texts`` for ``query``, statistics from ``texts`` alone.

    IDF is the non-negative form ``log(1 + (N - n + 0.5) / (n + 0.5))``, so a word found in most
    passages still counts a little and never counts against one.
    """
    docs = [Counter(tokens(t)) for t in texts]
    if not docs:
        return []
    lengths = [sum(d.values()) for d in docs]
    average = sum(lengths) / len(docs) or 1.0
    terms = set(tokens(query))
    idf = {}
    for term in terms:
        n = sum(1 for d in docs if term in d)
        idf[term] = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
    scores = []
    for doc, length in zip(docs, lengths, strict=True):
        score = 0.0
        for term in terms:
            tf = doc.get(term, 0)
            if tf:
                score += idf[term] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
        scores.append(score)
    return scores
