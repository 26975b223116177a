"""A Wikipedia text dump as parquet or JSON lines rows ``{id, url, title, text}``.

Official source: the ``wikimedia/wikipedia`` dataset on Hugging Face (e.g. ``20231101.en/
train-000NN-of-00041.parquet``, 41 files, about 11 GB, 6.4M articles), licence CC BY-SA 3.0 and
GFDL (Wikipedia text); any JSON lines file with the same four fields reads the same way. Parquet is
read one record batch at a time (``pyarrow``), so memory stays bounded.

``page`` is the title (how the project's Wikipedia retrievers name pages); articles are cut into
passages of about 2,000 characters at sentence ends; no sentence numbering (``sentences`` = []).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from factdebate.tools.sources.base import (
    Cursor,
    Page,
    SourceError,
    guarded_pages,
    json_object,
    skipped_page,
    text_field,
)
from factdebate.tools.sources.files import Entry, entries_done, plain_entries, read_lines, sorted_files

BATCH_ROWS = 1000
COLUMNS = ["id", "url", "title", "text"]


def _line_page(raw: bytes, where: Any) -> Page | None:
    return _page(json_object(raw, where), where)


def _page(record: dict[str, Any], where: Any) -> Page | None:
    title = text_field(record, "title", where)
    text = text_field(record, "text", where)
    text_field(record, "id", where)
    url = text_field(record, "url", where, required=False)
    if not title.strip():
        raise SourceError(where(), "empty field 'title'")
    return Page(page=title, title=title, url=url, elements=[(None, text)]) if text.strip() else None


class WikipediaSource:
    """``*.parquet`` files (or ``*.jsonl``) of a folder, or one such file."""

    name = "wikipedia"

    def __init__(self, path: Path) -> None:
        """List the parquet (or, failing that, JSON lines) files."""
        self.path = path
        files = [path] if path.is_file() else sorted_files(path, "*.parquet") or \
            sorted_files(path, "*.jsonl")
        if not files:
            raise SourceError(str(path), "holds no .parquet or .jsonl file")
        self._parquet = files[0].name.endswith(".parquet")
        self._files = files
        if self._parquet:
            self._rows = [self._parquet_rows(f) for f in files]
        else:
            self._entries: list[Entry] = plain_entries(files)

    def _parquet_rows(self, path: Path) -> int:
        import pyarrow.parquet as pq

        try:
            meta = pq.ParquetFile(path)
            names = set(meta.schema_arrow.names)
        except Exception as exc:  # pyarrow's ArrowInvalid / OSError for a damaged file
            raise SourceError(str(path), f"not a readable parquet file ({exc})") from exc
        missing = [c for c in ("title", "text") if c not in names]
        if missing:
            raise SourceError(str(path), f"parquet file lacks column(s) {', '.join(missing)}")
        import pyarrow as pa

        typed = {f.name: f.type for f in meta.schema_arrow}
        wrong = [f"{c} is {typed[c]}" for c in ("id", "url", "title", "text")
                 if c in typed and not (pa.types.is_string(typed[c])
                                        or pa.types.is_large_string(typed[c]))]
        if wrong:  # the schema is typed: every row would be refused, so the file is
            raise SourceError(str(path), f"parquet columns must be strings ({', '.join(wrong)}): "
                              "not a Wikipedia text dump as published")
        return int(meta.metadata.num_rows)

    def files(self) -> list[Path]:
        """The files, in reading order."""
        return list(self._files)

    def total(self) -> int:
        """Rows (parquet) or bytes (JSON lines)."""
        return sum(self._rows) if self._parquet else sum(e.size for e in self._entries)

    def done(self, cursor: Cursor) -> int:
        """Rows or bytes before ``cursor``."""
        if not self._parquet:
            return entries_done(self._entries, cursor)
        index = int(cursor.get("file", 0))
        return sum(self._rows[:index]) + int(cursor.get("row", 0))

    def read(self, cursor: Cursor | None) -> Iterator[tuple[Page, Cursor]]:
        """Articles from ``cursor`` on."""
        if not self._parquet:  # a bad line costs its page, a bad first line the file
            yield from guarded_pages(read_lines(self._entries, cursor), _line_page)
            return
        start = cursor or {"file": 0, "row": 0}
        for index in range(int(start["file"]), len(self._files)):
            skip = int(start["row"]) if index == int(start["file"]) else 0
            yield from self._read_parquet(index, skip)

    def _read_parquet(self, index: int, skip: int) -> Iterator[tuple[Page, Cursor]]:
        import pyarrow.parquet as pq

        path = self._files[index]
        meta = pq.ParquetFile(path)
        columns = [c for c in COLUMNS if c in meta.schema_arrow.names]
        row, groups = 0, []
        for g in range(meta.metadata.num_row_groups):  # start at the row group holding `skip`
            size = meta.metadata.row_group(g).num_rows
            if row + size <= skip:
                row += size
                continue
            groups.append(g)
        try:
            for batch in meta.iter_batches(batch_size=BATCH_ROWS, row_groups=groups, columns=columns):
                for record in batch.to_pylist():
                    row += 1
                    if row <= skip:
                        continue
                    n = row
                    try:
                        page = _page(record, lambda n=n: f"{path} row {n}")
                    except SourceError as exc:  # one row without a reading: that page only
                        page = skipped_page(exc.where, exc.page, exc.why)
                    if page is not None:
                        yield page, {"file": index, "row": row}
        except SourceError:
            raise
        except Exception as exc:  # pyarrow: a damaged page or column chunk
            raise SourceError(f"{path} near row {row + 1}", f"cannot be read ({exc})") from exc
