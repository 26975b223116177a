"""Structured outputs of MERMAID's prompts (next to ``prompts.yaml``, STYLE.md §4).

``Decomposition`` is what the ``decompose`` prompt asks for (paper A.1: triplets + topic);
``ReactStep`` what the ``execute`` prompt asks for (paper A.2: a thought and either an action or
an answer). The forced answer uses the shared ``verdict_schema`` of the task's label set.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class Triplet(BaseModel):
    """One atomic assertion of the claim."""

    subject: str = Field(description="Subject (a noun).")
    relation: str = Field(description="Relation (a verb).")
    object: str = Field(default="", description="Object (a noun).")
    attributes: str = Field(
        default="",
        description="Information that fits neither subject, relation nor object (time, place...).",
    )


class Decomposition(BaseModel):
    """The decomposer's structured representation D_c = (G_c, k_c)."""

    triplets: list[Triplet] = Field(description="Knowledge triplets of the claim.")
    topic: str = Field(default="", description="Topic (semantic domain) of the claim.")

    def entities(self) -> list[str]:
        """Subjects and objects, in order, without repeats or blanks (the memory keys)."""
        names = [n.strip() for t in self.triplets for n in (t.subject, t.object)]
        return list(dict.fromkeys(n for n in names if n))


class Action(BaseModel):
    """A tool call chosen by the executor."""

    name: str = Field(description="Tool name, one of the available tools.")
    reason: str = Field(default="", description="Why this tool and input.")
    input: str = Field(description="The tool's input: a search query or an article title.")


class ReactStep(BaseModel):
    """One ReAct step: a thought and either an action or a final answer."""

    thought: str = Field(default="", description="Your reasoning.")
    action: Action | None = Field(default=None, description="Tool call, when using a tool.")
    answer: str | None = Field(default=None, description="Final answer label, when answering.")
