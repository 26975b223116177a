"""The scripted test double speaks every framework.

With the built-in ``scripted:agree`` and ``scripted:disagree`` scenarios, every registered framework
must reach a verdict on its label set without the flags that mark an unreadable or guessed reply,
so demos, Studio walk-throughs and benchmarks can show each graph without a provider.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.core.labels import LABEL_SETS
from factdebate.graphs.registry import FRAMEWORKS, build_framework, context_class

CLAIM = "The Eiffel Tower is located in Paris."
DOCUMENTS = [  # the item's own documents: frameworks that read documents use them, others ignore them
    {"id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower is a tower in Paris, France.",
     "source": "item", "url": "", "score": 1.0},
    {"id": "d2", "title": "Paris", "text": "Paris is the capital of France.", "source": "item",
     "url": "", "score": 0.5},
]
TEST_DOUBLES = {  # offline stand-ins of the retrieval and tool settings (operator-only fields)
    "rag_backend": "static", "search_backend": "static", "tool_provider": "in_process",
    "wiki_backend": "static",
}
BAD_FLAG_WORDS = ("unreadable", "guessed", "could not be parsed", "no verdict")


def context_for(name: str, spec: str) -> Any:
    cls = context_class(name)
    known = {f.name for f in fields(cls)}
    return cls(debater_model=spec, **{k: v for k, v in TEST_DOUBLES.items() if k in known})


@pytest.mark.parametrize("spec", ["scripted:agree", "scripted:disagree"])
@pytest.mark.parametrize("name", [e.name for e in FRAMEWORKS])
async def test_every_framework_reaches_a_verdict_with_the_scripted_double(name: str, spec: str):
    graph = build_framework(name).compile(checkpointer=InMemorySaver())
    out = await graph.ainvoke({"claim": CLAIM, "documents": DOCUMENTS},
                              {"configurable": {"thread_id": f"{name}-{spec}"}},
                              context=context_for(name, spec))
    labels = LABEL_SETS.get(context_for(name, spec).label_set).labels
    assert out["label"] in labels or out.get("answers"), (name, out.get("label"), out.get("flags"))
    bad = [f for f in out.get("flags", []) if any(w in f.lower() for w in BAD_FLAG_WORDS)]
    assert not bad, (name, bad)
    assert out["ledger"]["llm_calls"] >= 1
