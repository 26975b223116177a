"""Pieces without a server: error types the server shows, retriever runs, run metadata."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.core.errors import BackendUnavailableError, ConfigError, InputError
from factdebate.core.state import complete_input
from factdebate.graphs.registry import build_framework
from factdebate.run.claims import model_metadata
from factdebate.run.engine import run_graph
from factdebate.server.run_input import add_model_metadata, complete_run_input
from factdebate.testing.scenario_replies import agree


def test_project_errors_are_types_langgraph_api_shows():
    from langgraph_api.serde import default

    for exc in (InputError("max_rounds=99 is out of range", "use 1 to 10"),
                ConfigError("unknown model", "use openai:..."),
                BackendUnavailableError("no index", "run: factdebate index")):
        shown = default(exc)
        assert shown == {"error": type(exc).__name__, "message": str(exc)}
        assert "internal error" not in shown["message"]


class Retrievals(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.runs: list[tuple[str, str]] = []
        self.docs: list[int] = []

    async def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID,
                                 **kwargs: Any) -> None:
        self.runs.append((kwargs.get("name") or "", query))

    async def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.docs.append(len(documents))


async def test_retrieval_shows_as_retriever_runs(scenario, static_ctx):
    handler = Retrievals()
    graph = build_framework("tool_mad").compile(checkpointer=InMemorySaver())
    await graph.ainvoke(complete_input({"claim": "The Eiffel Tower is in Paris."}),
                        {"configurable": {"thread_id": "t"}, "callbacks": [handler]},
                        context=static_ctx(scenario(agree())))
    assert handler.runs and all(name == "static" for name, _ in handler.runs)
    assert handler.docs and all(n > 0 for n in handler.docs)


async def test_cli_runs_carry_model_specs_as_metadata(scenario, static_ctx):
    seen: list[dict] = []

    class Root(AsyncCallbackHandler):
        async def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID,
                                 parent_run_id: UUID | None = None, metadata: Any = None,
                                 **kwargs: Any) -> None:
            if parent_run_id is None:
                seen.append(dict(metadata or {}))

    spec = scenario(agree())
    ctx = static_ctx(spec)
    await run_graph("tool_mad", {"claim": "The Eiffel Tower is in Paris."}, ctx,
                    checkpointer=InMemorySaver(), config_extra={"callbacks": [Root()]})
    assert seen and seen[0]["model_debater"] == spec
    assert model_metadata(ctx)["model_debater"] == spec


def test_server_run_input_completes_the_input_and_adds_models():
    value: dict[str, Any] = {"kwargs": {"input": {"claim": "c", "task": "fever"},
                                        "context": {"debater_model": "openai:gpt-4o-mini",
                                                    "judge_model": ""}},
                             "metadata": {}}
    complete_run_input(value)
    add_model_metadata(value)
    assert value["kwargs"]["input"] == {"claim": "c", "task": "fever", "options": None,
                                        "documents": None, "exclude_titles": None}
    assert value["metadata"] == {"model_debater": "openai:gpt-4o-mini",
                                 "model_judge": "openai:gpt-4o-mini"}
    resume: dict[str, Any] = {"kwargs": {"input": None}, "metadata": {}}
    complete_run_input(resume)
    assert resume["kwargs"]["input"] is None  # a resume is not a new claim
