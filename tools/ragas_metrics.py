"""ragas metric classes as the stability score runs them (imported lazily: ragas takes ~2.5 s).

* :class:`ConcurrentAnswerRelevancy` - ragas' collections ``AnswerRelevancy`` sends its
  ``strictness`` (3) question-generation prompts one after another; ragas' legacy metric sent them
  concurrently. They are independent samples of one prompt, so this subclass renders the prompt once
  and sends the calls together: the metric's critical path is 1 call instead of 3 and its embeddings
  run while Faithfulness' second call is still out (Tool-MAD's critical path per round: query ->
  answer -> Faithfulness' 2 calls = 4 calls instead of 5). Score computation is ragas' own
  (mean cosine(question, generated questions), 0 when every generation is noncommittal).
* :func:`cache_output_schemas` - ragas' ``BasePrompt.to_string`` regenerates its output model's
  JSON schema with pydantic on every call (~1 ms of CPU, 5 calls per score); each prompt instance
  gets a same-named subclass of its output model whose schema is computed once (and shared: ragas
  only ``json.dumps`` it). Replies are still validated against ragas' original class (the metrics
  pass it to the LLM themselves). It also memoises each prompt's few-shot examples section
  (``_generate_examples``: two indented ``model_dump_json`` per example on every call, 3.3 % of the
  event loop in a py-spy profile of stability scores with the scripted judge); the memo is rebuilt
  whenever the prompt's example list holds other objects (ragas' ``adapt`` builds a new prompt).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
from pydantic import BaseModel
from ragas.metrics.collections import AnswerRelevancy, Faithfulness
from ragas.metrics.collections.answer_relevancy.util import (
    AnswerRelevanceInput,
    AnswerRelevanceOutput,
)
from ragas.metrics.result import MetricResult


def _schema_cached(model: type[BaseModel]) -> type[BaseModel]:
    """A subclass of ``model`` (same name, same fields) whose default JSON schema is memoised."""
    schema = model.model_json_schema()

    def model_json_schema(cls: type[BaseModel], *args: Any, **kwargs: Any) -> dict[str, Any]:
        if args or kwargs:
            return model.model_json_schema(*args, **kwargs)
        # shared, not copied: ragas only serialises it (a deepcopy cost ~0.5 ms per prompt at c=32)
        return schema

    return type(model.__name__, (model,), {
        "__module__": model.__module__, "__doc__": model.__doc__,
        "model_json_schema": classmethod(model_json_schema),
    })


def _examples_cached(prompt: Any) -> Any:
    """``prompt._generate_examples`` memoised while ``prompt.examples`` holds the same objects.

    The memo keeps references to the pairs and their members it rendered (so their ids cannot be
    reused) and is rebuilt when any of them is not the object now in ``prompt.examples``. A field
    of an example model changed in place is not noticed (ragas never does that).
    """
    render = prompt._generate_examples  # ragas' bound method, looked up before it is shadowed
    memo: dict[str, Any] = {"key": None, "text": ""}

    def generate_examples() -> str:
        key = [(pair, *pair) for pair in prompt.examples]
        old = memo["key"]
        if old is None or len(old) != len(key) or any(
            len(a) != len(b) or any(x is not y for x, y in zip(a, b, strict=True))
            for a, b in zip(old, key, strict=True)
        ):
            memo["key"], memo["text"] = key, render()
        return memo["text"]  # type: ignore[no-any-return]

    return generate_examples


def cache_output_schemas(*prompts: Any) -> None:
    """Give each ragas prompt instance an output model with a memoised JSON schema and a memoised
    examples section."""
    for prompt in prompts:
        cached = _schema_cached(prompt.output_model)
        assert cached.model_json_schema() == prompt.output_model.model_json_schema()
        prompt.output_model = cached
        prompt._generate_examples = _examples_cached(prompt)


async def _all_or_first_error(calls: list[Any]) -> list[Any]:
    """Results of ``calls`` run concurrently; on the first failure the others are cancelled and it
    is raised (the metric fails either way, like ragas' sequential loop stopping at its first)."""
    tasks = [asyncio.ensure_future(c) for c in calls]
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        return [t.result() for t in tasks]
    finally:
        for task in tasks:
            task.cancel()


class ConcurrentAnswerRelevancy(AnswerRelevancy):
    """ragas ``AnswerRelevancy`` with its question generations sent concurrently."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cache_output_schemas(self.prompt)

    async def ascore(self, user_input: str, response: str) -> MetricResult:
        """Mean cosine(question, generated questions); 0 if every generation is noncommittal."""
        if not user_input:
            raise ValueError("user_input cannot be empty")
        if not response:
            raise ValueError("response cannot be empty")
        prompt = self.prompt.to_string(AnswerRelevanceInput(response=response))
        results = await _all_or_first_error([
            self.llm.agenerate(prompt, AnswerRelevanceOutput) for _ in range(self.strictness)
        ])
        generated = [r for r in results if r.question]
        if not generated:
            return MetricResult(value=0.0)
        all_noncommittal = all(r.noncommittal for r in generated)
        question_vec = np.asarray(await self.embeddings.aembed_text(user_input)).reshape(1, -1)
        gen_vecs = np.asarray(
            await self.embeddings.aembed_texts([r.question for r in generated])
        ).reshape(len(generated), -1)
        norm = np.linalg.norm(gen_vecs, axis=1) * np.linalg.norm(question_vec, axis=1)
        cosine = (gen_vecs @ question_vec.T).reshape(-1) / norm
        return MetricResult(value=float(cosine.mean() * int(not all_noncommittal)))


def faithfulness(llm: Any) -> Faithfulness:
    """ragas ``Faithfulness`` with memoised prompt schemas."""
    metric = Faithfulness(llm=llm)
    cache_output_schemas(metric.statement_generator_prompt, metric.nli_statement_prompt)
    return metric
