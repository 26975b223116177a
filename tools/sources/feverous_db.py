"""FEVEROUS' Wikipedia database: every page of the December 2020 dump, sentences, tables, lists.

Official source: the FEVEROUS release's ``feverous-wiki-pages-db.zip`` (fever.ai, about 24 GB
zipped holding ``feverous_wikiv1.db``, 5.4M pages), licence CC BY-SA 3.0 (Wikipedia text). SQLite
cannot open a database inside a zip: the zip is refused in one line that gives the ``unzip``
command to run once; the SQLite file is then read in place, read-only.

The database has one table ``wiki(id, data)``: ``id`` is the page title, ``data`` the page JSON
with ``order`` (element ids in page order) and the elements: ``sentence_N`` (a string),
``table_N`` (``{"table": [[{"id": "cell_T_R_C", "value": ...}, ...], ...], "caption"?}``),
``list_N`` (``{"list": [{"id": "item_L_I", "value": ...}, ...]}``) and ``section_N``
(``{"value": heading}``). ``page`` is the title; ``sentences`` are the element ids as the
dataset's evidence writes them after ``<title>_``: ``sentence_3``, ``cell_0_1_2`` (one table row
is one unit, its cells listed), ``item_1_0``, ``section_2``, ``table_caption_0``. Wiki links
``[[target|anchor]]`` are shown as their anchor text.

Quirks and what this reader does (each has a fixture in ``tests/fixtures/sources/make.py`` and a
test): the schema decides the format once (``wiki(id, data)``), so a bad row costs that row only.
A row whose ``id`` is empty, whose ``data`` is not JSON or has no ``order`` list has no right
reading: skipped and counted. An ``order`` that names an element the page does not hold, or an
element that is not what its id says (a ``table_N`` without ``table``), is left out of an
otherwise readable page: a repair, counted. Element kinds this reader does not index are passed
over silently.

Limits: one row is held at a time (rows are read :data:`FETCH_ROWS` to a statement), one page's
JSON parsed at a time (a large page with tables: a few MB); a row whose ``data`` is over the
record limit (``core/input_limits``: ``dump_record_bytes``, 32 MiB) is not fetched, its page
skipped and counted. Time: one pass over the table in rowid order.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

from factdebate.core import input_limits, json_input
from factdebate.tools.sources.base import Page, SourceError, skipped_page
from factdebate.tools.sources.files import SqliteTable

WIKI_URL = "https://en.wikipedia.org/wiki/"
FETCH_ROWS = 500
_LINK = re.compile(r"\[\[([^\]|]*)\|([^\]]*)\]\]|\[\[([^\]|]*)\]\]")


def unlink(text: str) -> str:
    """``[[target|anchor]]`` -> ``anchor``, ``[[target]]`` -> ``target``."""
    if "[[" not in text:
        return text
    return _LINK.sub(lambda m: m.group(2) if m.group(1) is not None else m.group(3), text)


class FeverousDbSource(SqliteTable):
    """The ``wiki`` table of ``feverous_wikiv1.db``, in rowid order."""

    name = "feverous-db"
    table, key, body, what = "wiki", "id", "data", "a FEVEROUS database"
    fetch_rows = FETCH_ROWS

    def __init__(self, path: Path) -> None:
        """Open the database read-only and check that it has FEVEROUS' table.

        Raises:
            SourceError: A zip (the download: the message says the ``unzip`` command), not an
                SQLite file, or no table ``wiki(id, data)``.
        """
        if zipfile.is_zipfile(path):
            raise SourceError(str(path), zip_refusal(path))
        super().__init__(path)

    def _page(self, rowid: int, title: Any, data: Any) -> Page:
        where = f"{self.path} row {rowid}"
        if not isinstance(title, str) or not title.strip():
            return skipped_page(where, "", "empty or non-text page id")
        where = f"{where} (page {title!r})"
        if isinstance(data, input_limits.Oversize):
            return skipped_page(where, title, f"data is {data.describe()}")
        try:
            page = json_input.loads(data)
        except (TypeError, ValueError) as exc:
            why = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
            return skipped_page(where, title, f"data is not page JSON ({why})")
        if not isinstance(page, dict) or not isinstance(page.get("order"), list):
            return skipped_page(where, title, "the page JSON has no 'order' list")
        elements: list[tuple[Any, str]] = []
        repairs: list[str] = []
        for eid in page["order"]:
            try:
                elements.extend(_elements(eid, page.get(eid), where))
            except SourceError as exc:
                repairs.append(f"{exc.why}; left out")
        return Page(page=title, title=title, url=WIKI_URL + title.replace(" ", "_"),
                    elements=elements, repairs=repairs, where=where)


def zip_refusal(path: Path) -> str:
    """One line: ``path`` is a zip (the FEVEROUS download), what it holds, the command to run."""
    try:
        with zipfile.ZipFile(path) as zf:
            dbs = [i.filename for i in zf.infolist() if i.filename.endswith(".db")]
    except (zipfile.BadZipFile, OSError) as exc:
        return f"a zip archive, not an SQLite database, and not readable ({exc})"
    held = f"holding {dbs[0]}" if dbs else "holding no .db file"
    target = path.parent / (dbs[0] if dbs else "feverous_wikiv1.db")
    return (f"is a zip archive {held}; SQLite cannot read a database inside a zip: run "
            f"`unzip {path} -d {path.parent}` once, then index {target}")

def _elements(eid: Any, value: Any, where: str) -> list[tuple[Any, str]]:
    """The ``(ids, text)`` units of one page element (a table gives one per row)."""
    if not isinstance(eid, str) or value is None:
        raise SourceError(where, f"'order' names {eid!r}, which the page does not hold")
    kind = eid.rsplit("_", 1)[0]
    if kind == "sentence" and isinstance(value, str):
        return [(eid, unlink(value))]
    if kind == "section" and isinstance(value, dict):
        return [(eid, unlink(str(value.get("value", ""))))]
    if kind == "table" and isinstance(value, dict) and isinstance(value.get("table"), list):
        units: list[tuple[Any, str]] = []
        if value.get("caption"):
            units.append((f"table_caption_{eid.rsplit('_', 1)[1]}", unlink(str(value["caption"]))))
        for row in value["table"]:
            cells = [c for c in row if isinstance(c, dict) and "id" in c] if isinstance(row, list) else []
            units.append(([c["id"] for c in cells],
                          " | ".join(unlink(str(c.get("value", ""))) for c in cells)))
        return units
    if kind == "list" and isinstance(value, dict) and isinstance(value.get("list"), list):
        return [(item["id"], unlink(str(item.get("value", ""))))
                for item in value["list"] if isinstance(item, dict) and "id" in item]
    if kind in ("sentence", "section", "table", "list"):
        raise SourceError(where, f"element {eid!r} is not a FEVEROUS {kind}")
    return []  # an element kind this reader does not index
