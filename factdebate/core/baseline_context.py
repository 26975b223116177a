"""Context subclasses of the baselines (issue #3): the shared baseline knobs plus per-method ones.

``BaselineContext`` is the Context of every baseline: the ``baselines`` prompt set, no debate
scoring, the answer mode (a label on the task's label set, or a list of answers for RAMDocs-style
questions) and where the evidence comes from. Baselines that retrieve use one tool, the ``rag``
retriever (``rag_backend``); ``debaters`` does not apply to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from factdebate.core.context import Context, ScoringMode, _describe
from factdebate.core.errors import ConfigError

AnswerMode = Literal["label", "answers"]
EvidenceSource = Literal["auto", "retrieve", "documents"]


@dataclass(kw_only=True)
class BaselineContext(Context):
    """Knobs shared by every baseline.

    Multi-answer mode is ``answer_mode="answers"``, or an item whose task resolves to the
    ``open_qa`` label set (RAMDocs' ``qa_conflict``), whatever ``answer_mode`` says.
    """

    prompt_set: str = _describe("baselines", "Prompt set (folder under prompts/).")
    scoring_mode: ScoringMode = _describe("none", "Baselines compute no debate scores.")
    answer_mode: AnswerMode = _describe(
        "label",
        "'label' = one label on the task's label set; 'answers' = a list of every correct answer "
        "(multi-answer QA such as RAMDocs: items without a label set, usually with documents).",
    )
    evidence_source: EvidenceSource = _describe(
        "auto",
        "Where retrieval baselines get documents: 'auto' = the item's documents when it has them, "
        "else top_k from the rag retriever; 'retrieve'; 'documents' (the item's, required).",
    )

    def validate(self) -> None:
        """The shared checks plus the baseline fields."""
        super().validate()
        if self.answer_mode not in ("label", "answers"):
            raise ConfigError(f"unknown answer_mode {self.answer_mode!r}", "use label or answers")
        if self.evidence_source not in ("auto", "retrieve", "documents"):
            raise ConfigError(
                f"unknown evidence_source {self.evidence_source!r}", "use auto, retrieve or documents"
            )

    def tool_kinds(self) -> list[str]:
        """The one tool a retrieving baseline uses (``prepare`` checks its backend)."""
        return ["rag"]


@dataclass(kw_only=True)
class SelfConsistencyContext(BaselineContext):
    """Self-consistency (Wang et al. 2022): k sampled reasoning paths, majority vote."""

    samples: int = _describe(5, "Reasoning paths k sampled in parallel.")
    sample_temperature: float = _describe(0.7, "Sampling temperature of the k paths (> 0).")

    def validate(self) -> None:
        """k >= 1 and a temperature that actually samples."""
        super().validate()
        if self.samples < 1:
            raise ConfigError(f"samples={self.samples} must be positive", "use 1 or more")
        if self.sample_temperature <= 0:
            raise ConfigError(
                f"sample_temperature={self.sample_temperature} would sample one path k times",
                "use a temperature above 0, e.g. 0.7",
            )


@dataclass(kw_only=True)
class DebateBaselineContext(BaselineContext):
    """MAD (Liang et al.) and the multi-agent debate of Du et al.: label tasks only."""

    def validate(self) -> None:
        """These debates decide a label; a list of answers has no side to take."""
        super().validate()
        if self.answer_mode != "label":
            raise ConfigError(
                f"answer_mode={self.answer_mode!r} is not supported by the debate baselines",
                "use answer_mode=label",
            )


@dataclass(kw_only=True)
class MultiAgentDebateContext(DebateBaselineContext):
    """Du et al. (2023): N agents, R rounds, majority of the last round."""

    max_rounds: int = _describe(2, "Debate rounds R (Du et al. use 2).")
    agents: int = _describe(3, "Number of agents N (Du et al. use 3).")

    def validate(self) -> None:
        """At least two agents."""
        super().validate()
        if self.agents < 2:
            raise ConfigError(f"agents={self.agents} is not a debate", "use 2 or more")

    def agent_ids(self) -> list[str]:
        """``agent1`` .. ``agentN``."""
        return [f"agent{i}" for i in range(1, self.agents + 1)]

    def tool_kinds(self) -> list[str]:
        """Du et al.'s agents use no tool."""
        return []


@dataclass(kw_only=True)
class ReactContext(BaselineContext):
    """Single-agent ReAct with the RAG tool."""

    max_steps: int = _describe(5, "Thought-action steps before the agent must answer.")


@dataclass(kw_only=True)
class SelfAskContext(BaselineContext):
    """Self-Ask (Press et al. 2022) with retrieval answering the follow-up questions."""

    max_follow_ups: int = _describe(4, "Follow-up questions before the final answer is forced.")


@dataclass(kw_only=True)
class SelfReflectionContext(BaselineContext):
    """Single agent with self-reflection (answer -> review -> refine)."""

    reflection_rounds: int = _describe(2, "Review-and-refine rounds (MADAM-RAG uses 2).")


@dataclass(kw_only=True)
class AstuteRagContext(BaselineContext):
    """Astute RAG (Wang et al. 2024)."""

    internal_passages: int = _describe(
        1, "Most passages the model may generate from memory (the paper's m-hat, default 1)."
    )
    consolidation_rounds: int = _describe(
        1, "Separate source-aware consolidation passes before the answer (0 = only the final one)."
    )


@dataclass(kw_only=True)
class SpeculativeRagContext(BaselineContext):
    """Speculative RAG (Wang et al. 2024): drafts from document subsets, verifier picks one."""

    top_k: int = _describe(6, "Documents retrieved, then split into the drafts' subsets.")
    drafts: int = _describe(3, "Drafts generated in parallel, each from a distinct subset.")


@dataclass(kw_only=True)
class ConcatRagContext(BaselineContext):
    """Concatenated-prompt RAG (MADAM-RAG's baseline): the item's documents, a list of answers."""

    answer_mode: AnswerMode = _describe("answers", "'answers' (RAMDocs) or 'label'.")
    evidence_source: EvidenceSource = _describe("documents", "'documents' (the item's) or 'auto'/'retrieve'.")


@dataclass(kw_only=True)
class NoRagContext(BaselineContext):
    """No-RAG (MADAM-RAG's baseline): the question only, a list of answers."""

    answer_mode: AnswerMode = _describe("answers", "'answers' (RAMDocs) or 'label'.")
