"""How nodes call models: role metadata, bounded retries, usage counting, parse fall-backs.

Every call is tagged with ``fd_role``/``fd_agent``/``fd_round`` metadata (LangSmith shows it; the
scripted double keys on it) and counted by a ``UsageTracker`` whose counts the node returns as a
ledger update. Provider faults are retried with exponential back-off; a structured reply that does
not validate is parsed as free text onto the label set and, if that fails too, re-asked once.

Structured output goes through ``factdebate.core.models.negotiation``: the run's
``structured_output`` method (``auto`` = the strongest the server accepts, falling back once per
model and base URL), the method that served counted in the ledger. Retries follow the project's
one retry policy (``factdebate.core.retry``) and know what is transient (:func:`is_retryable`): a
request the server calls invalid or unsupported is not retried but raised as one line naming the
cause and the setting that fixes it.

``model.with_structured_output(schema, method=..., include_raw=True)`` is built once per (model,
schema, method) and reused (:func:`structured_runnable`): building it on every call cost ~6 us with
the scripted model and much more with providers whose structured output converts the schema to a
tool definition each time (31-43 calls per Tool-MAD claim with RAGAS scoring).

A node calls a model through one of two entry points, one per reply kind; both take the role's
model spec, count the call in the node's :class:`CallLog`, tag it (``role``/``agent``/``round_``)
and retry ``ctx.llm_retries`` times:

- :func:`ask` - a reply in a pydantic schema: ``(reply or None, raw text)``; the node reads the
  raw text itself when the reply does not validate.
- :func:`ask_label` - a verdict on a label set: ``(reasoning, ParsedLabel)``, with the free-text
  fall-back and one re-ask (:func:`ask_verdict`).

Built on them: :func:`ask_debater_verdict` and :func:`ask_final_verdict` (a verdict with its parse
flags), and the baselines' ``ask_answer`` (nodes/baselines/ask_answer.py: a label or, in
multi-answer mode, a list of answers). ``model_for``/``call_config``/``ask_structured`` are the
parts; a node does not string them together itself (tools that hand the model to a library, such
as ragas scoring and evidence summaries, use ``model_for`` and ``call_config`` directly).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from factdebate.core.citations import (
    citations_in_text,
    normalise_numbers,
    passage_key,
    with_citations,
)
from factdebate.core.context import Context, JudgedContext
from factdebate.core.errors import FactDebateError, RunFaultError
from factdebate.core.faults import backend_error
from factdebate.core.labels import LabelSet, ParsedLabel, get_label_set, parse_label, verdict_schema
from factdebate.core.ledger import UsageTracker
from factdebate.core.models import cached_model, load_model, negotiation
from factdebate.core.retry import call_with_retries, retry_after
from factdebate.core.retry import is_retryable as is_retryable  # the nodes' import of it
from factdebate.nodes.citations import Shown, cite

log = logging.getLogger(__name__)

REASK = (
    "Your previous reply could not be read. Reply again with only the JSON object described "
    "above, nothing else."
)


@dataclass
class CallLog:
    """Counts and caveats of the calls one node made; becomes the node's ledger/flags update."""

    tracker: UsageTracker = field(default_factory=UsageTracker)
    flags: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    """Other ledger counters of the node (citation checks: ``replies_cited`` ...)."""
    citations: list[Any] = field(default_factory=list)
    """``Citation`` records of the node's labelled replies (nodes/citations.py)."""

    def update(self) -> dict[str, Any]:
        """``{"ledger": ..., "flags": ..., "citations": ...}`` for the node's return value."""
        ledger = self.tracker.delta()
        for key, value in self.counts.items():
            ledger[key] = ledger.get(key, 0) + value
        out: dict[str, Any] = {"ledger": ledger, "flags": list(self.flags)}
        if self.citations:
            out["citations"] = list(self.citations)
        return out


async def model_for(spec: str, ctx: Context) -> BaseChatModel:
    """The model for a role spec with the Context's base URL and temperature.

    Loading may read weights or build clients (blocking), so it runs off the event loop; later
    calls hit the per-process cache and are answered on the loop (a worker-thread round trip per
    model-calling node was ~2 % of a Tool-MAD claim's event-loop CPU in a py-spy profile).
    """
    model = cached_model(spec, base_url=ctx.model_base_url, temperature=ctx.temperature)
    if model is not None:
        return model
    return await asyncio.to_thread(
        load_model, spec, base_url=ctx.model_base_url, temperature=ctx.temperature
    )


