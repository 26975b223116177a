"""Every walk over an exception's cause/context chain ends.

grpc's ``_InactiveRpcError`` (what pymilvus raises under a ``MilvusException`` when nothing listens
on a Milvus server's port) is its own ``__context__``: ``eval --set milvus_uri=http://127.0.0.1:
<closed port>`` spun at 100% CPU in ``run_store_fault``'s ``while seen is not None`` loop. Each
walker is called on cyclic chains in a thread and must return within seconds; the real
closed-port case is in tests/integration/test_integrity_backends.py.
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest

from factdebate.core.errors import (
    MAX_CHAIN,
    StorageError,
    UnsupportedDataError,
    exception_chain,
    storage_problem,
)
from factdebate.evaluation.items import is_rate_limit
from factdebate.evaluation.run_folder import run_store_fault
from factdebate.tools.mcp_server import QuietDisconnects


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()``'s result, or a test failure if it has not returned after ``seconds``."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"{call} did not return within {seconds} s (a cyclic chain?)"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _self_cycle(message: str = "plain") -> BaseException:
    exc = RuntimeError(message)
    exc.__context__ = exc  # what grpc's _InactiveRpcError looks like
    return exc


def _two_cycle(message: str = "plain") -> BaseException:
    outer, inner = RuntimeError("outer"), ValueError(message)
    outer.__cause__, inner.__context__ = inner, outer
    return outer


CYCLES = {"self": _self_cycle, "two": _two_cycle}


@pytest.mark.parametrize("shape", list(CYCLES))
def test_exception_chain_yields_each_exception_once(shape):
    exc = CYCLES[shape]()
    chain = _within(5, lambda: list(exception_chain(exc)))
    assert len(chain) == len({id(e) for e in chain}) == (1 if shape == "self" else 2)


def test_exception_chain_follows_causes_contexts_and_groups_and_is_bounded():
    cause, context = OSError(errno.ENOSPC, "full"), KeyError("k")
    top = RuntimeError("top")
    top.__cause__, top.__context__ = cause, context
    member = ValueError("member")
    member.__context__ = top
    group = ExceptionGroup("group", [member, TypeError("other")])
    names = [type(e).__name__ for e in exception_chain(group)]
    assert names == ["ExceptionGroup", "ValueError", "TypeError", "RuntimeError", "OSError",
                     "KeyError"]
    long: BaseException = RuntimeError("0")
    for n in range(1, 500):
        nxt = RuntimeError(str(n))
        nxt.__cause__ = long
        long = nxt
    assert len(list(exception_chain(long))) == MAX_CHAIN
    assert list(exception_chain(None)) == []


@pytest.mark.parametrize("shape", list(CYCLES))
def test_every_walker_ends_on_a_cyclic_chain(shape):
    assert _within(5, lambda: run_store_fault(CYCLES[shape]())) is None
    assert _within(5, lambda: is_rate_limit(CYCLES[shape]())) is False
    assert _within(5, lambda: storage_problem(CYCLES[shape]())) == ""
    record = logging.LogRecord("mcp.server.lowlevel.server", logging.ERROR, __file__, 1, "boom",
                               (), (RuntimeError, CYCLES[shape](), None))
    assert _within(5, lambda: QuietDisconnects().filter(record)) is True


def test_walkers_still_find_what_they_look_for_behind_a_cycle():
    def behind(found: BaseException) -> BaseException:
        exc = _self_cycle()
        exc.__cause__ = found
        return exc

    assert _within(5, lambda: is_rate_limit(behind(RuntimeError("HTTP 429 Too Many Requests"))))
    fault = _within(5, lambda: run_store_fault(behind(OSError(errno.ENOSPC, "No space left"))))
    assert isinstance(fault, StorageError) and "No space left on device" in str(fault)
    damaged = run_store_fault(behind(RuntimeError("file is not a database")))
    assert isinstance(damaged, StorageError) and "--resume --repair" in str(damaged)
    foreign = UnsupportedDataError("unsupported data in x.sqlite (a value naming os.system)")
    assert run_store_fault(behind(foreign)) is foreign  # stops the run: never an error row
    record = logging.LogRecord("uvicorn.error", logging.ERROR, __file__, 1, "boom", (),
                               (RuntimeError, behind(BrokenPipeError()), None))
    assert QuietDisconnects().filter(record) is False or record.levelno == logging.INFO
