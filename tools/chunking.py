"""Passage chunking shared by the JSONL corpus builder (``tools/indexing.py``) and the dump
importers (``tools/sources``): text longer than :data:`CHUNK_CHARS` is cut at a sentence end,
else a word end."""

from __future__ import annotations

CHUNK_CHARS = 2000
"""Passages longer than this are split into chunks ``<id>#<n>`` (n from 1)."""


def chunk_text(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` chars, preferring sentence then word ends."""
    chunks: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = max(window.rfind(". "), window.rfind("? "), window.rfind("! "))
        if cut < limit // 2:  # no sentence end in the second half: cut at a space
            cut = window.rfind(" ")
        cut = cut + 1 if cut >= limit // 4 else limit  # no usable boundary: hard cut
        chunks.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        chunks.append(rest)
    return chunks
