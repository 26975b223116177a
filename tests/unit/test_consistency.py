"""Consistency score: the offline cosine path over the bundled MiniLM embeddings."""

from __future__ import annotations

import pytest

from factdebate.tools.scoring import consistency_score

ANSWER = "The Eiffel Tower is located in Paris and was completed in 1889."


async def test_passage_repeating_the_answer_scores_higher_than_unrelated() -> None:
    same = await consistency_score(answer=ANSWER, contexts=[ANSWER])
    related = await consistency_score(
        answer=ANSWER, contexts=["The Eiffel Tower, finished in 1889, stands in Paris, France."]
    )
    unrelated = await consistency_score(
        answer=ANSWER, contexts=["Photosynthesis converts light energy into chemical energy."]
    )
    assert same is not None and related is not None and unrelated is not None
    assert same == pytest.approx(1.0, abs=1e-5)
    assert same >= related > unrelated
    assert 0.0 <= unrelated < 0.3


async def test_score_is_the_mean_over_passages() -> None:
    related = "The Eiffel Tower, finished in 1889, stands in Paris, France."
    unrelated = "Photosynthesis converts light energy into chemical energy."
    both = await consistency_score(answer=ANSWER, contexts=[related, unrelated])
    one = await consistency_score(answer=ANSWER, contexts=[related])
    other = await consistency_score(answer=ANSWER, contexts=[unrelated])
    assert both == pytest.approx((one + other) / 2, abs=1e-6)  # type: ignore[operator]


@pytest.mark.parametrize("contexts", [[], [""], ["   "]])
async def test_no_contexts_is_none(contexts: list[str]) -> None:
    assert await consistency_score(answer=ANSWER, contexts=contexts) is None
