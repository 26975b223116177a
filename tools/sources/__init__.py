"""Readers of the papers' official knowledge sources, streaming, resumable, one module per format.

Every reader turns a dump into *passages*, the dicts that ``factdebate index`` writes into the keyword
and vector indexes and that the retrievers give back::

    id         "<page>#<n>" (n from 1), unique in the index
    title      page title as a reader sees it
    text       the passage text
    url        link to the page ("" when the dump has none)
    page       the page id exactly as the dataset's gold evidence names it
    sentences  element ids of ``page`` the passage holds, in order (FEVER / HoVer: sentence
               numbers; FEVEROUS: "sentence_3", "cell_0_1_2", "item_1_0", ...); [] otherwise
    pool       the AVeriTeC claim id of a knowledge-store passage, "" otherwise

The AVeriTeC knowledge store is the one exception to the id pattern: a URL recurs in the pools of
several claims, so its ids are ``<claim_id>/<url>#<n>`` (``page`` stays the URL).

A reader is built by :func:`open_source` (format given or :func:`detect`-ed) and yields one
:class:`Page` at a time with the *cursor* just past it: a small JSON-able dict from which
``read(cursor)`` continues (file index plus byte offset, line, row id or row). A build stores the
cursor of its last commit and resumes there after a kill. Memory stays bounded whatever the
dump's size: readers hold one line, row or page at a time.

A malformed input raises :class:`SourceError`, one line naming the file, the line (or page, row)
and what is wrong.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factdebate.core.errors import InputError
from factdebate.tools.sources.base import (  # noqa: F401 - the package's public API
    CHUNK_CHARS,
    GRANULARITIES,
    MAX_ID_BYTES,
    Cursor,
    NoReadingError,
    Page,
    Passage,
    Source,
    SourceError,
    chunk_text,
    guarded_pages,
    json_object,
    passage_id,
    passages_of,
    sentence_list,
    skipped_page,
    strip_links,
    text_field,
    unescape_ptb,
)

# --- the registry and detection ------------------------------------------------------------

DUMP_FORMATS = ("fever-wiki", "feverous-db", "hover-wiki", "averitec-store", "wikipedia")
"""The dumps :func:`open_source` reads (streamed, resumable: ``tools/sources/build.build_from_source``)."""
FORMATS = ("jsonl", *DUMP_FORMATS)
"""Every ``--format`` name; ``jsonl`` is the project's ``{doc_id, title, text}`` corpus, which
``tools/indexing.build_indexes`` validates whole before writing (its passage ids stay ``doc_id``,
``doc_id#n`` when a text is cut; ``page`` is the ``doc_id``)."""


def open_source(path: str | Path, fmt: str | None = None) -> Source:
    """The reader of ``path`` in format ``fmt`` (None: :func:`detect` it).

    Raises:
        InputError: ``path`` does not exist, the format is unknown or cannot be told.
    """
    root = Path(path).expanduser().absolute()
    if not root.exists():
        raise InputError(f"{root} does not exist", "pass the dump's file or folder")
    name = fmt or detect(root)
    if name not in DUMP_FORMATS:
        raise InputError(f"unknown dump format {name!r}", f"use one of: {', '.join(DUMP_FORMATS)}")
    from factdebate.tools.sources import averitec_store, fever_wiki, feverous_db, hover_wiki
    from factdebate.tools.sources import wikipedia as wiki

    readers = {"fever-wiki": fever_wiki.FeverWikiSource,
               "feverous-db": feverous_db.FeverousDbSource, "hover-wiki": hover_wiki.HoverWikiSource,
               "averitec-store": averitec_store.AveritecStoreSource, "wikipedia": wiki.WikipediaSource}
    return readers[name](root)


def _first_record(path: Path) -> dict[str, Any]:
    """The first non-blank JSON line of ``path`` (``{}`` when it has none or does not parse)."""
    try:
        with path.open("rb") as f:
            for raw in f:
                if raw.strip():
                    record = json.loads(raw)
                    return record if isinstance(record, dict) else {}
    except (OSError, ValueError):
        return {}
    return {}


def _record_format(record: dict[str, Any]) -> str | None:
    if "lines" in record and "id" in record:
        return "fever-wiki"
    if "claim_id" in record and "url2text" in record:
        return "averitec-store"
    if "doc_id" in record:
        return "jsonl"
    if {"title", "text"} <= record.keys():
        return "hover-wiki" if isinstance(record["text"], list) else "wikipedia"
    return None


def detect(path: Path, default: str | None = None) -> str:
    """Tell the format of ``path`` from its names and first record.

    Args:
        path: A file or folder.
        default: The answer for a *file* nothing else recognises (the CLI: ``jsonl``, whose
            own validation then names what is wrong with it).

    Raises:
        InputError: Nothing known was recognised (and no ``default`` applies).
    """
    found: str | None = None
    if path.is_file():
        suffix = path.name.lower()
        with path.open("rb") as f:
            head = f.read(16)
        if head.startswith(b"SQLite format 3"):
            found = "feverous-db"
        elif head.startswith(b"PK"):
            found = "fever-wiki"
        elif suffix.endswith(".bz2"):
            found = "hover-wiki"
        elif suffix.endswith(".parquet"):
            found = "wikipedia"
        else:
            found = _record_format(_first_record(path)) or default
    elif path.is_dir():
        found = _detect_folder(path)
    if found is None:
        raise InputError(f"cannot tell the format of {path}",
                         f"pass --format (one of: {', '.join(FORMATS)})")
    return found


def _detect_folder(path: Path) -> str | None:
    if next(path.rglob("wiki-*.jsonl"), None) is not None:
        return "fever-wiki"
    if next(path.rglob("wiki_*.bz2"), None) is not None:
        return "hover-wiki"
    if next(path.rglob("*.parquet"), None) is not None:
        return "wikipedia"
    for name in ("*.json", "*.jsonl"):
        first = next(iter(sorted(path.rglob(name))), None)
        if first is not None:
            return _record_format(_first_record(first))
    return None
