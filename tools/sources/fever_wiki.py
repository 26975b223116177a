r"""FEVER's ``wiki-pages`` release: the June 2017 Wikipedia introductions FEVER's evidence points into.

Official source: the FEVER shared task's ``wiki-pages.zip`` (fever.ai, "Pre-processed Wikipedia
Pages (June 2017 dump)", about 1.7 GB zipped, 5,416,537 pages in ``wiki-pages/wiki-001.jsonl`` ...
``wiki-109.jsonl``), licence CC BY-SA 3.0 (Wikipedia text). Read straight from the zip or from
the unpacked folder; nothing is extracted to disk. One line (one page) is held at a time.

Each line is ``{"id": "Soul_Food_-LRB-film-RRB-", "text": ..., "lines": "0\\tsentence\\tlink
...\\n1\\t..."}``. ``page`` is the ``id`` exactly (FEVER's gold evidence names it so); the
``sentences`` of a passage are the numbers of its ``lines`` rows (FEVER's ``sent_id``). The title
and the text show brackets for the tokeniser's escapes (``-LRB-`` -> ``(``); the ``id`` keeps them.

The release as shipped is not the clean format its description gives; what this reader meets
and does (each quirk has a fixture in ``tests/fixtures/sources/make.py`` and a test):

- **The blank first page**: ``wiki-001.jsonl`` opens with ``{"id": "", "text": "", "lines": ""}``;
  it gives nothing and is not counted.
- **Empty pages**: an ``id`` with an empty ``lines`` (and often an empty ``text``); no passage
  (the build counts them as ``empty_pages``).
- **Empty sentence rows**: ``"3\\t"`` or ``"3\\t\\tanchor"``, in the middle and at the end of
  ``lines`` (nearly every page ends with one). They stay numbered and empty, so the sentences
  after them keep the numbers the gold evidence uses; they hold no text and appear in no passage.
- **Unnumbered rows**: a line break inside a row (mostly inside its anchor list, sometimes in the
  sentence) splits it, and the part after the break is not the next sentence's ``N<TAB>``. It
  continues the row before it: joined back with a space, so the sentence keeps its number and
  the rows after it theirs. Counted as a *repair* of the page. The release numbers the rows of
  a page 0, 1, 2, ... without gaps (they were enumerated when it was made), so a continuation
  that happens to start with digits and a tab (an anchor such as ``50<TAB>Super_Bowl_50`` after
  a break) is told from a sentence by its number: only the next number opens a sentence.
- **No right reading**: an ``id`` that is empty while ``lines`` has text (the page cannot be
  named) and an unnumbered first row (nothing to continue). The page is *skipped*, counted, and
  the rest of the file is read; ``--strict`` stops at the first instead.
- A line that is not JSON or lacks ``id``/``lines`` is skipped the same way, unless it is the
  first line of a file: then the file is not FEVER's format and the import stops with one line
  (a page without a right reading is skipped wherever it is, the first line included).

Sentence numbers are never re-derived from row positions: a row's number is the number it
carries (a first row numbered other than 0 keeps its number).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from factdebate.tools.sources.base import (
    Cursor,
    NoReadingError,
    Page,
    SourceError,
    guarded_pages,
    json_object,
    text_field,
    unescape_ptb,
)
from factdebate.tools.sources.files import (
    Entry,
    EntryFiles,
    plain_entries,
    read_lines,
    sorted_files,
    zip_entries,
)

WIKI_URL = "https://en.wikipedia.org/wiki/"


class FeverWikiSource(EntryFiles):
    """``wiki-NNN.jsonl`` files of a folder, or of a zip such as ``wiki-pages.zip``."""

    name = "fever-wiki"

    def __init__(self, path: Path) -> None:
        """Open the zip's directory or list the folder's ``wiki-*.jsonl`` files."""
        self.path = path
        self._zip = None
        if path.is_dir():
            self._entries: list[Entry] = plain_entries(sorted_files(path, "wiki-*.jsonl"))
        elif path.name.endswith(".jsonl"):
            self._entries = plain_entries([path])
        else:
            self._zip, self._entries = zip_entries(path, lambda n: n.endswith(".jsonl"))
        if not self._entries:
            raise SourceError(str(path), "holds no wiki-NNN.jsonl file (expected FEVER's wiki-pages)")

    def files(self) -> list[Path]:
        """The folder's files, or the zip itself."""
        return [self.path] if self._zip is not None else super().files()

    def read(self, cursor: Cursor | None) -> Iterator[tuple[Page, Cursor]]:
        """Pages from ``cursor`` on (unreadable records as skipped pages, see the module doc)."""
        return guarded_pages(read_lines(self._entries, cursor), _page)


def _page(raw: bytes, where: Callable[[], str]) -> Page | None:
    """The page of one ``wiki-NNN.jsonl`` line (None: the blank page, nothing to index)."""
    record = json_object(raw, where)
    page_id = text_field(record, "id", where)
    lines = text_field(record, "lines", where)
    if not page_id:
        if lines.strip():
            raise NoReadingError(where(), "empty field 'id' on a page with sentences")
        return None  # FEVER's wiki-001.jsonl opens with an empty page
    here = f"{where()} (page {page_id})"
    elements, repairs = _sentences(unescape_ptb(lines), page_id, here)
    return Page(page=page_id, title=unescape_ptb(page_id.replace("_", " ")), elements=elements,
                url=WIKI_URL + page_id, repairs=repairs, where=here)


def _numbered(row: str) -> tuple[int, str] | None:
    """``(number, rest)`` of a ``N<TAB>rest`` (or bare ``N``) row, None when unnumbered."""
    number, tab, rest = row.partition("\t")
    if number.isdigit() and number.isascii() and (tab or number == row):
        return int(number), rest
    return None


def _sentences(lines: str, page_id: str, here: str) -> tuple[list[tuple[int, str]], list[str]]:
    """``(sentence number, text)`` rows of a ``lines`` field, and what was repaired in them.

    Raises:
        NoReadingError: The rows have no right reading (see the module docstring).
    """
    rows: list[list[Any]] = []  # [number, raw rest of the row]
    repairs: list[str] = []
    for row in lines.split("\n"):
        numbered = _numbered(row)
        if numbered is not None and (not rows or numbered[0] == rows[-1][0] + 1):
            rows.append(list(numbered))
        elif not row.strip():
            continue  # the line break that ends the field, or a blank line inside it
        elif not rows:
            raise NoReadingError(here, "the first 'lines' row does not start with a sentence "
                                 f"number: {row[:60]!r}", page_id)
        else:
            rows[-1][1] += " " + row
            repairs.append(f"an unnumbered row continues row {rows[-1][0]}: {row[:40]!r}")
    out = [(number, " ".join(rest.partition("\t")[0].split())) for number, rest in rows]
    return out, repairs
