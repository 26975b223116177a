"""MADKE: Multi-Agent Debate with Knowledge-Enhanced framework.

Paper: Haotian Wang, Xiyuan Du, Weijiang Yu, Qianglong Chen, Kun Zhu, Zheng Chu, Lian Yan, Yi Guan,
"Learning to Break: Knowledge-Enhanced Reasoning in Multi-Agent Debate System" (MADKE),
Neurocomputing 618 (2025), arXiv:2312.04854 - Algorithm 1, §3 (shared knowledge pool, adaptive knowledge
selection, simultaneous/orderly talk, judge, summariser), Prompts 3.1-3.5, role definitions in
Appendix A; 2 debaters, at most 3 rounds, temperature 0.5 (§4.4); the pool keeps the top 5
Wikipedia passages and up to the top 10 Google results (§3.1.1; §4.4's implementation details
give "5 and 5" - set ``search_pool_size=5`` for that reading).

Algorithm 1, as wired here:
``prepare`` -> ``gather_knowledge`` (one parallel branch per source: SKPool(q) = WR(q) ∪ GSE(q),
retrieved once with the question as query) -> per round ``open_round`` -> ``debater_turn``
(subgraph: ``select_knowledge`` (AKS, Eq. 2) -> ``speak`` (Eqs. 3-4)); round 1 sends every
debater at once (simultaneous talk), later rounds send the debaters one after another, each
seeing the others' latest answers (orderly talk, the ``debater_turn`` self-loop) ->
``judge_consensus`` ([Yes] ends the debate, Eq. 5) -> ``summarize`` (Eq. 6) after the stop or
round T -> ``cite_verdict`` (the verdict's cited evidence).

Deviations (and why):

* Fact verification and MC QA instead of open QA: the question is the claim, and debaters and the
  summariser answer on the task's label set as JSON {reasoning, label} rather than "[answer]"
  (parseable labels; the label is still shown to the judge as "[label]"). The judge and AKS reply
  in JSON too; the paper's [Yes]/[No], [n] and [No Found] tokens are still read from free text.
* The paper's one-shot examples are not printed in it, so the prompts have none.
* Orderly talk: Alg. 1 l. 11 writes the previous round's answers s^(r-1); §3.2.2 has debaters
  "build upon the views previously expressed" one after another, so by default a debater sees the
  latest answer of each other debater (this round's if it already spoke). Switch:
  ``orderly_view=previous_round`` gives Alg. 1's s^(r-1).
* The pool is de-duplicated (identical title and text kept once): offline, the search stand-in
  indexes the same corpus as the rag backend. Items are numbered from 1.
* Temperature defaults to the paper's 0.5 (``temperature``; 0 for reproducible runs). Pool sizes
  are per source: ``wiki_pool_size`` (5) and ``search_pool_size`` (10).
* The judge also runs after round T (Alg. 1 l. 14), so ``stopped_by`` tells ``consensus`` from
  ``max_rounds``; the summariser uses the judge model spec.
* Offline, the search source is the local keyword stand-in (flagged, as for Tool-MAD).
* Citations (not in the paper): every debater's verdict cites the knowledge it was
  shown by number (its selected items, numbered 1..k in its prompt); the summariser sees only
  the answers (Prompt 3.5) and cites nothing; the consensus judge gives no label. ``cite_verdict``
  (last node) keeps the passages cited by the last round's debaters whose label became the
  verdict as the verdict's evidence.

Switches for the deviations (``MadkeContext``): ``orderly_view`` (latest | previous_round),
``wiki_pool_size``, ``search_pool_size``, ``temperature``, ``knowledge_sources``,
``knowledge_selection``.
"""

from __future__ import annotations

from langgraph.graph import START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput, DebateRecord
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.graphs.turns import StraightTurn, turn_node
from factdebate.nodes.madke.gather_knowledge import gather_knowledge, route_knowledge_sources
from factdebate.nodes.madke.judge_consensus import judge_consensus, route_after_judge_consensus
from factdebate.nodes.madke.select_knowledge import select_knowledge
from factdebate.nodes.madke.speak import speak
from factdebate.nodes.madke.state import MadkeContext, MadkeState, SpeakerState
from factdebate.nodes.madke.summarize import summarize
from factdebate.nodes.madke.talk_order import route_after_debater_turn, route_speakers
from factdebate.nodes.open_round import rounds_opener
from factdebate.nodes.prepare import prepare_for

__all__ = ["MadkeContext", "build_debater_turn", "build_madke", "graph"]


def build_debater_turn() -> StateGraph:
    """One debater's turn: select_knowledge -> speak."""
    return StraightTurn(SpeakerState, [("select_knowledge", select_knowledge), ("speak", speak)],
                        context_schema=MadkeContext, output_schema=DebateRecord)


def build_madke(turns: Turns = "visible") -> StateGraph:
    """The MADKE debate graph (uncompiled)."""
    g = new_builder(
        turns, MadkeState, context_schema=MadkeContext, input_schema=DebateInput,
        output_schema=DebateOutput,
    )
    g.add_node("prepare", prepare_for(MadkeState))
    g.add_node("gather_knowledge", gather_knowledge)
    g.add_node("open_round", rounds_opener(MadkeContext))
    g.add_node("debater_turn",  # graphs/turns.py
               turn_node(build_debater_turn(), "debater_turn", turns=turns))
    g.add_node("judge_consensus", judge_consensus)
    g.add_node("summarize", summarize)
    # graphs/finish.py: the verdict's cited evidence, then END; the whole knowledge pool was shown
    add_cite_verdict(g, seen=lambda s: [e for v in (s.get("knowledge") or {}).values() for e in v])
    g.add_edge(START, "prepare")
    g.add_conditional_edges("prepare", route_knowledge_sources, ["gather_knowledge", "open_round"])
    g.add_edge("gather_knowledge", "open_round")
    g.add_conditional_edges("open_round", route_speakers, ["debater_turn"])
    g.add_conditional_edges(
        "debater_turn", route_after_debater_turn, ["debater_turn", "judge_consensus"]
    )
    g.add_conditional_edges(
        "judge_consensus", route_after_judge_consensus, ["open_round", "summarize"]
    )
    g.add_edge("summarize", CITE_VERDICT)
    return g


graph = build_madke().compile(name="MADKE")
