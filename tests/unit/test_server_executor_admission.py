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

from factdebate.core import retry
from factdebate.core.retry import admission_delay, parse_retry_after
from factdebate.evaluation import executors
from factdebate.evaluation.executors import (
    ServerAdmissionError,
    ServerExecutor,
    ServerRunError,
)

NOW = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC


def refusal(retry: str | None) -> RateLimitError:
    request = httpx.Request("POST", "http://server/threads/t/runs/wait")
    headers = {} if retry is None else {"Retry-After": retry}
    response = httpx.Response(429, headers=headers, request=request)
    return RateLimitError("bob has 1 runs pending or running on this server", response=response,
                          body=None)


def http_date(offset_s: float) -> str:
    from email.utils import formatdate

    return formatdate(NOW + offset_s, usegmt=True)


@pytest.mark.parametrize(("header", "seconds"), [
    ("7", 7.0), (None, 5.0), ("0", 1.0), ("3600", 60.0), ("soon", 5.0),
    (http_date(12), 12.0), (http_date(-30), 1.0), (http_date(86400), 60.0),
], ids=["7", "none", "0", "capped", "unreadable", "date", "date-past", "date-capped"])
def test_retry_after_is_honoured_within_bounds(header: str | None, seconds: float,
                                               monkeypatch: pytest.MonkeyPatch):
    """Both forms of the header (seconds and HTTP-date), within 1-60 s, 5 s without one; the
    jitter (x 1-1.5) pinned to its low end."""
    monkeypatch.setattr(retry.time, "time", lambda: NOW)
    monkeypatch.setattr(retry.random, "uniform", lambda low, high: low)
    assert admission_delay(refusal(header)) == seconds


def test_one_parser_reads_both_forms():
    assert parse_retry_after("12", now=NOW) == 12.0
    assert parse_retry_after(http_date(90), now=NOW) == 90.0
    assert parse_retry_after("Thu, 01 Jan 1970 00:00:00 -0000", now=NOW) == 0.0
    assert parse_retry_after("nan") is None and parse_retry_after("") is None


def sdk_wait_refusal() -> httpx.HTTPStatusError:
    """What ``runs.wait`` raises for a 429: a plain httpx error, the body attached as a note."""
    request = httpx.Request("POST", "http://server/threads/t/runs/wait")
    response = httpx.Response(429, headers={"Retry-After": "2"}, request=request)
    exc = httpx.HTTPStatusError("Client error '429 Too Many Requests'", request=request,
                                response=response)
    exc.add_note('{"detail": "bob has 1 runs pending or running on this server"}')
    return exc


class Runs:
    def __init__(self, refusals: int, make: Any = lambda: refusal("2")) -> None:
        self.refusals, self.calls, self.make = refusals, 0, make

    async def wait(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.refusals:
            raise self.make()
        return {"label": "SUPPORTS"}


def executor(runs: Runs, monkeypatch: pytest.MonkeyPatch, slept: list[float]) -> ServerExecutor:
    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(executors.asyncio, "sleep", sleep)
    ex = ServerExecutor("http://server", "tool_mad", "v1", api_key="k")
    ex.client.runs = runs  # type: ignore[assignment]
    return ex


@pytest.mark.parametrize("make", [lambda: refusal("2"), sdk_wait_refusal],
                         ids=["RateLimitError", "runs.wait-HTTPStatusError"])
async def test_a_refused_run_is_asked_again_after_retry_after(monkeypatch: pytest.MonkeyPatch,
                                                              make: Any):
    slept: list[float] = []
    runs = Runs(refusals=3, make=make)
    out = await executor(runs, monkeypatch, slept)._admitted_run("t", input=None)
    assert out == {"label": "SUPPORTS"} and runs.calls == 4
    assert len(slept) == 3 and all(2.0 <= s <= 3.0 for s in slept)  # Retry-After 2, jittered


@pytest.mark.parametrize("make", [lambda: refusal("2"), sdk_wait_refusal],
                         ids=["RateLimitError", "runs.wait-HTTPStatusError"])
async def test_a_run_never_admitted_is_one_readable_error(monkeypatch: pytest.MonkeyPatch,
                                                          make: Any):
    slept: list[float] = []
    runs = Runs(refusals=10**6, make=make)
    ex = executor(runs, monkeypatch, slept)
    ex.rate_limit_wait = 20.0
    with pytest.raises(ServerRunError) as caught:
        await ex._admitted_run("t", input=None)
    assert sum(slept) <= 20.0 and runs.calls == len(slept) + 1
    message = str(caught.value)
    assert "kept refusing" in message and "--concurrency" in message and "bob has 1 runs" in message
    assert "limit of 20 s (FACTDEBATE_EVAL_ADMISSION_WAIT_S)" in message
    assert isinstance(caught.value, ServerAdmissionError)  # the item runner does not wait again
    assert caught.value.__context__ is None  # no chained 429 for is_rate_limit to find


async def test_a_thread_deleted_while_its_runs_are_counted_is_skipped(monkeypatch):
    """``active_runs`` lists the runs of each busy thread the search found and counts the pending
    and running ones; a thread its user deleted meanwhile answers 404 there and has no run left
    to count - never a refused run."""
    import httpx
    from langgraph_sdk.errors import NotFoundError

    from factdebate.server import limits

    class Threads:
        async def search(self, **kwargs):
            return [{"thread_id": "gone"}, {"thread_id": "busy"}] if kwargs["offset"] == 0 else []

    class Runs:
        async def list(self, thread_id, limit, select):
            assert set(select) >= {"run_id", "status"}
            if thread_id == "gone":
                request = httpx.Request("GET", f"http://server/threads/{thread_id}/runs")
                raise NotFoundError("Thread not found", response=httpx.Response(404, request=request),
                                    body=None)
            return [{"run_id": f"{thread_id}-{status}", "status": status}  # newest first
                    for status in ("pending", "running", "success", "error")][:limit]

    class Client:
        threads, runs = Threads(), Runs()

    monkeypatch.setattr(limits, "loopback", lambda: Client())
    assert await limits.active_runs("alice", "owner", 10) == {"busy-running", "busy-pending"}
