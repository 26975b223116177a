"""The ledger's ``UsageTracker``: counts model calls and tokens, on the event loop."""

from __future__ import annotations

import asyncio
import threading

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda

from factdebate.core.ledger import UsageTracker


def test_counts_calls_inline_on_the_loop_and_ignores_chain_events():
    tracker = UsageTracker()
    seen_threads: set[str] = set()
    real_end = tracker.on_llm_end

    def on_llm_end(*args, **kwargs):
        seen_threads.add(threading.current_thread().name)
        return real_end(*args, **kwargs)

    tracker.on_llm_end = on_llm_end  # type: ignore[method-assign]
    model = FakeListChatModel(responses=["a", "b", "c"])
    chain = RunnableLambda(lambda x: x) | model

    async def run() -> None:
        await asyncio.gather(*(chain.ainvoke("hi", config={"callbacks": [tracker]})
                               for _ in range(3)))

    asyncio.run(run())
    assert tracker.delta() == {"llm_calls": 3, "prompt_tokens": 0, "completion_tokens": 0}
    # run_inline: LangChain calls the sync handler on the loop's thread, not in an executor
    assert seen_threads == {threading.main_thread().name}
    assert tracker.ignore_chain and tracker.ignore_retriever and tracker.ignore_agent
