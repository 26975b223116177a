"""MERMAID's Context subclass and graph state (shared by ``graphs/mermaid.py`` and its nodes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired

from factdebate.core.context import Context, _describe
from factdebate.core.errors import ConfigError
from factdebate.core.state import DebateState, Turn
from factdebate.tools.evidence_memory import MemoryRecord
from factdebate.tools.toolbox import OFFLINE_TOOLS

TOOL_PROVIDERS = ("mcp", "in_process")


@dataclass(kw_only=True)
class MermaidContext(Context):
    """Knobs of MERMAID on top of the shared Context (models, index, label set ...)."""

    prompt_set: str = _describe("mermaid", "Prompt set (folder under prompts/).")
    t_max: int = _describe(5, "Maximum ReAct steps T_max; at T_max the executor must answer (1-20).")
    memory: bool = _describe(
        True, "Evidence memory: recall records of the claim's entities before the first step and "
        "store the tools' evidence after the answer (persists in the LangGraph store)."
    )
    decomposer: bool = _describe(
        True, "Decompose the claim into triplets + topic first; off = no background and no entity "
        "keys (so no memory either)."
    )
    memory_only: bool = _describe(
        False, "Offer the executor no tools: it answers from the recalled memory alone."
    )
    memory_recall_limit: int = _describe(5, "Records recalled per entity.")
    decomposer_model: str = _describe("", "Decomposer model spec; empty = debater_model.")
    executor_model: str = _describe("", "Executor (ReAct) model spec; empty = debater_model.")
    tool_provider: str = _describe(
        "mcp", "'mcp' = tools from the MCP server (tools/mcp_server.py); 'in_process' = the same "
        "tool functions called directly (no server process)."
    )
    mcp_url: str = _describe(
        "", "Streamable-HTTP URL of a running MCP tool server, e.g. http://127.0.0.1:8765/mcp; "
        "empty = spawn mcp_command over stdio.", env="FACTDEBATE_MCP_URL",
    )
    mcp_command: str = _describe(
        "", "Command that starts an MCP server on stdio; empty = 'python -m factdebate.tools.mcp_server "
        "--transport stdio' with this Context's index, wiki and web settings.",
    )
    mcp_tools: list[str] = _describe(
        OFFLINE_TOOLS, "MCP tools offered to the executor. Online extras: search_scholar "
        "(OpenAlex), search_arxiv, search_pubmed; wiki_backend=mediawiki for Wikipedia itself.",
    )
    wiki_backend: str = _describe(
        "keyword", "Source of the Wikipedia tools: 'keyword' or 'milvus' (local corpus index) or "
        "'mediawiki' (MediaWiki API, FACTDEBATE_MEDIAWIKI_URL).",
    )

    def validate(self) -> None:
        """Shared checks plus MERMAID's ranges."""
        super().validate()
        if not 1 <= self.t_max <= 20:
            raise ConfigError(f"t_max={self.t_max} is out of range", "use 1 to 20")
        if self.tool_provider not in TOOL_PROVIDERS:
            raise ConfigError(f"unknown tool_provider {self.tool_provider!r}",
                              f"use {' or '.join(TOOL_PROVIDERS)}")
        if self.memory_recall_limit < 1:
            raise ConfigError("memory_recall_limit must be positive", "use 1 or more")

    @property
    def decomposer_model_spec(self) -> str:
        """Model of the decomposer."""
        return self.decomposer_model or self.debater_model

    @property
    def executor_model_spec(self) -> str:
        """Model of the ReAct executor (and its forced answer)."""
        return self.executor_model or self.debater_model


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
    """The action chosen by the last ``react_step`` (thought, name, input, reason), awaiting
    ``call_tool``; None otherwise."""
