"""MAD: "tit for tat" debate with a moderator and a judge (Liang et al. 2023).

Papers: Tool-MAD (arXiv:2601.04742) and its consistency-score version ("MAD is a framework that uses an
interactive 'tit for tat' debate structure, motivated by the Degeneration of Thought"; Table II:
reasoning and multi-agent, no retrieval). Original: an affirmative and a negative debater argue;
at the end of every round a moderator decides whether one side is correct (adaptive break);
after the last round without a preference a judge decides from the whole debate.
Graph: prepare -> open_round -> affirmative -> negative -> moderate -> (END | open_round | judge).
Rounds: ``max_rounds`` (default 3, as in MAD). The judge is Tool-MAD's ``judge`` node with this
prompt set's MAD judge template (no scores).

Deviations: verdicts as JSON on the task's label set; the judge is one call (MAD's judge first
extracts candidate answers, then decides); label tasks only (``MadContext``).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from factdebate.core.state import DebateInput, DebateOutput
from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.finish import CITE_VERDICT, add_cite_verdict
from factdebate.nodes.baselines.argue import argue
from factdebate.nodes.baselines.context import MadContext
from factdebate.nodes.baselines.moderate import moderate, route_after_moderate
from factdebate.nodes.baselines.prepare_baseline import prepare_baseline
from factdebate.nodes.baselines.state import BaselineState
from factdebate.nodes.judge import judge
from factdebate.nodes.open_round import rounds_opener


def build_mad(turns: Turns = "visible") -> StateGraph:
    """MAD (uncompiled)."""
    g = new_builder(turns, BaselineState, context_schema=MadContext,
                   input_schema=DebateInput, output_schema=DebateOutput)
    g.add_node("prepare", prepare_baseline)
    g.add_node("open_round", rounds_opener(MadContext))
    g.add_node("affirmative", argue("affirmative"))
    g.add_node("negative", argue("negative"))
    g.add_node("moderate", moderate)
    g.add_node("judge", judge)
    add_cite_verdict(g)  # graphs/finish.py: the verdict's cited evidence, then END
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "open_round")
    g.add_edge("open_round", "affirmative")
    g.add_edge("affirmative", "negative")
    g.add_edge("negative", "moderate")
    g.add_conditional_edges("moderate", route_after_moderate,
                            {"open_round": "open_round", "judge": "judge", END: CITE_VERDICT})
    g.add_edge("judge", CITE_VERDICT)
    return g


graph = build_mad().compile(name="MAD")
