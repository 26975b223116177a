"""``extract_claims``: a sentence's atomic, check-worthy claims (one ``Send`` branch per sentence).

Runs with the preceding text as context for resolving pronouns (FActScore/SAFE's per-sentence
atomic facts, FacTool's check-worthiness); a claim must be grounded in its sentence.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from factdebate.core.context import MAX_CLAIM_CHARS
from factdebate.nodes.check_text.state import (
    CheckTextContext,
    ExtractedClaim,
    SentenceTask,
)
from factdebate.nodes.llm import CallLog, ask
from factdebate.prompts import load_prompts

MAX_CLAIMS_PER_SENTENCE = 8


CONTEXT_CHARS = 800
"""Preceding text shown with each sentence (enough for the referents of its pronouns)."""


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
    cleaned = [(c, clean_claim_text(c.claim)) for c in replied]
    debris = sum(not text for _c, text in cleaned)
    claims = [ExtractedClaim(sentence=sentence["index"], claim=text,
                             check_worthy=bool(c.check_worthy), reason=c.reason.strip())
              for c, text in cleaned
              if text and grounded(text, f"{state['context']} {sentence['text']}")]
    if debris:
        calls.flags.append(f"extract: sentence {sentence['index'] + 1}: {debris} reply fragment(s) "
                           "holding no claim (markup or punctuation only) were dropped")
        replied = [c for c, text in cleaned if text]
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


_TAG = re.compile(r"</?[A-Za-z][\w:.-]*\s*/?>")
_KEY_PREFIX = re.compile(r'^"?(?:claim|text|sentence)"?\s*:\s*', re.IGNORECASE)
_EDGE_DEBRIS = "{}[],:;|<>` \t\n"
_LETTER = re.compile(r"[^\W\d_]")


def clean_claim_text(claim: str) -> str:
    """``claim`` without the markup a small model leaves in it, or ``""`` when nothing is left.

    Tags (``</claim>``), JSON punctuation at either end (``},{``, quotes, brackets) and a leading
    ``"claim":`` key are removed; a closing ``.``/``!``/``?`` stays. A fragment with no letter
    (``...``) holds no claim. Claims that differ only in such debris then share one
    :func:`claim_key`, so ``collect_claims`` merges them (one claim, every sentence pointing at it).
    """
    text = _TAG.sub(" ", claim)
    for _ in range(3):  # '{"claim": "..."},' peels in two passes
        text = _KEY_PREFIX.sub("", text.strip(_EDGE_DEBRIS))
        if text.count('"') % 2:  # an unpaired quote at an end is debris, a quotation is not
            text = text[1:] if text.startswith('"') else text[:-1] if text.endswith('"') else text
        elif text.count('"') == 2 and text[:1] == text[-1:] == '"':  # a JSON string's quotes
            text = text[1:-1]
    text = _tidy(text)
    return text if _LETTER.search(text) else ""


def claim_key(claim: str) -> str:
    """Stable id of a claim: identical claims up to case, spacing and final punctuation share it."""
    norm = re.sub(r"\s+", " ", claim.casefold()).strip().rstrip(".!?;: ")
    return "c" + hashlib.sha1(norm.encode("utf-8")).hexdigest()[:10]
