"""One retry policy (``factdebate.core.retry``), used by every path that repeats a call.

Read from the source tree (``ast``): no other module has a loop that catches an exception and
sleeps (a hand-written retry loop), reads a ``Retry-After`` header or imports tenacity; the
policy's functions are called from the modules listed here. The policies' behaviour is tested
where they act: model and tool calls (tests/graph/test_model_faults.py,
tests/integration/test_tool_faults.py), the eval item runner (tests/integration/test_eval_runner.py),
``eval --server`` (tests/unit/test_server_executor_admission.py, tests/integration/test_eval_server.py),
provider embeddings (tests/integration/test_provider_embeddings.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from factdebate.core.retry import call_with_retries, is_retryable, rate_limit_retrying

REPO = Path(__file__).resolve().parents[2]
POLICY = Path("core/retry.py")

NOT_RETRIES = {
    ("server/limits.py", "_settle"): "polls the server's own API until an admitted run shows up",
    ("server/usage.py", "store_sweeper"): "a periodic sweep of the store, every few minutes",
    ("evaluation/milvus_standalone.py", "_wait_ready"): "polls a starting Milvus server until "
    "its proxy answers (readiness, not a retry of a failed call)",
    ("evaluation/bench_soak.py", "_session"): "a soak user's episodes until the soak ends; a "
    "failed episode is counted as an error, never repeated",
    ("evaluation/bench_soak.py", "_sampler"): "a sample every few seconds until the soak ends",
    ("evaluation/langgraph_dev.py", "start_langgraph_dev"): "polls a starting langgraph dev "
    "until it answers /ok (readiness)",
}
"""Loops that sleep and catch exceptions without being retries of a failed call."""

CALLERS = {
    "call_with_retries": {"nodes/llm.py"},  # with_retries: nodes, retrieval, MCP tools, summaries
    "call_with_retries_blocking": {"tools/embeddings_provider.py",  # index builds' embeddings
                                   "evaluation/data_fetch.py",  # data fetch's downloads
                                   "tools/review_feedback.py"},  # a reviewer's LangSmith feedback
    "wait_for_admission": {"evaluation/executors.py"},
    "rate_limit_retrying": {"evaluation/items.py"},
    "header_retry_after": {"tools/tavily_search.py", "tools/wikipedia_live.py"},  # maxlag
}


def sources() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(REPO.rglob("*.py")):
        rel = path.relative_to(REPO)
        if rel.parts[0] in ("tests", ".venv", "build") or any(p.startswith(".") for p in rel.parts):
            continue
        yield rel, ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))


def body_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes under ``node`` outside nested functions and classes (their own loops count apart)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        yield child
        yield from body_nodes(child)


def retry_loops(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """``(function, line)`` of each loop that both catches an exception and sleeps."""
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for loop in body_nodes(fn):
            if not isinstance(loop, ast.For | ast.AsyncFor | ast.While):
                continue
            inside = list(body_nodes(loop))
            catches = any(isinstance(n, ast.Try) and n.handlers for n in inside)
            sleeps = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute | ast.Name)
                         and getattr(n.func, "attr", getattr(n.func, "id", "")) == "sleep"
                         for n in inside)
            if catches and sleeps:
                yield fn.name, loop.lineno


def test_the_check_finds_a_hand_written_retry_loop():
    loop = ast.parse(
        "async def call(fn):\n"
        "    for attempt in range(3):\n"
        "        try:\n"
        "            return await fn()\n"
        "        except OSError:\n"
        "            await asyncio.sleep(2 ** attempt)\n")
    assert list(retry_loops(loop)) == [("call", 2)]


def test_no_module_has_its_own_retry_loop():
    found = [f"{rel}:{line} {name}" for rel, tree in sources() if rel != POLICY
             for name, line in retry_loops(tree) if (str(rel), name) not in NOT_RETRIES]
    assert not found, f"retry through factdebate.core.retry instead: {found}"


def test_only_the_policy_reads_retry_after_or_uses_tenacity():
    found = []
    for rel, tree in sources():
        if rel == POLICY:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                    [a.name for a in node.names]
                if any(n.split(".")[0] == "tenacity" for n in names):
                    found.append(f"{rel}:{node.lineno} imports tenacity")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "get" and node.args \
                    and isinstance(node.args[0], ast.Constant) \
                    and str(node.args[0].value).lower() == "retry-after":
                found.append(f"{rel}:{node.lineno} reads Retry-After")
    assert not found, found


def test_the_policy_is_called_from_the_listed_modules():
    calls: dict[str, set[str]] = {name: set() for name in CALLERS}
    for rel, tree in sources():
        if rel == POLICY:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in calls:
                    calls[name].add(str(rel))
    assert calls == CALLERS


async def test_cancellation_is_never_retried():
    """A deadline (asyncio.timeout) cancels a call in flight: no policy may retry that."""
    import asyncio

    attempts = 0

    async def cancelled() -> None:
        nonlocal attempts
        attempts += 1
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await call_with_retries(cancelled, retries=3, what="t", base_delay=0, max_retry_after=0)
    assert attempts == 1 and not is_retryable(asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        async for attempt in rate_limit_retrying(3, 0, lambda exc: True):
            with attempt:
                attempts += 1
                raise asyncio.CancelledError
    assert attempts == 2


@pytest.mark.parametrize(("faults", "retries", "calls", "waits", "succeeds"), [
    (0, 2, 1, 0, True),    # the common case: one call, no retry machinery
    (1, 2, 2, 1, True),    # a fault, then an answer: one wait, as before
    (2, 2, 3, 2, True),    # every retry used
    (5, 2, 3, 2, False),   # retries + 1 attempts, then the last fault as itself
    (1, 0, 1, 0, False),   # no retries: the first fault is raised
])
async def test_retries_count_attempts_and_waits_whether_or_not_the_first_call_fails(
        monkeypatch: pytest.MonkeyPatch, faults: int, retries: int, calls: int, waits: int,
        succeeds: bool) -> None:
    """The first attempt runs outside tenacity; a retried call still makes ``retries + 1``
    attempts at most, waits the back-off before each retry and raises the last fault."""
    import asyncio

    slept: list[float] = []

    async def no_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", no_sleep)
    made = 0

    async def call() -> str:
        nonlocal made
        made += 1
        if made <= faults:
            raise TimeoutError(f"fault {made}")
        return "answer"

    if succeeds:
        assert await call_with_retries(call, retries=retries, what="t", base_delay=0.5,
                                       max_retry_after=30) == "answer"
    else:
        with pytest.raises(TimeoutError, match=f"fault {calls}"):
            await call_with_retries(call, retries=retries, what="t", base_delay=0.5,
                                    max_retry_after=30)
    assert made == calls
    assert slept == [0.5 * 2 ** i for i in range(waits)]


async def test_a_fault_that_is_not_retryable_is_raised_at_once() -> None:
    from factdebate.core.errors import InputError

    made = 0

    async def call() -> None:
        nonlocal made
        made += 1
        raise InputError("bad input")

    with pytest.raises(InputError, match="bad input"):
        await call_with_retries(call, retries=3, what="t", base_delay=0, max_retry_after=0)
    assert made == 1
