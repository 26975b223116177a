"""The built-in scenarios' replies for every framework (test double only; see ``scripted.py``).

``agree`` and ``disagree`` answer any call any graph makes, chosen by the output schema the node
asked for (``call.schema_name``, its declared title) and, for verdicts, by the role: Tool-MAD (queries,
verdicts, ragas), MADKE (knowledge selection, consensus judge, summariser), MERMAID (claim
decomposition, ReAct executor), MADAM-RAG (document agents, aggregator) and every baseline (ReAct
steps, MAD moderator, Astute-RAG passages, Self-Ask follow-ups, Speculative-RAG draft scores,
Self-Reflection reviews, multi-answer replies). A schema not listed here still gets a reply that
validates (:func:`fill_schema`), so a new node never meets an unreadable reply from the double.

``agree`` = every agent answers the task's first label and every judge accepts; ``disagree`` = the
first agent (``rag``, MADKE's ``debater1``, MADAM-RAG's ``doc1``, or the agents a spec names:
``scripted:disagree?first=advocate``) answers the first label, the others the second, judges
and moderators see no consensus, so every round runs; deciders answer the first label, so the
verdict always has a side that cited passages. MERMAID's executor searches Wikipedia for the
claim once (when the tool is offered) and answers from the observation, so its verdict cites what
a tool returned.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from factdebate.core.labels import LABEL_SETS, NEI
from factdebate.testing.scenarios import answer_role, claim_of, verdict
from factdebate.testing.script import Responder, ScriptCall

_DECIDERS = ("judge", "summarizer", "force_answer", "aggregator", "verifier", "moderator")


def prompt_labels(call: ScriptCall) -> tuple[str, ...]:
    """Labels of the task the prompt is about: the label set whose labels it names most fully."""
    return _prompt_labels(call.prompt)


@lru_cache(maxsize=256)
def _prompt_labels(prompt: str) -> tuple[str, ...]:
    best: tuple[str, ...] = ()
    for name in ("averitec", "fever", "binary", "pubmedqa", "medqa"):
        labels = LABEL_SETS.get(name).labels
        if name == "medqa" and not re.search(r"(?m)^\s*\(?A[).:]", prompt):
            continue
        words = [lab for lab in labels if re.search(rf"\b{re.escape(lab)}\b", prompt)]
        if len(words) == len(labels) and len(labels) > len(best):
            best = labels
    return best or ("SUPPORTS", "REFUTES", NEI)


def label_for(call: ScriptCall, index: int) -> str:
    """The task's label at ``index`` (clamped), read from the prompt."""
    labels = prompt_labels(call)
    return labels[min(index, len(labels) - 1)]


def fill_schema(schema: dict[str, Any], defs: dict[str, Any] | None = None, text: str = "") -> Any:
    """A value that validates against a JSON schema: first enum value, 0.5 in a range, one item."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return fill_schema(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, text)
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"] or schema["anyOf"]
        return fill_schema(options[0], defs, text)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        return {k: fill_schema(v, defs, text) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [fill_schema(schema.get("items", {}), defs, text)]
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", 0), schema.get("maximum", 1)
        return low + (high - low) // 2 if kind == "integer" else (low + high) / 2
    if kind == "boolean":
        return False
    return text or "scripted"


def respond_any(call: ScriptCall, *, agrees: bool, first: bool) -> Any:
    """One scripted reply for any framework's call (see the module docstring)."""
    name = call.schema_name
    own = 0 if first or agrees else 1
    claim = claim_of(call) or "The claim"
    reply = _by_schema(call, name, own=own, agrees=agrees, claim=claim)
    if reply is not None:
        return reply
    if call.schema is not None and not name.startswith("Verdict") and call.role != "ragas" \
            and name != "QueryOut":
        return fill_schema(call.schema.model_json_schema(), text=claim)
    if call.role == "ragas" or name == "QueryOut":
        return answer_role(call, debater_label=own)
    index = 0 if call.role in _DECIDERS else own
    if name.startswith("Verdict"):
        return verdict(call, index, f"{claim} The evidence bears on it.")
    label = label_for(call, index)  # a plain-text call: the verdict as JSON in the reply
    return {"reasoning": f"{claim} The evidence bears on it.", "label": label}


