"""ragas ``AnswerRelevancy`` with its ``strictness`` questions in one request (``n``) or concurrently.

Why: ragas 0.4.3's collections ``AnswerRelevancy.ascore`` sends its ``strictness`` (3)
question-generation prompts one after another; ragas' legacy metric asked for them in one request
with ``n=strictness`` where the model serves ``n`` and concurrently otherwise. They are independent
samples of one prompt, so this subclass renders the prompt once and asks the LLM adapter for
``strictness`` samples (``LangChainRagasLLM.agenerate_n``: one request with ``n`` where the
provider serves it - the prompt billed once instead of 3 times, 12 of a Tool-MAD claim's 43
requests saved - else the calls sent together; an adapter without ``agenerate_n`` gets
the calls sent together): the metric's critical path is 1 call instead of 3 and its embeddings run while
Faithfulness' second call is still out (Tool-MAD's critical path per round: query -> answer ->
Faithfulness' 2 calls = 4 calls instead of 5; ``factdebate bench overhead`` checks that bound).
The score computation is a copy of ragas' own ``ascore`` body (mean cosine(question, generated
questions), 0 when every generation is noncommittal) - hence the exact ragas version gate in
``factdebate.patches.PATCHES``. Ask for it with ``factdebate.patches.enabled("ragas_relevancy")``;
with another ragas, ``factdebate.tools.ragas_metrics`` uses ragas' class unchanged.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
from ragas.metrics.collections import AnswerRelevancy
from ragas.metrics.collections.answer_relevancy.util import (
    AnswerRelevanceInput,
    AnswerRelevanceOutput,
)
from ragas.metrics.result import MetricResult


def install() -> bool:
    """Whether ragas' ``AnswerRelevancy`` still scores with the method this subclass replaces."""
    return callable(getattr(AnswerRelevancy, "ascore", None))


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

    async def ascore(self, user_input: str, response: str) -> MetricResult:
        """Mean cosine(question, generated questions); 0 if every generation is noncommittal."""
        if not user_input:
            raise ValueError("user_input cannot be empty")
        if not response:
            raise ValueError("response cannot be empty")
        prompt = self.prompt.to_string(AnswerRelevanceInput(response=response))
        sample_n = getattr(self.llm, "agenerate_n", None)  # tools/scoring.LangChainRagasLLM
        if sample_n is not None:
            results = await sample_n(prompt, AnswerRelevanceOutput, self.strictness)
        else:
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
