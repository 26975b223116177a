"""Values every debate prompt shares (claim, task and label instructions, tool description)."""

from __future__ import annotations

from typing import Any

from factdebate.core.context import Context
from factdebate.nodes.render import render_options
from factdebate.prompts import PromptSet, label_instructions, load_prompts


def prompt_set(ctx: Context) -> PromptSet:
    """The Context's prompt set."""
    return load_prompts(ctx.prompt_set)


def common_values(state: Any, ctx: Context, kind: str) -> dict[str, Any]:
    """Placeholders shared by query, debate and judge templates."""
    prompts = prompt_set(ctx)
    instructions = label_instructions()[state["task"]]
    tools: dict[str, Any] = prompts.templates.get("tools", {})  # name -> {name, description}
    tool = tools.get(kind, {"name": kind, "description": ""})
    return {
        "subject": instructions["subject"],
        "claim": state["claim"],
        "options": render_options(state.get("options")),
        "task": instructions["task"],
        "labels": instructions["labels"],
        "tool_name": tool["name"],
        "tool_description": tool["description"],
    }