def _by_schema(call: ScriptCall, name: str, *, own: int, agrees: bool, claim: str) -> Any:
    """Replies whose content matters to the graph's path (None: not one of these schemas).

    The task's label is read from the prompt only by the replies that name it: reading it scans the
    whole prompt for every label of every label set (~14% of the event loop in a py-spy profile of
    Tool-MAD claims, none of whose schemas is listed here)."""
    if name not in _SCHEMA_REPLIES:
        return None

    def label() -> str:
        return label_for(call, own)

    replies: dict[str, Any] = {
        "ConsensusOut": lambda: {"reasoning": "Compared the answers.",
                                 "consensus": "Yes" if agrees else "No"},
        "KnowledgeChoice": lambda: {"reasoning": "These items help.", "selected": [1, 2],
                                    "no_found": False},
        "DocAnswer": lambda: {"answer": label(), "explanation": f"{claim} The document states it."},
        "AggregateOut": lambda: {"answers": [label_for(call, 0)], "explanation": "Agents agree."},
        "AnswersOut": lambda: {"answers": [label()], "explanation": "Document 1 states it."},
        "Decomposition": lambda: {"triplets": [_triplet(claim)], "topic": "general"},
        "ReactStep": lambda: _mermaid_step(call, claim, label()),
        "ReactStepOut": lambda: _react_step(call, claim),
        "ModeratorOut": lambda: {"preference": agrees, "reasoning": "Weighed both sides.",
                                 "supported_side": "affirmative" if agrees else "none"},
        "PassagesOut": lambda: {"passages": [f"{claim} (recalled from memory)"]},
        "FollowUpOut": lambda: {"follow_up": ""},
        "DraftScore": lambda: {"reasoning": "The draft cites its evidence.", "score": 0.9},
        "ReviewOut": lambda: {"feedback": "No problems found."},
    }
    return replies[name]()


_SCHEMA_REPLIES = frozenset((
    "ConsensusOut", "KnowledgeChoice", "DocAnswer", "AggregateOut", "AnswersOut", "Decomposition",
    "ReactStep", "ReactStepOut", "ModeratorOut", "PassagesOut", "FollowUpOut", "DraftScore",
    "ReviewOut"))
"""The schemas :func:`_by_schema` answers."""


def _triplet(claim: str) -> dict[str, str]:
    words = claim.rstrip(".").split()
    return {"subject": " ".join(words[:3]) or "claim", "relation": "states",
            "object": " ".join(words[3:]), "attributes": ""}


def _mermaid_step(call: ScriptCall, claim: str, label: str) -> dict[str, Any]:
    """MERMAID's executor: search Wikipedia for the claim once (if offered), then answer."""
    if "search_wikipedia:" in call.prompt and "Observation:" not in call.prompt:
        return {"thought": "I need evidence about the claim.",
                "action": {"name": "search_wikipedia", "reason": "find the article",
                           "input": claim}}
    return {"thought": "The evidence suffices.", "answer": label}


def _react_step(call: ScriptCall, claim: str) -> dict[str, str]:
    """ReAct baseline: search once with the claim, then finish."""
    if call.round <= 1:
        return {"thought": "I need evidence.", "action": "search", "query": claim}
    return {"thought": "The evidence suffices.", "action": "finish", "query": ""}


FIRST_AGENTS = ("", "rag", "debater1", "doc1")
"""Agents that keep the first label under ``disagree`` (Tool-MAD's rag debater, MADKE's first
debater, MADAM-RAG's first document agent, and calls made without an agent)."""


# -- the registered scenarios (factdebate.testing.script.SCENARIOS) ---------------------------
def agree() -> Responder:
    """Every debater answers the first label, every judge accepts (``scripted:agree``); speaks
    every framework."""
    return lambda call: respond_any(call, agrees=True, first=True)


def disagree(first_agents: tuple[str, ...] = FIRST_AGENTS) -> Responder:
    """The first debater answers the first label, the others the second, judges see no consensus
    (``scripted:disagree``); speaks every framework.

    ``first_agents`` are the agents that keep the first label (default :data:`FIRST_AGENTS`);
    ``scripted:disagree?first=advocate`` names a framework's own (comma-separated names,
    ``factdebate.testing.scripted.load_scripted_model``). Calls made without an agent keep it
    too.
    """
    first = frozenset((*first_agents, ""))

    def respond(call: ScriptCall) -> Any:
        return respond_any(call, agrees=False, first=call.agent in first)

    return respond
