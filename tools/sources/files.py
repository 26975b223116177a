"""JSON lines spread over files (plain, bz2, members of a zip or of a ``.tar.bz2``), read from a
resumable cursor.

A cursor is ``{"file": i, "offset": o, "line": n}``: the ``i``-th entry, ``o`` bytes into its
(decompressed) content, after its ``n``-th line. Resuming seeks there: free for a plain file,
a forward decompression for bz2 and zip members (seconds for a FEVER ``wiki-NNN.jsonl``).
Damage the decompressor finds (a truncated bz2 stream, a zip member whose CRC fails) is a
:class:`~factdebate.tools.sources.SourceError` naming the file.

Limits: one line is held at a time (plus the decompressors' buffers, under 1 MB); time is one
pass of decompression over what is read. A ``.tar.bz2`` (:func:`tar_lines`) cannot be seeked
into: resuming streams the archive again from its start up to the cursor's member, about a
minute per GB of compressed archive before it, then decompresses that member up to the offset.
"""

from __future__ import annotations

import bz2
import io
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from factdebate.core import input_limits
from factdebate.tools.sources.base import Cursor, SourceError


@dataclass(frozen=True)
class Entry:
    """One file of lines: how to name it, how big it is (progress units), how to open it."""

    label: str
    size: int
    open: Callable[[], IO[bytes]]


def plain_entries(files: list[Path]) -> list[Entry]:
    """Entries of plain (``.bz2``: bz2-compressed) files; sizes in bytes on disk."""

    def opener(path: Path) -> Callable[[], IO[bytes]]:
        if path.name.endswith(".bz2"):
            return lambda: bz2.open(path, "rb")
        return lambda: path.open("rb")

    return [Entry(str(p), p.stat().st_size, opener(p)) for p in files]


def zip_entries(archive: Path, keep: Callable[[str], bool],
                order: Callable[[str], Any] | None = None) -> tuple[zipfile.ZipFile, list[Entry]]:
    """The members of ``archive`` that ``keep`` accepts, sorted by ``order`` of their names (by
    name when None); sizes uncompressed. Only the central directory is read here.

    Raises:
        SourceError: Not a readable zip archive (a truncated download has no central directory).
    """
    try:
        zf = zipfile.ZipFile(archive)
        infos = [i for i in zf.infolist() if not i.is_dir() and keep(i.filename)]
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise SourceError(str(archive), f"not a readable zip archive, truncated or damaged ({exc})") \
            from exc
    infos.sort(key=lambda i: order(i.filename) if order else i.filename)

    def opener(name: str) -> Callable[[], IO[bytes]]:
        return lambda: zf.open(name)

    return zf, [Entry(f"{archive}:{i.filename}", i.file_size, opener(i.filename)) for i in infos]


_DAMAGE = (EOFError, OSError, zipfile.BadZipFile, zlib.error, ValueError, tarfile.TarError)


def read_lines(entries: list[Entry], cursor: Cursor | None
               ) -> Iterator[tuple[bytes, Callable[[], str], Cursor]]:
    """``(raw line, where(), cursor after it)`` for every non-blank line from ``cursor`` on."""
    start = cursor or {"file": 0, "offset": 0, "line": 0}
    for index in range(int(start["file"]), len(entries)):
        entry = entries[index]
        offset, lineno = (int(start["offset"]), int(start["line"])) if index == start["file"] \
            else (0, 0)
        try:
            handle = entry.open()
            if offset:
                handle.seek(offset)
        except _DAMAGE as exc:
            raise SourceError(entry.label, f"cannot be read ({_why(exc)})") from exc
        with handle:
            for raw in _lines(handle, entry.label, lineno):
                lineno += 1
                offset += len(raw)
                if not raw.strip():
                    continue
                n = lineno
                yield raw, (lambda n=n, label=entry.label: f"{label} line {n}"), \
                    {"file": index, "offset": offset, "line": lineno}


def _lines(handle: IO[bytes], label: str, lineno: int) -> Iterator[bytes]:
    """Lines of ``handle`` after line ``lineno``; decompression damage becomes a
    :class:`SourceError` naming the line it stopped at. A line longer than the record limit
    (``core/input_limits``: ``dump_record_bytes``) is read past without being held and given as
    an :class:`~factdebate.core.input_limits.Oversize` of its length (its reader skips it)."""
    lines = input_limits.bounded_lines(handle, input_limits.limit("dump_record_bytes"))
    while True:
        try:
            raw = next(lines, b"")
        except _DAMAGE as exc:
            raise SourceError(f"{label} line {lineno + 1}",
                              f"the file is truncated or damaged ({_why(exc)})") from exc
        if not raw:
            return
        lineno += 1
        yield raw


