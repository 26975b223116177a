"""The scripted double's contract with the nodes is public: it answers a structured
request by the schema's declared name (its JSON-schema title, what a provider is sent), and it is
registered as a provider from outside the core (a ``factdebate.providers`` entry point)."""

from __future__ import annotations

from typing import Literal

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, ConfigDict, Field

from factdebate.core.errors import ConfigError
from factdebate.core.models import PROVIDERS, load_model
from factdebate.core.registry import Registry
from factdebate.nodes.madke.judge_consensus import ConsensusOut
from factdebate.testing.scenario_replies import respond_any
from factdebate.testing.script import ScriptCall, schema_name


class RenamedConsensus(BaseModel):
    """A node schema under another class name that declares the consensus judge's title."""

    model_config = ConfigDict(title="ConsensusOut")
    reasoning: str = Field(description="Each agent's extracted answer.")
    consensus: Literal["Yes", "No"]


class SameFieldsOtherTitle(BaseModel):
    """The consensus judge's fields under another declared name: not the consensus reply."""

    model_config = ConfigDict(title="SomethingElse")
    reasoning: str
    consensus: Literal["Yes", "No"]


def call(schema: type[BaseModel]) -> ScriptCall:
    return ScriptCall(index=0, role="judge", agent="", round=1, schema=schema,
                      messages=[HumanMessage("Claim: Paris is in France.")])


def test_the_declared_title_is_the_name():
    assert schema_name(ConsensusOut) == "ConsensusOut" == ConsensusOut.model_json_schema()["title"]
    assert schema_name(RenamedConsensus) == "ConsensusOut" == \
        RenamedConsensus.model_json_schema()["title"]
    assert schema_name({"title": "DocAnswer", "type": "object"}) == "DocAnswer"
    assert schema_name(None) == ""


def test_a_schema_is_answered_by_its_declared_title_not_its_class():
    original = respond_any(call(ConsensusOut), agrees=False, first=True)
    renamed = respond_any(call(RenamedConsensus), agrees=False, first=True)
    assert original == renamed == {"reasoning": "Compared the answers.", "consensus": "No"}
    other = respond_any(call(SameFieldsOtherTitle), agrees=False, first=True)
    assert other != original  # the same fields under another title get the generic fill


def test_the_double_is_a_provider_registered_from_outside_the_core():
    assert PROVIDERS.entry("scripted").meta == {"entry_point": "factdebate.providers"}
    assert type(load_model("scripted:agree")).__module__ == "factdebate.testing.scripted"


def test_a_registry_without_the_name_in_its_group_names_what_it_knows():
    registry: Registry[str] = Registry("thing", entry_points="factdebate.no-such-group")
    registry.register("one", "x")
    with pytest.raises(ConfigError, match="unknown thing 'two'") as err:
        registry.resolve("two")
    assert err.value.remedy == "known: one"
