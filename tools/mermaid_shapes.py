"""What MERMAID's Context and state share with its tools: the offline tool names, the memory record.

Both are defined here, in the tools layer beside the tools that use them (moved from the core in
no other framework reads them), and ``factdebate.nodes.mermaid.state`` (the Context
default ``mcp_tools`` and ``MermaidState.recalled``) imports them from below;
``factdebate.tools.toolbox`` and ``factdebate.tools.evidence_memory`` re-export them.
"""

from __future__ import annotations

from typing import TypedDict

OFFLINE_TOOLS = ["search_wikipedia", "get_summary", "get_sections", "get_article",
                 "get_related_topics", "extract_key_facts", "search_web"]
"""Tools that work without network (with a local index and the web stand-in)."""


class MemoryRecord(TypedDict):
    """One remembered piece of evidence."""

    entity: str
    """Entity key the record is stored under."""
    query: str
    """The tool input that fetched it."""
    source: str
    """Tool name that fetched it (``search_wikipedia``, ``get_summary`` ...)."""
    id: str
    """Evidence id in its source."""
    title: str
    """Evidence title."""
    text: str
    """Evidence text."""
    url: str
    """Link, or ``""``."""
    timestamp: str
    """UTC time the record was stored (ISO 8601)."""
