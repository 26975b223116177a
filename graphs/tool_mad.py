"""Tool-MAD: tool-augmented multi-agent debate for fact verification.

Papers: Seyeon Jeong, Yeonjun Choi, JongWook Kim, Beakcheol Jang, "Tool-MAD: A Multi-Agent Debate
Framework for Fact Verification with Diverse Tool Augmentation and Adaptive Retrieval",
arXiv:2601.04742 (2026), with the stability score (Algorithm 1, §III); and its earlier version
with the consistency score, "Tool-MAD: Dynamic Multi-Agent Debate Framework with Adaptive Retrieval
for Accurate and Hallucination-Resistant Fact Verification" (anonymous ACL submission; Algorithm 1
in the appendix, prompts in Appendix A).

Algorithm 1, as wired here: ``prepare`` checks the input, ``open_round`` opens each round; per
round every debater (parallel ``Send`` branches of the ``debate_turn`` subgraph) formulates a
query (``formulate_query``) -> retrieves top-k with its own tool (``retrieve``) -> responds
(``respond``) -> is scored (``score``); ``check_consensus`` stops early on agreement (gated by the
stability thresholds in stability mode); after T rounds the ``judge`` decides from the claim, the
full history and the per-agent average scores.

Deviations (and why):

* Prompts: the papers print them only as images; ``prompts/tool_mad/prompts.yaml`` reconstructs
  them from the text and the worked example, and asks for JSON {reasoning, label} instead of
  "reason: ... LABEL" so labels parse reliably (free text still parsed, flagged when guessed).
* Stopping rule: by default this round's scores ``>=`` thresholds (§III-C) rather than Alg. 1's
  accumulated ``S^A > St`` (see nodes/tool_mad/check_consensus.py). Switch: ``stop_rule=accumulated_gt``.
* "w/o scoring feedback" (§IV ablation, ``score_feedback=false``) drops the score gate and, by
  default, also hides the scores from the judge, which the paper does not say. Switch:
  ``judge_scores_without_feedback=true`` shows them (Alg. 1's Judge(A_J, H, S, c)).
* Consistency score: the paper uses a cross-encoder; offline none ships, so the default is cosine
  of the bundled MiniLM embeddings (a cross-encoder path can be configured).
* More than two debaters and tool-less ``vanilla`` debaters are supported for the paper's
  agent-combination ablations; with N debaters "the opponent's answer" is all other agents'
  answers of the previous round.
* Offline, the search debater uses a local keyword index instead of Tavily (flagged in the output).
* Medical set-up (§IV-D, consistency paper App. C.2): ``search_backend=openalex`` replaces the
  search tool with OpenAlex (keywords from the query, 3 abstracts, each summarised by the debater
  model, tools/openalex.py); the paper summarises with DistilBART (sshleifer/distilbart-cnn-12-6),
  which is not available offline. Configs: evaluation/configs/toolmad_pubmedqa.yaml and
  toolmad_medqa.yaml (RAG debater over a PubMed corpus index the user builds).

* Citations (not in the papers): every debater's and the judge's verdict cites the
  documents it relies on by number; ``cite_verdict`` (last node) keeps the passages cited by the
  judge and by the agents whose label became the verdict as the verdict's evidence.

Switches for the deviations (``ToolMadContext``): ``stop_rule`` (round_ge | accumulated_gt),
``judge_scores_without_feedback``, ``scoring_mode``, ``cross_encoder``, ``search_backend``.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput, DebateRecord, DebaterState, DebateState
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.graphs.turns import StraightTurn, turn_node
from factdebate.nodes.judge import judge
from factdebate.nodes.open_round import debater_router, rounds_opener
from factdebate.nodes.prepare import prepare
from factdebate.nodes.respond import respond
from factdebate.nodes.tool_mad.check_consensus import check_consensus, route_after_check_consensus
from factdebate.nodes.tool_mad.formulate_query import formulate_query
from factdebate.nodes.tool_mad.retrieve import retrieve
from factdebate.nodes.tool_mad.score import score
from factdebate.nodes.tool_mad.state import ToolMadContext


def build_debate_turn() -> StateGraph:
    """One debater's turn: formulate_query -> retrieve -> respond -> score."""
    return StraightTurn(DebaterState, [("formulate_query", formulate_query), ("retrieve", retrieve),
                                       ("respond", respond), ("score", score)],
                        context_schema=ToolMadContext, output_schema=DebateRecord)


def build_tool_mad(turns: Turns = "visible") -> StateGraph:
    """The Tool-MAD debate graph (uncompiled)."""
    g = new_builder(turns, DebateState, context_schema=ToolMadContext, input_schema=DebateInput,
                    output_schema=DebateOutput)
    g.add_node("prepare", prepare)
    g.add_node("open_round", rounds_opener(ToolMadContext))
    g.add_node("debate_turn",  # graphs/turns.py
               turn_node(build_debate_turn(), "debate_turn", turns=turns))
    g.add_node("check_consensus", check_consensus)
    g.add_node("judge", judge)
    add_cite_verdict(g)  # graphs/finish.py: the verdict's cited evidence, then END
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "open_round")
    g.add_conditional_edges("open_round", debater_router(ToolMadContext), ["debate_turn"])
    g.add_edge("debate_turn", "check_consensus")
    g.add_conditional_edges(
        "check_consensus", route_after_check_consensus,
        {"open_round": "open_round", "judge": "judge", END: CITE_VERDICT},
    )
    g.add_edge("judge", CITE_VERDICT)
    return g


graph = build_tool_mad().compile(name="Tool-MAD")
