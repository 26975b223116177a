"""A run that names no model gets the operator's model, which must be on the allow-list: the
server's start, the run's admission and the graph's first node each refuse a default off it."""

from __future__ import annotations

import pytest
from langchain_core.runnables import RunnableLambda

from factdebate.core.errors import ConfigError, SettingsRefused
from factdebate.nodes.prepare import guard_server_run
from factdebate.nodes.tool_mad.state import ToolMadContext
from factdebate.server.policy import Refused, check_default_models, check_run_kwargs

SERVER_RUN = {"configurable": {"langgraph_auth_user_id": "alice"}}


@pytest.fixture
def scripted_only(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("FACTDEBATE_ALLOWED_MODELS", "scripted:*")
    monkeypatch.delenv("FACTDEBATE_ALLOW_SCRIPTED", raising=False)
    monkeypatch.delenv("FACTDEBATE_MODEL", raising=False)
    return monkeypatch


def test_a_default_model_off_the_allow_list_stops_the_start(scripted_only):
    with pytest.raises(ConfigError) as info:
        check_default_models()
    assert "debater_model defaults to 'local:smollm2'" in str(info.value)
    assert "scripted:*" in str(info.value) and "FACTDEBATE_MODEL" in str(info.value)
    scripted_only.setenv("FACTDEBATE_MODEL", "scripted:agree")
    check_default_models()  # the operator's model is allowed: the server starts


@pytest.mark.parametrize("kwargs", [
    {}, {"context": {}}, {"context": {"max_rounds": 1}},
    {"config": {"configurable": {"judge_model": "scripted:agree"}}},  # the debater still unset
])
def test_a_run_without_a_model_is_refused_when_the_default_is_not_allowed(scripted_only, kwargs):
    with pytest.raises(Refused) as info:
        check_run_kwargs(kwargs, "tool_mad")
    assert info.value.status == 403 and info.value.field == "debater_model"
    assert "scripted:*" in info.value.detail and "local:smollm2" in info.value.detail


def test_a_run_without_a_model_gets_the_operators_allowed_model(scripted_only):
    scripted_only.setenv("FACTDEBATE_MODEL", "scripted:agree")
    check_run_kwargs({"context": {}}, "tool_mad")
    check_run_kwargs({}, None)
    check_run_kwargs({"context": {"debater_model": "scripted:disagree"}}, "tool_mad")


def test_the_first_node_refuses_every_role_model_off_the_allow_list(scripted_only):
    def guarded(ctx: ToolMadContext) -> None:
        RunnableLambda(lambda _: guard_server_run(ctx)).invoke(None, config=SERVER_RUN)

    with pytest.raises(SettingsRefused) as info:
        guarded(ToolMadContext())  # what a run without context gets: local:smollm2
    assert info.value.field == "debater_model" and "scripted:*" in str(info.value)
    with pytest.raises(SettingsRefused) as info:
        guarded(ToolMadContext(debater_model="scripted:agree", scoring_model="openai:gpt-4o"))
    assert info.value.field == "scoring_model"
    guarded(ToolMadContext(debater_model="scripted:agree", judge_model="scripted:agree"))
    guard_server_run(ToolMadContext())  # a CLI run (no server user) uses any model