def _why(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:160] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def entries_done(entries: list[Entry], cursor: Cursor, *, exact: bool = True) -> int:
    """Progress units before ``cursor``: whole entries before it plus its offset (``exact``)."""
    index = int(cursor.get("file", 0))
    before = sum(e.size for e in entries[:index])
    if index >= len(entries):
        return before
    within = int(cursor.get("offset", 0))
    return before + (min(within, entries[index].size) if exact else 0)


class EntryFiles:
    """``files``, ``total`` and ``done`` of a source that reads its dump as :class:`Entry` lines.

    A reader sets ``self._entries`` and reads them with :func:`read_lines`; progress is the
    entries' sizes. ``_exact_done = False`` counts only whole entries before a cursor (a bz2
    file's cursor offset is in decompressed bytes, its size compressed).
    """

    _entries: list[Entry]
    _exact_done = True

    def files(self) -> list[Path]:
        """The entries' files, in reading order."""
        return [Path(e.label) for e in self._entries]

    def total(self) -> int:
        """Progress units of all entries (bytes on disk; uncompressed for zip members)."""
        return sum(e.size for e in self._entries)

    def done(self, cursor: Cursor) -> int:
        """Progress units before ``cursor``."""
        return entries_done(self._entries, cursor, exact=self._exact_done)


def sorted_files(root: Path, pattern: str) -> list[Path]:
    """Files under ``root`` matching ``pattern`` (recursively), sorted by relative path."""
    return sorted((p for p in root.rglob(pattern) if p.is_file()),
                  key=lambda p: p.relative_to(root).as_posix())


def describe(entries: list[Entry]) -> list[dict[str, Any]]:
    """``[{"file", "size"}]`` of ``entries`` (the manifest's record of what was read)."""
    return [{"file": e.label, "size": e.size} for e in entries]


