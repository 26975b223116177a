"""HoVer's own corpus database, ``wiki_wo_links.db``: the HotpotQA 2017 introductions, read under
the format name ``hover-wiki`` like the abstracts dump they come from.

Official source: hover-nlp/hover ``download_data.sh`` fetches ``wiki_wo_links.db`` from
nlp.cs.unc.edu (2,156,273,664 bytes), licence CC BY-SA (Wikipedia text); HoVer's scripts
``prepare_data_for_doc_retrieval.py``, ``prepare_data_for_sent_retrieval.py`` and
``prepare_data_for_claim_verification.py`` read it. The SQLite file is read in place, read-only.

What the database holds, and what this reader does (each quirk has a fixture in
``tests/fixtures/sources/make.py`` and a test):

- **A DrQA-style table** ``documents(id PRIMARY KEY, text)``, one row per page. ``id`` is the
  HotpotQA title **NFD-normalized** (HoVer looks pages up with
  ``unicodedata.normalize('NFD', title)``, as DrQA does), while HoVer's supporting facts write
  titles as HotpotQA does, NFC: ``page`` is ``id`` normalized to NFC, so that
  ``Beyoncé`` (stored ``Beyonce`` + U+0301) is named as the gold evidence names it.
- **``text`` is the introduction as ONE string**, the sentences run together, links removed
  ("wo_links"): it keeps no sentence boundaries. HoVer's sentence ids come from re-splitting it
  with Stanford CoreNLP (``tokenize,ssplit``; ``prepare_data_for_sent_retrieval.py`` cuts
  ``text[first token begin : last token end]`` of each CoreNLP sentence), the same splitter
  HotpotQA used for the abstracts' sentence lists. :func:`split_sentences` reproduces that split
  without Java: a sentence ends at ``.``, ``!`` or ``?`` (plus any closing quotes and brackets)
  before whitespace, except after a single-letter initial (``George W. Bush``), a dotted acronym
  (``U.S.``), an ellipsis, and the abbreviations CoreNLP's tokenizer keeps whole (``Mr.``,
  ``Jr.``, ``St.``, ``Inc.``, ``Jan.`` ...); a blank line also ends one. Where CoreNLP decides
  otherwise (an abbreviation outside that list, such as ``approx.``), the numbering after that
  point differs from HoVer's: the abstracts dump (:mod:`~factdebate.tools.sources.hover_wiki`),
  which stores CoreNLP's own split, is the exact source of the ``sent_id`` numbers.
- **No right reading**: a row whose ``id`` is empty or not text, or whose ``text`` is not text
  (NULL, or bytes that are not UTF-8), is skipped and counted; the rest is read. A row with an
  empty ``text`` is an empty page (no passage).
- Not a database with that table (another SQLite file, FEVEROUS' ``wiki``): refused in one line.

Limits: rows are fetched :data:`FETCH_ROWS` at a time and one page's text is held while it is
split (an introduction: a few KB); time is one pass over the table in rowid order.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from factdebate.tools.sources.base import Cursor, Page, SourceError, skipped_page

WIKI_URL = "https://en.wikipedia.org/wiki/"
FETCH_ROWS = 500

# Abbreviations Stanford CoreNLP's PTB tokenizer keeps whole with their period (titles, name
# suffixes, companies, months, days, states, a few others): no sentence ends after them.
_ABBREVIATIONS = frozenset("""
mr mrs ms mx messrs mlle mme dr drs prof profs gen rep reps sen sens gov lt maj col capt cpt cmdr
sgt cpl adm ald brig pvt pte hon rev revd st mt ft pres supt insp fr br jr sr bros esq ph.d ed.d
blvd rd ave av inc cos co corp ltd plc bancorp dept bhd assn univ intl sys vs v no nos vol vols
pp p op cf jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thurs fri sat sun
ala ariz ark calif colo conn ct dak del fla ga ill ind kan kans ky la md mass mich minn miss mo
mont neb nev okla ore pa penn tenn tex va vt wash wis wisc wy wyo alta ont sask
""".split())
_END = re.compile(r"(?<!\.)[.!?]+(?:[\"'\u201d\u2019)\]}]+)?(?=\s)|\n[ \t]*\n")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")


def split_sentences(text: str) -> list[str]:
    """``text`` cut into sentences as HoVer's CoreNLP split cuts it (see the module docstring);
    each sentence without surrounding whitespace, none empty."""
    out: list[str] = []
    start = 0
    for match in _END.finditer(text):
        end = match.end()
        if not match.group(0).startswith("\n") and not _ends_sentence(text, match.start(),
                                                                     match.group(0)):
            continue
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return out


def _ends_sentence(text: str, at: int, mark: str) -> bool:
    """The ``mark`` found at ``at`` ends a sentence (a ``.`` after an abbreviation does not)."""
    if not mark.startswith(".") or mark.startswith(".."):
        return not mark.startswith("..")
    word = _WORD_BEFORE.search(text[max(0, at - 40): at + 1])
    if word is None:
        return True
    token = word.group(1)
    if len(token) == 1 and token.isupper():
        return False  # an initial: "George W. Bush"
    if "." in token and all(len(part) <= 2 for part in token.split(".")):
        return False  # a dotted acronym: "U.S.", "a.m."
    return token.lower() not in _ABBREVIATIONS


class HoverDbSource:
    """The ``documents`` table of ``wiki_wo_links.db``, in rowid order."""

    name = "hover-wiki"

    def __init__(self, path: Path) -> None:
        """Open the database read-only and check that it has HoVer's table.

        Raises:
            SourceError: Not an SQLite file, or no table ``documents(id, text)``.
        """
        self.path = path
        try:
            self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            self._db.text_factory = bytes  # a row that is not UTF-8 is skipped, not fatal
            tables = [r[0].decode() for r in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")]
            columns = {r[1].decode() for r in self._db.execute("PRAGMA table_info(documents)")}
        except sqlite3.DatabaseError as exc:
            raise SourceError(str(path), f"not an SQLite database ({exc})") from exc
        if not {"id", "text"} <= columns:
            raise SourceError(str(path), "not HoVer's wiki_wo_links.db: it has no table "
                              f"documents(id, text) (tables: {', '.join(tables) or 'none'})")
        self._last = self._db.execute("SELECT max(rowid) FROM documents").fetchone()[0] or 0

    def files(self) -> list[Path]:
        """The database file."""
        return [self.path]

    def total(self) -> int:
        """The highest rowid (progress runs over row ids)."""
        return int(self._last)

    def done(self, cursor: Cursor) -> int:
        """Row ids before ``cursor``."""
        return int(cursor.get("rowid", 0))

    def read(self, cursor: Cursor | None) -> Iterator[tuple[Page, Cursor]]:
        """Pages from ``cursor`` (the last row id read) on."""
        last = int((cursor or {}).get("rowid", 0))
        while True:
            try:
                rows = self._db.execute(
                    "SELECT rowid, id, text FROM documents WHERE rowid > ? ORDER BY rowid LIMIT ?",
                    (last, FETCH_ROWS)).fetchall()
            except sqlite3.DatabaseError as exc:
                raise SourceError(f"{self.path} after row {last}", f"cannot be read ({exc})") from exc
            if not rows:
                return
            for rowid, title, text in rows:
                last = rowid
                yield self._page(rowid, title, text), {"rowid": rowid}

    def _page(self, rowid: int, raw_id: Any, raw_text: Any) -> Page:
        where = f"{self.path} row {rowid}"
        title = _text(raw_id)
        if title is None or not title.strip():
            return skipped_page(where, "", f"empty or non-text page id ({_kind(raw_id)})")
        title = unicodedata.normalize("NFC", title)
        where = f"{where} (page {title!r})"
        text = _text(raw_text)
        if text is None:
            return skipped_page(where, title, f"'text' is {_kind(raw_text)}, not text")
        return Page(page=title, title=title, url=WIKI_URL + title.replace(" ", "_"), where=where,
                    elements=list(enumerate(split_sentences(text))))


def _text(value: Any) -> str | None:
    """A column value as text (None: NULL, a number, or bytes that are not UTF-8)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def _kind(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"not UTF-8 (byte 0x{value[exc.start]:02x})"
        return "text"
    return type(value).__name__
