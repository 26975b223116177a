"""``split_text``: validate a whole text and split it into sentences with their spans.

A rule-based splitter: sentence ends ``.!?`` followed by a space and no lower-case word, common
abbreviations and initials kept inside, every line break a boundary (lists and headings of model
answers carry no full stops). ``route_sentences`` sends each sentence to ``extract_claims``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Send

from factdebate.core.errors import InputError
from factdebate.core.labels import LABEL_SETS
from factdebate.core.state import fresh_claim
from factdebate.nodes.check_text.extract_claims import CONTEXT_CHARS
from factdebate.nodes.check_text.state import (
    CLAIM_LABEL_SETS,
    MAX_TEXT_CHARS,
    CheckTextContext,
    CheckTextState,
    Sentence,
    SentenceTask,
    verifier_context,
)
from factdebate.nodes.prepare import guard_server_run

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st sr jr vs etc e.g i.e inc ltd co corp no fig approx ca mt u.s u.k "
    "jan feb mar apr jun jul aug sep sept oct nov dec gen col lt sgt rev".split())


_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|\n")


def clean_text(text: object) -> str:
    """The text with control characters removed (line breaks kept); bad input raises one line."""
    if not isinstance(text, str):
        raise InputError(f"the text must be a string, got {type(text).__name__}",
                         "pass the text to check as a string")
    cleaned = "".join(ch for ch in text if ch in "\n\t\u200c\u200d"
                      or unicodedata.category(ch) not in ("Cc", "Cf", "Cs")).strip()
    if not cleaned:
        raise InputError("the text is empty or whitespace only", "pass a non-empty text")
    if len(cleaned) > MAX_TEXT_CHARS:
        raise InputError(f"the text has {len(cleaned)} characters, over the limit of "
                         f"{MAX_TEXT_CHARS}", f"split it into parts of at most {MAX_TEXT_CHARS} "
                         "characters and check each")
    return cleaned


def _boundary(text: str, match: re.Match[str]) -> bool:
    """True if ``match`` (a sentence-final mark) really ends a sentence."""
    if match.group(0) == "\n":
        return True
    before = re.search(r"([\w.]+)\.*$", text[: match.start() + 1])
    word = (before.group(1) if before else "").rstrip(".").lower()
    if match.group(0).startswith(".") and (word in _ABBREVIATIONS or re.fullmatch(r"[a-z]", word)):
        return False
    after = text[match.end():].lstrip()
    return not after[:1].islower()


def split_sentences(text: str) -> list[Sentence]:
    """Sentences of ``text`` with spans (``text[start:end]`` is the sentence, trimmed)."""
    pieces, start = [], 0
    for match in _END.finditer(text):
        if _boundary(text, match):
            pieces.append((start, match.end()))
            start = match.end()
    pieces.append((start, len(text)))
    out: list[Sentence] = []
    for a, b in pieces:
        chunk = text[a:b]
        lead = len(chunk) - len(chunk.lstrip())
        a, b = a + lead, a + len(chunk.rstrip())
        if b > a and any(ch.isalnum() for ch in text[a:b]):
            out.append(Sentence(index=len(out), start=a, end=b, text=text[a:b]))
    return out


def split_text_node(lookup: Callable[[str], Any]) -> Callable[..., dict[str, Any]]:
    """``split_text`` for a graph whose verifiers ``lookup`` compiles (the graphs layer's)."""

    def split_text(state: CheckTextState, runtime: Runtime[CheckTextContext]) -> dict[str, Any]:
        """Validated text and task, the verifier checked, sentences with spans; state reset."""
        ctx = runtime.context
        guard_server_run(ctx)
        task = LABEL_SETS.resolve(state.get("task") or ctx.label_set)
        if task not in CLAIM_LABEL_SETS:
            raise InputError(f"task {task!r} is not claim verification",
                             f"check a text with one of {', '.join(CLAIM_LABEL_SETS)}")
        verifier_context(ctx, lookup(ctx.framework).context_schema)  # fails before any call
        raw = state.get("text")
        text = clean_text(raw if raw is not None else state.get("claim"))
        return fresh_claim(CheckTextState, {"text": text, "task": task,
                                            "sentences": split_sentences(text),
                                            "review_on": bool(ctx.review)})

    return split_text


def route_sentences(state: CheckTextState) -> list[Send] | Literal["collect_claims"]:
    """One extraction branch per sentence (straight to ``collect_claims`` when there is none)."""
    text, sentences = state["text"] or "", state.get("sentences") or []
    if not sentences:
        return "collect_claims"
    return [Send("extract_claims", SentenceTask(
        sentence=s, context=text[max(0, s["start"] - CONTEXT_CHARS): s["start"]].strip()))
        for s in sentences]
