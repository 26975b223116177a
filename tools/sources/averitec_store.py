"""AVeriTeC's per-claim knowledge store: the web pages retrieved for each claim.

Official source: the AVeriTeC shared task's knowledge store (huggingface.co/chenxwh/AVeriTeC,
``data_store/knowledge_store/{train,dev,test}/``, one ``<claim_id>.json`` per claim; the dev
store is about 6 GB unpacked for 500 claims), licence CC BY-NC 4.0 (the AVeriTeC data).

Each file holds JSON lines ``{"claim_id", "type", "query", "url", "url2text": [sentence, ...]}``.
A claim's debaters search only its own pool: every passage carries ``pool`` = the claim id,
which the retrievers filter on (``RetrieverSettings.pool``). ``page`` is the URL (AVeriTeC's gold
evidence names sources by URL); the store has no sentence numbering the evaluation uses, so
``sentences`` stays empty. A URL found twice for one claim (two queries returned it) is indexed
once. Passage ids are ``<claim_id>/<url>#<n>``: the same URL recurs in other claims' pools.
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
    text_field,
)
from factdebate.tools.sources.files import Entry, EntryFiles, plain_entries, read_lines


class AveritecStoreSource(EntryFiles):
    """A folder of ``<claim_id>.json`` files (or one such file)."""

    name = "averitec-store"

    def __init__(self, path: Path) -> None:
        """List the folder's ``*.json`` files, ordered by claim id where names are numbers."""
        self.path = path
        if path.is_file():
            files = [path]
        else:
            files = sorted((p for p in path.rglob("*.json") if p.is_file()),
                           key=lambda p: (int(p.stem) if p.stem.isdigit() else 1 << 62,
                                          p.relative_to(path).as_posix()))
        if not files:
            raise SourceError(str(path), "holds no <claim_id>.json file (expected AVeriTeC's "
                              "knowledge store)")
        self._entries: list[Entry] = plain_entries(files)

    def read(self, cursor: Cursor | None) -> Iterator[tuple[Page, Cursor]]:
        """One page per distinct URL of each claim, from ``cursor`` on."""
        seen = self._seen_before(cursor)
        for raw, where, after in read_lines(self._entries, cursor):
            record = json_object(raw, where)
            claim = text_field(record, "claim_id", where)
            if not claim.strip():
                raise SourceError(where(), "empty field 'claim_id'")
            url = text_field(record, "url", where)
            if not url.strip():
                raise SourceError(where(), "empty field 'url'")
            sentences = sentence_list(record, "url2text", where)
            if seen[0] != claim:
                seen = (claim, set())
            if url in seen[1]:
                continue
            seen[1].add(url)
            yield Page(page=url, title=url, url=url, pool=claim, id_prefix=f"{claim}/",
                       elements=[(None, s) for s in sentences]), after

    def _seen_before(self, cursor: Cursor | None) -> tuple[str, set[str]]:
        """The claim and URLs read before ``cursor`` in its file (a resumed build skips them)."""
        if not cursor or not int(cursor.get("offset", 0)):
            return "", set()
        claim, urls = "", set()
        entry = self._entries[int(cursor["file"])]
        for raw, where, after in read_lines([entry], None):
            if after["offset"] > int(cursor["offset"]):
                break
            record = json_object(raw, where)
            if text_field(record, "claim_id", where) != claim:
                claim, urls = text_field(record, "claim_id", where), set()
            urls.add(text_field(record, "url", where))
        return claim, urls
