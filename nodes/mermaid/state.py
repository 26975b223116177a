"""MERMAID's Context subclass and graph state (shared by ``graphs/mermaid.py`` and its nodes).

Lives with the framework's nodes, not in ``factdebate.core``: only this framework
reads it. Shared nodes read what ``factdebate.core.context``'s protocols declare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NotRequired, get_args

from factdebate.core.context import Context
from factdebate.core.settings import knob
from factdebate.core.state import DebateState, Turn
from factdebate.tools.mermaid_shapes import OFFLINE_TOOLS, MemoryRecord

ToolProviderName = Literal["mcp", "in_process"]
TOOL_PROVIDERS = get_args(ToolProviderName)


@dataclass(kw_only=True)
class MermaidContext(Context):
    """Knobs of MERMAID on top of the shared Context (models, index, label set ...).

    Operator-only here: how tools are served (``tool_provider``, ``mcp_url``, ``mcp_command``),
    which tools (``mcp_tools``: online extras contact outside services) and ``wiki_backend``.
    """

    prompt_set: str = knob("mermaid", "Prompt set (folder under prompts/).", operator=True)
    t_max: int = knob(
        5, "Maximum ReAct steps T_max; at T_max the executor must answer (1-20).", range=(1, 20))
    memory: bool = knob(
        True, "Evidence memory: recall records of the claim's entities before the first step and "
        "store the tools' evidence after the answer (persists in the LangGraph store)."
    )
    decomposer: bool = knob(
        True, "Decompose the claim into triplets + topic first; off = no background and no entity "
        "keys (so no memory either)."
    )
    memory_only: bool = knob(
        False, "Offer the executor no tools: it answers from the recalled memory alone."
    )
    memory_recall_limit: int = knob(5, "Records recalled per entity (1-50).", range=(1, 50))
    decomposer_model: str = knob(
        "", "Decomposer model spec; empty = debater_model.", model=True)
    executor_model: str = knob(
        "", "Executor (ReAct) model spec; empty = debater_model.", model=True)
    tool_provider: ToolProviderName = knob(
        "mcp", "'mcp' = tools from the MCP server (tools/mcp_server.py); 'in_process' = the same "
        "tool functions called directly (no server process).", operator=True,
    )
    mcp_url: str = knob(
        "", "Streamable-HTTP URL of a running MCP tool server, e.g. http://127.0.0.1:8391/mcp; "
        "empty = spawn mcp_command over stdio.", env="FACTDEBATE_MCP_URL", operator=True,
    )
    mcp_command: str = knob(
        "", "Command that starts an MCP server on stdio; empty = 'python -m "
        "factdebate.tools.mcp_server --transport stdio' with this Context's index, wiki and web "
        "settings.", operator=True,
    )
    mcp_tools: list[str] = knob(
        OFFLINE_TOOLS, "MCP tools offered to the executor. Online extras: search_scholar "
        "(OpenAlex), search_arxiv, search_pubmed; wiki_backend=mediawiki for Wikipedia itself.",
        operator=True,
    )
    wiki_backend: str = knob(
        "keyword", "Source of the Wikipedia tools: 'keyword' or 'milvus' (local corpus index) or "
        "'mediawiki' (MediaWiki API, FACTDEBATE_MEDIAWIKI_URL).", operator=True,
    )

    @property
    def decomposer_model_spec(self) -> str:
        """Model of the decomposer."""
        return self.decomposer_model or self.debater_model

    @property
    def executor_model_spec(self) -> str:
        """Model of the ReAct executor (and its forced answer)."""
        return self.executor_model or self.debater_model

    def model_specs(self) -> dict[str, str]:
        """The shared roles plus the decomposer and the executor."""
        return {**super().model_specs(), "decomposer": self.decomposer_model_spec,
                "executor": self.executor_model_spec}


class ReactTurn(Turn):
    """One ReAct step (thought -> action -> observation) as a ``Turn``."""

    action: NotRequired[str]
    """Tool called in this step ("" for the answer step)."""
    reason: NotRequired[str]
    """Why the executor chose the action."""


class MermaidState(DebateState):
    """Debate state plus the decomposition, memory recall and the pending action."""

    decomposition: dict[str, Any]
    """The decomposer's output: ``{"triplets": [...], "topic": str}`` (empty when off/failed)."""
    entities: list[str]
    """Subjects and objects of the triplets: the memory keys."""
    recalled: list[MemoryRecord]
    """Records recalled from the evidence memory for this claim."""
    pending: dict[str, str] | None
    """The action chosen by the last ``execute_step`` (thought, name, input, reason), awaiting
    ``call_tool``; None otherwise."""
