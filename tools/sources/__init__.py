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

from pathlib import Path
from typing import Any

from factdebate.core import input_limits, json_input
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

    ``hover-wiki`` reads HotpotQA's abstracts (``.tar.bz2``, unpacked tree or one ``wiki_NN.bz2``)
    and HoVer's ``wiki_wo_links.db`` (an SQLite file): the same pages, the same ids.

    Raises:
        InputError: ``path`` does not exist, the format is unknown or cannot be told.
    """
    root = Path(path).expanduser().absolute()
    if not root.exists():
        raise InputError(f"{root} does not exist", "pass the dump's file or folder")
    name = fmt or detect(root)
    if name not in DUMP_FORMATS:
        raise InputError(f"unknown dump format {name!r}", f"use one of: {', '.join(DUMP_FORMATS)}")
    from factdebate.tools.sources import (
        averitec_store,
        fever_wiki,
        feverous_db,
        hover_db,
        hover_wiki,
    )
    from factdebate.tools.sources import wikipedia as wiki

    if name == "hover-wiki" and root.is_file() and _head(root).startswith(SQLITE_MAGIC):
        return hover_db.HoverDbSource(root)
    readers = {"fever-wiki": fever_wiki.FeverWikiSource,
               "feverous-db": feverous_db.FeverousDbSource, "hover-wiki": hover_wiki.HoverWikiSource,
               "averitec-store": averitec_store.AveritecStoreSource, "wikipedia": wiki.WikipediaSource}
    return readers[name](root)


SQLITE_MAGIC = b"SQLite format 3\x00"
ZIP_MAGIC = b"PK\x03\x04"
BZ2_MAGIC = b"BZh"


def _head(path: Path, size: int = 16) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(size)
    except OSError:
        return b""


def _first_record(path: Path) -> dict[str, Any]:
    """The first non-blank JSON line of ``path`` (``{}`` when it has none or does not parse)."""
    try:
        with path.open("rb") as f:
            return _record_of(f)
    except OSError:
        return {}


def _record_of(handle: Any, lines: int = 100) -> dict[str, Any]:
    """The first non-blank JSON line of an open binary file (``{}``: none in its first ``lines``
    lines, not a JSON object, or longer than the record limit, which is not read past)."""
    limit = input_limits.limit("dump_record_bytes")
    try:
        for _ in range(lines):
            raw = handle.readline(limit + 1)
            if not raw or (len(raw) > limit and not raw.endswith(b"\n")):
                return {}
            if raw.strip():
                record = json_input.loads(raw)
                return record if isinstance(record, dict) else {}
    except (OSError, EOFError, ValueError):
        return {}
    return {}


def _record_format(record: dict[str, Any]) -> str | None:
    if "lines" in record and "id" in record:
        return "fever-wiki"
    if "url2text" in record and "url" in record:
        return "averitec-store"
    if "doc_id" in record:
        return "jsonl"
    if {"title", "text"} <= record.keys():
        return "hover-wiki" if isinstance(record["text"], list) else "wikipedia"
    return None


def _keys(record: dict[str, Any]) -> str:
    return "[" + ", ".join(list(record)[:8]) + (", ...]" if len(record) > 8 else "]")


def detect(path: Path, default: str | None = None) -> str:
    """Tell the format of ``path`` from its names, its magic bytes and its first record.

    A zip, SQLite or bz2 file is looked into (zip members, tables, the first decompressed
    record); when it is none of the formats, the error names what it is instead (``a zip of 12
    members *.json whose first record has keys [...]``, ``an SQLite database with tables
    documents(id, text)``), never another format's complaint.

    Limits: at most the first 100 lines of one file are read, each up to the record limit
    (``core/input_limits``: ``dump_record_bytes``), plus a zip's central directory, an SQLite
    schema, a tar's first file header, or 10,000 entries of a folder.

    Args:
        path: A file or folder.
        default: The answer for a plain *text file* nothing else recognises (the CLI:
            ``jsonl``, whose own validation then names what is wrong with it).

    Raises:
        InputError: Nothing known was recognised (and no ``default`` applies).
        SourceError: A zip, bz2, ``.tar.bz2`` or SQLite file that cannot be read (truncated or
            damaged), named in one line.
    """
    found: str | None = None
    what = ""
    if path.is_file():
        head = _head(path)
        if head.startswith(SQLITE_MAGIC):
            found, what = _detect_sqlite(path)
        elif head.startswith(ZIP_MAGIC) or head.startswith(b"PK\x05\x06"):
            found, what = _detect_zip(path)
        elif head.startswith(BZ2_MAGIC):
            found, what = _detect_bz2(path)
        elif path.name.lower().endswith(".parquet"):
            found = "wikipedia"
        else:
            found = _record_format(_first_record(path)) or default
    elif path.is_dir():
        found, what = _detect_folder(path)
        what = what or ("" if found else _describe_folder(path))
    if found is None:
        raise InputError(f"cannot tell the format of {path}{': ' + what if what else ''}",
                         f"pass --format (one of: {', '.join(FORMATS)})")
    return found


def _detect_sqlite(path: Path) -> tuple[str | None, str]:
    import sqlite3

    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {name: [c[1] for c in db.execute(
                'PRAGMA table_info("{}")'.format(name.replace('"', '""')))]
                      for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise SourceError(str(path), f"not a readable SQLite database ({exc})") from exc
    if {"id", "data"} <= set(tables.get("wiki", [])):
        return "feverous-db", ""
    if {"id", "text"} <= set(tables.get("documents", [])):
        return "hover-wiki", ""
    shown = ", ".join(f"{t}({', '.join(c)})" for t, c in list(tables.items())[:6]) or "none"
    return None, f"an SQLite database with tables {shown}, neither FEVEROUS' wiki(id, data) nor " \
                 "HoVer's documents(id, text)"


def _detect_zip(path: Path) -> tuple[str | None, str]:
    import zipfile

    from factdebate.tools.sources.averitec_store import is_member

    try:
        with zipfile.ZipFile(path) as zf:
            names = [i.filename for i in zf.infolist() if not i.is_dir()]
            if any(n.rsplit("/", 1)[-1].startswith("wiki-") and n.endswith(".jsonl") for n in names):
                return "fever-wiki", ""
            if any(n.endswith(".db") for n in names):
                return "feverous-db", ""  # its reader refuses it in one line: unzip it first
            members = [n for n in names if is_member(n)]
            if members:
                with zf.open(members[0]) as f:
                    record = _record_of(f)
                if _record_format(record) == "averitec-store":
                    return "averitec-store", ""
            first = members[0] if members else (names[0] if names else "")
            record = {}
            if first:
                with zf.open(first) as f:
                    record = _record_of(f)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise SourceError(str(path), f"not a readable zip archive, truncated or damaged ({exc})") \
            from exc
    kinds = sorted({"*" + (n.rsplit(".", 1)[-1] if "." in n.rsplit("/", 1)[-1] else "")
                    for n in names})
    kinds_text = ", ".join("*." + k[1:] if k != "*" else "no suffix" for k in kinds[:5])
    return None, (f"a zip of {len(names)} members ({kinds_text}) whose first record "
                  f"({first or 'none'}) has keys {_keys(record)}")


def _detect_bz2(path: Path) -> tuple[str | None, str]:
    import bz2

    from factdebate.tools.sources.hover_wiki import is_tar_bz2

    try:
        with bz2.open(path, "rb") as f:
            f.read(512)
    except (OSError, EOFError) as exc:
        raise SourceError(str(path), f"not a readable bz2 file, truncated or damaged ({exc})") \
            from exc
    if is_tar_bz2(path):
        import tarfile

        try:
            with tarfile.open(path, "r|bz2") as tar:
                for member in tar:
                    if member.isfile():
                        if member.name.rsplit("/", 1)[-1].startswith("wiki_") and \
                                member.name.endswith(".bz2"):
                            return "hover-wiki", ""
                        return None, (f"a .tar.bz2 whose first file is {member.name}, not "
                                      "HotpotQA's wiki_NN.bz2")
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise SourceError(str(path), "not a readable .tar.bz2 archive, truncated or damaged "
                              f"({exc})") from exc
        return None, "a .tar.bz2 holding no file"
    try:
        with bz2.open(path, "rb") as f:
            record = _record_of(f)
    except (OSError, EOFError) as exc:
        raise SourceError(str(path), f"not a readable bz2 file, truncated or damaged ({exc})") \
            from exc
    fmt = _record_format(record)
    if fmt == "hover-wiki":
        return fmt, ""
    return None, f"a bz2 file whose first record has keys {_keys(record)}"


def _describe_folder(path: Path, limit: int = 10_000) -> str:
    """``a folder of N files (*.a: n, *.b: m)``, from at most ``limit`` entries."""
    counts: dict[str, int] = {}
    seen = 0
    for item in path.rglob("*"):
        seen += 1
        if seen > limit:
            break
        if item.is_file():
            suffix = "*" + item.suffix.lower() if item.suffix else "no suffix"
            counts[suffix] = counts.get(suffix, 0) + 1
    kinds = ", ".join(f"{k}: {n}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5])
    total = sum(counts.values())
    return f"a folder of {total}{'+' if seen > limit else ''} files" + (f" ({kinds})" if kinds
                                                                         else "")


def _detect_folder(path: Path) -> tuple[str | None, str]:
    """The format of a folder's files, or None and (for a folder holding one archive that its
    format's reader takes only as a file) what to pass instead."""
    if next(path.rglob("wiki-*.jsonl"), None) is not None:
        return "fever-wiki", ""
    if next(path.rglob("wiki_*.bz2"), None) is not None:
        return "hover-wiki", ""
    if next(path.rglob("*.parquet"), None) is not None:
        return "wikipedia", ""
    for name in ("*.json", "*.jsonl"):
        first = next(iter(sorted(path.rglob(name))), None)
        if first is not None:
            return _record_format(_first_record(first)), ""
    for name in ("*.zip", "*.tar.bz2", "*.db"):
        archive = next(iter(sorted(path.rglob(name))), None)
        if archive is None:
            continue
        fmt = detect(archive)
        if fmt == "averitec-store" and name == "*.zip":
            return fmt, ""  # a folder of one split's store zips (train comes in three)
        return None, f"a folder holding {archive.name} ({fmt}): pass that file itself"
    return None, ""
