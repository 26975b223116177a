"""Context subclasses of the baselines: the shared baseline knobs plus per-method ones.

``BaselineContext`` is the Context of every baseline: the ``baselines`` prompt set, ``top_k``, the
answer mode (a label on the task's label set, or a list of answers for RAMDocs-style questions)
and where the evidence comes from. Baselines that retrieve use one tool, the ``rag`` retriever
(``rag_backend``). Rounds (``max_rounds``) belong to the debate baselines only, a judge model
(``judge_model``) to MAD and Speculative RAG's verifier (``JudgedContext``).

Lives with the framework's nodes, not in ``factdebate.core``: only this framework
reads it. Shared nodes read what ``factdebate.core.context``'s protocols declare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from factdebate.core.context import Context, JudgedContext
from factdebate.core.errors import ConfigError
from factdebate.core.settings import knob

AnswerMode = Literal["label", "answers"]
EvidenceSource = Literal["auto", "retrieve", "documents"]
DraftUse = Literal["aggregate", "select"]


@dataclass(kw_only=True)
class BaselineContext(Context):
    """Knobs shared by every baseline.

    Multi-answer mode is ``answer_mode="answers"``, or an item whose task resolves to the
    ``open_qa`` label set (RAMDocs' ``qa_conflict``), whatever ``answer_mode`` says.
    """

    prompt_set: str = knob("baselines", "Prompt set (folder under prompts/).", operator=True)
    top_k: int = knob(3, "Passages retrieved for the claim (retrieval baselines).", range=(1, 50))
    answer_mode: AnswerMode = knob(
        "label",
        "'label' = one label on the task's label set; 'answers' = a list of every correct answer "
        "(multi-answer QA such as RAMDocs: items without a label set, usually with documents).",
    )
    evidence_source: EvidenceSource = knob(
        "auto",
        "Where retrieval baselines get documents: 'auto' = the item's documents when it has them, "
        "else top_k from the rag retriever; 'retrieve'; 'documents' (the item's, required).",
    )

    def tool_kinds(self) -> list[str]:
        """The one tool a retrieving baseline uses (``prepare`` checks its backend)."""
        return ["rag"]


@dataclass(kw_only=True)
class SelfConsistencyContext(BaselineContext):
    """Self-consistency (Wang et al. 2022): k sampled reasoning paths, majority vote."""

    samples: int = knob(5, "Reasoning paths k sampled in parallel (1-20).", range=(1, 20))
    sample_temperature: float = knob(
        0.7, "Sampling temperature of the k paths (above 0, so paths differ; at most 2).",
        range=(0.0, 2.0), open_low=True,
    )


@dataclass(kw_only=True)
class DebateBaselineContext(BaselineContext):
    """The debate baselines' shared knobs: label tasks only, a number of rounds."""

    max_rounds: int = knob(3, "Debate rounds (1-10).", range=(1, 10))

    def validate(self) -> None:
        """These debates decide a label; a list of answers has no side to take."""
        super().validate()
        if self.answer_mode != "label":
            raise ConfigError(
                f"answer_mode={self.answer_mode!r} is not supported by the debate baselines",
                "use answer_mode=label",
            )


@dataclass(kw_only=True)
class MadContext(DebateBaselineContext, JudgedContext):
    """MAD (Liang et al. 2023): two debaters, a moderator and a judge (``judge_model``)."""

    max_rounds: int = knob(
        3, "Maximum debate rounds before the judge decides (1-10).", range=(1, 10))


@dataclass(kw_only=True)
class MultiAgentDebateContext(DebateBaselineContext):
    """Du et al. (2023): N agents, R rounds, majority of the last round."""

    max_rounds: int = knob(2, "Debate rounds R (Du et al. use 2; 1-10).", range=(1, 10))
    agents: int = knob(3, "Number of agents N (Du et al. use 3; 2-10).", range=(2, 10))

    def agent_ids(self) -> list[str]:
        """``agent1`` .. ``agentN``."""
        return [f"agent{i}" for i in range(1, self.agents + 1)]

    def tool_kinds(self) -> list[str]:
        """Du et al.'s agents use no tool."""
        return []


@dataclass(kw_only=True)
class ReactContext(BaselineContext):
    """Single-agent ReAct with the RAG tool."""

    max_steps: int = knob(
        5, "Thought-action steps before the agent must answer (1-20).", range=(1, 20))


@dataclass(kw_only=True)
class SelfAskContext(BaselineContext):
    """Self-Ask (Press et al. 2022) with retrieval answering the follow-up questions."""

    max_follow_ups: int = knob(
        4, "Follow-up questions before the final answer is forced (1-10).", range=(1, 10))


@dataclass(kw_only=True)
class SelfReflectionContext(BaselineContext):
    """Single agent with self-reflection (answer -> review -> refine)."""

    reflection_rounds: int = knob(
        2, "Review-and-refine rounds (MADAM-RAG uses 2; 0-10).", range=(0, 10))


@dataclass(kw_only=True)
class AstuteRagContext(BaselineContext):
    """Astute RAG (Wang et al. 2024)."""

    internal_passages: int = knob(
        1, "Most passages the model may generate from memory (the paper's m-hat, default 1; "
        "0-10).", range=(0, 10),
    )
    consolidation_rounds: int = knob(
        1, "Separate source-aware consolidation passes before the answer (0 = only the final "
        "one; 0-5).", range=(0, 5),
    )


@dataclass(kw_only=True)
class SpeculativeRagContext(BaselineContext, JudgedContext):
    """Speculative RAG (Wang et al. 2024): drafts from document subsets, a verifier
    (``judge_model``) picks one - or, for multi-answer questions, an aggregator reads them all."""

    top_k: int = knob(
        6, "Documents retrieved, then split into the drafts' subsets (1-50).", range=(1, 50))
    drafts: int = knob(
        3, "Drafts generated in parallel, each from a distinct subset (1-10).", range=(1, 10))
    multi_answer_drafts: DraftUse = knob(
        "aggregate",
        "Multi-answer questions (RAMDocs): 'aggregate' = every draft with its rationale goes to an "
        "aggregator (judge_model) that lists all correct answers (MADAM-RAG App. B); 'select' = "
        "the verifier picks one draft, as for labels (the original Speculative RAG).",
    )


@dataclass(kw_only=True)
class ConcatRagContext(BaselineContext):
    """Concatenated-prompt RAG (MADAM-RAG's baseline): the item's documents, a list of answers."""

    answer_mode: AnswerMode = knob("answers", "'answers' (RAMDocs) or 'label'.")
    evidence_source: EvidenceSource = knob(
        "documents", "'documents' (the item's) or 'auto'/'retrieve'.")


@dataclass(kw_only=True)
class NoRagContext(BaselineContext):
    """No-RAG (MADAM-RAG's baseline): the question only, a list of answers."""

    answer_mode: AnswerMode = knob("answers", "'answers' (RAMDocs) or 'label'.")
