"""The CLI's event loop: uvloop when installed, the default loop when asked."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from factdebate.run.claims import event_loop_kind, run_async


async def _loop_type() -> type:
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop())


def test_run_async_uses_uvloop_by_default(monkeypatch):
    monkeypatch.delenv("FACTDEBATE_EVENT_LOOP", raising=False)
    assert event_loop_kind() == "uvloop"
    assert run_async(_loop_type()) is uvloop.Loop


@pytest.mark.parametrize("value", ["asyncio", " ASYNCIO "])
def test_factdebate_event_loop_asyncio_opts_out(monkeypatch, value):
    monkeypatch.setenv("FACTDEBATE_EVENT_LOOP", value)
    assert event_loop_kind() == "asyncio"
    assert not issubclass(run_async(_loop_type()), uvloop.Loop)


def test_run_async_returns_the_result_and_raises_the_error():
    async def fail() -> None:
        raise ValueError("boom")

    assert run_async(asyncio.sleep(0, result=42)) == 42
    with pytest.raises(ValueError, match="boom"):
        run_async(fail())