def call_config(calls: CallLog, *, role: str, agent: str = "", round_: int = 0) -> RunnableConfig:
    """Config of one model call: usage tracker, the run's budget, role metadata, on top of the
    calling node's config (its stream and trace handlers stay).

    The run's budget (``factdebate.core.budget``: the operator's per-run limit of model calls and
    tokens, counted outside the state for the whole run, nested graphs and parallel branches
    included) counts the call when it starts and refuses it once spent; a budget already spent
    raises ``BudgetExceededError`` here, before a library that swallows model errors (RAGAS)
    gets the config.
    """
    from factdebate.core.budget import current_budget
    from factdebate.core.models.call_configs import run_call_config

    callbacks: list[Any] = [calls.tracker]
    budget = current_budget()
    if budget is not None:
        budget.check()
        callbacks.append(budget)
    # Added to the calling node's own config, never in place of it: a callbacks list passed alone
    # replaces the node's callback manager, and with it LangGraph's handler of the ``messages``
    # stream mode (Studio, ``runs/stream``) and the trace's parent run - a real model's tokens
    # then reached no stream and its run hung outside the node in a trace. The merge copies the
    # node's config once (core/models/call_configs.py).
    return run_call_config(callbacks=callbacks,
                           metadata={"fd_role": role, "fd_agent": agent, "fd_round": round_},
                           tags=[f"fd:{role}"])


BACKOFF_BASE_S = 0.5
"""First back-off delay; doubles with every retry."""
MAX_RETRY_AFTER_S = 30.0
"""Cap on a server's ``Retry-After``: a longer wait is not worth holding a debate for."""

retry_after_s = retry_after
"""Seconds a rate-limited server asked to wait (``factdebate.core.retry.retry_after``)."""


async def with_retries(
    coro_fn: Any, *, retries: int, what: str, base_delay: float | None = None
) -> Any:
    """Await ``coro_fn()``; on a provider fault retry up to ``retries`` times with back-off.

    The project's retry policy for model and tool calls (``factdebate.core.retry``): the delay
    doubles from ``base_delay`` (default ``BACKOFF_BASE_S``); a server's ``Retry-After`` is
    honoured, capped at ``MAX_RETRY_AFTER_S``. Errors that retrying cannot fix (see
    ``is_retryable``) are raised at once.
    """
    return await call_with_retries(
        coro_fn, retries=retries, what=what,
        base_delay=BACKOFF_BASE_S if base_delay is None else base_delay,
        max_retry_after=MAX_RETRY_AFTER_S,
    )


def structured_runnable(model: BaseChatModel, schema: Any, method: str = "json_schema") -> Any:
    """``model.with_structured_output(schema, method=method, include_raw=True)``, built once per
    (model, schema, method) (``factdebate.core.models.negotiation.structured_runnable``)."""
    return negotiation.structured_runnable(model, schema, method)


def _reply_text(raw: Any) -> str:
    """A reply's text; a tool call's arguments as JSON (function calling leaves content empty)."""
    text = str(getattr(raw, "content", "") or "")
    if not text and getattr(raw, "tool_calls", None):
        text = json.dumps(raw.tool_calls[0].get("args", {}), ensure_ascii=False, default=str)
    return text


async def ask_structured(
    model: BaseChatModel,
    messages: list[BaseMessage],
    schema: type[BaseModel],
    *,
    config: RunnableConfig,
    retries: int,
    metadata: dict[str, Any] | None = None,
) -> tuple[BaseModel | None, str]:
    """Structured reply ``(parsed or None, raw text)``; transient provider faults retried.

    The method is the run's ``structured_output`` (negotiated under ``auto``, see
    ``factdebate.core.models.negotiation``); the call is tagged with the method that served, which
    the ledger counts. ``metadata``, when given, receives the reply's ``response_metadata`` (e.g.
    the embedded model's ``repetition_cut``)."""
    setting = negotiation.current_setting()
    try:
        out, _method = await with_retries(
            lambda: negotiation.ask_negotiated(model, messages, schema, config=config,
                                               setting=setting),
            retries=retries,
            what=f"{config.get('metadata', {}).get('fd_role', 'model')} call",
        )
    except Exception as exc:
        # a provider's own exception type reaches a server client as "An internal error
        # occurred" (langgraph-api shows only FactDebateError messages): name the model server,
        # credentials masked; tool faults are not raised through here
        known = None if isinstance(exc, FactDebateError) else backend_error(exc)
        if known is not None:
            raise RunFaultError(known.problem, known.remedy) from exc
        raise
    raw = out.get("raw")
    if metadata is not None:
        metadata.update(getattr(raw, "response_metadata", None) or {})
    return out.get("parsed"), _reply_text(raw)


S = TypeVar("S", bound=BaseModel)


