"""Our model-call path after its CPU trims: same configs, callbacks, token counts and replies.

Each trim (structured output without a ``RunnableBinding``, cached structured runnables, one
merged config per ragas metric, the scripted double's bookkeeping, the ledger skipping chat-model
start events) is checked against the behaviour it replaced, inside a LangGraph node where the
enclosing run's callbacks and metadata must be inherited.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any, TypedDict

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from factdebate.core.labels import QueryOut, verdict_schema
from factdebate.core.ledger import UsageTracker
from factdebate.core.models.structured import JsonStructuredOutput
from factdebate.nodes.llm import CallLog, ask_structured, call_config, structured_runnable
from factdebate.testing.scenarios import _SUBJECT, _subject, claim_of
from factdebate.testing.scripted import ScriptCall, _words, scripted
from factdebate.testing.scripted_ragas import respond_ragas


class Recorder(BaseCallbackHandler):
    """Records chat-model starts and chain starts as a graph-level handler sees them."""

    run_inline = True

    def __init__(self) -> None:
        self.chat: list[dict[str, Any]] = []
        self.chains: dict[str, Any] = {}

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None,  # noqa: ANN001
                            tags=None, metadata=None, **kwargs: Any) -> None:
        self.chat.append({
            "parent": parent_run_id, "tags": sorted(tags or []), "metadata": dict(metadata or {}),
            "params": {k: v for k, v in kwargs.get("invocation_params", {}).items()},
            "name": kwargs.get("name"), "messages": [[m.content for m in ms] for ms in messages],
        })

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None,  # noqa: ANN001
                       **kwargs: Any) -> None:
        self.chains[kwargs.get("name")] = run_id


def run_in_node(body: Any, recorder: Recorder, *, metadata: dict | None = None) -> Any:
    """Run ``await body()`` as the only node of a graph, with ``recorder`` on the graph run."""
    out: dict[str, Any] = {}

    async def node(state: dict) -> dict:
        out["value"] = await body()
        return {}

    class State(TypedDict, total=False):
        x: int

    graph = StateGraph(State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    config = {"callbacks": [recorder], "metadata": metadata or {"run": "r1"}, "tags": ["outer"]}
    asyncio.run(graph.compile().ainvoke({"x": 1}, config))
    return out["value"]


def answer(call: ScriptCall) -> Any:
    if call.role == "ragas":
        return respond_ragas(call)
    if call.schema is QueryOut:
        return {"query": "capital of France"}
    return {"reasoning": "r", "label": "SUPPORTS"}


MESSAGES = [SystemMessage("You check claims."), HumanMessage("Claim: Paris is in France.")]


def test_structured_output_sees_the_same_config_as_through_a_binding() -> None:
    """The old path was ``model.bind(fd_schema=...)``: its config merge is kept exactly."""
    model = scripted(answer)
    recorder = Recorder()
    calls = CallLog()

    async def body() -> tuple[Any, Any]:
        config = call_config(calls, role="query", agent="rag", round_=2)
        old = await model.bind(fd_schema=QueryOut).ainvoke(MESSAGES, config)
        new = await JsonStructuredOutput(model, QueryOut, include_raw=True).ainvoke(
            MESSAGES, config)
        return old, new

    old, new = run_in_node(body, recorder)
    assert new["parsed"] == QueryOut(query="capital of France")
    assert new["raw"].content == old.content and new["parsing_error"] is None
    assert new["raw"].usage_metadata == old.usage_metadata
    binding, direct = recorder.chat
    # the model run is a child of the node run and inherits graph and call metadata and tags
    assert binding["parent"] == direct["parent"] == recorder.chains["node"]
    assert binding["metadata"] == direct["metadata"]
    assert direct["metadata"]["fd_role"] == "query" and direct["metadata"]["fd_round"] == 2
    assert direct["metadata"]["langgraph_node"] == "node" and direct["metadata"]["run"] == "r1"
    assert binding["tags"] == direct["tags"] and "fd:query" in direct["tags"]
    assert binding["params"] == direct["params"] and direct["params"]["fd_schema"] is QueryOut
    assert calls.tracker.llm_calls == 2  # the call's own callbacks fire too


def test_structured_output_sync_invoke_and_caller_kwargs() -> None:
    model = scripted(answer)
    tracker = UsageTracker()
    runnable = JsonStructuredOutput(model, QueryOut, include_raw=False)
    assert runnable.invoke(MESSAGES, {"callbacks": [tracker]}) == QueryOut(query="capital of France")
    assert tracker.llm_calls == 1
    # caller kwargs override the schema, as with a binding
    seen: list[Any] = []
    probe = scripted(lambda call: seen.append(call.schema) or '{"query": "q"}')
    JsonStructuredOutput(probe, QueryOut, include_raw=False).invoke(MESSAGES, fd_schema=None)
    assert seen == [None]


def test_ask_structured_reuses_one_runnable_per_model_and_schema() -> None:
    model, other = scripted(answer), scripted(answer)
    verdict = verdict_schema("fever")
    first = structured_runnable(model, QueryOut)
    assert structured_runnable(model, QueryOut) is first
    assert structured_runnable(model, verdict) is not first
    assert structured_runnable(other, QueryOut) is not first
    as_dict = QueryOut.model_json_schema()  # unhashable: built per call, still works
    assert structured_runnable(model, as_dict) is not structured_runnable(model, as_dict)
    assert structured_runnable(model, as_dict).invoke(MESSAGES)["parsed"] == {
        "reasoning": "r", "label": "SUPPORTS"}  # parsed as plain JSON (``answer`` keys on class)
    recorder = Recorder()
    calls = CallLog()

    async def body() -> list:
        return [await ask_structured(model, MESSAGES, QueryOut, retries=0,
                                     config=call_config(calls, role="query", agent="rag"))
                for _ in range(3)]

    results = run_in_node(body, recorder)
    assert results == [(QueryOut(query="capital of France"), '{"query": "capital of France"}')] * 3
    assert calls.tracker.llm_calls == 3
    assert [c["parent"] for c in recorder.chat] == [recorder.chains["node"]] * 3


def test_structured_runnable_cache_is_bounded_and_checks_identity(monkeypatch) -> None:  # noqa: ANN001
    from factdebate.core.models import negotiation as llm  # the LRU lives with the negotiation

    monkeypatch.setattr(llm, "_runnables", type(llm._runnables)())
    monkeypatch.setattr(llm, "_RUNNABLES_MAX", 3)
    models = [scripted(answer) for _ in range(5)]
    runnables = [structured_runnable(m, QueryOut) for m in models]
    assert len(llm._runnables) == 3
    assert structured_runnable(models[-1], QueryOut) is runnables[-1]
    assert structured_runnable(models[0], QueryOut) is not runnables[0]  # evicted, built again
    # an entry is only used for the very model it was built for (ids can be reused)
    key = (id(models[-1]), QueryOut, "json_schema")
    llm._runnables[key] = (scripted(answer), "stale")
    assert structured_runnable(models[-1], QueryOut) != "stale"


class FakeEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, float(len(text) % 3), 0.5]


def test_ragas_calls_carry_the_metric_config_and_inherit_the_node_run() -> None:
    pytest.importorskip("ragas")
    from factdebate.tools.scoring import stability_scores

    model = scripted(answer)
    recorder = Recorder()
    calls = CallLog()

    async def body() -> Any:
        return await stability_scores(
            question="Paris is in France.", answer="Paris is in France. It is a city.",
            contexts=["Paris is the capital of France."], llm=model, embeddings=FakeEmbeddings(),
            config=call_config(calls, role="ragas", agent="rag", round_=1))

    result = run_in_node(body, recorder)
    assert result["errors"] == [] and result["faithfulness"] == 1.0
    # answer relevancy's 3 questions come in one request with n=3 (the double serves n)
    assert calls.tracker.llm_calls == 3 and calls.tracker.prompt_tokens > 0
    assert calls.tracker.multi_completion_calls == 1
    by_metric: dict[str, list] = {}
    for start in recorder.chat:
        by_metric.setdefault(start["metadata"]["fd_metric"], []).append(start)
        assert start["parent"] == recorder.chains["node"]
        assert start["metadata"]["fd_role"] == "ragas" and start["metadata"]["fd_agent"] == "rag"
        assert start["metadata"]["langgraph_node"] == "node" and "fd:ragas" in start["tags"]
        assert start["name"] == f"ragas_{start['metadata']['fd_metric']}"
    assert sorted((m, len(v)) for m, v in by_metric.items()) == [
        ("answer_relevancy", 1), ("faithfulness", 2)]


def test_ragas_adapter_outside_a_metric_still_tags_its_calls() -> None:
    pytest.importorskip("ragas")
    from ragas.metrics.collections.answer_relevancy.util import AnswerRelevanceOutput

    from factdebate.tools.scoring import LangChainRagasLLM

    seen: list[dict] = []
    model = scripted(lambda call: seen.append(call.metadata) or
                     {"question": "Is it?", "noncommittal": 0})
    out = asyncio.run(LangChainRagasLLM(model).agenerate("input: {}", AnswerRelevanceOutput))
    assert out.question == "Is it?"
    assert seen[0]["fd_role"] == "ragas" and seen[0]["fd_metric"] == ""


class Probe(BaseModel):
    model: str = ""


@pytest.mark.parametrize("kwargs", [
    {}, {"stop": ["\n"]}, {"model": "m1"}, {"model": 3}, {"temperature": 0.3},
    {"temperature": 1}, {"temperature": "hot"}, {"max_tokens": 12}, {"max_tokens": 1.5},
    {"stop": ["x"], "model": "m", "temperature": 0.0, "max_tokens": 5, "fd_schema": QueryOut},
])
def test_scripted_ls_params_equal_what_langchain_derives(kwargs: dict) -> None:
    model = scripted(answer)
    stop = kwargs.pop("stop", None)
    expected = BaseChatModel._get_ls_params(model, stop=stop, **kwargs)
    assert model._get_ls_params(stop=stop, **kwargs) == expected
    assert list(model._get_ls_params(stop=stop, **kwargs)) == list(expected)


def test_scripted_token_counts_and_timeline() -> None:
    prompts: list[str] = []

    def responder(call: ScriptCall) -> str:
        assert call.prompt is call.prompt  # joined once per call
        prompts.append(call.prompt)
        return "two words"

    model = scripted(responder)
    tracker = UsageTracker()
    messages = [SystemMessage("a  b\tc"), HumanMessage("Claim: d e\u00a0f\n\ng")]
    reply = model.invoke(messages, {"callbacks": [tracker], "metadata": {"fd_role": "x"}})
    joined = "a  b\tc\nClaim: d e\u00a0f\n\ng"
    assert prompts == [joined]
    assert _words(joined) == 8  # 4 spaces + 3 line breaks + 1 (tabs, no-break spaces not counted)
    assert _words("") == 0 and _words("one") == 1 and _words("two words") == 2
    assert reply.usage_metadata == {"input_tokens": 8, "output_tokens": 2, "total_tokens": 10}
    assert tracker.delta() == {"llm_calls": 1, "prompt_tokens": 8, "completion_tokens": 2}
    (record,) = model.timeline
    assert (record.index, record.role) == (0, "x") and record.end >= record.start
    model.reset()
    assert model.timeline == []


def test_claim_of_finds_what_the_regex_search_finds() -> None:
    rng = random.Random(7)
    pieces = ["Claim:", "Question:", "\n", " ", "x", "Claim: foo", "\nClaim:", "\n\n", "\t",
              "Question:  \n", "a\nQuestion: q", "Claim:\n", "Claims: no", " Claim: mid"]
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        expected, got = _SUBJECT.search(text), _subject(text)
        assert (expected is None) == (got is None), text
        if expected is not None:
            assert (got.span(), got.group(1)) == (expected.span(), expected.group(1)), text
    call = ScriptCall(0, "debater", "rag", 1, None, [HumanMessage("Intro Claim: no\nClaim: yes \n")])
    assert claim_of(call) == "yes"


def test_ledger_skips_chat_model_start_events_and_still_counts() -> None:
    starts: list[Any] = []

    class Tracker(UsageTracker):
        def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
            starts.append(args)

    tracker = Tracker()
    assert tracker.ignore_chat_model and not tracker.ignore_llm
    model = scripted(lambda call: "one")
    asyncio.run(model.ainvoke([HumanMessage("x y")], {"callbacks": [tracker]}))
    model.invoke([HumanMessage("x y z")], {"callbacks": [tracker]})
    assert starts == []  # no start event, so no prompt rendered for an on_llm_start fallback
    assert tracker.delta() == {"llm_calls": 2, "prompt_tokens": 5, "completion_tokens": 2}

    failing = scripted(lambda call: (_ for _ in ()).throw(RuntimeError("provider down")))
    with pytest.raises(RuntimeError):
        failing.invoke([HumanMessage("x")], {"callbacks": [tracker]})
    assert tracker.delta()["llm_errors"] == 1


def test_model_for_answers_a_loaded_model_without_a_thread_hop(monkeypatch) -> None:  # noqa: ANN001
    from factdebate.core.context import Context
    from factdebate.core.models import cached_model, clear_model_cache, load_model
    from factdebate.nodes import llm

    clear_model_cache()
    ctx = Context()
    spec = "scripted:agree"
    assert cached_model(spec, base_url=ctx.model_base_url, temperature=ctx.temperature) is None
    hops: list[Any] = []
    real = asyncio.to_thread

    async def counting(fn, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        hops.append(fn)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(llm.asyncio, "to_thread", counting)
    first = asyncio.run(llm.model_for(spec, ctx))  # loads in a worker thread
    assert hops == [load_model]
    assert asyncio.run(llm.model_for(spec, ctx)) is first  # cached: answered on the loop
    assert hops == [load_model]
    assert first is load_model(spec, base_url=ctx.model_base_url, temperature=ctx.temperature)
    clear_model_cache()


def test_stability_scores_reuses_built_metrics_without_a_thread_hop(monkeypatch) -> None:  # noqa: ANN001
    pytest.importorskip("ragas")
    from factdebate.tools import scoring

    model, emb = scripted(answer), FakeEmbeddings()
    assert scoring._cached_metrics(model, emb) is None
    built = scoring._get_metrics(model, emb)
    assert scoring._cached_metrics(model, emb) is built
    assert scoring._cached_metrics(scripted(answer), emb) is None

    hops: list[Any] = []
    real = asyncio.to_thread

    async def counting(fn, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        hops.append(getattr(fn, "__name__", fn))
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(scoring.asyncio, "to_thread", counting)
    result = asyncio.run(scoring.stability_scores(
        question="Paris is in France.", answer="Paris is in France.", contexts=[],
        llm=model, embeddings=emb))
    assert result["errors"] == [] and result["answer_relevancy"] is not None
    assert "_get_metrics" not in hops and hops  # only the embeddings ran in threads


def _without_schema_paragraph(text: str, prompt: Any) -> str:
    """ragas' rendered prompt without the paragraph stating its output schema (which
    factdebate.patches.ragas_prompts leaves out: the structured-output request carries it)."""
    paragraph = ("Please return the output in a JSON format that complies with the following "
                 "schema as specified in JSON Schema:\n"
                 + json.dumps(prompt.output_model.model_json_schema())
                 + "Do not use single quotes in your response but double quotes,properly escaped "
                   "with a backslash.\n")
    assert paragraph in text
    return text.replace(paragraph, "", 1)


def test_ragas_prompts_render_as_ragas_without_the_schema_paragraph() -> None:
    """Everything else of ragas' prompt text, in ragas' order, examples memoised."""
    pytest.importorskip("ragas")
    from ragas.metrics.collections import AnswerRelevancy, Faithfulness
    from ragas.metrics.collections.answer_relevancy.util import AnswerRelevanceInput

    from factdebate import patches
    from factdebate.tools import ragas_metrics
    from factdebate.tools.scoring import LangChainRagasEmbeddings, LangChainRagasLLM

    assert patches.enabled("ragas_prompts")  # the tested ragas is the gated one
    judge = LangChainRagasLLM(scripted(answer))
    ours = ragas_metrics.faithfulness(judge)
    theirs = Faithfulness(llm=judge)
    statements = ours.statement_generator_prompt.input_model(question="Q?", answer="A. B.")
    nli = ours.nli_statement_prompt.input_model(context="ctx", statements=["A.", "B."])
    for _ in range(2):  # the second time with the cached schema and examples
        assert ours.statement_generator_prompt.to_string(statements) == _without_schema_paragraph(
            theirs.statement_generator_prompt.to_string(statements),
            theirs.statement_generator_prompt)
        assert ours.nli_statement_prompt.to_string(nli) == _without_schema_paragraph(
            theirs.nli_statement_prompt.to_string(nli), theirs.nli_statement_prompt)
    emb = LangChainRagasEmbeddings(FakeEmbeddings())
    relevancy = ragas_metrics.answer_relevancy(judge, emb)
    assert type(relevancy).__name__ == "ConcurrentAnswerRelevancy"  # the gated patch is on
    reference = AnswerRelevancy(llm=judge, embeddings=emb)
    data = AnswerRelevanceInput(response="Paris is in France.")
    assert relevancy.prompt.to_string(data) == _without_schema_paragraph(
        reference.prompt.to_string(data), reference.prompt)


def test_a_node_model_call_reaches_the_messages_stream_and_is_counted_once() -> None:
    """``call_config`` adds the call's callbacks to the node's config: LangGraph's ``messages``
    stream handler (Studio, ``runs/stream``) still sees a streaming model's tokens, the call is a
    child of the node run, and the call's own tracker counts it once."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    calls = CallLog()
    recorder = Recorder()

    async def node(state: dict) -> dict:
        model = GenericFakeChatModel(messages=iter([AIMessage(content="alpha beta gamma")]))
        reply = await model.ainvoke(MESSAGES, config=call_config(calls, role="judge"))
        return {"x": len(reply.content)}

    class State(TypedDict, total=False):
        x: int

    graph = StateGraph(State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    compiled = graph.compile()

    async def stream() -> list[Any]:
        return [chunk async for chunk in compiled.astream(
            {"x": 0}, {"callbacks": [recorder]}, stream_mode="messages")]

    chunks = asyncio.run(stream())
    text = "".join(message.content for message, _ in chunks)
    assert text == "alpha beta gamma", chunks
    assert {meta["fd_role"] for _, meta in chunks} == {"judge"}
    assert {meta["langgraph_node"] for _, meta in chunks} == {"node"}
    [chat] = recorder.chat
    assert chat["parent"] == recorder.chains["node"] and "fd:judge" in chat["tags"]
    assert calls.tracker.llm_calls == 1
