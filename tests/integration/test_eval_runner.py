"""The evaluation runner in process: error rows, rate-limit back-off resuming the item's thread,
LLM-judge measurements, ``--config`` experiments (static retriever, scripted model, SQLite)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import pytest

from factdebate.evaluation.config import load_config
from factdebate.evaluation.reports import write_reports
from factdebate.evaluation.runner import RunSpec, is_rate_limit, run_eval
from factdebate.testing.scenarios import answer_role, claim_of
from factdebate.testing.scripted import ScriptCall, ScriptFault


class RateLimitError(RuntimeError):
    """Named like the providers' 429 errors (openai.RateLimitError)."""


@pytest.fixture(autouse=True)
def _no_index(monkeypatch):
    # the static test retriever needs no index on disk
    monkeypatch.setattr("factdebate.evaluation.runner._check_index", lambda spec, ctx, console: ctx)


def dataset(tmp_path: Path) -> Path:
    claims = [("ok-1", "The Eiffel Tower is in Paris.", "SUPPORTS"),
              ("flaky", "Mount Everest is the highest mountain.", "SUPPORTS"),
              ("broken", "Marie Curie won two Nobel Prizes.", "REFUTES"),
              ("ok-2", "Paris is the capital of France.", "REFUTES")]
    path = tmp_path / "mini.jsonl"
    path.write_text("".join(json.dumps({"id": f"mini-{i}", "dataset": "mini", "claim": c,
                                        "label": lab}) + "\n" for i, c, lab in claims))
    return path


def spec(tmp_path: Path, model: str, **extra) -> RunSpec:
    return RunSpec(framework="tool_mad", dataset=str(dataset(tmp_path)), out=tmp_path / "out",
                   concurrency=2, model=model, backoff_s=0.01,
                   sets=["rag_backend=static", "search_backend=static", "scoring_mode=none",
                         "llm_retries=0"], **extra)


def test_failures_become_error_rows_and_rate_limits_are_retried(scenario, tmp_path):
    lock, debater_calls = threading.Lock(), Counter()

    def respond(call: ScriptCall):
        claim = claim_of(call)
        if call.role == "debater":
            with lock:
                debater_calls[(claim, call.agent)] += 1
                first = debater_calls[(claim, call.agent)] == 1
            if "Everest" in claim and call.agent == "search" and first:
                raise RateLimitError("Error code: 429 - rate limit reached")
            if "Curie" in claim:
                raise ScriptFault("provider exploded")
        return answer_role(call, debater_label=0)

    import asyncio

    out = asyncio.run(run_eval(spec(tmp_path, scenario(respond))))
    rows = {r["item_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert set(rows) == {"mini-ok-1", "mini-flaky", "mini-broken", "mini-ok-2"}
    broken = rows["mini-broken"]
    assert broken["status"] == "error" and broken["error"]["type"] == "ScriptFault"
    assert broken["attempts"] == 1  # not a rate limit: no retry
    flaky = rows["mini-flaky"]
    assert flaky["status"] == "ok" and flaky["attempts"] == 2
    # the retry resumed the thread at the interrupted round: the failed turn ran once more, and
    # the rag turn again only if the 429 cancelled it before it finished (graphs/turns.py)
    assert debater_calls[("Mount Everest is the highest mountain.", "rag")] in (1, 2)
    assert debater_calls[("Mount Everest is the highest mountain.", "search")] == 2
    summary = write_reports(out, [out])["runs"][0]
    assert summary["metrics"]["errors"] == 1 and summary["n_ok"] == 3
    assert summary["metrics"]["accuracy"] == pytest.approx(2 / 3)


def test_rate_limit_detection():
    assert is_rate_limit(RateLimitError("x"))
    assert is_rate_limit(RuntimeError("HTTP 429 Too Many Requests"))
    wrapped = RuntimeError("node failed")
    wrapped.__cause__ = RateLimitError("slow down")
    assert is_rate_limit(wrapped)
    assert not is_rate_limit(ScriptFault("500 internal error"))


def test_llm_judge_measurement_uses_prompt_c1(scenario, tmp_path):
    prompts: list[str] = []

    def respond(call: ScriptCall):
        if call.role == "eval_judge":
            prompts.append(call.prompt)
            return {"reasoning": "matches the reference", "label": "True"}
        return answer_role(call, debater_label=0)

    import asyncio

    out = asyncio.run(run_eval(spec(tmp_path, scenario(respond), metrics=["llm_judge"])))
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["extra"]["llm_judge"] for r in rows} == {1.0} and len(prompts) == 4
    assert "Reference answers: REFUTES" in "\n".join(prompts)
    assert all(r["extra"]["eval_llm_calls"] == 1 for r in rows)
    assert write_reports(out, [out])["runs"][0]["metrics"]["llm_judge"] == 1.0


def test_config_crosses_frameworks_and_datasets(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(
        "out: OUT\nlimit: 50\nmodel: openai:gpt-4o-mini\nset: {search_backend: tavily, "
        "debaters: [rag, search]}\nframeworks: [tool_mad, cot]\ndatasets: [fever, feverous]\n"
        "runs:\n  - {framework: tool_mad, dataset: fever, name: consistency, "
        "set: {scoring_mode: consistency}, limit: 10}\n")
    out, specs = load_config(config, {"limit": None, "seed": 3, "sets": ["top_k=5"]})
    assert out == Path("OUT")
    assert [name for name, _ in specs] == ["tool_mad__fever", "tool_mad__feverous", "cot__fever",
                                           "cot__feverous", "consistency"]
    first, last = specs[0][1], specs[-1][1]
    assert first.limit == 50 and first.seed == 3 and first.out == Path("OUT/tool_mad__fever")
    assert first.sets == ["search_backend=tavily", "debaters=rag,search", "top_k=5"]
    assert last.limit == 10 and "scoring_mode=consistency" in last.sets
    config.write_text("out: x\nframework: [tool_mad]\n")
    with pytest.raises(Exception, match="unknown keys"):
        load_config(config, {})
