"""``score``: scores one debater's answer of one round.

* ``stability`` (Tool-MAD, stability-score paper §III-C): RAGAS faithfulness of the answer w.r.t.
  the agent's own evidence and RAGAS answer relevancy w.r.t. the claim, computed by ragas' metrics
  with the Context's scoring model and embeddings (``tools/scoring.py``).
* ``consistency`` (Tool-MAD, consistency-score paper, Alg. 1 l. 21-22): similarity(answer,
  evidence); a cross-encoder when one is configured, else bundled-embedding cosine.
* ``none``: nothing is computed.

Scoring faults never stop a debate: the value is left out (None), the fault is flagged on one line
(``score: agent A round R: METRIC could not be scored (REASON)``, ``tools/scoring.fault_text``),
and the consensus check treats a missing score as not cleared.
"""

from __future__ import annotations

import asyncio
import importlib
from types import ModuleType
from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.readable import one_line
from factdebate.core.state import DebaterState, RoundScore
from factdebate.nodes.llm import CallLog, call_config, model_for
from factdebate.nodes.tool_mad.state import ToolMadContext
from factdebate.tools.embeddings import cached_embeddings, get_embeddings

_scoring: ModuleType | None = None


async def _scoring_module() -> ModuleType:
    """``factdebate.tools.scoring``: ragas is heavy, so imported on first use off the event loop, then kept
    (``import_module`` returns only a fully initialised module; a thread hop per score was ~1% of a
    Tool-MAD claim's CPU)."""
    global _scoring
    if _scoring is None:
        _scoring = await asyncio.to_thread(importlib.import_module, "factdebate.tools.scoring")
    return _scoring


async def score(state: DebaterState, runtime: Runtime[ToolMadContext]) -> dict[str, Any]:
    """Scores of this round's answer, keyed by agent."""
    ctx = runtime.context
    if ctx.scoring_mode == "none":
        return {}
    scoring = await _scoring_module()

    contexts = [f"{e['title']}: {e['text']}" for e in state.get("evidence") or []]
    answer = state.get("answer") or ""
    row: RoundScore = {"round": state["round"]}
    calls = CallLog()
    try:
        if ctx.scoring_mode == "stability":
            result = await scoring.stability_scores(
                question=state["claim"],
                answer=answer,
                contexts=contexts,
                llm=await model_for(ctx.scoring_model_spec, ctx),
                embeddings=cached_embeddings(ctx.embedding_model)
                or await asyncio.to_thread(get_embeddings, ctx.embedding_model),
                config=call_config(calls, role="ragas", agent=state["agent"],
                                   round_=state["round"]),
            )
            row["faithfulness"] = result.get("faithfulness")  # type: ignore[typeddict-item]
            row["answer_relevancy"] = result.get("answer_relevancy")  # type: ignore[typeddict-item]
            for err in result.get("errors") or []:
                calls.flags.append(f"score: agent {state['agent']} round {state['round']}: "
                                   f"{scoring.fault_text(err)}")
        else:
            row["consistency"] = await scoring.consistency_score(  # type: ignore[typeddict-item]
                answer=answer,
                contexts=contexts,
                embedding_spec=ctx.embedding_model,
                cross_encoder=ctx.cross_encoder,
            )
    except Exception as exc:  # a scoring fault must not end the debate
        calls.flags.append(
            f"score: agent {state['agent']} round {state['round']}: the scores could not be "
            f"computed ({type(exc).__name__}: {one_line(str(exc), 200)})"
        )
    return {"scores": {state["agent"]: [row]}, **calls.update()}
