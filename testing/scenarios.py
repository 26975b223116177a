"""Built-in scripted scenarios (test double only; see ``scripted.py``).

* ``agree``: every debater answers the first label, RAGAS judged faithful and relevant -> the
  debate stops by consensus in round 1.
* ``disagree``: the first debater answers the first label, every other debater the second one,
  in every round -> all T rounds run and the judge decides (first label). The overhead benchmark
  uses this one.

Both speak every framework (MADKE, MERMAID, MADAM-RAG, every baseline): replies are chosen by the
requested schema in ``factdebate.testing.scenario_replies``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from factdebate.testing.script import ScriptCall

_SUBJECT = re.compile(r"^(?:Claim|Question):\s*(.+)$", re.MULTILINE)


def claim_of(call: ScriptCall) -> str:
    """The claim/question line of a debate prompt ("" if there is none)."""
    match = _subject(call.prompt)
    return match.group(1).strip() if match else ""


def _subject(prompt: str) -> re.Match[str] | None:
    """``_SUBJECT.search(prompt)``, without trying the pattern at every character.

    A match can only start at a line start followed by ``Claim:`` or ``Question:``; those are found
    with ``str.find`` and the pattern is tried there, leftmost first, as ``search`` would (its
    ``^`` in MULTILINE mode has no fast skip: 9 us of the double's per-call cost on a 3 kB prompt).
    """
    starts = [prompt.find(word) for word in ("Claim:", "Question:")]
    while True:
        live = [p for p in starts if p >= 0]
        if not live:
            return None
        pos = min(live)
        if pos == 0 or prompt[pos - 1] == "\n":
            match = _SUBJECT.match(prompt, pos)
            if match is not None:
                return match
        starts = [prompt.find(word, pos + 1) if p == pos else p
                  for word, p in zip(("Claim:", "Question:"), starts, strict=True)]


def schema_labels(call: ScriptCall) -> list[str]:
    """Allowed labels of the requested verdict schema."""
    if call.schema is None:
        return []
    return list(_schema_labels(call.schema))


@lru_cache(maxsize=64)
def _schema_labels(schema: type) -> tuple[str, ...]:
    # JSON schema generation costs ~1 ms; the double's own cost counts in the overhead benchmark
    props = schema.model_json_schema().get("properties", {})  # type: ignore[attr-defined]
    return tuple(props.get("label", {}).get("enum", []))


def verdict(call: ScriptCall, label_index: int, reasoning: str) -> dict[str, Any]:
    """A verdict reply with the label at ``label_index`` of the schema's labels."""
    labels = schema_labels(call) or ["SUPPORTS", "REFUTES"]
    return {"reasoning": reasoning, "label": labels[min(label_index, len(labels) - 1)]}


def answer_role(call: ScriptCall, *, debater_label: int, judge_label: int = 0) -> Any:
    """Shared part of the built-in responders: query, ragas and judge replies."""
    if call.role == "query":
        return {"query": claim_of(call) or "claim"}
    if call.role == "ragas":
        from factdebate.testing.scripted_ragas import respond_ragas

        return respond_ragas(call)
    if call.role == "judge":
        return verdict(call, judge_label, "The judge weighed both agents' evidence.")
    # restating the claim first keeps RAGAS answer relevancy high (the scripted RAGAS judge
    # derives its generated question from the answer's first sentence)
    return verdict(call, debater_label, f"{claim_of(call)} The retrieved documents bear on it.")


def madke_role(
    call: ScriptCall, *, debater_label: int = 0, consensus_round: int = 1,
    selected: tuple[int, ...] = (1, 2),
) -> Any:
    """MADKE replies: AKS picks ``selected``, debaters answer ``debater_label``, the judge says
    [Yes] from ``consensus_round`` on (0 = never), the summariser answers ``debater_label``."""
    if call.role == "select_knowledge":
        return {"reasoning": "These items help.", "selected": list(selected), "no_found": False}
    if call.role == "judge":
        agree = 0 < consensus_round <= call.round
        return {"reasoning": "Compared the answers.", "consensus": "Yes" if agree else "No"}
    return verdict(call, debater_label, f"{claim_of(call)} The knowledge bears on it.")


def madam_role(call: ScriptCall, *, answer: str = "SUPPORTS") -> Any:
    """MADAM-RAG replies: every agent answers ``answer``; the aggregator accepts it."""
    if call.role == "aggregator":
        return {"answers": [answer], "explanation": "The agents agree."}
    return {"answer": answer, "explanation": "The document states it."}

