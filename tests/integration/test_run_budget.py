"""The operator's per-run budget of model calls and tokens (per run).

One 20,000-character ``check_text`` request with ``max_claims=200`` made 26,467 model calls. The
budget (``FACTDEBATE_MAX_MODEL_CALLS_PER_RUN``, ``FACTDEBATE_MAX_TOKENS_PER_RUN``) is counted
outside the state, once per run, across parallel branches, nested verifier graphs and RAGAS
scoring; a spent budget stops the run with a ``BudgetExceededError`` naming the budget and the
variable, the work finished so far stays in the checkpoint, and a resume gets a new budget.
Scripted model, ``static`` retriever, in-memory saver; the CLI test runs ``factdebate check``
with SQLite checkpoints.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, Send
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.core.budget import (
    CALLS_ENV,
    SERVER_DEFAULT_CALLS,
    TOKENS_ENV,
    BudgetLimits,
    limits_from_env,
    new_run_budget,
    run_budget_for,
)
from factdebate.core.errors import BudgetExceededError, ConfigError
from factdebate.core.state import DebaterState
from factdebate.graphs.check_text import build_check_text
from factdebate.graphs.registry import build_framework
from factdebate.nodes.check_text.state import CheckTextContext
from factdebate.testing.scenarios import answer_role, claim_of
from factdebate.testing.scenarios_check_text import respond_check_text
from factdebate.testing.scripted import ScriptCall

CLAIM = "The Eiffel Tower is located in Paris."
SENTENCES = 8
TEXT = " ".join(f"Tower {i} in Paris was completed in 18{i}0." for i in range(1, SENTENCES + 1))
"""Eight check-worthy sentences, one claim each: 8 extraction calls, then 4 calls per claim (two
queries, two debaters; one round, consensus) = 40 model calls for the whole text."""
FULL_CALLS = SENTENCES + 4 * SENTENCES


@pytest.fixture(autouse=True)
def _no_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CALLS_ENV, raising=False)
    monkeypatch.delenv(TOKENS_ENV, raising=False)


def counting(calls: list[tuple[str, str]], respond: Any) -> Any:
    def reply(call: ScriptCall) -> Any:
        calls.append((call.role, claim_of(call)))
        return respond(call)

    return reply


def text_ctx(model: str) -> CheckTextContext:
    return CheckTextContext(debater_model=model, rag_backend="static", search_backend="static",
                            verifier_settings={"scoring_mode": "none", "max_rounds": 1})


def test_limits_come_from_the_operator_s_environment():
    assert limits_from_env(server=True, env={}) == BudgetLimits(calls=SERVER_DEFAULT_CALLS)
    assert limits_from_env(server=False, env={}).unlimited  # CLI and eval: unlimited unless set
    assert limits_from_env(server=False, env={CALLS_ENV: "50", TOKENS_ENV: "9000"}) == \
        BudgetLimits(calls=50, tokens=9000)
    for off in ("0", "off", "unlimited"):
        assert limits_from_env(server=True, env={CALLS_ENV: off}).unlimited
    for bad in ("many", "-3", "1.5"):
        with pytest.raises(ConfigError, match=CALLS_ENV):
            limits_from_env(server=True, env={CALLS_ENV: bad})


def test_server_runs_are_budgeted_by_default_and_each_run_on_its_own():
    server = {"configurable": {"run_id": "run-1", "thread_id": "t"}}
    budget = run_budget_for(server)
    assert budget is not None and budget.limits.calls == SERVER_DEFAULT_CALLS
    assert run_budget_for(server) is budget  # every call of the run, nested graphs included
    other = run_budget_for({"configurable": {"run_id": "run-2", "thread_id": "t"}})
    assert other is not None and other is not budget  # a resume is a new run: a new budget
    # the CLI and eval (no server run id) are unlimited unless the operator sets a limit
    assert run_budget_for({"configurable": {"thread_id": "t"}}, control=object()) is None


async def test_check_text_stops_at_the_budget_and_keeps_partial_results(scenario, monkeypatch):
    calls: list[tuple[str, str]] = []
    ctx = text_ctx(scenario(counting(calls, respond_check_text)))
    graph = build_check_text().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "long-text"}}
    budget = FULL_CALLS - 4
    monkeypatch.setenv(CALLS_ENV, str(budget))
    with pytest.raises(BudgetExceededError) as info:
        await graph.ainvoke({"text": TEXT}, config, context=ctx)
    error = info.value
    assert len(calls) == budget  # parallel claims never overshoot: counted before each call
    assert error.budget == "calls" and error.env == CALLS_ENV and error.exit_code == 4
    message = str(error)
    assert f"budget of {budget} model calls, set by {CALLS_ENV}" in message
    assert "--resume --thread-id long-text" in message and "\n" not in message
    # the checkpoint keeps what was done: the extracted claims, the finished claims' debates
    snapshot = await graph.aget_state(config)
    assert len(snapshot.values["claims"]) == SENTENCES
    assert {t.name for t in snapshot.tasks} == {"verify_claim"}
    # a resume is a new run with a new budget; it neither extracts again nor re-debates a
    # finished claim (at most 4 claims were unfinished: 28 of 32 debate calls were made)
    calls.clear()
    monkeypatch.setenv(CALLS_ENV, "100")
    out = await graph.ainvoke(None, config, context=ctx)
    assert "extract" not in {role for role, _ in calls}
    assert len(calls) <= 16
    fresh = await build_check_text().compile(checkpointer=InMemorySaver()).ainvoke(
        {"text": TEXT}, {"configurable": {"thread_id": "fresh"}}, context=ctx)
    assert out["check"]["counts"] == fresh["check"]["counts"]
    assert out["check"]["counts"]["verified"] == SENTENCES
    assert [c["label"] for c in out["check"]["claims"]] == \
        [c["label"] for c in fresh["check"]["claims"]]


async def test_a_server_run_s_budget_covers_the_nested_verifiers(scenario, monkeypatch):
    """A server run (``configurable.run_id``) with the operator's limit: the whole request."""
    calls: list[tuple[str, str]] = []
    ctx = text_ctx(scenario(counting(calls, respond_check_text)))
    graph = build_check_text().compile(checkpointer=InMemorySaver())
    monkeypatch.setenv(CALLS_ENV, "12")
    config = {"configurable": {"thread_id": "srv", "run_id": str(uuid.uuid4())}}
    with pytest.raises(BudgetExceededError, match=CALLS_ENV):
        await graph.ainvoke({"text": TEXT}, config, context=ctx)
    assert len(calls) == 12
    assert Counter(role for role, _ in calls)["extract"] == SENTENCES


