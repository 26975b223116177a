"""What every reader shares: the :class:`Page` it yields, passages cut from it, one-line errors.

See the package docstring (``tools/sources/__init__.py``) for the passage contract.
"""


from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from factdebate.core import input_limits, json_input
from factdebate.core.errors import InputError
from factdebate.tools.chunking import CHUNK_CHARS, chunk_text  # noqa: F401 - re-exported

# CHUNK_CHARS: a ``chunk`` passage gathers consecutive sentences (elements) up to this many
# characters.
GRANULARITIES = ("chunk", "sentence")
"""``chunk`` (the default): consecutive sentences up to :data:`CHUNK_CHARS`; ``sentence``: one
passage per sentence (per table row for FEVEROUS tables). See docs/reproducing.md for the
measurements behind the default."""
MAX_ID_BYTES = 1024
"""Longest passage id the vector index stores (``tools/milvus_rag.py``)."""

Passage = dict[str, Any]
Cursor = dict[str, Any]


class SourceError(InputError):
    """A dump is malformed; the message names the file, the line (or page, row) and the problem."""

    def __init__(self, where: str, problem: str, page: str = "") -> None:
        """One line ``<where>: <problem>``; ``page`` names the page when it is known (a build
        that skips the record reports it)."""
        super().__init__(f"{where}: {problem}", "fix or replace that file; no index was written")
        self.where, self.why, self.page = where, problem, page


class NoReadingError(SourceError):
    """A record that is the format but has no right reading (FEVER: a page with sentences and
    no id). :func:`guarded_pages` skips its page wherever it is, even in a file's first record."""


@dataclass
class Page:
    """One page of a dump: its elements in order (id and text), as the reader found them."""

    page: str
    title: str
    elements: list[tuple[Any, str]]
    """``(element id, text)``: the id is one id, a list of ids (a FEVEROUS table row: its cells)
    or None (text without numbering)."""
    url: str = ""
    pool: str = ""
    id_prefix: str = ""
    """Prefix of the passage ids before ``page`` (AVeriTeC: ``<claim_id>/``)."""
    repairs: list[str] = field(default_factory=list)
    """What the reader repaired in this page, one phrase each (a quirk with one right reading,
    e.g. FEVER's unnumbered ``lines`` row that continues the row before it). Counted by the
    build (manifest ``quirks.repaired``); ``--strict`` stops at the first instead."""
    skip: str = ""
    """Non-empty: the record has no right reading, gives no passage, and this says why. One
    page is skipped, never the file; counted by the build (``quirks.skipped``)."""
    where: str = ""
    """File and line (row, member) the page was read from; set for repaired and skipped pages."""


def skipped_page(where: str, page: str, why: str) -> Page:
    """A page the reader could not read: no passage, counted and reported by the build."""
    return Page(page=page, title=page, elements=[], skip=why, where=where)


class Source(Protocol):
    """What every reader offers the builder."""

    name: str
    """Format name (``fever-wiki`` ...)."""
    path: Path

    def read(self, cursor: Cursor | None) -> Iterator[tuple[Page, Cursor]]:
        """Pages from ``cursor`` (None: the start), each with the cursor just past it."""
        ...

    def total(self) -> int:
        """Progress units of the whole dump (bytes or rows)."""
        ...

    def done(self, cursor: Cursor) -> int:
        """Progress units before ``cursor``."""
        ...

    def files(self) -> list[Path]:
        """The files read, in order (the source's fingerprint covers them)."""
        ...


_PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}",
        "-COLON-": ":"}
_PTB_RE = re.compile("|".join(map(re.escape, _PTB)))


def unescape_ptb(text: str) -> str:
    """FEVER's tokeniser escapes (``-LRB-`` ...) back to brackets."""
    return _PTB_RE.sub(_ptb, text) if "B-" in text or "-COLON-" in text else text


def _ptb(match: re.Match[str]) -> str:
    return _PTB[match.group(0)]


_TAG = re.compile(r"<[^>]{0,2000}>")


def strip_links(text: str) -> str:
    """Drop the ``<a href=...>`` markup of the HotpotQA "withlinks" dump, unescape entities."""
    return html.unescape(_TAG.sub("", text)) if "<" in text or "&" in text else text


def passage_id(prefix: str, page: str, n: int) -> str:
    """``<prefix><page>#<n>``; a page id too long for the index is shortened by a hash of it."""
    pid = f"{prefix}{page}#{n}"
    if len(pid.encode()) <= MAX_ID_BYTES:
        return pid
    digest = hashlib.sha1(page.encode()).hexdigest()[:16]
    head = page.encode()[: MAX_ID_BYTES - 64 - len(prefix.encode())].decode(errors="ignore")
    return f"{prefix}{head}~{digest}#{n}"


