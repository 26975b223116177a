"""The HotpotQA 2017 introductory-paragraph dump that HoVer's supporting facts point into.

Official source: HotpotQA's "processed Wikipedia" download
``enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2`` (about 1.5 GB;
hotpotqa.github.io/wiki-readme lists its exact size and MD5), licence CC BY-SA 4.0; HoVer
(hover-nlp/hover, MIT) uses it as its corpus. Unpack the tar once (``tar xjf``): it holds a
tree of folders ``AA/`` ... with files ``wiki_00.bz2`` ..., each bz2-compressed JSON lines, read
here without extracting them.

Each line is ``{"id", "url", "title", "text": [sentence, ...]}`` (the "withlinks" text carries
``<a href="...">`` markup, removed here). ``page`` is the ``title`` (HoVer's supporting facts name
pages by HotpotQA title); ``sentences`` are indices into ``text``, as HoVer's ``sent_id``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from factdebate.tools.sources.base import (
    Cursor,
    Page,
    SourceError,
    json_object,
    sentence_list,
    strip_links,
    text_field,
)
from factdebate.tools.sources.files import Entry, EntryFiles, plain_entries, read_lines, sorted_files


class HoverWikiSource(EntryFiles):
    """A tree of ``wiki_NN.bz2`` files (or one such file)."""

    name = "hover-wiki"
    _exact_done = False  # cursor offsets are decompressed bytes, sizes compressed

    def __init__(self, path: Path) -> None:
        """List the tree's ``wiki_*.bz2`` files in path order."""
        self.path = path
        files = [path] if path.is_file() else sorted_files(path, "wiki_*.bz2")
        if not files:
            raise SourceError(str(path), "holds no wiki_NN.bz2 file (expected HotpotQA's "
                              "enwiki-20171001 abstracts tree)")
        self._entries: list[Entry] = plain_entries(files)

    def read(self, cursor: Cursor | None) -> Iterator[tuple[Page, Cursor]]:
        """Pages from ``cursor`` on."""
        for raw, where, after in read_lines(self._entries, cursor):
            record = json_object(raw, where)
            title = text_field(record, "title", where)
            if not title.strip():
                raise SourceError(where(), "empty field 'title'")
            if record.get("text") and isinstance(record["text"][0], list):
                raise SourceError(where(), "'text' is a list of paragraphs: this is HotpotQA's "
                                  "full-page dump; HoVer's sentence ids index the introductions "
                                  "(enwiki-20171001-pages-meta-current-withlinks-abstracts)")
            sentences = sentence_list(record, "text", where)
            url = text_field(record, "url", where, required=False)
            yield Page(page=title, title=title, url=url,
                       elements=[(i, strip_links(s)) for i, s in enumerate(sentences)]), after
