"""AVeriTeC's per-claim knowledge store: the web pages retrieved for each claim.

Official source: the AVeriTeC shared task's knowledge store on huggingface.co/chenxwh/AVeriTeC,
``data_store/knowledge_store/``: ``dev_knowledge_store.zip`` and, for train, ``train/train_0_999.zip``,
``train_1000_1999.zip``, ``train_2000_3068.zip`` (the dev store is about 6 GB unpacked for 500
claims), licence CC BY-NC 4.0 (the AVeriTeC data). Read in place: the zip (or a folder of such
zips), or the unpacked ``output_<split>/`` folder, or one member file.

The release as shipped, and what this reader does (each quirk has a fixture in
``tests/fixtures/sources/make.py`` and a test):

- **Zip members ``output_<split>/<n>.json``**: ``n`` is the claim's *index* in the split's claim
  file (``data/dev.json``), not an id the claim carries: the baseline's scraper
  (``script/scraper.sh`` -> ``src/retrieval/scraper_for_knowledge_store.py``) writes
  ``output_<split>/<i>.json`` for ``<i>.tsv`` and ``src/reranking/bm25_sentences.py`` reads
  ``<knowledge_store_dir>/<idx>.json`` for the ``idx``-th claim. The pool of a member's pages is
  that number (``"12"``), which is the id evaluation gives the same claim
  (``evaluation/datasets.averitec_claim_id``: ``averitec-dev-12`` -> ``12``). Members sort by
  number (``10.json`` after ``9.json``), not by name.
- **Each member is JSON lines** ``{"claim_id", "type", "query", "url", "url2text": [sentence,
  ...]}``. The scraper writes ``claim_id`` as the *string* of the file's number; the file name
  decides the pool, a line whose ``claim_id`` names another claim is pooled by its file and
  counted as a repair. A line without ``claim_id`` is read the same way; a ``claim_id`` that is
  not a string (a number) is pooled by the file too and counted as a repair, never coerced
  silently (in a file not named by number it has no right reading: the page is skipped).
- **One store per index**: the numbers restart in each split, so a zip (or folder) holding two
  ``output_<split>/`` folders would merge claim 12 of dev with claim 12 of train; it is refused
  in one line.
- **The same URL for several queries**: a URL found twice for one claim is indexed once.
- **``url2text`` empty** (``[]``: the page could not be scraped, the scraper writes the line
  anyway): an empty page, no passage. **``url2text`` null or not a list**, **an empty ``url``**:
  no right reading, the page is skipped and counted.
- A line that is not JSON is skipped the same way, unless it is the first line of a member: then
  the member is not the store's format and the import stops with one line.

``page`` is the URL (AVeriTeC's gold evidence names sources by URL); the store has no sentence
numbering the evaluation uses, so ``sentences`` stays empty. Passage ids are
``<claim>/<url>#<n>``: the same URL recurs in other claims' pools.

Limits: one line (one scraped page) is held at a time, plus the URLs seen for the current claim
(the shared task gives up to 1,000 per claim); a zip is read through its central directory and
one member stream at a time. Resuming inside a member decompresses that member again up to the
cursor (a member is one claim's store, about 12 MB on average for dev).
"""

from __future__ import annotations

import re
import zipfile
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
)
from factdebate.tools.sources.files import Entry, EntryFiles, plain_entries, read_lines, zip_entries

MEMBER = re.compile(r"(?:^|/)(\d+)\.json$")
"""A knowledge-store member: ``output_dev/12.json`` (the claim's index in its split)."""


def is_member(name: str) -> bool:
    """``name`` is a store member (``.../<n>.json``), not macOS metadata (``__MACOSX/``, ``._``)."""
    parts = name.replace("\\", "/").split("/")
    return bool(MEMBER.search(name)) and "__MACOSX" not in parts and not parts[-1].startswith("._")


def claim_number(name: str) -> str | None:
    """The claim index a member or file name carries (``output_dev/012.json`` -> ``"12"``)."""
    match = MEMBER.search(name.replace("\\", "/"))
    return str(int(match.group(1))) if match else None


def _split_of(name: str) -> str:
    """The ``output_<split>`` folder a member sits in (``""`` at the top)."""
    parts = name.replace("\\", "/").split("/")
    return parts[-2] if len(parts) > 1 else ""


def _order(name: str) -> tuple[str, int, str]:
    number = claim_number(name)
    return _split_of(name), int(number) if number is not None else 1 << 62, name


