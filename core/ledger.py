"""Per-run ledger of LLM calls and tokens.

Nodes never share a mutable counter (parallel branches and resumed runs would corrupt it): each
node counts the calls it makes with a ``UsageTracker`` callback and returns the counts as a
``{"ledger": {...}}`` update, which the ``add_ledger`` reducer sums. Token counts are the
provider's (``usage_metadata``) when it reports them, once per request: a request for ``n``
completions (RAGAS' generated questions, ``factdebate.core.models.completions``) bills its prompt
once, and LangChain's OpenAI client attaches the response's usage to each choice. Prompt tokens the
provider served from its prompt cache (OpenAI ``usage.prompt_tokens_details.cached_tokens``,
LangChain ``usage_metadata["input_token_details"]["cache_read"]``) are counted as
``cached_tokens`` (a part of ``prompt_tokens``; the key appears once a provider reports some), and
requests answered with several completions as ``multi_completion_calls``.

The ledger is a record, not a limit: it lives in the state, which a server client can edit with
``update_state``. The operator's per-run budget of calls and tokens counts outside the state
(``factdebate.core.budget``).
"""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult


class ModelEventHandler(BaseCallbackHandler):
    """A callback handler that sees model events only, inline (the ledger's and the budget's base).

    Chain, retriever and agent events carry nothing these handlers count; handling them inline
    (on the event loop) avoids a worker-thread hop per event."""

    run_inline = True
    """Called on the event loop, not in a worker thread: each event is a few additions under a lock,
    and LangChain otherwise hands every event of a sync handler to the default executor (~130 thread
    round trips per Tool-MAD claim, measured with cProfile in ``factdebate bench scaling``)."""

    @property
    def ignore_chain(self) -> bool:
        """Chain, retriever and agent events carry nothing counted here."""
        return True

    @property
    def ignore_retriever(self) -> bool:  # noqa: D102 - see ignore_chain
        return True

    @property
    def ignore_agent(self) -> bool:  # noqa: D102 - see ignore_chain
        return True


class UsageTracker(ModelEventHandler):
    """Counts chat-model calls and tokens seen through LangChain callbacks."""

    raise_error = False

    @property
    def ignore_chat_model(self) -> bool:
        """The start of a chat-model call carries nothing the ledger counts (calls and tokens are
        counted at ``on_llm_end``). Without this, LangChain calls ``on_chat_model_start``, which a
        ``BaseCallbackHandler`` answers with ``NotImplementedError``, and falls back to
        ``on_llm_start`` after rendering every prompt to a string (``get_buffer_string``): ~4 % of
        the event loop's time per structured call in a py-spy profile of the scripted model."""
        return True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.llm_calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens = 0
        self.multi_completion_calls = 0
        self.llm_errors = 0
        self.structured_output: dict[str, int] = {}

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Add one call and the tokens its provider reported."""
        prompt, completion, cached = usage_detail(response)
        # the structured-output method that served (factdebate.core.models.negotiation tags calls)
        method = next((t[18:] for t in kwargs.get("tags") or ()
                       if t.startswith("structured_output:")), None)
        with self._lock:
            self.llm_calls += 1
            self.prompt_tokens += prompt
            self.completion_tokens += completion
            self.cached_tokens += cached
            if any(len(g) > 1 for g in response.generations):
                self.multi_completion_calls += 1
            if method:
                self.structured_output[method] = self.structured_output.get(method, 0) + 1

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Count failed calls (retried or not) separately."""
        with self._lock:
            self.llm_errors += 1

    def delta(self) -> dict[str, Any]:
        """The counts as a ledger update."""
        out: dict[str, Any] = {
            "llm_calls": self.llm_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }
        if self.cached_tokens:
            out["cached_tokens"] = self.cached_tokens
        if self.multi_completion_calls:
            out["multi_completion_calls"] = self.multi_completion_calls
        if self.llm_errors:
            out["llm_errors"] = self.llm_errors
        if self.structured_output:
            out["structured_output"] = dict(self.structured_output)
        return out


def usage_of(response: LLMResult) -> tuple[int, int]:
    """``(prompt tokens, completion tokens)`` a provider reported for one call (:func:`usage_detail`)."""
    prompt, completion, _ = usage_detail(response)
    return prompt, completion


def usage_detail(response: LLMResult) -> tuple[int, int, int]:
    """``(prompt, completion, cached prompt tokens)`` a provider reported for one call.

    Per prompt of the call, the ``usage_metadata`` of its first completion that carries one: a
    response with ``n`` completions has one usage, which LangChain's OpenAI client copies onto
    every completion (``langchain_openai`` ``_create_chat_result``), so summing them would count it
    ``n`` times. Without ``usage_metadata``, the ``token_usage`` of ``llm_output`` (OpenAI's
    ``usage`` object); ``(0, 0, 0)`` when neither.
    """
    prompt = completion = cached = 0
    for generations in response.generations:
        for gen in generations:
            usage = getattr(getattr(gen, "message", None), "usage_metadata", None)
            if usage:
                prompt += int(usage.get("input_tokens", 0) or 0)
                completion += int(usage.get("output_tokens", 0) or 0)
                cached += int((usage.get("input_token_details") or {}).get("cache_read", 0) or 0)
                break
    if not prompt and not completion:
        usage = (response.llm_output or {}).get("token_usage") or {}
        prompt = int(usage.get("prompt_tokens", 0) or 0)
        completion = int(usage.get("completion_tokens", 0) or 0)
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0) or 0)
    return prompt, completion, cached


def empty_ledger() -> dict[str, Any]:
    """The ledger of a run that made no calls (every key the output contract names)."""
    return {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "tool_calls": {},
            "replies_cited": 0, "replies_uncited": 0, "citations_unshown": 0}
