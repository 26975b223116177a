"""What a scripted model's responder sees and returns, and the registry of named scenarios.

Split from ``scripted.py`` so the scenarios (``scenarios.py``, ``scripted_ragas.py``) and the model
import this module and not each other: the built-in scenarios are lazy ``"module:attr"`` entries,
imported on first use by ``load_scripted_model``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from factdebate.core.registry import Registry


class ScriptFault(RuntimeError):
    """Raised by a responder to simulate a provider error (timeout, 500, crash)."""


@dataclass
class ScriptCall:
    """What a responder sees of one model call."""

    index: int
    """0-based index of the call on this model instance."""
    role: str
    """``fd_role`` from the call metadata: query, debater, judge, ragas, ... ("" if unnamed)."""
    agent: str
    """``fd_agent`` metadata (debater id) or ""."""
    round: int
    """``fd_round`` metadata or 0."""
    schema: type[BaseModel] | None
    """Requested structured-output schema, if any."""
    messages: list[BaseMessage]
    """The prompt."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """All call metadata (includes LangGraph's ``langgraph_node``)."""

    @cached_property
    def schema_name(self) -> str:
        """The requested schema's declared name ("" without one): see :func:`schema_name`."""
        return schema_name(self.schema)

    @cached_property
    def prompt(self) -> str:
        """All message contents joined (computed once per call)."""
        return "\n".join(str(m.content) for m in self.messages)


def schema_name(schema: Any) -> str:
    """A structured request's declared name: its JSON-schema ``title``.

    What a provider sees as the ``response_format``/tool name, so the double keys its replies on the
    same public contract a real model gets: a pydantic model's ``model_config["title"]`` when it
    declares one, else its class name (pydantic's own rule for the schema title); a JSON schema
    given as a dict, its ``"title"``.
    """
    if schema is None:
        return ""
    if isinstance(schema, dict):
        return str(schema.get("title", ""))
    config = getattr(schema, "model_config", None) or {}
    return str(config.get("title") or getattr(schema, "__name__", ""))


Responder = Callable[[ScriptCall], "str | dict[str, Any] | BaseModel"]


@dataclass
class CallRecord:
    """One call on the timeline (monotonic seconds)."""

    index: int
    role: str
    agent: str
    round: int
    start: float
    end: float


ScenarioFactory = Callable[[], Responder]
SCENARIOS: Registry[ScenarioFactory] = Registry("scripted scenario")
"""Scenario name -> factory of its responder (``scripted:<name>``)."""
SCENARIOS.register("agree", "factdebate.testing.scenario_replies:agree")
SCENARIOS.register("disagree", "factdebate.testing.scenario_replies:disagree")
SCENARIOS.register("check_text", "factdebate.testing.scenarios_check_text:check_text")
SCENARIOS.register("check_text_debris", "factdebate.testing.scenarios_check_text:check_text_debris")
SCENARIOS.register("lookup", "factdebate.testing.scenarios_memory:lookup")
