r"""FEVER's ``wiki-pages`` release: the June 2017 Wikipedia introductions FEVER's evidence points into.

Official source: the FEVER shared task's ``wiki-pages.zip`` (fever.ai, "Pre-processed Wikipedia
Pages (June 2017 dump)", about 1.7 GB zipped, 5,416,537 pages in ``wiki-pages/wiki-001.jsonl`` ...
``wiki-109.jsonl``), licence CC BY-SA 3.0 (Wikipedia text). Read straight from the zip or from
the unpacked folder; nothing is extracted to disk.

Each line is ``{"id": "Soul_Food_-LRB-film-RRB-", "text": ..., "lines": "0\\tsentence\\tlink
...\\n1\\t..."}``. ``page`` is the ``id`` exactly (FEVER's gold evidence names it so); the
``sentences`` of a passage are the numbers of its ``lines`` rows (FEVER's ``sent_id``). The title
and the text show brackets for the tokeniser's escapes (``-LRB-`` -> ``(``); the ``id`` keeps them.
Pages without a sentence (FEVER's empty pages and the blank first line) give no passage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from factdebate.tools.sources.base import Cursor, Page, SourceError, json_object, text_field, unescape_ptb
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
        """Pages from ``cursor`` on."""
        for raw, where, after in read_lines(self._entries, cursor):
            record = json_object(raw, where)
            page_id = text_field(record, "id", where)
            lines = text_field(record, "lines", where)
            if not page_id:
                if lines.strip():
                    raise SourceError(where(), "empty field 'id'")
                continue  # FEVER's wiki-001.jsonl opens with an empty page
            yield Page(page=page_id, title=unescape_ptb(page_id.replace("_", " ")),
                       elements=_sentences(unescape_ptb(lines), page_id, where),
                       url=WIKI_URL + page_id), after


def _sentences(lines: str, page_id: str, where: Callable[[], str]) -> list[tuple[int, str]]:
    """``(sentence number, text)`` of a ``lines`` field: ``N<TAB>sentence<TAB>links...`` rows."""
    out = []
    for row in lines.split("\n"):
        number, _, rest = row.partition("\t")
        if not number.isdigit():
            if not row.strip():
                continue
            raise SourceError(f"{where()} (page {page_id})",
                              f"a 'lines' row does not start with a sentence number: {row[:60]!r}")
        out.append((int(number), rest.partition("\t")[0]))
    return out
