"""MERMAID: memory-enhanced retrieval and reasoning with multi-agent iterative knowledge grounding.

Paper: Yupeng Cao, Chengyang He, Yangyang Yu, Ping Wang, K.P. Subbalakshmi, "MERMAID:
Memory-Enhanced Retrieval and Reasoning with Multi-Agent Iterative Knowledge Grounding for
Veracity Assessment", arXiv:2601.22361 (2026), Algorithm 1, §3,
prompts in Appendix A.1-A.2, toolset in A.3.

Algorithm 1, as wired here::

    decompose -> recall_memory -> execute_step <-> call_tool ... -> update_memory -> cite_verdict
                                   |  (no answer by T_max)                           -> END
                                   +-> force_answer -> update_memory

* ``decompose``: D_c = (triplets, topic); the subjects/objects are the memory keys (l.3-4).
* ``recall_memory``: M_c = Recall(M, entities) from the LangGraph store (l.7).
* ``execute_step``: (thought, action) = pi([c; D_c; M_c; H_{t-1}]) (l.12); an Answer action ends
  the loop (l.13-15). ``call_tool``: o_t = tau(a_t) through the MCP tool server (l.17-18). The
  loop is graph-level (``route_after_execute_step``/``route_after_call_tool``), one checkpoint per
  step, at most T_max steps.
* ``force_answer``: ForceAnswer at T_max (l.25-27).
* ``update_memory``: the tools' evidence stored under the entities (l.28-29).
* ``cite_verdict``: the verdict's cited evidence (graphs/finish.py).

Output: the shared ``DebateOutput``; ``round`` = ReAct steps used, ``stopped_by`` = ``answer`` or
``forced_at_t_max``, one ``Turn`` per step (observation as evidence), ledger ``tool_calls`` per
tool, ``memory_hits``/``memory_writes``.

Deviations (and why):

* Labels: the paper's executor answers True/False (binary datasets); the prompt asks for the
  task's label set and the answer is mapped with ``parse_label`` (forced answers use the shared
  structured verdict), so MERMAID runs on every label set.
* Tools: Google Search -> our web ``Retriever`` (Tavily, offline the local keyword stand-in,
  flagged); Google Scholar -> OpenAlex; arXiv and PubMed via their APIs. Offline the five
  Wikipedia tools read the local corpus index (article = passages sharing a title; sections and
  key facts = sentence splits; see tools/toolbox.py); ``summarize_article_section`` is not
  served. The online scholarly tools are off by default (``mcp_tools``) since they need network.
* Memory: records are stored under the entities they mention (all of the claim's entities when
  they mention none); the paper leaves the assignment open. Recalled records are never re-stored.
  With the decomposer off there are no entity keys, so the memory is skipped (flagged).
* A step whose reply has neither a valid action nor a label still counts toward T_max and adds an
  empty observation (Alg. 1 l.20), flagged.
* Citations (not in the paper): the executor's final answer (a step's answer or the
  forced answer) cites the documents of its history by number - recalled memory records, then
  every step's observation, numbered once across the whole history; ``cite_verdict`` (last node)
  keeps what the answer cited as the verdict's evidence (the answer decides).
"""

from __future__ import annotations

from langgraph.graph import START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.nodes.mermaid.call_tool import call_tool
from factdebate.nodes.mermaid.decompose import decompose
from factdebate.nodes.mermaid.execute_step import (
    execute_step,
    force_answer,
    route_after_call_tool,
    route_after_execute_step,
)
from factdebate.nodes.mermaid.executor_prompt import memory_evidence
from factdebate.nodes.mermaid.memory import recall_memory, update_memory
from factdebate.nodes.mermaid.state import MermaidContext, MermaidState

__all__ = ["MermaidContext", "build_mermaid", "graph"]


def build_mermaid(turns: Turns = "visible") -> StateGraph:
    """The MERMAID graph (uncompiled)."""
    g = new_builder(turns, MermaidState, context_schema=MermaidContext, input_schema=DebateInput,
                   output_schema=DebateOutput)
    g.add_node("decompose", decompose)
    g.add_node("recall_memory", recall_memory)
    g.add_node("execute_step", execute_step)
    g.add_node("call_tool", call_tool)
    g.add_node("force_answer", force_answer)
    g.add_node("update_memory", update_memory)
    # graphs/finish.py: the verdict's cited evidence, then END; recalled memory was shown too
    add_cite_verdict(g, seen=lambda s: memory_evidence(s.get("recalled") or []))
    g.add_edge(START, "decompose")
    g.add_edge("decompose", "recall_memory")
    g.add_edge("recall_memory", "execute_step")
    g.add_conditional_edges(
        "execute_step", route_after_execute_step,
        ["call_tool", "execute_step", "force_answer", "update_memory"],
    )
    g.add_conditional_edges("call_tool", route_after_call_tool, ["execute_step", "force_answer"])
    g.add_edge("force_answer", "update_memory")
    g.add_edge("update_memory", CITE_VERDICT)
    return g


graph = build_mermaid().compile(name="MERMAID")
