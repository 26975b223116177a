"""The HotpotQA 2017 introductory-paragraph dump that HoVer's supporting facts point into.

Official source: HotpotQA's "processed Wikipedia" abstracts,
``enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2`` (1,553,565,403 bytes;
hotpotqa.github.io/wiki-readme lists it and its MD5), licence CC BY-SA 4.0; HoVer
(hover-nlp/hover, MIT) built its corpus from it. HoVer's own database of the same pages,
``wiki_wo_links.db``, is read by :mod:`~factdebate.tools.sources.hover_db` under this same format
name (``hover-wiki``): both give the passages HoVer's gold evidence names.

Read in place, three layouts: the ``.tar.bz2`` as downloaded (streamed, nothing extracted), the
unpacked tree, or one ``wiki_NN.bz2``. What the release holds and what this reader does (each
quirk has a fixture in ``tests/fixtures/sources/make.py`` and a test):

- **bz2 inside bz2**: the archive is one bz2-compressed tar whose members are themselves
  bz2-compressed JSON lines, ``<root>/AA/wiki_00.bz2`` ... (15,517 files under 157 folders; the
  folders are tar members too). Each member is decompressed on the fly as the tar streams by.
- **Archive order is not sorted order**: the tar's first member is not ``AA/wiki_00.bz2``. The
  archive is read in its own order, the unpacked tree in sorted path order; the same pages either
  way, in another order. A cursor into the archive counts members in archive order.
- **Each line** is ``{"id", "url", "title", "text": [sentence, ...], "text_with_links",
  "charoffset", "charoffset_with_links"}`` (``id`` a decimal string). ``text`` is the
  introduction's sentences as CoreNLP split them (HotpotQA's wiki-readme: Stanford CoreNLP 3.8.0);
  every sentence after the first keeps the whitespace before it (``" She was born ..."``), so
  their plain concatenation is the paragraph. The whitespace is stripped from each sentence here.
  ``text_with_links`` holds the same sentences with ``<a href="...">`` markup; if ``text`` carries
  such markup (an edited copy), it is removed and entities decoded.
- **Empty sentences** (whitespace only) keep their number and give no text, so the sentences after
  them keep the numbers HoVer's ``sent_id`` uses.
- **``page``** is the ``title`` exactly (HoVer's supporting facts name pages by HotpotQA title);
  ``sentences`` are indices into ``text`` (HoVer's ``sent_id``). Titles are case-insensitive
  identifiers for HotpotQA: about 2,600 titles collide once case-folded; each page keeps its own
  title.
- **No right reading**: an empty ``title`` (the page cannot be named) is skipped and counted. A
  line that is not JSON, lacks ``title``/``text`` or whose ``text`` is not a list of strings is
  skipped the same way, unless it is the first line of a file or member: then the file is not
  this format and the import stops with one line. ``text`` as a list of *paragraphs* is
  HotpotQA's full-page dump (``...-withlinks-processed``), whose sentence ids are not HoVer's:
  refused in one line.

Limits: one line (one page) is held at a time; the archive is streamed with one member open,
in bounded buffers. Resuming inside the archive streams it again from its start up to the
cursor's member (about a minute per GB of archive before it; see ``files.tar_lines``).
"""

from __future__ import annotations

import bz2
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from factdebate.tools.sources.base import (
    Cursor,
    NoReadingError,
    Page,
    SourceError,
    guarded_pages,
    json_object,
    sentence_list,
    strip_links,
    text_field,
)
from factdebate.tools.sources.files import (
    Entry,
    EntryFiles,
    plain_entries,
    read_lines,
    sorted_files,
    tar_lines,
)

MEMBER = re.compile(r"(?:^|/)wiki_\d+\.bz2$")
"""A file of the abstracts tree (``AA/wiki_00.bz2``)."""


def is_tar_bz2(path: Path) -> bool:
    """``path`` is a bz2-compressed tar (its first 512 decompressed bytes are a ustar header)."""
    try:
        with bz2.open(path, "rb") as f:
            head = f.read(512)
    except (OSError, EOFError, ValueError):
        return False
    return len(head) == 512 and head[257:262] == b"ustar"


class HoverWikiSource(EntryFiles):
    """The abstracts ``.tar.bz2``, its unpacked tree of ``wiki_NN.bz2`` files, or one such file."""

    name = "hover-wiki"
    _exact_done = False  # cursor offsets are decompressed bytes, sizes compressed

    def __init__(self, path: Path) -> None:
        """List the tree's ``wiki_*.bz2`` files in path order, or note the archive."""
        self.path = path
        self._archive = path.is_file() and is_tar_bz2(path)
        if self._archive:
            self._entries: list[Entry] = []
            return
        files = [path] if path.is_file() else sorted_files(path, "wiki_*.bz2")
        if not files:
            raise SourceError(str(path), "holds no wiki_NN.bz2 file (expected HotpotQA's "
                              "enwiki-20171001 abstracts tree)")
        self._entries = plain_entries(files)

    def files(self) -> list[Path]:
        """The archive, or the tree's files."""
        return [self.path] if self._archive else super().files()

    def total(self) -> int:
        """Bytes on disk (of the archive or of the files)."""
        return self.path.stat().st_size if self._archive else super().total()

    def done(self, cursor: Cursor) -> int:
        """Bytes on disk before ``cursor`` (archive: read when its member began)."""
        return int(cursor.get("at", 0)) if self._archive else super().done(cursor)

    def read(self, cursor: Cursor | None) -> Iterator[tuple[Page, Cursor]]:
        """Pages from ``cursor`` on (unreadable records as skipped pages, see the module doc)."""
        if self._archive:
            lines = tar_lines(self.path, lambda name: bool(MEMBER.search(name)), cursor)
        else:
            lines = read_lines(self._entries, cursor)
        return guarded_pages(lines, _page)


def _page(raw: bytes, where: Callable[[], str]) -> Page:
    """The page of one abstracts line.

    Raises:
        SourceError: Not this format (see the module doc).
        NoReadingError: An empty title.
    """
    record = json_object(raw, where)
    title = text_field(record, "title", where)
    text = record.get("text")
    if isinstance(text, list) and text and isinstance(text[0], list):
        raise SourceError(where(), "'text' is a list of paragraphs: this is HotpotQA's full-page "
                          "dump; HoVer's sentence ids index the introductions "
                          "(enwiki-20171001-pages-meta-current-withlinks-abstracts)", title)
    sentences = sentence_list(record, "text", where)
    if not title.strip():
        raise NoReadingError(where(), "empty field 'title' on a page with "
                             f"{len(sentences)} sentences", title)
    url = text_field(record, "url", where, required=False)
    return Page(page=title, title=title, url=url, where=f"{where()} (page {title!r})",
                elements=[(i, strip_links(s)) for i, s in enumerate(sentences)])
