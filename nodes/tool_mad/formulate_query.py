"""``formulate_query``: Tool-MAD's query selection (Alg. 1, Query(A, c) / Query(A, c, a_opp, q_prev)).

Round 1 uses the claim alone; later rounds the claim, the agent's previous query and the other
agents' last answers. With ``query_formulation`` off (the "w/o query formulation" ablation) the
claim itself is the query. Tool-less debaters need no query.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from factdebate.core.context import debater_kind
from factdebate.core.labels import QueryOut
from factdebate.core.state import DebaterState
from factdebate.nodes.llm import CallLog, ask
from factdebate.nodes.prompting import common_values, prompt_set
from factdebate.nodes.render import render_opponents
from factdebate.nodes.tool_mad.state import ToolMadContext
from factdebate.tools.embeddings import prefetch_queries

MAX_QUERY_CHARS = 300


async def formulate_query(state: DebaterState, runtime: Runtime[ToolMadContext]) -> dict[str, Any]:
    """This round's retrieval query for one debater."""
    ctx = runtime.context
    kind = debater_kind(state["agent"])
    if kind == "vanilla":
        return {"query": ""}
    if not ctx.query_formulation:
        return {"query": state["claim"]}
    if state["round"] == 1 and ctx.scoring_mode == "stability":
        # the turn's answer relevancy embeds the claim: the encoder does it while the query's
        # model call is out, instead of on the turn's critical path after the answer
        prefetch_queries(ctx.embedding_model, [state["claim"]])
    prompts = prompt_set(ctx)
    values = common_values(state, ctx, kind)
    if state["round"] > 1 and state.get("opponents"):
        values |= {
            "previous_query": state.get("previous_query") or state["claim"],
            "opponents": render_opponents(state["opponents"]),
        }
        messages = prompts.render("query_followup", **values)
    else:
        messages = prompts.render("query_initial", **values)
    calls, reply_meta = CallLog(), dict[str, Any]()
    parsed, raw = await ask(ctx, ctx.query_model_spec, messages, QueryOut, calls=calls, role="query",
                            agent=state["agent"], round_=state["round"], metadata=reply_meta)
    query = (parsed.query if isinstance(parsed, QueryOut) else "").strip()
    # a reply the embedded model had to cut out of a repetition loop is junk even when it parses
    if not query or reply_meta.get("repetition_cut"):
        query = state["claim"]
        calls.flags.append(
            f"query: agent {state['agent']} round {state['round']} gave no usable query"
            f"{' (repetition loop)' if reply_meta.get('repetition_cut') else ''}; "
            "the claim was used instead"
        )
    return {"query": query[:MAX_QUERY_CHARS], **calls.update()}