def passages_of(page: Page, granularity: str = "chunk", limit: int = CHUNK_CHARS) -> list[Passage]:
    """Group ``page``'s elements into passages (see :data:`GRANULARITIES`).

    Elements with empty text are skipped; text without an element id (a format without
    numbering) longer than ``limit`` is cut with :func:`chunk_text`.
    """
    groups: list[tuple[list[Any], list[str]]] = []
    size = 0
    for eid, raw in page.elements:
        text = raw.strip()
        if not text:
            continue
        if eid is None and len(text) > limit:
            groups.extend(([], [piece]) for piece in chunk_text(text, limit))
            size = limit
            continue
        if not groups or granularity == "sentence" or size + len(text) + 1 > limit:
            groups.append(([], []))
            size = 0
        ids, texts = groups[-1]
        if isinstance(eid, list):
            ids.extend(eid)
        elif eid is not None:
            ids.append(eid)
        texts.append(text)
        size += len(text) + 1
    return [
        {"id": passage_id(page.id_prefix, page.page, n), "title": page.title,
         "text": " ".join(texts), "url": page.url, "page": page.page, "sentences": ids,
         "pool": page.pool}
        for n, (ids, texts) in enumerate(groups, 1)
    ]


def guarded_pages(
    records: Iterator[tuple[bytes, Callable[[], str], Cursor]],
    parse: Callable[[bytes, Callable[[], str]], Page | None],
) -> Iterator[tuple[Page, Cursor]]:
    """``parse`` each JSON-lines record; a record it refuses becomes a skipped page.

    ``records`` are :func:`~factdebate.tools.sources.files.read_lines`' ``(raw, where, cursor)``;
    ``parse`` returns the record's page (None: nothing to index, e.g. FEVER's blank first page)
    or raises :class:`SourceError`. A :class:`NoReadingError` (the format, without a right
    reading) costs that record only: its page is yielded as :func:`skipped_page` with the
    error's problem as the reason. Any other :class:`SourceError` (not JSON, a missing field, a
    wrong type) does the same in a later record, but in the *first* record of a file it means
    the file is not the format at all: it propagates (one line, no index written).
    Decompression damage is raised by ``records`` itself and always propagates (the rest of the
    file cannot be read).
    """
    good: set[int] = set()
    for raw, where, after in records:
        entry = int(after.get("file", 0))
        try:
            page = parse(raw, where)
        except SourceError as exc:
            if entry not in good and not isinstance(exc, NoReadingError):
                raise
            yield skipped_page(exc.where, exc.page, exc.why), after
            continue
        good.add(entry)
        if page is not None:
            yield page, after


def json_object(raw: bytes, where: Callable[[], str]) -> dict[str, Any]:
    """One JSON-lines record as a dict, or :class:`SourceError` naming ``where()``.

    A record over the limit (``core/input_limits.Oversize``, read past without being held) is a
    :class:`NoReadingError`: its page is skipped wherever it stands.
    """
    if isinstance(raw, input_limits.Oversize):
        raise NoReadingError(where(), raw.describe())
    try:
        record = json_input.loads(raw)
    except UnicodeDecodeError as exc:
        raise SourceError(where(), f"not UTF-8 (byte 0x{raw[exc.start]:02x})") from exc
    except ValueError as exc:
        raise SourceError(where(), f"malformed JSON ({getattr(exc, 'msg', exc)})") from exc
    if not isinstance(record, dict):
        raise SourceError(where(), f"expected a JSON object, got {type(record).__name__}")
    return record


def text_field(record: dict[str, Any], name: str, where: Callable[[], str], *,
               required: bool = True) -> str:
    """``record[name]`` as the string the format says it is, or :class:`SourceError`.

    No type is coerced: a number where the format writes a string (an integer HoVer title or
    AVeriTeC ``claim_id``) is refused, not indexed as its digits - the gold evidence names pages
    by the string, and a release that writes another type is not the release it claims to be.
    """
    value = record.get(name)
    if value is None and not required:
        return ""
    if name not in record:
        raise SourceError(where(), f"missing field {name!r}")
    if not isinstance(value, str):
        raise SourceError(where(), f"field {name!r} must be a string, got {type(value).__name__}")
    return value


def sentence_list(record: dict[str, Any], name: str, where: Callable[[], str]) -> list[str]:
    """``record[name]`` as a list of strings (``None`` entries become ``""``)."""
    value = record.get(name)
    if name not in record:
        raise SourceError(where(), f"missing field {name!r}")
    if not isinstance(value, list) or not all(isinstance(s, str | None) for s in value):
        raise SourceError(where(), f"field {name!r} must be a list of sentences (strings)")
    return [s or "" for s in value]
