"""The ``check_text`` scripted scenario: claim extraction plus verdicts read from the evidence.

Test double only (see ``scripted.py``). Extraction (role ``extract``) returns the sentence as one
claim, or two when it joins two clauses with ``; `` (so decontextualised splitting is exercised);
a sentence ending in ``?`` or starting with an opinion marker ("I think", "In my opinion") is not
check-worthy. Verdicts follow the numbers in the claim: every number also in the prompt's
evidence -> SUPPORTS, a number missing from it -> REFUTES, no number -> NOT ENOUGH INFO (SUPPORTS
on a label set without it). Every debater and judge agrees, so each debate ends by consensus in
round 1; other frameworks' calls get the ``agree`` scenario's replies.
"""

from __future__ import annotations

import re
from typing import Any

from factdebate.core.labels import NEI
from factdebate.testing.scenario_replies import respond_any
from factdebate.testing.scenarios import claim_of, schema_labels
from factdebate.testing.script import Responder, ScriptCall

_TEXT = re.compile(r"<text>(.*?)</text>", re.DOTALL)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_OPINION = ("i think", "i believe", "in my opinion", "i feel")


def extraction(call: ScriptCall) -> dict[str, Any]:
    """Claims of the sentence in the prompt's second ``<text>`` block."""
    blocks = _TEXT.findall(call.prompt)
    sentence = blocks[-1].strip() if blocks else ""
    worthy = not sentence.endswith("?") and not sentence.lower().startswith(_OPINION)
    parts = [p.strip() for p in sentence.split("; ") if p.strip()]
    claims = [p if p.endswith((".", "!", "?")) else p + "." for p in parts]
    return {"claims": [{"claim": c, "check_worthy": worthy,
                        "reason": "a statement of fact" if worthy else "opinion or question"}
                       for c in claims]}


def label_by_numbers(call: ScriptCall) -> str:
    """SUPPORTS / REFUTES / NOT ENOUGH INFO from the claim's numbers (see the module docstring)."""
    claim = claim_of(call)
    labels = schema_labels(call) or ["SUPPORTS", "REFUTES", NEI]
    numbers = set(_NUMBER.findall(claim))
    if not numbers:
        return NEI if NEI in labels else "SUPPORTS"
    rest = call.prompt.replace(claim, " ")
    found = set(_NUMBER.findall(rest))
    return "SUPPORTS" if numbers <= found else "REFUTES"


def respond_check_text(call: ScriptCall) -> Any:
    """One reply of the ``check_text`` scenario."""
    if call.role == "extract":
        return extraction(call)
    name = call.schema_name
    if name.startswith("Verdict"):
        return {"reasoning": f"{claim_of(call)} The evidence bears on it.",
                "label": label_by_numbers(call)}
    return respond_any(call, agrees=True, first=True)


def check_text() -> Responder:
    """``scripted:check_text``."""
    return respond_check_text


def respond_with_debris(call: ScriptCall) -> Any:
    """``check_text``'s replies, with extraction left as the embedded 135M model leaves it:
    markup after each claim (``</claim>},``), a claim of punctuation and markup only
    (``...</claim>},{``), and the first claim repeated."""
    reply = respond_check_text(call)
    if call.role != "extract":
        return reply
    claims = reply["claims"]
    for c in claims:
        c["claim"] += "</claim>},"
    return {"claims": [*claims, {**claims[0], "claim": "...</claim>},{"}, dict(claims[0])]}


def check_text_debris() -> Responder:
    """``scripted:check_text_debris``."""
    return respond_with_debris