class _Counted(io.RawIOBase):
    """A file read forward only, counting the bytes read (a stream's progress on disk)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw, self.pos = raw, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(buffer))
        buffer[: len(data)] = data
        self.pos += len(data)
        return len(data)


def tar_lines(archive: Path, keep: Callable[[str], bool], cursor: Cursor | None
              ) -> Iterator[tuple[bytes, Callable[[], str], Cursor]]:
    """``(raw line, where(), cursor after it)`` of the bz2-compressed JSON-lines members of a
    ``.tar.bz2`` that ``keep`` accepts (by member name), in archive order, from ``cursor`` on.

    The archive is streamed (``tarfile`` mode ``r|bz2``) and each member decompressed with bz2 on
    the fly: nothing is extracted, one member is open at a time. The cursor adds ``"at"``, the
    archive bytes read when its member began (progress on disk). ``file`` counts the kept
    members in archive order, which is not their sorted order.

    Raises:
        SourceError: Not a ``.tar.bz2``, or damaged or truncated (naming the member reached).
    """
    start = cursor or {"file": 0, "offset": 0, "line": 0}
    with archive.open("rb") as raw:
        counted = _Counted(raw)
        try:
            tar = tarfile.open(fileobj=counted, mode="r|bz2")  # noqa: SIM115 - closed below
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise SourceError(str(archive), f"not a readable .tar.bz2 archive ({_why(exc)})") from exc
        index, last = -1, "its start"
        with tar:
            while True:
                try:
                    member = tar.next()
                except _DAMAGE as exc:
                    raise SourceError(f"{archive} after {last}",
                                      f"the archive is truncated or damaged ({_why(exc)})") from exc
                if member is None:
                    return
                last = f"member {member.name}"
                if not member.isfile() or not keep(member.name):
                    continue
                index += 1
                if index < int(start["file"]):
                    continue
                yield from _member_lines(tar, member, index, counted.pos, f"{archive}:{member.name}",
                                         start if index == int(start["file"]) else None)


def _member_lines(tar: tarfile.TarFile, member: tarfile.TarInfo, index: int, at: int, label: str,
                  start: Cursor | None) -> Iterator[tuple[bytes, Callable[[], str], Cursor]]:
    offset, lineno = (int(start["offset"]), int(start["line"])) if start else (0, 0)
    try:
        handle = bz2.BZ2File(tar.extractfile(member))  # type: ignore[arg-type]
        left = offset
        while left:  # forward only: the member is a stream
            chunk = handle.read(min(left, 1 << 20))
            if not chunk:
                break
            left -= len(chunk)
    except _DAMAGE as exc:
        raise SourceError(label, f"cannot be read ({_why(exc)})") from exc
    with handle:
        for raw in _lines(handle, label, lineno):
            lineno += 1
            offset += len(raw)
            if not raw.strip():
                continue
            n = lineno
            yield raw, (lambda n=n: f"{label} line {n}"), \
                {"file": index, "offset": offset, "line": lineno, "at": at}


def _bounded_cell(db: Any, table: str, column: str, rowid: int, limit: int) -> Any:
    """``table.column`` of row ``rowid``, read only when at most ``limit`` bytes: the size comes
    from SQLite's incremental blob handle, which does not load the value (``length()`` of a text
    does: 1.3 GB of memory for a 300 MB cell); a larger value is an ``Oversize`` of its size. A
    value the handle cannot open (NULL, a number) is selected as it is; bytes that are not UTF-8
    come as ``bytes``.
    """
    import sqlite3

    try:
        with db.blobopen(table, column, rowid, readonly=True) as blob:
            size = len(blob)
            if size > limit:
                return input_limits.Oversize(size, limit)
            data = blob.read()
    except sqlite3.Error:
        row = db.execute(f"SELECT {column} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        return row[0] if row else None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data  # the reader names what is wrong with it


def sqlite_rows(db: Any, label: str, table: str, key: str, body: str, after: int,
                batch: int = 500) -> Iterator[tuple[int, Any, Any]]:
    """``(rowid, key, body)`` of ``table`` in rowid order after row ``after``, one row held at a
    time: a ``body`` over the record limit (``core/input_limits``: ``dump_record_bytes``) is not
    fetched and comes as an :class:`~factdebate.core.input_limits.Oversize` of its length.

    ``db`` is an open ``sqlite3`` connection; rows are read ``batch`` at a time by rowid (a
    statement per batch, stepped row by row). Time: one pass over the table.

    Raises:
        SourceError: The database cannot be read (naming ``label`` and the last row read).
    """
    import sqlite3

    limit = input_limits.limit("dump_record_bytes")
    query = f"SELECT rowid, {key} FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?"
    last = after
    while True:
        count = 0
        try:
            for rowid, name in db.execute(query, (last, batch)):
                count += 1
                last = rowid
                yield rowid, name, _bounded_cell(db, table, body, rowid, limit)
        except sqlite3.DatabaseError as exc:
            raise SourceError(f"{label} after row {last}", f"cannot be read ({exc})") from exc
        if count < batch:
            return


class SqliteTable:
    """A reader over one table of an SQLite dump (FEVEROUS' ``wiki``, HoVer's ``documents``):
    opened read-only and checked, progress over row ids, rows streamed by :func:`sqlite_rows`.

    A subclass sets :attr:`table`, :attr:`key` and :attr:`body` (its columns), :attr:`what` (the
    release named in a refusal) and :attr:`text_factory` (``bytes`` to read text that may not be
    UTF-8 and decide per row), and turns rows into pages in ``_page``.
    """

    table = ""
    key = ""
    body = ""
    what = ""
    text_factory: Any = str
    fetch_rows = 500

    def __init__(self, path: Path) -> None:
        """Open ``path`` read-only and check that it has :attr:`table` with its two columns.

        Raises:
            SourceError: Not an SQLite file, or not that table.
        """
        import sqlite3

        self.path = path
        try:
            self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            self._db.text_factory = self.text_factory
            tables = [_text(r[0]) for r in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")]
            columns = {_text(r[1]) for r in self._db.execute(f'PRAGMA table_info("{self.table}")')}
        except sqlite3.DatabaseError as exc:
            raise SourceError(str(path), f"not an SQLite database ({exc})") from exc
        if not {self.key, self.body} <= columns:
            raise SourceError(str(path), f"not {self.what}: it has no table {self.table}("
                              f"{self.key}, {self.body}) (tables: {', '.join(tables) or 'none'})")
        self._last = self._db.execute(f'SELECT max(rowid) FROM "{self.table}"').fetchone()[0] or 0

    def files(self) -> list[Path]:
        """The database file."""
        return [self.path]

    def total(self) -> int:
        """The highest rowid (progress runs over row ids)."""
        return int(self._last)

    def done(self, cursor: Cursor) -> int:
        """Row ids before ``cursor``."""
        return int(cursor.get("rowid", 0))

    def read(self, cursor: Cursor | None) -> Iterator[tuple[Any, Cursor]]:
        """Pages from ``cursor`` (the last row id read) on."""
        last = int((cursor or {}).get("rowid", 0))
        for rowid, key, body in sqlite_rows(self._db, str(self.path), self.table, self.key,
                                            self.body, last, self.fetch_rows):
            yield self._page(rowid, key, body), {"rowid": rowid}

    def _page(self, rowid: int, key: Any, body: Any) -> Any:
        raise NotImplementedError


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