async def ask(
    ctx: Context,
    spec: str,
    messages: list[BaseMessage],
    schema: type[S],
    *,
    calls: CallLog,
    role: str,
    agent: str = "",
    round_: int = 0,
    metadata: dict[str, Any] | None = None,
) -> tuple[S | None, str]:
    """One structured call of a node's role model: ``(reply as schema or None, raw text)``.

    The call every node makes, written once: the model of ``spec`` with the Context's base URL and
    temperature (``model_for``), counted in ``calls`` and tagged with ``role``/``agent``/``round_``
    (``call_config``), transient faults retried ``ctx.llm_retries`` times (``ask_structured``).
    """
    parsed, raw = await ask_structured(
        await model_for(spec, ctx), messages, schema,
        config=call_config(calls, role=role, agent=agent, round_=round_),
        retries=ctx.llm_retries, metadata=metadata,
    )
    return (parsed if isinstance(parsed, schema) else None), raw


async def ask_verdict(
    model: BaseChatModel,
    messages: list[BaseMessage],
    schema: type[BaseModel],
    label_set: LabelSet,
    *,
    config: RunnableConfig,
    retries: int,
) -> tuple[str, ParsedLabel]:
    """``(reasoning, parsed label)``: structured first, then free-text parsing, then one re-ask."""
    text = ""
    for attempt in range(2):
        parsed, text = await ask_structured(
            model, messages, schema, config=config, retries=retries
        )
        if parsed is not None:
            data = parsed.model_dump()
            return str(data.get("reasoning", "")), ParsedLabel(
                str(data["label"]), "structured",
                tuple(normalise_numbers(data.get("citations") or [])))
        label = parse_label(text, label_set)
        if label.label is not None:
            return text, replace(label, citations=tuple(citations_in_text(text)))
        if attempt == 0:
            messages = [*messages, HumanMessage(REASK)]
    return text, ParsedLabel(None, "failed")


async def ask_label(
    ctx: Context,
    spec: str,
    messages: list[BaseMessage],
    task: str,
    *,
    calls: CallLog,
    role: str,
    agent: str = "",
    round_: int = 0,
    shown: int = 0,
) -> tuple[str, ParsedLabel]:
    """One verdict of a node's role model on ``task``'s labels: ``(reasoning, parsed label)``.

    The verdict call every node makes, written once: the reply schema is ``verdict_schema(task)``
    with ``citations`` of the ``shown`` passages' numbers (``with_citations``; none when nothing
    was shown), read as free text on the task's label set (``[n]`` markers as citations) when it
    does not validate, re-asked once when that fails too (``ask_verdict``); counted and tagged as
    in :func:`ask`. The parsed label carries the cited numbers as written; the node checks them
    (``nodes/citations.cite``).
    """
    model = await model_for(spec, ctx)
    return await ask_verdict(
        model, messages, with_citations(verdict_schema(task), shown), get_label_set(task),
        config=call_config(calls, role=role, agent=agent, round_=round_),
        retries=ctx.llm_retries,
    )


async def ask_debater_verdict(
    messages: list[BaseMessage], state: Any, ctx: Context, calls: CallLog, shown: Shown
) -> tuple[str, ParsedLabel, list[str]]:
    """One debater's verdict on the task's label set; a guessed or failed parse is flagged.

    ``state`` needs ``agent``, ``round`` and ``task``; the call is counted in ``calls``. The reply
    cites the ``shown`` passages; its citations are checked and recorded (``cite``). Returns
    ``(reasoning, parsed label, keys of the cited passages)``.
    """
    reasoning, parsed = await ask_label(
        ctx, ctx.debater_model, messages, state["task"],
        calls=calls, role="debater", agent=state["agent"], round_=state["round"],
        shown=len(shown),
    )
    record = cite(shown, parsed.citations, calls, by=state["agent"], role="debater",
                  round_=state["round"], label=parsed.label)
    if parsed.how in ("guessed", "failed"):
        calls.flags.append(
            f"parse: agent {state['agent']} round {state['round']} label {parsed.how}"
            + (f" as {parsed.label}" if parsed.label else "")
        )
    return reasoning, parsed, [passage_key(p) for p in record["passages"]]


async def ask_final_verdict(
    messages: list[BaseMessage], state: Any, ctx: JudgedContext, *, role: str, shown: Shown
) -> tuple[str, str | None, CallLog]:
    """The deciding role's verdict (Tool-MAD's judge, MADKE's summariser) with the judge model.

    Returns ``(reasoning, label or None, calls)``; a guessed label is flagged in ``calls``, an
    unreadable reply (None) is left to the caller's fallback. ``state`` needs ``round`` and ``task``.
    The reply cites the ``shown`` passages; a readable verdict's citations are checked and recorded
    as the deciding citations (``cite(..., decides=True)``).
    """
    calls = CallLog()
    reasoning, parsed = await ask_label(
        ctx, ctx.judge_model_spec, messages, state["task"],
        calls=calls, role=role, round_=state["round"], shown=len(shown),
    )
    if parsed.label is not None:
        cite(shown, parsed.citations, calls, by=role, role=role, round_=0, label=parsed.label,
             decides=True)
    if parsed.how == "guessed":
        calls.flags.append(f"parse: {role} label guessed as {parsed.label}")
    return reasoning, parsed.label, calls
