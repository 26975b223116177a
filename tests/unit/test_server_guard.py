"""Defence in depth: a server run's first node refuses operator-only settings the auth handler missed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from factdebate.core.errors import SettingsRefused
from factdebate.graphs.mermaid import graph as mermaid_graph
from factdebate.graphs.tool_mad import graph as tool_mad_graph
from factdebate.nodes.mermaid.state import MermaidContext
from factdebate.nodes.tool_mad.state import ToolMadContext

SERVER_RUN = {"configurable": {"langgraph_auth_user_id": "alice"}}


async def test_tool_mad_server_run_with_a_client_index_dir_is_refused():
    ctx = ToolMadContext(debater_model="scripted:agree", index_dir="/etc")
    with pytest.raises(SettingsRefused) as info:
        await tool_mad_graph.ainvoke({"claim": "Paris is in France."}, config=SERVER_RUN, context=ctx)
    assert info.value.field == "index_dir" and "operator-only" in str(info.value)


async def test_mermaid_server_run_spawns_nothing(tmp_path: Path):
    marker = tmp_path / "spawned"
    command = f"{sys.executable} -c \"open({str(marker)!r}, 'w').write('x')\""
    ctx = MermaidContext(debater_model="scripted:agree", mcp_command=command)
    with pytest.raises(SettingsRefused) as info:
        await mermaid_graph.ainvoke({"claim": "Paris is in France."}, config=SERVER_RUN, context=ctx)
    assert info.value.field == "mcp_command"
    assert not marker.exists()


def test_operator_values_from_the_environment_pass(monkeypatch, tmp_path: Path):
    """Inside a server run, the operator's own environment values are not "client settings"."""
    from langchain_core.runnables import RunnableLambda

    from factdebate.nodes.prepare import guard_server_run

    monkeypatch.setenv("FACTDEBATE_ALLOW_SCRIPTED", "1")  # the server's allow-list admits the model
    monkeypatch.setenv("FACTDEBATE_INDEX_DIR", str(tmp_path))
    ctx = ToolMadContext(debater_model="scripted:agree")
    assert ctx.index_dir == str(tmp_path)
    RunnableLambda(lambda _: guard_server_run(ctx)).invoke(None, config=SERVER_RUN)  # passes
    client_set = ToolMadContext(debater_model="scripted:agree", index_dir="/srv/other")
    with pytest.raises(SettingsRefused):
        RunnableLambda(lambda _: guard_server_run(client_set)).invoke(None, config=SERVER_RUN)
    guard_server_run(client_set)  # a CLI run (no server user) keeps full control


def test_the_egress_filter_wraps_every_route_of_the_server():
    """langgraph-api runs the custom app's middleware around all its routes, in order, before its
    own (``middleware_order: middleware_first``): the secret filter is the outermost, so the
    guard's refusals pass it too."""
    import json

    from factdebate.server.egress import EgressFilter
    from factdebate.server.guard import ServerGuard
    from factdebate.server.webapp import app

    assert [m.cls for m in app.user_middleware] == [EgressFilter, ServerGuard]
    config = json.loads((Path(__file__).resolve().parents[2] / "langgraph.json").read_text())
    assert config["http"]["app"] == "factdebate.server.webapp:app"
    assert config["http"]["middleware_order"] == "middleware_first"
