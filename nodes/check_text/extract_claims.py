"""Claim extraction for a whole text: split into sentences, extract per sentence, collect.

``split_text`` validates the text and splits it into sentences with their character spans (a
rule-based splitter: sentence ends ``.!?`` followed by a space and no lower-case word, common
abbreviations and initials kept inside, every line break a boundary - lists and headings of model
answers carry no full stops). ``extract_claims`` runs once per sentence (a ``Send`` branch), with
the preceding text as context for resolving pronouns (FActScore/SAFE's per-sentence atomic facts,
FacTool's check-worthiness). ``collect_claims`` merges identical claims (normalised text), keeps
text order and marks the check-worthy claims over ``max_claims`` as skipped.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable
from typing import Any, Literal

from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.prepare import guard_server_run
from factdebate.prompts import load_prompts
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel, Field

from factdebate.nodes.check_text.state import (
    CLAIM_LABEL_SETS,
    MAX_TEXT_CHARS,
    CheckTextContext,
    CheckTextState,
    ClaimEntry,
    ExtractedClaim,
    Sentence,
    SentenceTask,
    verifier_context,
)
from factdebate.core.context import MAX_CLAIM_CHARS
from factdebate.core.errors import InputError
from factdebate.core.labels import LABEL_SETS
from factdebate.core.state import fresh_claim

MAX_CLAIMS_PER_SENTENCE = 8
CONTEXT_CHARS = 800
"""Preceding text shown with each sentence (enough for the referents of its pronouns)."""

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st sr jr vs etc e.g i.e inc ltd co corp no fig approx ca mt u.s u.k "
    "jan feb mar apr jun jul aug sep sept oct nov dec gen col lt sgt rev".split())
_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|\n")


class ClaimOut(BaseModel):
    """One extracted claim."""

    claim: str = Field(description="One self-contained fact, as a complete sentence.")
    check_worthy: bool = Field(description="A statement of fact that evidence could confirm or "
                               "refute (not an opinion, question, advice or hedge).")
    reason: str = Field(description="Why it is (not) check-worthy, a few words.")


class ClaimsOut(BaseModel):
    """Structured output of claim extraction for one sentence."""

    claims: list[ClaimOut] = Field(max_length=MAX_CLAIMS_PER_SENTENCE,
                                   description="The sentence's atomic claims, in order.")


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
                                            "sentences": split_sentences(text)})

    return split_text


def route_sentences(state: CheckTextState) -> list[Send] | Literal["collect_claims"]:
    """One extraction branch per sentence (straight to ``collect_claims`` when there is none)."""
    text, sentences = state["text"] or "", state.get("sentences") or []
    if not sentences:
        return "collect_claims"
    return [Send("extract_claims", SentenceTask(
        sentence=s, context=text[max(0, s["start"] - CONTEXT_CHARS): s["start"]].strip()))
        for s in sentences]


async def extract_claims(state: SentenceTask,
                         runtime: Runtime[CheckTextContext]) -> dict[str, Any]:
    """The atomic claims of one sentence; an unreadable reply verifies the sentence as is."""
    ctx, sentence = runtime.context, state["sentence"]
    messages = load_prompts(ctx.prompt_set).render(
        "extract_claims", context=state["context"] or "(start of the text)",
        sentence=sentence["text"], max_claims=MAX_CLAIMS_PER_SENTENCE)
    calls, reply_meta = CallLog(), dict[str, Any]()
    parsed, _raw = await ask(ctx, ctx.extraction_model_spec, messages, ClaimsOut, calls=calls,
                             role="extract", round_=sentence["index"] + 1, metadata=reply_meta)
    replied = parsed.claims if isinstance(parsed, ClaimsOut) else []
    claims = [ExtractedClaim(sentence=sentence["index"], claim=_tidy(c.claim),
                             check_worthy=bool(c.check_worthy), reason=c.reason.strip())
              for c in replied if grounded(c.claim, f"{state['context']} {sentence['text']}")]
    where = f"extract: sentence {sentence['index'] + 1}"
    why = ("an unreadable reply" if parsed is None or reply_meta.get("repetition_cut") else
           "only claims not drawn from the text" if replied and not claims else "")
    if why:
        claims = [ExtractedClaim(sentence=sentence["index"], claim=_tidy(sentence["text"]),
                                 check_worthy=True, reason=f"extraction gave {why}")]
        calls.flags.append(f"{where} gave {why}; the sentence itself is verified as one claim")
    elif len(claims) < len(replied):
        calls.flags.append(f"{where}: {len(replied) - len(claims)} claim(s) not drawn from the "
                           "text were dropped")
    return {"extracted": claims[:MAX_CLAIMS_PER_SENTENCE], **calls.update()}


_WORD = re.compile(r"\w{4,}")


def grounded(claim: str, source: str) -> bool:
    """True if ``claim`` is non-empty and shares a word of four letters or more with ``source``.

    A claim with no word of its sentence or context is not drawn from the text: a small model
    copying the prompt's placeholder, or inventing a fact. It is dropped, never verified.
    """
    words = {w.casefold() for w in _WORD.findall(claim)}
    if not _tidy(claim):
        return False
    return not words or bool(words & {w.casefold() for w in _WORD.findall(source)})


def _tidy(claim: str) -> str:
    return " ".join(claim.split())[:MAX_CLAIM_CHARS]


def claim_key(claim: str) -> str:
    """Stable id of a claim: identical claims up to case, spacing and final punctuation share it."""
    norm = re.sub(r"\s+", " ", claim.casefold()).strip().rstrip(".!?;: ")
    return "c" + hashlib.sha1(norm.encode("utf-8")).hexdigest()[:10]


def collect_claims(state: CheckTextState, runtime: Runtime[CheckTextContext]) -> dict[str, Any]:
    """Distinct claims in text order; check-worthy ones over ``max_claims`` marked skipped."""
    entries: dict[str, ClaimEntry] = {}
    for c in sorted(state.get("extracted") or [], key=lambda c: c["sentence"]):
        key = claim_key(c["claim"])
        entry = entries.setdefault(key, ClaimEntry(
            key=key, claim=c["claim"], sentences=[], check_worthy=False, reason=c["reason"],
            status="not_check_worthy"))
        if c["sentence"] not in entry["sentences"]:
            entry["sentences"].append(c["sentence"])
        if c["check_worthy"] and not entry["check_worthy"]:
            entry["check_worthy"], entry["reason"] = True, c["reason"]
    limit, debated = runtime.context.max_claims, 0
    for entry in entries.values():
        if entry["check_worthy"]:
            entry["status"] = "verify" if debated < limit else "skipped"
            debated += 1
    skipped = sum(e["status"] == "skipped" for e in entries.values())
    flags = [f"{skipped} check-worthy claim(s) skipped: over max_claims={limit}"] if skipped else []
    return {"claims": list(entries.values()), "flags": flags}
