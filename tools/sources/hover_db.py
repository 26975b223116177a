"""HoVer's own corpus database, ``wiki_wo_links.db``: the HotpotQA 2017 introductions, read under
the format name ``hover-wiki`` like the abstracts dump they come from.

Official source: hover-nlp/hover ``download_data.sh`` fetches ``wiki_wo_links.db`` from
nlp.cs.unc.edu (2,156,273,664 bytes), licence CC BY-SA (Wikipedia text); HoVer's scripts
``prepare_data_for_doc_retrieval.py``, ``prepare_data_for_sent_retrieval.py`` and
``prepare_data_for_claim_verification.py`` read it. The SQLite file is read in place, read-only.

What the database holds, and what this reader does (each quirk has a fixture in
``tests/fixtures/sources/make.py`` and a test):

- **A DrQA-style table** ``documents(id PRIMARY KEY, text)``, one row per page. ``id`` is the
  HotpotQA title **NFD-normalized** (HoVer looks pages up with
  ``unicodedata.normalize('NFD', title)``, as DrQA does), while HoVer's supporting facts write
  titles as HotpotQA does, NFC: ``page`` is ``id`` normalized to NFC, so that
  ``Beyoncé`` (stored ``Beyonce`` + U+0301) is named as the gold evidence names it.
- **``text`` is the introduction as ONE string**, the sentences run together, links removed
  ("wo_links"): it keeps no sentence boundaries. HoVer's sentence ids come from re-splitting it
  with Stanford CoreNLP (``tokenize,ssplit``; ``prepare_data_for_sent_retrieval.py`` cuts
  ``text[first token begin : last token end]`` of each CoreNLP sentence), the same splitter
  HotpotQA used for the abstracts' sentence lists. :func:`split_sentences` reproduces that split
  without Java, from the rules of CoreNLP's tokenizer (``PTBLexer.flex``): a sentence ends at
  ``.``, ``!`` or ``?`` (with the closing quotes and brackets after it) before whitespace; not
  after a title, an initial or a dotted acronym (``Mr.``, ``George W. Bush``, ``U.S. Army``)
  unless the acronym precedes a sentence-opening word (``... the U.S. The``); after a company,
  month, state or name suffix (``Inc.``, ``Jan.``, ``Ill.``, ``Jr.``) only before a capital; not
  after ``No.``, ``approx.``, ``fig.`` ... before a number; not at an ellipsis (``...``); a blank
  line also ends one. These rules are CoreNLP's as published in its source; the split is not
  checked against CoreNLP itself here (no Java), and where a page's text makes them decide
  otherwise the numbering after that point differs from HoVer's. The abstracts archive
  (:mod:`~factdebate.tools.sources.hover_wiki`), which stores CoreNLP's own split, is the exact
  source of the ``sent_id`` numbers.
- **No right reading**: a row whose ``id`` is empty or not text, or whose ``text`` is not text
  (NULL, or bytes that are not UTF-8), is skipped and counted; the rest is read. A row with an
  empty ``text`` is an empty page (no passage).
- Not a database with that table (another SQLite file, FEVEROUS' ``wiki``): refused in one line.

Limits: one row is held at a time (rows are read :data:`FETCH_ROWS` to a statement) while its
text is split (an introduction: a few KB); a row whose ``text`` is over the record limit
(``core/input_limits``: ``dump_record_bytes``, 32 MiB) is not fetched, its page skipped and
counted. Time: one pass over the table in rowid order.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from factdebate.core import input_limits
from factdebate.tools.sources.base import Page, skipped_page
from factdebate.tools.sources.files import SqliteTable

WIKI_URL = "https://en.wikipedia.org/wiki/"
FETCH_ROWS = 500

# Stanford CoreNLP's English tokenizer (PTBLexer) decides whether the period after a word is its
# own token (a sentence end: ssplit ends a sentence at a "." or "!"/"?" token and keeps the closing
# quotes and brackets after it) or part of an abbreviation. Its classes, caseless unless noted:
# ABBREV1 ends a sentence only when whitespace and then whitespace or a capital letter follow.
_ABBREV1 = frozenset("""
jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thurs fri
ala ariz calif colo conn ct dak fla ga ind kan kans ky md mich minn mo mont neb nev okla penn tenn
va vt wis wisc wyo inc co cos corp pty ptys pte ptes ppty pptys ppte pptes ltd plc rt bancorp bhd
assn univ intl sys tel est ext sq jr bros ed.d ph.d esq etc al seq bldg
""".split())
_ABBREV1_CASED = frozenset({"Az", "Ark", "Del", "Ill", "La", "Mass", "Miss", "Ore", "Pa", "Tex",
                            "Wash"})  # a capital first letter: "la." and "pa." are words
# ABBREV2 (titles, initials, dotted acronyms, a few others) never ends a sentence...
_ABBREV2 = frozenset("""
mr mrs ms mx drs dr profs prof sens sen reps rep attys atty lt col gen messrs govs gov adm rev maj
sgt cpl pvt capt st ste ave pres lieut rt hon brig cmdr comdr pfc spc supts supt det mt ft adj adv
asst assoc ens insp mlle mme msgr sfc sr vs alex wm jos cie a.k.a cf treas ph invt elec natl mfg
mtg dept blvd rd
""".split())
_ABBREV2_CASED = frozenset({"Miss", "v"})
_ACRO = re.compile(r"[A-Za-z](?:\.[A-Za-z])*")
# ...except a dotted acronym or initial before one of these words, which start sentences.
_ACRO_NEXT = re.compile(
    r"(?:About|According|Additionally|After|An|A|As|At|But|Did|During|Earlier|He|Her|Here|How|"
    r"However|If|In|It|Last|Many|More|Mr\.|Ms\.|Now|Once|One|Other|Our|She|Since|So|Some|Such|"
    r"That|The|Their|Then|There|These|They|This|We|When|While|What|Who|Why|Yet|You)(?=[\s?!])")
# ABBREV3 keeps its period only before a number ("approx. 5", "No. 1").
_ABBREV3 = frozenset("ca fig figs prop no nos sec secs sect sects art arts para paras bldg pp op "
                     "approx rs".split())
_BANGWORDS = ("E!", "Yahoo!", "Jeopardy!")
_END = re.compile(r"[.!?]+[\"'\u201d\u2019\u00bb)\]}]*(?=\s)|\n[ \t]*\n")
_TOKEN = re.compile(r"[^\W_]+(?:\.[^\W_]+)*$")


def split_sentences(text: str) -> list[str]:
    """``text`` cut into sentences as HoVer's CoreNLP split cuts it (see the module docstring);
    each sentence without surrounding whitespace, none empty."""
    out: list[str] = []
    start = 0
    for match in _END.finditer(text):
        end = match.end()
        if not match.group(0).startswith("\n") and not _ends_sentence(text, match):
            continue
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return out


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    """The punctuation ``match`` (before whitespace) ends a sentence, as CoreNLP decides it."""
    mark = match.group(0).rstrip("\"'\u201d\u2019\u00bb)]}")
    before = text[max(0, match.start() - 60): match.start()]
    if not mark.startswith("."):  # "!" or "?" ends one, unless part of "Yahoo!"
        return not (mark == "!" and (before + "!").endswith(_BANGWORDS))
    dots = len(mark) - len(mark.lstrip("."))
    if dots == 3:
        return False  # an ellipsis
    after = text[match.end():].lstrip()
    if dots > 3:
        return bool(after[:1].isalpha())  # the fourth period of "...." ends the sentence
    if dots != 1 or mark != ".":
        return True
    token_match = _TOKEN.search(before)
    token = token_match.group(0) if token_match else ""
    lower = token.lower()
    if token and _ACRO.fullmatch(token) and _ACRO_NEXT.match(after):
        return True
    if lower in _ABBREV3 or (token == "Pt"):
        return not after[:1].isdigit()
    if lower in _ABBREV1 or token in _ABBREV1_CASED:
        gap = text[match.end(): match.end() + 2]
        return len(gap) == 2 and gap[0].isspace() and (gap[1].isspace() or gap[1].isupper()
                                                       or gap[1] == "<")
    if lower in _ABBREV2 or token in _ABBREV2_CASED or (token and _ACRO.fullmatch(token)):
        return False
    return True


class HoverDbSource(SqliteTable):
    """The ``documents`` table of ``wiki_wo_links.db``, in rowid order."""

    name = "hover-wiki"
    table, key, body, what = "documents", "id", "text", "HoVer's wiki_wo_links.db"
    text_factory = bytes  # a row that is not UTF-8 is skipped, not fatal
    fetch_rows = FETCH_ROWS

    def _page(self, rowid: int, raw_id: Any, raw_text: Any) -> Page:
        where = f"{self.path} row {rowid}"
        title = _text(raw_id)
        if title is None or not title.strip():
            return skipped_page(where, "", f"empty or non-text page id ({_kind(raw_id)})")
        title = unicodedata.normalize("NFC", title)
        where = f"{where} (page {title!r})"
        if isinstance(raw_text, input_limits.Oversize):
            return skipped_page(where, title, f"'text' is {raw_text.describe()}")
        text = _text(raw_text)
        if text is None:
            return skipped_page(where, title, f"'text' is {_kind(raw_text)}, not text")
        return Page(page=title, title=title, url=WIKI_URL + title.replace(" ", "_"), where=where,
                    elements=list(enumerate(split_sentences(text))))


def _text(value: Any) -> str | None:
    """A column value as text (None: NULL, a number, or bytes that are not UTF-8)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def _kind(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"not UTF-8 (byte 0x{value[exc.start]:02x})"
        return "text"
    return type(value).__name__
