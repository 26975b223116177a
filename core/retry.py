"""The one retry policy: what is retried, how long to wait, when to give up (on ``tenacity``).

Every call this project repeats goes through one of four policies here; no other module has a
retry loop, sleeps between attempts or reads ``Retry-After`` itself
(``tests/unit/test_retry_policy.py`` checks the source tree for both):

- :func:`call_with_retries` - model calls and tool searches (``nodes/llm.with_retries``, used by
  the nodes, ``nodes/retrieval.py``, ``nodes/mermaid/call_tool.py``, evidence summaries): a
  transient fault (:func:`is_retryable`) is tried again ``retries`` times, the delay doubling from
  a base; a server's ``Retry-After`` is waited out when longer, up to a cap (30 s for model and
  tool calls: a longer wait is not worth holding a debate for).
- :func:`call_with_retries_blocking` - the same policy for blocking code outside an event loop:
  a provider's embedding requests (``tools/embeddings_provider.py``), which an index build sends
  from its one thread, and a reviewer's decision sent to LangSmith as feedback
  (``tools/review_feedback.py``). The caller chooses what is retried, caps the doubling delay
  and may be told of each wait (a build counts its retries and waited seconds); bulk builds cap
  ``Retry-After`` higher than debates do, since waiting out a rate limit costs less than
  stopping a long build.
- :func:`wait_for_admission` - ``eval --server`` while the LangGraph server refuses an item's run
  with HTTP 429 (its per-user run limit): asked again after the server's ``Retry-After``
  (1-60 s, 5 s when it sends none, times a random 1-1.5 so refused items do not return together)
  until the total wait would pass a limit (15 minutes by default); then one error naming it.
- :func:`rate_limit_retrying` - the eval item runner: an item whose run failed on a provider's rate
  limit (after the call's own retries) is run again, resuming its thread, after a doubling delay.

A server's ``Retry-After`` is read by :func:`retry_after`: the header of the error's HTTP
response, or the value a client already parsed (``SearchBackendError.retry_after`` carries Tavily's,
read by :func:`header_retry_after`); :func:`parse_retry_after` reads both forms of RFC 9110
(delta-seconds and HTTP-date), never negative; each policy caps it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from factdebate.core.errors import FactDebateError, exception_chain

log = logging.getLogger(__name__)
T = TypeVar("T")

ADMISSION_BOUNDS = (1.0, 60.0)
"""A LangGraph server's ``Retry-After`` on a 429 is honoured within these bounds (seconds)."""
ADMISSION_DEFAULT_S = 5.0
"""The wait after a 429 without ``Retry-After``."""


