"""Model-call configs merged with the run's once (``factdebate.core.models.call_configs``)."""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, merge_configs
from langgraph.graph import END, START, StateGraph

from factdebate.core.models import negotiation
from factdebate.core.models.call_configs import (
    MergedConfig,
    merged_with_run,
    run_call_config,
    with_metadata,
)
from factdebate.tools.scoring import metric_config


class Handler(BaseCallbackHandler):
    """A callback handler the run was started with."""


class Ours(BaseCallbackHandler):
    """A handler a model call adds (the usage tracker's place)."""


class S(TypedDict, total=False):
    out: dict[str, Any]


def _in_a_node(make: Any) -> dict[str, Any]:
    """``make()`` called inside a LangGraph node of a run started with a handler, tags and
    metadata; returns what it made and LangChain's own merge made in the same place."""
    got: dict[str, Any] = {}

    def node(state: S, config: RunnableConfig) -> S:
        got["ours"] = make()
        got["langchain"] = merge_configs(
            ensure_config(), {"callbacks": [OURS], "metadata": {"fd_role": "debater", "x": 2},
                              "tags": ["fd:debater"]})
        return {}

    graph = StateGraph(S)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    graph.compile().invoke({}, {"callbacks": [HANDLER], "tags": ["run-tag"],
                                "metadata": {"x": 1, "user": "u"}})
    return got


HANDLER, OURS = Handler(), Ours()


def _same(a: RunnableConfig, b: RunnableConfig) -> None:
    assert a["tags"] == b["tags"]
    assert a["metadata"] == b["metadata"]
    assert a["configurable"] == b["configurable"]
    ma, mb = a["callbacks"], b["callbacks"]
    assert ma.handlers == mb.handlers and ma.inheritable_handlers == mb.inheritable_handlers
    assert ma.parent_run_id == mb.parent_run_id and ma.parent_run_id is not None
    assert ma.inheritable_metadata == mb.inheritable_metadata
    assert sorted(ma.inheritable_tags) == sorted(mb.inheritable_tags)


def test_a_call_config_is_what_langchains_merge_gives_in_the_same_node():
    got = _in_a_node(lambda: run_call_config(
        callbacks=[OURS], metadata={"fd_role": "debater", "x": 2}, tags=["fd:debater"]))
    ours, langchain = got["ours"], got["langchain"]
    assert isinstance(ours, MergedConfig)
    _same(ours, langchain)
    assert HANDLER in ours["callbacks"].handlers and OURS in ours["callbacks"].handlers
    assert ours["metadata"]["x"] == 2 and ours["metadata"]["user"] == "u"  # ours on top
    assert "run-tag" in ours["tags"] and "fd:debater" in ours["tags"]


def test_the_call_config_leaves_the_nodes_own_config_untouched():
    seen: dict[str, Any] = {}

    def make() -> MergedConfig:
        before = ensure_config()
        made = run_call_config(callbacks=[OURS], metadata={"fd_role": "r"}, tags=["t"])
        after = ensure_config()
        seen.update(before=before, after=after)
        return made

    _in_a_node(make)
    assert OURS not in seen["after"]["callbacks"].handlers
    assert "fd_role" not in seen["after"]["metadata"] and "t" not in seen["after"]["tags"]


def test_a_merged_config_is_not_merged_again_and_stays_merged_through_copies():
    got = _in_a_node(lambda: run_call_config(callbacks=[OURS], metadata={"fd_role": "debater"}))
    merged = got["ours"]
    assert merged_with_run(merged) is merged
    tagged = negotiation.tagged(merged, "json_schema")
    assert isinstance(tagged, MergedConfig) and tagged is not merged
    assert tagged["tags"][-1] == "structured_output:json_schema"
    assert "structured_output:json_schema" not in merged["tags"]
    metric = metric_config(merged, "faithfulness")
    assert isinstance(metric, MergedConfig)
    assert metric["metadata"]["fd_metric"] == "faithfulness"
    assert metric["run_name"] == "ragas_faithfulness" and "run_name" not in merged
    assert metric["callbacks"] is merged["callbacks"]


def test_a_plain_config_is_still_merged_with_the_run():
    plain: RunnableConfig = {"callbacks": [OURS], "metadata": {"a": 1}}
    merged = merged_with_run(plain)
    assert merged is not plain and merged["metadata"] == {"a": 1}
    extra = with_metadata(plain, {"b": 2}, run_name="r")
    assert extra["metadata"] == {"a": 1, "b": 2} and extra["run_name"] == "r"
    assert not isinstance(extra, MergedConfig)
