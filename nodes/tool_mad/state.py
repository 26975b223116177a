"""Tool-MAD's configuration (``ToolMadContext``): debaters with tools, scoring and early stopping.

Tool-MAD v2 (stability score: RAGAS faithfulness + answer relevancy) and v1 (consistency score,
``scoring_mode="consistency"``); the knobs are the papers' T, thresholds, top-k, agents and the
ablations (query formulation off, scoring feedback off).

Lives with the framework's nodes, not in ``factdebate.core``: only this framework
reads it. Shared nodes read what ``factdebate.core.context``'s protocols declare.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Literal

from factdebate.core.context import DEBATER_KINDS, JudgedContext, debater_kind
from factdebate.core.errors import ConfigError
from factdebate.core.settings import knob

ScoringMode = Literal["auto", "stability", "consistency", "none"]

EMBEDDED_MODEL_PREFIX = "local:"
"""Model specs of the embedded llama.cpp model: a 135M model cannot serve as the RAGAS evaluator of
the stability score (its statement and verdict JSON comes back empty or unparsable and answer
relevancy near 0, at 30 of 43 model calls per claim), so ``auto`` scoring uses the consistency
score with it."""
StopRule = Literal["round_ge", "accumulated_gt"]


@dataclass(kw_only=True)
class ToolMadContext(JudgedContext):
    """The shared Context plus Tool-MAD's knobs."""

    max_rounds: int = knob(
        3, "Maximum debate rounds T before the judge decides (1-10).", range=(1, 10))
    faithfulness_threshold: float = knob(
        0.7, "Stability mode: every debater's RAGAS faithfulness must exceed this to stop early.",
        range=(0.0, 1.0),
    )
    relevance_threshold: float = knob(
        0.8, "Stability mode: every debater's RAGAS answer relevancy must exceed this to stop "
        "early.", range=(0.0, 1.0),
    )
    top_k: int = knob(3, "Passages each debater retrieves per query.", range=(1, 50))
    debaters: list[str] = knob(
        ["rag", "search"],
        "Debater kinds, one per agent: 'rag' (vector index), 'search' (web search or its offline "
        "stand-in), 'vanilla' (no tool). Two to six, e.g. ['rag','search','vanilla'].",
    )
    query_formulation: bool = knob(
        True, "Debaters reformulate their retrieval query every round; off = the claim is the query."
    )
    scoring_mode: ScoringMode = knob(
        "auto",
        "'stability' = RAGAS faithfulness + answer relevancy gate early stopping (Tool-MAD v2); "
        "'consistency' = similarity(evidence, answer) shown to the judge (Tool-MAD v1); 'none'; "
        "'auto' = stability, or consistency when the RAGAS evaluator (scoring_model) is the "
        "embedded local: model, which cannot serve as one.",
    )
    score_feedback: bool = knob(
        True,
        "Use the scores for early stopping and show them to the judge; off = the "
        "'w/o scoring feedback' ablation (scores still computed and reported).",
    )
    stop_rule: StopRule = knob(
        "round_ge",
        "Stability mode's score gate: 'round_ge' = this round's scores >= the thresholds "
        "(§III-C: a round is inconclusive when a score 'falls below' its threshold); "
        "'accumulated_gt' = Alg. 1's S^A > St, with S^A the scores summed over rounds 1..r.",
    )
    judge_scores_without_feedback: bool = knob(
        False,
        "With score_feedback off: still show the judge the average scores (Alg. 1 passes S to "
        "the judge; the ablation only drops the score gate); off = hide them too.",
    )
    query_model: str = knob("", "Query-formulation model spec; empty = debater_model.", model=True)
    scoring_model: str = knob("", "RAGAS evaluator LLM spec; empty = the judge model.", model=True)
    cross_encoder: str = knob(
        "",
        "Consistency mode similarity: a local sentence-transformers cross-encoder path; empty = "
        "cosine of the bundled embeddings (no cross-encoder ships offline).", operator=True,
    )

    def validate(self) -> None:
        """The shared checks plus the debater list; ``auto`` scoring resolved to a mode."""
        super().validate()
        if self.scoring_mode == "auto":
            self.scoring_mode = auto_scoring_mode(self.scoring_model_spec)
            self.scoring_auto = True
        elif self.scoring_mode == "stability" and not ragas_installed():
            raise ConfigError("the stability score needs ragas, which is not installed",
                              "pip install 'factdebate[ragas]', or use --scoring consistency")
        if not 2 <= len(self.debaters) <= MAX_DEBATERS:
            raise ConfigError(f"debaters={self.debaters} has {len(self.debaters)} agent(s)",
                              f"use at least two and at most {MAX_DEBATERS}, e.g. rag,search")
        unknown = [d for d in self.debaters if debater_kind(d) not in DEBATER_KINDS]
        if unknown:
            raise ConfigError(
                f"unknown debater kind(s) {unknown}", f"use {', '.join(DEBATER_KINDS)}"
            )

    @property
    def query_model_spec(self) -> str:
        """Model that formulates queries."""
        return self.query_model or self.debater_model

    @property
    def scoring_model_spec(self) -> str:
        """Evaluator LLM of the RAGAS metrics."""
        return self.scoring_model or self.judge_model_spec

    def model_specs(self) -> dict[str, str]:
        """The shared roles plus query formulation and scoring."""
        return {**super().model_specs(), "query": self.query_model_spec,
                "scoring": self.scoring_model_spec}

    def agent_ids(self) -> list[str]:
        """Unique debater ids: a kind used twice becomes ``rag``, ``rag2``."""
        seen: dict[str, int] = {}
        ids = []
        for kind in self.debaters:
            seen[kind] = seen.get(kind, 0) + 1
            ids.append(kind if seen[kind] == 1 else f"{kind}{seen[kind]}")
        return ids

    def tool_kinds(self) -> list[str]:
        """The debaters' retriever kinds."""
        return [debater_kind(agent) for agent in self.agent_ids()]

    scoring_auto = False  # a class attribute, not a dataclass field: no client can set it
    """Set by ``validate`` when ``scoring_mode`` was ``auto`` (not a knob: the mode it chose is in
    ``scoring_mode``, the reason in ``start_notes``)."""

    def start_notes(self) -> list[str]:
        """One note saying which score ``auto`` chose with the embedded evaluator, and why."""
        if not self.scoring_auto or self.scoring_mode != "consistency":
            return []
        if not self.scoring_model_spec.startswith(EMBEDDED_MODEL_PREFIX):
            return ["scoring: consistency score (auto): ragas, which computes the paper's "
                    "stability score, is not installed (pip install 'factdebate[ragas]')"]
        return [f"scoring: consistency score (auto): the RAGAS evaluator {self.scoring_model_spec} "
                "is the embedded model, which cannot serve as one; --scoring stability forces "
                "the stability score"]

    def judge_score_mode(self) -> str:
        """The scoring mode, unless scoring feedback is off and the judge is not to see scores."""
        shown = self.score_feedback or self.judge_scores_without_feedback
        return self.scoring_mode if shown else "none"


MAX_DEBATERS = 6


def ragas_installed() -> bool:
    """Whether ragas (the ``ragas`` extra: the stability score's metrics) can be imported."""
    return importlib.util.find_spec("ragas") is not None


def auto_scoring_mode(scoring_model: str) -> ScoringMode:
    """``auto``: the paper's stability score, unless the evaluator is the embedded model or ragas
    is not installed (the base install leaves it out: it brings scipy and scikit-network)."""
    if scoring_model.startswith(EMBEDDED_MODEL_PREFIX) or not ragas_installed():
        return "consistency"
    return "stability"