# --- reading the server's wish ------------------------------------------------------------------
def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header value: delta-seconds (``"120"``) or an
    HTTP-date (``"Wed, 21 Oct 2026 07:28:00 GMT"``; a date in the past is 0). None when there is
    no value or it is neither form. ``now`` (a UNIX time) defaults to the clock."""
    if not value:
        return None
    text = str(value).strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:  # "-0000": UTC with no claim about the sender's zone
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    return None if math.isnan(seconds) else max(0.0, seconds)


def header_retry_after(headers: Any) -> float | None:
    """Seconds from the ``Retry-After`` of a response's headers (httpx's, requests', a mapping),
    or None."""
    try:
        raw = headers.get("retry-after") or headers.get("Retry-After") if headers else None
    except (AttributeError, TypeError):
        raw = None
    return parse_retry_after(str(raw)) if raw else None


def retry_after(exc: BaseException) -> float | None:
    """Seconds the failing server asked to wait, or None: the error's ``retry_after`` value
    (``SearchBackendError``, parsed from Tavily's reply) or the ``Retry-After`` header of its HTTP
    response (OpenAI's and httpx's errors, langgraph_sdk's)."""
    value = getattr(exc, "retry_after", None)
    if value is None:
        return header_retry_after(getattr(getattr(exc, "response", None), "headers", None))
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(seconds) else max(0.0, seconds)


# --- what is worth another attempt --------------------------------------------------------------
def status_of(exc: BaseException) -> int | None:
    """HTTP status of an error (OpenAI SDK, httpx, langgraph_sdk, LangChain wrappers), or None."""
    from factdebate.core.models.negotiation import status_of

    return status_of(exc)


def is_retryable(exc: BaseException) -> bool:
    """Transient faults are retried: connection errors, timeouts, 408, 429 and 5xx overload.

    Not retried: client errors (other 4xx) and a 5xx whose body says the request is invalid or
    unsupported (``negotiation.request_rejected``; llama.cpp's server answers a validation error
    with 500) - the same request would fail the same way. A ``FactDebateError`` (missing key,
    unknown model, missing index) is retried only when it says it is (``retryable``: a search
    backend's 429/5xx/timeout). A reply over its size limit (``core/bounded_http.ReplyTooLarge``
    anywhere in the chain) is not. Cancellation and interrupts (not ``Exception``) never are.
    """
    if not isinstance(exc, Exception):
        return False
    from factdebate.core.bounded_http import ReplyTooLarge
    from factdebate.core.errors import exception_chain

    if any(isinstance(e, ReplyTooLarge) for e in exception_chain(exc)):
        return False  # the same request gets the same oversized reply
    if isinstance(exc, FactDebateError):
        return bool(getattr(exc, "retryable", False))
    from factdebate.core.models import negotiation

    return negotiation.request_rejected(exc) is None


def is_rate_limit(exc: BaseException) -> bool:
    """A provider's rate-limit error (class name or message says RateLimit / 429), chained too."""
    for seen in exception_chain(exc):  # a chain that refers back to itself ends
        text = f"{type(seen).__name__} {seen}".lower()
        if "ratelimit" in text or "rate limit" in text or "429" in text \
                or status_of(seen) == 429:
            return True
    return False


def is_refusal(exc: BaseException) -> bool:
    """An HTTP 429 answer (a LangGraph server's per-user run limit): asked again after its
    ``Retry-After``. langgraph_sdk raises ``RateLimitError`` for most calls and a plain
    ``httpx.HTTPStatusError`` from ``runs.wait``; both carry the response."""
    return isinstance(exc, Exception) and status_of(exc) == 429


# --- the policies -------------------------------------------------------------------------------
def _backoff(what: str, base_delay: float, max_retry_after: float, max_delay: float = math.inf,
             on_retry: Callable[[BaseException, float], None] | None = None,
             ) -> tuple[Callable[[RetryCallState], float], Callable[[RetryCallState], None]]:
    """tenacity's ``wait`` and ``before_sleep`` of :func:`call_with_retries` and its blocking twin.

    The n-th retry waits ``min(base_delay * 2**(n-1), max_delay)`` or the server's
    ``Retry-After`` capped at ``max_retry_after``, whichever is longer; before it a warning names
    ``what`` and the fault, then ``on_retry(fault, seconds)`` is called.
    """
    def wait(state: RetryCallState) -> float:
        backoff = min(base_delay * 2 ** (state.attempt_number - 1), max_delay)
        asked = retry_after(_failure(state)) or 0.0
        return max(backoff, min(asked, max_retry_after))

    def before_sleep(state: RetryCallState) -> None:
        exc = _failure(state)
        log.warning("%s failed (%s: %s); retry %d in %.1fs", what, type(exc).__name__, exc,
                    state.attempt_number, state.upcoming_sleep)
        if on_retry is not None:
            on_retry(exc, state.upcoming_sleep)

    return wait, before_sleep


async def call_with_retries(fn: Callable[[], Awaitable[T]], *, retries: int, what: str,
                            base_delay: float, max_retry_after: float) -> T:
    """Await ``fn()``; a retryable fault (:func:`is_retryable`) is tried again up to ``retries``
    times, other errors are raised at once, the last fault is raised as itself.

    The n-th retry waits ``base_delay * 2**(n-1)`` or the server's ``Retry-After`` capped at
    ``max_retry_after``, whichever is longer.

    The first attempt is awaited directly: a call that succeeds (nearly all) costs no retry
    machinery (tenacity's per-call set-up: ~70 us, on every model and tool call of a debate).
    After a retryable fault the retries run in tenacity as before, the fault replayed as its
    first attempt, so the waits, the log lines and the attempts counted are the same.
    """
    try:
        return await fn()
    except Exception as exc:  # noqa: BLE001  # sorted below: only a retryable fault goes on
        if retries <= 0 or not is_retryable(exc):
            raise
        first: Exception = exc
    tried = False

    async def attempt() -> T:
        nonlocal tried
        if not tried:
            tried = True
            raise first  # the attempt made above, counted and waited for as tenacity does
        return await fn()

    wait, before_sleep = _backoff(what, base_delay, max_retry_after)
    return await AsyncRetrying(stop=stop_after_attempt(retries + 1), wait=wait,
                               retry=retry_if_exception(is_retryable), before_sleep=before_sleep,
                               reraise=True)(attempt)


def call_with_retries_blocking(
    fn: Callable[[], T], *, retries: int, what: str, base_delay: float, max_retry_after: float,
    max_delay: float = math.inf, retry_if: Callable[[BaseException], bool] = is_retryable,
    on_retry: Callable[[BaseException, float], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``fn()`` in this thread; a fault that ``retry_if`` accepts (default
    :func:`is_retryable`; an interrupt never is) is tried again up to ``retries`` times, other
    errors are raised at once, the last fault is raised as itself.

    The n-th retry waits ``min(base_delay * 2**(n-1), max_delay)`` or the server's
    ``Retry-After`` capped at ``max_retry_after``, whichever is longer. ``on_retry(fault,
    seconds)`` is called before each wait, ``sleep`` (default ``time.sleep``) does the waiting.
    """
    wait, before_sleep = _backoff(what, base_delay, max_retry_after, max_delay, on_retry)
    return Retrying(stop=stop_after_attempt(max(retries, 0) + 1), wait=wait,
                    retry=retry_if_exception(
                        lambda exc: isinstance(exc, Exception) and retry_if(exc)),
                    before_sleep=before_sleep, sleep=sleep, reraise=True)(fn)


def admission_delay(exc: BaseException) -> float:
    """The wait after a 429 refusal: its ``Retry-After`` within ``ADMISSION_BOUNDS`` (5 s when it
    sends none), times a random 1-1.5 (refused waiters do not all return at once)."""
    asked = retry_after(exc)
    low, high = ADMISSION_BOUNDS
    delay = min(max(ADMISSION_DEFAULT_S if asked is None else asked, low), high)
    return delay * random.uniform(1.0, 1.5)


async def wait_for_admission(fn: Callable[[], Awaitable[T]], *, limit_s: float,
                             give_up: Callable[[float, BaseException], BaseException],
                             sleep: Callable[[float], Awaitable[None]] | None = None) -> T:
    """Await ``fn()``, asking again after :func:`admission_delay` while it is refused with a 429.

    When the next wait would take the total waited past ``limit_s``, raises
    ``give_up(seconds waited, last refusal)`` (outside any handler: no chained 429 for a caller's
    rate-limit check to find). Other errors are raised at once. A 429 comes before the run exists,
    so asking again cannot start it twice. ``sleep`` (default ``asyncio.sleep``) does the waiting.
    """
    def stop(state: RetryCallState) -> bool:
        return state.idle_for + state.upcoming_sleep > limit_s

    def gave_up(state: RetryCallState) -> Any:
        raise give_up(state.idle_for, _failure(state))

    return await AsyncRetrying(
        stop=stop, wait=lambda state: admission_delay(_failure(state)),
        retry=retry_if_exception(is_refusal), retry_error_callback=gave_up,
        sleep=sleep or (lambda seconds: asyncio.sleep(seconds)),
    )(_awaited, fn)


def rate_limit_retrying(retries: int, backoff_s: float,
                        retry_if: Callable[[BaseException], bool]) -> AsyncRetrying:
    """Attempts of an eval item (``async for attempt in ...: with attempt: ...``): a failure
    that ``retry_if`` accepts is tried again up to ``retries`` times after ``backoff_s``,
    doubling; the last failure, and any other, is raised as itself."""
    return AsyncRetrying(stop=stop_after_attempt(max(retries, 0) + 1),
                         wait=wait_exponential(multiplier=backoff_s),
                         retry=retry_if_exception(
                             lambda exc: isinstance(exc, Exception) and retry_if(exc)),
                         reraise=True)


async def _awaited(fn: Callable[[], Awaitable[T]]) -> T:
    """``await fn()``: tenacity awaits only what a coroutine function returns, and callers pass
    lambdas and partials that return awaitables."""
    return await fn()


def _failure(state: RetryCallState) -> BaseException:
    outcome = state.outcome
    exc = outcome.exception() if outcome is not None else None
    assert exc is not None, "a retry is only decided on a failed attempt"
    return exc
