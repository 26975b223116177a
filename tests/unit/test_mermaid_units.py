"""MERMAID's pure parts: routers, Context checks, decomposition entities, memory keys, sentences."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from langgraph.store.memory import InMemoryStore

from factdebate.core.errors import ConfigError
from factdebate.graphs.registry import context_class
from factdebate.nodes.mermaid.call_tool import mcp_connection
from factdebate.nodes.mermaid.execute_step import route_after_call_tool, route_after_execute_step
from factdebate.nodes.mermaid.state import MermaidContext
from factdebate.prompts import load_prompts
from factdebate.prompts.mermaid.schemas import Decomposition
from factdebate.tools.evidence_memory import EvidenceMemory, entity_key, mentions
from factdebate.tools.toolbox import sentences


def rt(t_max: int = 5) -> SimpleNamespace:
    return SimpleNamespace(t_max=t_max)  # routers take the Context itself (nodes/routing.py)


def test_routers_follow_algorithm_one():
    assert route_after_execute_step({"label": "SUPPORTS", "stopped_by": "answer", "round": 1},
                                  rt()) == "update_memory"
    assert route_after_execute_step({"pending": {"name": "x"}, "round": 5}, rt()) == "call_tool"
    assert route_after_execute_step({"pending": None, "round": 2}, rt()) == "execute_step"
    assert route_after_execute_step({"pending": None, "round": 5}, rt()) == "force_answer"
    assert route_after_call_tool({"round": 4}, rt()) == "execute_step"
    assert route_after_call_tool({"round": 5}, rt()) == "force_answer"


def test_context_defaults_and_checks():
    ctx = MermaidContext()
    assert (ctx.t_max, ctx.memory, ctx.decomposer, ctx.memory_only) == (5, True, True, False)
    assert ctx.prompt_set == "mermaid" and load_prompts("mermaid").version == "mermaid-2"
    assert context_class("mermaid") is MermaidContext
    with pytest.raises(ConfigError, match="t_max"):
        MermaidContext(t_max=0)
    with pytest.raises(ConfigError, match="tool_provider"):
        MermaidContext(tool_provider="grpc")


def test_mcp_connection_defaults_to_a_stdio_server_with_the_index_settings():
    conn = mcp_connection(MermaidContext(index_dir="/data/idx", search_backend="local_search"))
    assert conn["transport"] == "stdio"
    assert conn["args"][:4] == ["-m", "factdebate.tools.mcp_server", "--transport", "stdio"]
    assert conn["args"][conn["args"].index("--index-dir") + 1] == "/data/idx"
    assert conn["args"][conn["args"].index("--web-backend") + 1] == "local_search"
    url = mcp_connection(MermaidContext(mcp_url="http://127.0.0.1:9/mcp"))
    assert url == {"transport": "streamable_http", "url": "http://127.0.0.1:9/mcp"}
    custom = mcp_connection(MermaidContext(mcp_command="my-server --flag 'a b'"))
    assert custom["command"] == "my-server" and custom["args"] == ["--flag", "a b"]


def test_decomposition_entities_are_subjects_and_objects():
    d = Decomposition.model_validate({"triplets": [
        {"subject": "Marie Curie", "relation": "won", "object": "Nobel Prize"},
        {"subject": "Marie Curie", "relation": "was born", "object": "", "attributes": "1867"}],
        "topic": "science"})
    assert d.entities() == ["Marie Curie", "Nobel Prize"]


def test_entity_keys_fold_case_and_punctuation():
    assert entity_key("The Eiffel-Tower.") == "the eiffel tower"
    assert mentions("Eiffel Tower", "the eiffel tower stands") and not mentions("Eiffel", "Eiffelx")


async def test_memory_stores_records_under_the_entities_they_mention():
    memory = EvidenceMemory(InMemoryStore())
    written = await memory.update(["Paris", "Eiffel Tower"], [
        {"query": "Paris", "source": "get_summary", "id": "p", "title": "Paris",
         "text": "Paris is the capital of France.", "url": ""},
        {"query": "iron", "source": "search_web", "id": "x", "title": "Iron",
         "text": "Iron is a metal.", "url": ""}])
    assert written == 3  # Paris record under Paris; the unrelated record under both entities
    assert {r["id"] for r in await memory.recall(["paris"], limit=5)} == {"p", "x"}
    assert {r["id"] for r in await memory.recall(["Eiffel Tower"], limit=5)} == {"x"}
    assert await memory.recall(["Berlin"], limit=5) == []


def test_sentence_split():
    assert sentences("It is tall. It was built in 1889. Done!") == [
        "It is tall.", "It was built in 1889.", "Done!"]