async def test_a_budget_in_the_run_s_callbacks_is_that_invocation_s(scenario, monkeypatch):
    calls: list[tuple[str, str]] = []
    ctx = text_ctx(scenario(counting(calls, respond_check_text)))
    graph = build_check_text().compile(checkpointer=InMemorySaver())
    monkeypatch.setenv(CALLS_ENV, "20")
    budget = new_run_budget(thread_id="cb")
    assert budget is not None
    with pytest.raises(BudgetExceededError):
        await graph.ainvoke({"text": TEXT}, {"configurable": {"thread_id": "cb"},
                                             "callbacks": [budget]}, context=ctx)
    assert budget.calls == len(calls) == 20 and budget.refused >= 1


async def run_tool_mad(model: str, static_ctx: Any, thread: str, **overrides: Any) -> dict:
    graph = build_framework("tool_mad").compile(checkpointer=InMemorySaver())
    return await graph.ainvoke({"claim": CLAIM}, {"configurable": {"thread_id": thread}},
                               context=static_ctx(model, **overrides))


KEYS = ("label", "rationale", "round", "stopped_by", "turns", "scores", "flags", "citations")


async def test_tool_mad_within_the_budget_is_unaffected(static_ctx, monkeypatch):
    """Stability scoring (its RAGAS calls count), disagreement: three rounds and the judge."""
    free = await run_tool_mad("scripted:disagree", static_ctx, "free")
    needed = free["ledger"]["llm_calls"]
    assert needed > 20  # debaters, queries, RAGAS and the judge
    for limit in (str(needed), str(SERVER_DEFAULT_CALLS)):
        monkeypatch.setenv(CALLS_ENV, limit)
        within = await run_tool_mad("scripted:disagree", static_ctx, f"within-{limit}")
        assert {k: within.get(k) for k in KEYS} == {k: free.get(k) for k in KEYS}
        assert within["ledger"] == free["ledger"]
    monkeypatch.setenv(CALLS_ENV, str(needed - 1))  # one short: the judge's call is refused
    with pytest.raises(BudgetExceededError, match=f"budget of {needed - 1} model calls"):
        await run_tool_mad("scripted:disagree", static_ctx, "short")


