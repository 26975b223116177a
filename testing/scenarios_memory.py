"""``scripted:lookup``: a MERMAID executor that looks each named entity up once (test double only).

Drives the evidence-memory experiment (``evaluation/configs/mermaid_memory.yaml``, MERMAID Fig. 3)
end to end without a real model. The policy is a caricature of the paper's warm start (§3.4: "the
agent bypasses initial exploratory searches for already-known facts"):

* decomposer: the claim's capitalised name sequences (up to three, a leading "The"/"A" dropped)
  are the triplets' subjects and objects, so they become the memory keys;
* executor: for each of those names, in order, ``search_wikipedia`` with the name as input -
  unless the prompt already covers the name, i.e. the recalled memory lists a record stored under
  it (``(memory: <key>,``) or an earlier step searched it (``(input: <name>)``); once every name
  is covered it answers the task's first label.

So with memory off every claim costs one tool call per name, and with memory on names met by
earlier claims of the stream cost none: the gap is a property of the claim stream's shared
entities and of the memory pipeline (store, namespaces, recall), never of a model's judgement.
Every other call (other frameworks, the forced answer) gets ``scripted:agree``'s reply.
"""

from __future__ import annotations

import re
from typing import Any

from factdebate.testing.scenario_replies import label_for, respond_any
from factdebate.testing.scenarios import claim_of
from factdebate.testing.script import Responder, ScriptCall

MAX_NAMES = 3
_NAME = re.compile(r"[A-Z][\w.'’$&-]*(?:\s+[A-Z][\w.'’$&-]*)*")
_LEADING = {"The", "A", "An", "This", "That", "It", "He", "She", "They", "His", "Her", "Its",
            "In", "On", "At", "Both", "One"}


def fold(name: str) -> str:
    """Case- and punctuation-folded name (as ``tools.evidence_memory.entity_key`` folds keys)."""
    return " ".join(re.findall(r"[^\W_]+", name.casefold()))


def named_entities(claim: str, limit: int = MAX_NAMES) -> list[str]:
    """Capitalised name sequences of ``claim``, first ``limit``, without repeats."""
    names: list[str] = []
    for match in _NAME.finditer(claim):
        words = match.group(0).split()
        while words and words[0] in _LEADING:
            words = words[1:]
        name = " ".join(words).strip(".,;:")
        if fold(name) and fold(name) not in {fold(n) for n in names}:
            names.append(name)
    return names[:limit]


def decomposition(claim: str) -> dict[str, Any]:
    """Triplets chaining the claim's names (subjects and objects are the memory keys)."""
    names = named_entities(claim)
    if len(names) >= 2:
        triplets = [{"subject": a, "relation": "relates to", "object": b, "attributes": ""}
                    for a, b in zip(names, names[1:], strict=False)]
    elif names:
        triplets = [{"subject": names[0], "relation": "states", "object": "", "attributes": ""}]
    else:
        triplets = []
    return {"triplets": triplets, "topic": "general"}


def covered(name: str, prompt: str) -> bool:
    """The prompt's memory holds a record of ``name``, or an earlier step searched it."""
    return f"(memory: {fold(name)}," in prompt or f"(input: {name})" in prompt


def react_step(call: ScriptCall) -> dict[str, Any]:
    """Search the first name not covered yet; answer when every name is."""
    for name in named_entities(claim_of(call)):
        if not covered(name, call.prompt):
            return {"thought": f"I need evidence about {name}.",
                    "action": {"name": "search_wikipedia", "reason": f"look up {name}",
                               "input": name}}
    return {"thought": "Memory and the steps so far cover every entity.",
            "answer": label_for(call, 0)}


def lookup() -> Responder:
    """``scripted:lookup`` (see the module docstring)."""

    def respond(call: ScriptCall) -> Any:
        name = call.schema_name
        if name == "Decomposition":
            return decomposition(claim_of(call))
        if name == "ReactStep":
            return react_step(call)
        return respond_any(call, agrees=True, first=True)

    return respond
