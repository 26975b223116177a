"""``eval --server`` waits for a server's per-user run limit instead of failing items.

The end-to-end path (a real ``langgraph dev`` refusing with 429) is
``tests/integration/test_eval_server.py::test_items_refused_by_the_per_user_run_limit_wait_and_run``;
here the wait itself: the server's ``Retry-After`` is honoured within bounds, and an item that is
never admitted becomes one readable error after the total wait, not an endless loop.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk.errors import RateLimitError

from factdebate.evaluation import executors
from factdebate.evaluation.executors import (
    ServerAdmissionError,
    ServerExecutor,
    ServerRunError,
    retry_after,
)


def refusal(retry: str | None) -> RateLimitError:
    request = httpx.Request("POST", "http://server/threads/t/runs/wait")
    headers = {} if retry is None else {"Retry-After": retry}
    response = httpx.Response(429, headers=headers, request=request)
    return RateLimitError("bob has 1 runs pending or running on this server", response=response,
                          body=None)


@pytest.mark.parametrize(("header", "seconds"), [("7", 7.0), (None, 5.0), ("0", 1.0),
                                                 ("3600", 60.0), ("Wed, 21 Oct 2026 07:28:00 GMT", 5.0)])
def test_retry_after_is_honoured_within_bounds(header: str | None, seconds: float):
    assert retry_after(refusal(header)) == seconds


class Runs:
    def __init__(self, refusals: int) -> None:
        self.refusals, self.calls = refusals, 0

    async def wait(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.refusals:
            raise refusal("2")
        return {"label": "SUPPORTS"}


def executor(runs: Runs, monkeypatch: pytest.MonkeyPatch, slept: list[float]) -> ServerExecutor:
    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(executors.asyncio, "sleep", sleep)
    ex = ServerExecutor("http://server", "tool_mad", "v1", api_key="k")
    ex.client.runs = runs  # type: ignore[assignment]
    return ex


async def test_a_refused_run_is_asked_again_after_retry_after(monkeypatch: pytest.MonkeyPatch):
    slept: list[float] = []
    runs = Runs(refusals=3)
    out = await executor(runs, monkeypatch, slept)._admitted_run("t", input=None)
    assert out == {"label": "SUPPORTS"} and runs.calls == 4
    assert len(slept) == 3 and all(2.0 <= s <= 3.0 for s in slept)  # Retry-After 2, jittered


async def test_a_run_never_admitted_is_one_readable_error(monkeypatch: pytest.MonkeyPatch):
    slept: list[float] = []
    runs = Runs(refusals=10**6)
    ex = executor(runs, monkeypatch, slept)
    ex.rate_limit_wait = 20.0
    with pytest.raises(ServerRunError) as caught:
        await ex._admitted_run("t", input=None)
    assert sum(slept) <= 20.0 and runs.calls == len(slept) + 1
    message = str(caught.value)
    assert "kept refusing" in message and "--concurrency" in message and "bob has 1 runs" in message
    assert isinstance(caught.value, ServerAdmissionError)  # the item runner does not wait again
    assert caught.value.__context__ is None  # no chained 429 for is_rate_limit to find