class AveritecStoreSource(EntryFiles):
    """The store as a zip of ``output_<split>/<n>.json`` members, a folder of those zips, the
    unpacked folder of ``<n>.json`` files, or one such file."""

    name = "averitec-store"

    def __init__(self, path: Path) -> None:
        """List the members (zip central directories) or files, ordered by claim number.

        Raises:
            SourceError: No store file, an unreadable zip, or the stores of two splits.
        """
        self.path = path
        self._zips: list[zipfile.ZipFile] = []
        self._entries: list[Entry] = []
        if path.is_file() and not zipfile.is_zipfile(path):
            self._entries = plain_entries([path])
        elif path.is_file():
            self._add_zip(path)
        else:
            files = sorted((p for p in path.rglob("*.json")
                            if p.is_file() and is_member(p.relative_to(path).as_posix())),
                           key=lambda p: _order(p.relative_to(path).as_posix()))
            if files:
                self._entries = plain_entries(files)
            for archive in sorted(path.rglob("*.zip")) if not files else []:
                self._add_zip(archive)
        if not self._entries:
            raise SourceError(str(path), "holds no output_<split>/<n>.json file (expected AVeriTeC's "
                              "knowledge store)")
        splits = sorted({_split_of(e.label.rsplit(":", 1)[-1]) for e in self._entries
                         if _split_of(e.label.rsplit(":", 1)[-1]).startswith("output_")})
        if len(splits) > 1:
            raise SourceError(str(path), f"holds the stores of {len(splits)} splits "
                              f"({', '.join(splits)}): claim numbers restart in each split, so "
                              "their pools would mix; index one split's store")

    def _add_zip(self, archive: Path) -> None:
        zf, entries = zip_entries(archive, is_member, _order)
        self._zips.append(zf)
        self._entries.extend(entries)

    def files(self) -> list[Path]:
        """The zips, or the member files."""
        if self._zips:
            return [Path(str(z.filename)) for z in self._zips]
        return super().files()

    def read(self, cursor: Cursor | None) -> Iterator[tuple[Page, Cursor]]:
        """One page per distinct URL of each claim, from ``cursor`` on."""
        seen = self._seen_before(cursor)

        def parse(raw: bytes, where: Callable[[], str]) -> Page | None:
            label = where().rsplit(" line ", 1)[0]
            page = _page(raw, where, claim_number(label))
            if seen[0] != label:
                seen[0], seen[1] = label, set()
            if page.page in seen[1]:
                return None
            seen[1].add(page.page)
            return page

        return guarded_pages(read_lines(self._entries, cursor), parse)

    def _seen_before(self, cursor: Cursor | None) -> list[Any]:
        """``[member, URLs]`` read before ``cursor`` in its member (a resumed build skips them)."""
        if not cursor or not int(cursor.get("offset", 0)):
            return ["", set()]
        entry = self._entries[int(cursor["file"])]
        urls: set[str] = set()
        for raw, where, after in read_lines([entry], None):
            if after["offset"] > int(cursor["offset"]):
                break
            try:
                page = _page(raw, where, claim_number(entry.label))
            except SourceError:
                continue
            urls.add(page.page)
        return [entry.label, urls]


def _page(raw: bytes, where: Callable[[], str], number: str | None) -> Page:
    """The page of one store line, pooled by ``number`` (its file's claim number) or, for a file
    not named by number, by the line's ``claim_id``.

    Raises:
        SourceError: Not JSON, or no claim to pool it in (first line of a member: not the format).
        NoReadingError: The line is the format but has no right reading (see the module doc).
    """
    record = json_object(raw, where)
    if "url" not in record and "url2text" not in record:
        raise SourceError(where(), f"not a knowledge-store line (keys: {', '.join(list(record)[:8])})")
    typed = record.get("claim_id")
    if typed is not None and not isinstance(typed, str):  # the scraper writes a string
        if number is None:
            raise NoReadingError(where(), f"field 'claim_id' is a {type(typed).__name__}, not "
                                 "a string, and the file name is not a claim number", "")
        stated = ""
    else:
        stated = text_field(record, "claim_id", where, required=False).strip()
    claim = number if number is not None else stated
    if not claim:
        raise SourceError(where(), "missing field 'claim_id' (and the file name is not a claim "
                          "number)")
    url = record.get("url")
    if not isinstance(url, str) or not url.strip():
        raise NoReadingError(where(), f"field 'url' is {'empty' if url == '' else repr(url)[:40]}",
                             str(url or ""))
    sentences = record.get("url2text")
    if not isinstance(sentences, list):
        state = "null" if sentences is None else f"a {type(sentences).__name__}"
        raise NoReadingError(where(), f"field 'url2text' is {state}, not a list of sentences", url)
    repairs = []
    if typed is not None and not isinstance(typed, str):
        repairs.append(f"claim_id is a {type(typed).__name__} ({str(typed)[:20]}), not a string: "
                       "pooled by the file's number")
    if stated and stated != claim and stated.lstrip("0") != claim.lstrip("0"):
        repairs.append(f"claim_id {stated!r} in a line of claim {claim}'s file: pooled by the file")
    elements = [(None, s if isinstance(s, str) else "") for s in sentences]
    if any(s is not None and not isinstance(s, str) for s in sentences):
        repairs.append("url2text holds non-text entries: read as empty sentences")
    return Page(page=url, title=url, url=url, pool=claim, id_prefix=f"{claim}/", elements=elements,
                repairs=repairs, where=where())
