"""ragas metric prompts rendered without their JSON-schema paragraph: the request carries the schema.

Why: ragas 0.4.3's ``BasePrompt.to_string`` (the prompts of the collections metrics we run:
Faithfulness' statement and NLI prompts, AnswerRelevancy's question prompt) writes the output
model's whole JSON schema into the prompt text ("Please return the output in a JSON format that
complies with the following schema ... {schema}Do not use single quotes ..."), for LLMs that get no
schema any other way. Ours always get it another way: ``tools/scoring.LangChainRagasLLM`` asks
through the structured-output negotiation (``factdebate.core.models.negotiation``), which sends
the schema with the request (``json_schema``: ``response_format``; ``function_calling``: the tool's
parameters - OpenAI bills both as prompt tokens) or appends it to the prompt itself
(``json_mode``/``text``: ``schema_instruction``), and natively-JSON models (the embedded model's
grammar, the scripted double) receive it as ``fd_schema``. The paragraph was a second copy of the
schema in every RAGAS call: 1,542 of a Tool-MAD claim's ~13,800 prompt tokens on the scripted
double (``factdebate bench tokens``; the field descriptions it also carried are in the
request's schema, and the instructions and few-shot examples say the same).

What: :func:`render` is ragas' ``to_string`` without that paragraph - the instruction, the few-shot
examples and the input, otherwise the same text in the same order (the stable part first, so a
provider's prompt cache serves it across calls and claims). ``tools/ragas_metrics`` sets it as the
``to_string`` of the prompt instances our metrics own (ragas' classes are untouched), only when
``factdebate.patches.enabled("ragas_prompts")``: the gate in ``factdebate.patches.PATCHES`` names
the ragas version whose template this copies; with another ragas the prompts are ragas' own.
"""

from __future__ import annotations

from types import MethodType
from typing import Any

from ragas.prompt.metrics.base_prompt import BasePrompt


def install() -> bool:
    """Whether ragas' prompts still render through ``BasePrompt.to_string`` and its examples."""
    return callable(getattr(BasePrompt, "to_string", None)) and callable(
        getattr(BasePrompt, "_generate_examples", None))


def render(prompt: Any, data: Any) -> str:
    """ragas 0.4.3 ``BasePrompt.to_string(data)`` without the JSON-schema paragraph.

    The few-shot examples are rendered once per prompt instance and list of examples (ragas
    renders them with pydantic on every call: 10 of the 13 ``model_dump_json`` of a stability
    score)."""
    key = (id(prompt.examples), len(prompt.examples))
    memo = prompt.__dict__.get("_fd_examples")
    if memo is None or memo[0] != key:
        memo = prompt.__dict__["_fd_examples"] = (key, prompt._generate_examples())
    examples = memo[1]
    input_json = data.model_dump_json(indent=4, exclude_none=True)
    return f"""{prompt.instruction}

{examples}
-----------------------------

Now perform the same with the following input
input: {input_json}
Output: """


def without_schema(prompt: Any) -> Any:
    """``prompt`` (a ragas ``BasePrompt`` instance) rendering with :func:`render` from now on."""
    prompt.to_string = MethodType(render, prompt)
    return prompt
