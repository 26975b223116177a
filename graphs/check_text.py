"""check_text: check a whole text - claim extraction, a debate per claim, a cited verdict.

Not one paper: the pipeline of the single-agent fact checkers - FActScore/SAFE (atomic facts per
sentence, made self-contained), FacTool, Loki/OpenFactCheck and FIRE (check-worthy claims are
extracted, then each is verified, then the text is judged from its claims) - with any registered
framework as the verifier of each claim (Tool-MAD by default), so every claim is debated.

Wiring: ``split_text`` (validate, sentences with character spans) -> ``extract_claims`` (one
``Send`` branch per sentence, preceding text as context) -> ``collect_claims`` (identical claims
merged, check-worthiness, ``max_claims``) -> ``verify_claim`` (one ``Send`` branch per distinct
check-worthy claim, running the verifier's graph nested with its own Context) -> ``review``
(with the ``review`` setting on, a fact-checker's decision on each claim's verdict, one interrupt
per claim in text order; a pass-through otherwise) -> ``aggregate`` (per-sentence marks,
numbered citations, counts, text-level verdict).

Each verification branch is a LangGraph task: its result is saved when it finishes, and the
verifier's own steps are checkpointed in the branch's namespace (the verifier inherits the run's
checkpointer), so a run killed in the middle of the fan-out resumes the unfinished claims only.

Deviations from the single-agent checkers (and why):

* Sentences are split by rules, not by a model, so every claim's character span is exact; the
  model extracts claims from one sentence at a time (FActScore's granularity).
* A claim the extraction reply leaves unreadable is replaced by its sentence, verified as one
  claim (flagged), rather than dropped.
* FELM's rule fixes the text-level label: any refuted claim makes the text REFUTES; a text with
  unverifiable parts is NOT ENOUGH INFO (SUPPORTS on the binary set, which has no such label).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from factdebate.graphs.exported import Turns, new_builder
from factdebate.graphs.verifiers import verifiers_of
from factdebate.nodes.check_text.aggregate_claims import aggregate_claims
from factdebate.nodes.check_text.collect_claims import collect_claims, route_after_collect_claims
from factdebate.nodes.check_text.extract_claims import extract_claims
from factdebate.nodes.check_text.review_claims import review_claims
from factdebate.nodes.check_text.split_text import route_sentences, split_text_node
from factdebate.nodes.check_text.state import (
    CheckTextContext,
    CheckTextInput,
    CheckTextOutput,
    CheckTextState,
)
from factdebate.nodes.check_text.verify_claim import verify_claim_node

__all__ = ["CheckTextContext", "build_check_text", "graph"]


def build_check_text(turns: Turns = "visible") -> StateGraph[
        CheckTextState, CheckTextContext, CheckTextInput, CheckTextOutput]:
    """The text-check graph (uncompiled); its verifiers run ``turns`` turns (graphs/exported.py)."""
    g = new_builder(turns, CheckTextState, context_schema=CheckTextContext,
                    input_schema=CheckTextInput, output_schema=CheckTextOutput)
    verifier_graph = verifiers_of(turns)
    g.add_node("split_text", split_text_node(verifier_graph))
    g.add_node("extract_claims", extract_claims)
    g.add_node("collect_claims", collect_claims)
    g.add_node("verify_claim", verify_claim_node(verifier_graph))
    g.add_node("aggregate", aggregate_claims)
    g.add_edge(START, "split_text")
    g.add_conditional_edges("split_text", route_sentences, ["extract_claims", "collect_claims"])
    g.add_edge("extract_claims", "collect_claims")
    g.add_conditional_edges("collect_claims", route_after_collect_claims,
                            ["verify_claim", "aggregate"])
    g.add_node("review", review_claims)
    g.add_edge("verify_claim", "review")
    g.add_edge("review", "aggregate")
    g.add_edge("aggregate", END)
    return g


graph = build_check_text().compile(name="check_text")
