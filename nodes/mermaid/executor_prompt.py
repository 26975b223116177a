"""Prompt values of MERMAID's executor: P_t = [c; D_c; M_c; H_t] (paper §3.2, Algorithm 1).

``background`` renders the decomposition D_c, ``history`` the recalled memory M_c followed by the
ReAct history H_t (thought, action, observation per step), ``tools`` the enabled tools.

Citations: every passage the history shows - recalled memory records first, then the
observations of the steps in order - gets one number across the whole history (a passage shown
twice keeps its first number), collected in a :class:`~factdebate.nodes.citations.Shown`; the
executor's final answer cites those numbers (``executor_view``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from factdebate.core.state import Evidence, Turn
from factdebate.nodes.citations import Shown
from factdebate.nodes.mermaid.state import MermaidContext, MermaidState
from factdebate.nodes.prompting import common_values, prompt_set
from factdebate.nodes.render import render_evidence
from factdebate.tools.evidence_memory import MemoryRecord
from factdebate.tools.tool_providers import ToolSpec


def render_background(decomposition: dict[str, Any], empty: str) -> str:
    """Triplets and topic, one triplet per line."""
    triplets = decomposition.get("triplets") or []
    if not triplets and not decomposition.get("topic"):
        return empty
    lines = [f"Topic: {decomposition.get('topic') or '-'}", "Triplets:"]
    for t in triplets:
        attrs = f" [{t['attributes']}]" if t.get("attributes") else ""
        lines.append(f"- ({t.get('subject', '')}; {t.get('relation', '')}; "
                     f"{t.get('object', '')}){attrs}")
    return "\n".join(lines)


def memory_evidence(records: Sequence[MemoryRecord]) -> list[Evidence]:
    """Memory records as evidence (title says which entity, tool and query produced them)."""
    return [
        Evidence(id=r["id"], title=f"{r['title']} (memory: {r['entity']}, {r['source']}: "
                 f"{r['query']}, {r['timestamp']})", text=r["text"], source="memory",
                 url=r["url"], score=0.0)
        for r in records
    ]


def render_steps(turns: Sequence[Turn], shown: Shown | None = None) -> str:
    """The ReAct history H_t; observations numbered across the history by ``shown`` (else each
    observation from 1)."""
    lines = []
    for t in turns:
        lines.append(f"Step {t['round']}: Thought: {t['answer'] or '-'}")
        action = t.get("action") or ""  # type: ignore[misc]
        if action:
            lines.append(f"Action: {action} (input: {t['query']})")
            observed = shown.render(t["evidence"]) if shown is not None and t["evidence"] \
                else render_evidence(t["evidence"])
            lines.append(f"Observation: {observed}")
        elif t["label"]:
            lines.append(f"Answer: {t['label']}")
        else:
            lines.append("Observation: (no valid action or answer in this step)")
    return "\n".join(lines)


def render_executor_history(state: MermaidState, empty: str, shown: Shown | None = None) -> str:
    """Recalled memory, then the previous steps; every passage numbered by ``shown`` (one
    numbering across the whole history) when given."""
    shown = shown if shown is not None else Shown()
    parts = []
    if state.get("recalled"):
        parts.append("Memory (evidence recalled for this claim's entities):\n"
                     + shown.render(memory_evidence(state["recalled"])))
    if state.get("turns"):
        parts.append("Previous steps:\n" + render_steps(state["turns"], shown))
    return "\n\n".join(parts) if parts else empty


def render_tools(tools: Sequence[ToolSpec], empty: str) -> str:
    """One ``name: description`` line per tool."""
    if not tools:
        return empty
    return "\n" + "\n".join(f"- {t.name}: {t.description}" for t in tools)


def executor_view(state: MermaidState, ctx: MermaidContext, tools: Sequence[ToolSpec]
                  ) -> tuple[dict[str, Any], Shown]:
    """Placeholders of the ``execute`` and ``force_answer`` templates, and the passages their
    history shows, numbered as shown (what the executor's answer may cite)."""
    texts = prompt_set(ctx).templates
    shown = Shown()
    values = common_values(state, ctx, "executor") | {
        "background": render_background(state.get("decomposition") or {},
                                        str(texts["no_background"])),
        "history": render_executor_history(state, str(texts["no_memory"]), shown),
        "tools": render_tools(tools, str(texts["no_tools"])),
        "t_max": ctx.t_max,
    }
    return values, shown
