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
