"""ragas metrics as the stability score runs them (imported lazily: ragas takes ~2.5 s).

* :func:`answer_relevancy` - ragas' collections ``AnswerRelevancy``; with the ragas version the
  gated patch was written against, ``factdebate.patches.ragas_relevancy.ConcurrentAnswerRelevancy``
  (its ``strictness`` questions in one request with ``n`` where the provider serves it, sent
  concurrently otherwise: critical path 1 call instead of 3).
* :func:`cache_output_schemas` - the prompts render without their JSON-schema paragraph (the
  structured-output request carries the schema: the gated ``factdebate.patches.ragas_prompts``),
  and ragas' ``BasePrompt.to_string`` regenerates its output model's
  JSON schema with pydantic on every call (~1 ms of CPU, 3 prompts per score); each prompt instance
  gets a same-named subclass of its output model (public ``output_model`` attribute) whose schema
  is computed once (and shared: ragas only ``json.dumps`` it). Replies are still validated against
  ragas' original class (the metrics pass it to the LLM themselves). (A memo of ragas' private
  ``_generate_examples`` was retired: it saved ~3% of the event loop only with the
  zero-latency test double. The gated ``ragas_prompts`` patch, which copies ragas' template
  anyway, renders the examples once per prompt instance.)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from ragas.metrics.collections import AnswerRelevancy, Faithfulness

from factdebate import patches


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


def cache_output_schemas(*prompts: Any) -> None:
    """Give each ragas prompt instance an output model with a memoised JSON schema; with the ragas
    the gated ``factdebate.patches.ragas_prompts`` was written for, the prompt renders without the
    schema paragraph (the request carries the schema)."""
    for prompt in prompts:
        cached = _schema_cached(prompt.output_model)
        assert cached.model_json_schema() == prompt.output_model.model_json_schema()
        prompt.output_model = cached
        if patches.enabled("ragas_prompts"):
            from factdebate.patches.ragas_prompts import without_schema

            without_schema(prompt)


def answer_relevancy(llm: Any, embeddings: Any) -> AnswerRelevancy:
    """ragas ``AnswerRelevancy`` (concurrent generations when ``factdebate.patches`` allows)."""
    cls: type[AnswerRelevancy] = AnswerRelevancy
    if patches.enabled("ragas_relevancy"):
        from factdebate.patches.ragas_relevancy import ConcurrentAnswerRelevancy

        cls = ConcurrentAnswerRelevancy
    metric = cls(llm=llm, embeddings=embeddings)
    cache_output_schemas(metric.prompt)
    return metric


def faithfulness(llm: Any) -> Faithfulness:
    """ragas ``Faithfulness`` with memoised prompt schemas."""
    metric = Faithfulness(llm=llm)
    cache_output_schemas(metric.statement_generator_prompt, metric.nli_statement_prompt)
    return metric