async def test_a_refused_ragas_call_still_stops_the_run(static_ctx, monkeypatch):
    """RAGAS turns a failed model call into a scoring fault; the budget's refusal must not be
    taken for a bad score (with agreement, RAGAS calls are the last ones of round 1)."""
    free = await run_tool_mad("scripted:agree", static_ctx, "agree")
    assert free["stopped_by"] == "consensus"
    monkeypatch.setenv(CALLS_ENV, str(free["ledger"]["llm_calls"] - 1))
    with pytest.raises(BudgetExceededError):
        await run_tool_mad("scripted:agree", static_ctx, "agree-short")


async def test_the_token_budget(static_ctx, scenario, monkeypatch):
    calls: list[tuple[str, str]] = []
    model = scenario(counting(calls, lambda call: answer_role(call, debater_label=0)))
    monkeypatch.setenv(TOKENS_ENV, "50")  # one call's prompt alone is longer
    with pytest.raises(BudgetExceededError) as info:
        await run_tool_mad(model, static_ctx, "tokens", scoring_mode="none")
    assert info.value.budget == "tokens" and TOKENS_ENV in str(info.value)
    assert len(calls) <= 2  # the two debaters' first calls run in parallel; nothing after


async def test_a_command_fanning_out_many_turns_stops_at_the_budget(scenario, static_ctx,
                                                                  monkeypatch):
    """``Command(goto=[Send(...)] * 40)``: 40 debater turns in one step, one budget."""
    calls: list[tuple[str, str]] = []
    model = scenario(counting(calls, lambda call: answer_role(call, debater_label=0)))
    ctx = static_ctx(model, scoring_mode="none")
    graph = build_framework("tool_mad").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "fan"}}
    await graph.ainvoke({"claim": CLAIM}, config, context=ctx)
    turn = DebaterState(agent="rag", round=1, claim=CLAIM, task="fever", options=None,
                        exclude_titles=None, previous_query="", opponents=[], query="",
                        evidence=[], answer="", label=None, parse="", turns=[], scores={},
                        ledger={}, flags=[])
    calls.clear()
    monkeypatch.setenv(CALLS_ENV, "25")
    with pytest.raises(BudgetExceededError):
        await graph.ainvoke(Command(goto=[Send("debate_turn", dict(turn)) for _ in range(40)]),
                            config, context=ctx)
    assert len(calls) == 25


def checkpointed_results(db: Path, thread_id: str) -> dict[str, Any]:
    """The per-claim results ``check``'s run saved in its SQLite checkpoint: the state's and those
    of the branches that finished in the superstep the budget stopped (their writes are saved)."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    with sqlite3.connect(db) as conn:
        graph = build_check_text().compile(checkpointer=SqliteSaver(conn))
        state = graph.get_state({"configurable": {"thread_id": thread_id}})
    results = dict(state.values.get("results") or {})
    for task in state.tasks:  # branches of the stopped superstep that finished: saved writes
        if task.name == "verify_claim" and isinstance(task.result, dict):
            results.update(task.result.get("results") or {})
    return results


def test_cli_check_stops_at_the_budget_then_resumes(tmp_path: Path, monkeypatch):
    """``factdebate check``: one error line with the resume command (exit 4), then ``--resume``
    with a larger budget finishes the text without extracting it again."""
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    source = tmp_path / "text.txt"
    source.write_text(TEXT, encoding="utf-8")
    runner = CliRunner()
    args = ["check", str(source), "--model", "scripted:check_text", "--framework", "cot",
            "--thread-id", "budgeted", "--json"]
    monkeypatch.setenv(CALLS_ENV, "12")  # 8 extraction calls + 4 of the 8 claims (1 call each)
    stopped = runner.invoke(app, args)
    assert stopped.exit_code == 4, stopped.output
    lines = [ln for ln in stopped.output.splitlines() if ln.strip()]
    # the budget bounds the work saved: at most the 4 one-call claims 12 calls leave after the 8
    # extractions (how many of them finished before the stop cancelled their superstep depends
    # on scheduling, so the saved state is read, not what the live table redrew)
    saved = checkpointed_results(tmp_path / "home" / "checkpoints.sqlite", "budgeted")
    assert len(saved) <= 4 and all(r["label"] == "REFUTES" for r in saved.values()), saved
    assert lines[-1].startswith("error: the run used its budget of 12 model calls")
    assert CALLS_ENV in lines[-1] and "--resume --thread-id budgeted" in lines[-1]
    assert sum(ln.startswith("error:") for ln in lines) == 1
    monkeypatch.setenv(CALLS_ENV, "100")
    resumed = runner.invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert '"verified": 8' in resumed.output
