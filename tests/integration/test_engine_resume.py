"""The one engine call's resume checks: every refusal through ``run_graph`` once.

``verify`` (a claim) and ``check`` (a text) used to carry their own guards; both now go through
``factdebate.run.engine.run_graph``. Each case runs real graphs on a real SQLite checkpointer with
the scripted double; the CLI tests (``test_integrity_eval.py``, ``test_check_cli.py``) check that
the message reaches the user.
"""

from __future__ import annotations

import pytest

from factdebate.core.errors import InputError
from factdebate.graphs.registry import context_class
from factdebate.nodes.check_text.state import CheckTextContext
from factdebate.run.claims import open_sqlite_saver
from factdebate.run.engine import run_graph

pytestmark = pytest.mark.asyncio

TEXT = "Paris is the capital of France. The Eiffel Tower is in Paris."


def cot() -> object:
    return context_class("cot")(debater_model="scripted:agree")


def text_check() -> CheckTextContext:
    return CheckTextContext(debater_model="scripted:check_text", framework="cot", max_claims=2)


@pytest.fixture
async def saver(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    async with open_sqlite_saver(tmp_path / "c.sqlite") as opened:
        yield opened


async def test_a_claim_run_resumes_only_with_its_framework_and_claim(saver):
    first = await run_graph("cot", {"claim": "Paris is in France"}, cot(), checkpointer=saver,
                            thread_id="t1")
    with pytest.raises(InputError) as other_claim:
        await run_graph("cot", {"claim": "The Moon is cheese"}, cot(), checkpointer=saver,
                        thread_id="t1", resume=True)
    assert str(other_claim.value) == ("thread 't1' verifies another claim ('Paris is in France'). "
                                      "resume it with that claim, or drop --resume to verify "
                                      "this one")
    with pytest.raises(InputError, match="thread 't1' is a cot run, not standard. resume it with "
                                         "--framework cot, or drop --resume"):
        await run_graph("standard", {"claim": "Paris is in France"},
                        context_class("standard")(debater_model="scripted:agree"),
                        checkpointer=saver, thread_id="t1", resume=True)
    with pytest.raises(InputError, match="thread id 't1' already holds a run. pass --resume"):
        await run_graph("cot", {"claim": "Paris is in France"}, cot(), checkpointer=saver,
                        thread_id="t1")
    with pytest.raises(InputError, match="no checkpointed run with thread id 'nope'"):
        await run_graph("cot", {"claim": "Paris is in France"}, cot(), checkpointer=saver,
                        thread_id="nope", resume=True)
    again = await run_graph("cot", {"claim": "  Paris is in France "}, cot(), checkpointer=saver,
                            thread_id="t1", resume=True)  # ends' whitespace is no other claim
    assert again["label"] == first["label"] and again["thread_id"] == "t1"


async def test_a_text_check_resumes_only_as_a_text_check_of_its_text(saver):
    done = await run_graph("check_text", {"text": TEXT}, text_check(), checkpointer=saver,
                           thread_id="doc")
    assert done["thread_id"] == "doc"
    with pytest.raises(InputError) as other_text:
        await run_graph("check_text", {"text": "The Moon is made of cheese."}, text_check(),
                        checkpointer=saver, thread_id="doc", resume=True)
    assert str(other_text.value) == (
        "thread 'doc' checks another text ('Paris is the capital of France. The Eiffel Tower is"
        " in Paris'...). resume it with that text, or drop --resume to check this one")
    await run_graph("cot", {"claim": "Paris is in France"}, cot(), checkpointer=saver,
                    thread_id="claim")
    with pytest.raises(InputError, match="thread 'claim' is a cot run, not a text check. resume "
                                         "it with: factdebate verify --framework cot --resume"):
        await run_graph("check_text", {"text": TEXT}, text_check(), checkpointer=saver,
                        thread_id="claim", resume=True)
    with pytest.raises(InputError, match="thread 'doc' is a check_text run, not cot"):
        await run_graph("cot", {"claim": "Paris is in France"}, cot(), checkpointer=saver,
                        thread_id="doc", resume=True)


async def test_progress_gets_the_resumed_state_and_the_streamed_updates(saver):
    seen: dict[str, list] = {"seed": [], "nodes": []}

    class Progress:
        def seed(self, values):
            seen["seed"].append(dict(values))

        def update(self, node, update):
            seen["nodes"].append(node)

    fresh = await run_graph("cot", {"claim": "Paris is in France"}, cot(), checkpointer=saver,
                            thread_id="p", progress=Progress())
    assert seen["seed"] == [] and "prepare" in seen["nodes"] and fresh["label"]
    seen["nodes"].clear()
    await run_graph("cot", {"claim": "Paris is in France"}, cot(), checkpointer=saver,
                    thread_id="p", resume=True, progress=Progress())
    assert seen["seed"][0]["claim"] == "Paris is in France" and seen["nodes"] == []  # finished


@pytest.mark.parametrize("framework,item,ctx", [
    ("tool_mad", {"claim": "Paris is in France"}, None),
    ("check_text", {"text": TEXT}, "text"),
])
async def test_a_fresh_run_s_result_is_the_final_checkpoint_s_without_reading_it(
        saver, monkeypatch, static_ctx, framework, item, ctx):
    """The invocation returns every state key, so the engine reads no checkpoint for the result
   ; the result is the one the final checkpoint gives."""
    from langgraph.pregel import Pregel

    from factdebate.run.claims import compiled_graph, result_object

    context = text_check() if ctx == "text" else static_ctx("scripted:disagree", max_rounds=2)
    reads = []
    real = Pregel.aget_state

    async def counted(self, config, **kwargs):
        reads.append(config)
        return await real(self, config, **kwargs)

    monkeypatch.setattr(Pregel, "aget_state", counted)
    result = await run_graph(framework, item, context, checkpointer=saver)
    assert reads == []  # a thread id made by the engine: nothing to check, nothing read back
    monkeypatch.undo()
    graph = compiled_graph(framework, saver, None)
    thread = result["thread_id"]
    values = (await graph.aget_state({"configurable": {"thread_id": thread}})).values
    expected = result_object(framework, values, context, thread_id=thread,
                             prompt_version=result["prompt_version"])
    assert result == expected and (result["label"] if ctx is None else result["check"])
