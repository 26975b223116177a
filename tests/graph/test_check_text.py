"""check_text with the scripted double: extraction -> per-claim fan-out -> aggregation, and resume.

The resume test kills (SIGKILL) a process in the middle of the verification fan-out, with a real
SQLite checkpointer, and resumes the thread here: only the unfinished claim is debated again.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.core.errors import ConfigError, InputError
from factdebate.core.models import load_model
from factdebate.graphs.check_text import build_check_text
from factdebate.nodes.check_text.state import CheckTextContext
from factdebate.run.claims import open_sqlite_saver, unfinished
from factdebate.testing.scenarios import claim_of
from factdebate.testing.scenarios_check_text import respond_check_text, respond_with_debris
from factdebate.testing.scripted import ScriptCall

TEXT = ("The Eiffel Tower in Paris was completed in 1889. It is 330 metres tall; it was built by "
        "Gustave Eiffel. I think Paris is lovely. The Eiffel Tower in Paris was completed in 1889.")
TESTS = Path(__file__).resolve().parents[1]


def ctx_for(model: str, **overrides: Any) -> CheckTextContext:
    settings = overrides.pop("verifier_settings", {"scoring_mode": "none", "max_rounds": 1})
    return CheckTextContext(debater_model=model, rag_backend="static", search_backend="static",
                            verifier_settings=settings, **overrides)


async def check(ctx: CheckTextContext, payload: Any, *, saver: Any = None,
                thread: str = "t") -> dict[str, Any]:
    graph = build_check_text().compile(checkpointer=saver or InMemorySaver())
    return await graph.ainvoke(payload, {"configurable": {"thread_id": thread}}, context=ctx)


async def test_extract_fan_out_aggregate(scenario):
    seen: list[tuple[str, str]] = []

    def respond(call: ScriptCall) -> Any:
        seen.append((call.role, claim_of(call)))
        return respond_check_text(call)

    out = await check(ctx_for(scenario(respond)), {"text": TEXT})
    report = out["check"]
    # sentences with exact spans
    assert [s["text"] for s in report["sentences"]] == [
        "The Eiffel Tower in Paris was completed in 1889.",
        "It is 330 metres tall; it was built by Gustave Eiffel.", "I think Paris is lovely.",
        "The Eiffel Tower in Paris was completed in 1889."]
    for s in report["sentences"]:
        assert TEXT[s["start"]:s["end"]] == s["text"]
    claims = {c["claim"]: c for c in report["claims"]}
    # identical claims (sentences 1 and 4) are one entry, verified once
    assert claims["The Eiffel Tower in Paris was completed in 1889."]["sentences"] == [0, 3]
    debated = [c for role, c in seen if role == "debater"]
    assert debated.count("The Eiffel Tower in Paris was completed in 1889.") == 2  # rag + search
    assert claims["The Eiffel Tower in Paris was completed in 1889."]["category"] == "supported"
    assert claims["It is 330 metres tall."]["category"] == "refuted"  # 330 is in no passage
    assert claims["it was built by Gustave Eiffel."]["category"] == "unverifiable"
    assert claims["I think Paris is lovely."]["status"] == "not_check_worthy"
    assert "I think Paris is lovely." not in debated
    assert [s["mark"] for s in report["sentences"]] == [
        "supported", "refuted", "not_check_worthy", "supported"]
    assert report["counts"] == {"supported": 1, "refuted": 1, "unverifiable": 1,
                                     "no_verdict": 0, "skipped": 0, "not_check_worthy": 1,
                                     "claims": 4, "verified": 3, "sentences": 4}
    assert report["verdict"] == "contains refuted claims" and out["label"] == "REFUTES"
    # citations: numbered once across the text; each verified claim cites its passages
    numbers = [c["n"] for c in report["citations"]]
    assert numbers == list(range(1, len(numbers) + 1)) and numbers
    eiffel = claims["The Eiffel Tower in Paris was completed in 1889."]
    assert eiffel["citations"] and report["citations"][eiffel["citations"][0] - 1]["title"]
    assert eiffel["turns"] and eiffel["turns"][0]["evidence"] and eiffel["rationale"]
    assert out["ledger"]["llm_calls"] == len(seen)  # extraction + every debate counted


async def test_max_claims_skips_and_says_how_many(scenario):
    spec = scenario(respond_check_text)
    out = await check(ctx_for(spec, max_claims=1), {"text": TEXT})
    counts = out["check"]["counts"]
    assert counts["verified"] == 1 and counts["skipped"] == 2
    assert "2 check-worthy claim(s) skipped: over max_claims=1" in out["flags"]
    assert out["check"]["verdict"] == "unverifiable parts"
    assert out["label"] == "NOT ENOUGH INFO"


async def test_no_check_worthy_claim_is_a_result_not_an_error(scenario):
    spec = scenario(respond_check_text)
    out = await check(ctx_for(spec, label_set="binary"),
                      {"claim": "I think Paris is lovely. Is it worth a visit?"})
    assert out["check"]["verdict"] == "no check-worthy claims"
    assert out["check"]["counts"]["verified"] == 0
    assert out["label"] == "SUPPORTS"  # binary: nothing was shown false
    assert not [c for c in load_model(spec).timeline if c.role != "extract"]  # type: ignore[attr-defined]


async def test_other_framework_and_its_settings(scenario):
    spec = scenario(respond_check_text)
    out = await check(ctx_for(spec, framework="cot", verifier_settings={}),
                      {"text": "Mount Everest is 8,849 metres high."})
    claim = out["check"]["claims"][0]
    assert claim["label"] == "REFUTES"  # cot retrieves nothing, so 8,849 is in no evidence
    assert out["check"]["framework"] == "cot"
    rounds = await check(ctx_for(spec, verifier_settings={"max_rounds": 2, "scoring_mode": "none"}),
                         {"text": "Mount Everest is 8,849 metres high."}, thread="t2")
    assert rounds["check"]["claims"][0]["rounds"] == 1  # consensus in round 1


@pytest.mark.parametrize(("payload", "overrides", "error", "words"), [
    ({"text": "  \n "}, {}, InputError, "empty"),
    ({"text": "x" * 20_001}, {}, InputError, "over the limit of 20000"),
    ({"text": "Paris."}, {"framework": "nope"}, ConfigError, "unknown verifier framework"),
    ({"text": "Paris."}, {"verifier_settings": {"max_roundz": 1}}, ConfigError, "max_roundz"),
    ({"text": "Paris."}, {"verifier_settings": {"query_model": "x"}}, ConfigError, "model field"),
])
async def test_bad_input_is_one_line(scenario, payload, overrides, error, words):
    with pytest.raises(error, match=words):
        await check(ctx_for(scenario(respond_check_text), **overrides), payload)


async def test_claims_not_drawn_from_the_text_are_dropped(scenario):
    def respond(call: ScriptCall) -> Any:
        if call.role == "extract":  # a small model copying the prompt's placeholder
            return {"claims": [{"claim": "<one self-contained fact>", "check_worthy": True,
                                "reason": "<a few words>"}]}
        return respond_check_text(call)

    out = await check(ctx_for(scenario(respond)), {"text": "Mount Everest is 8,849 metres high."})
    assert [c["claim"] for c in out["check"]["claims"]] == ["Mount Everest is 8,849 metres high."]
    assert any("only claims not drawn from the text" in f for f in out["flags"])


async def test_extraction_debris_is_cleaned_and_duplicates_merged(scenario):
    """What the embedded model leaves in its extraction JSON (``</claim>},``, a ``...`` claim, a
    claim twice) never becomes a claim: one clean claim, every sentence pointing at it."""
    out = await check(ctx_for(scenario(respond_with_debris)), {"text": TEXT})
    claims = out["check"]["claims"]
    texts = [c["claim"] for c in claims]
    assert not [t for t in texts if any(ch in t for ch in "<>{}")], texts
    assert len(texts) == len(set(texts)) and "..." not in texts
    eiffel = [c for c in claims if c["claim"] == "The Eiffel Tower in Paris was completed in 1889."]
    assert len(eiffel) == 1 and eiffel[0]["sentences"] == [0, 3]
    assert sum("holding no claim (markup or punctuation only) were dropped" in f
               for f in out["flags"]) == 4  # one per sentence


def test_claim_text_cleaning_keeps_what_is_the_claim():
    from factdebate.nodes.check_text.extract_claims import clean_claim_text

    assert clean_claim_text("Marie Curie won two Nobel Prizes.</claim>},") == (
        "Marie Curie won two Nobel Prizes.")
    assert clean_claim_text('{"claim": "Paris is in France."},') == "Paris is in France."
    assert clean_claim_text("...</claim>},{") == ""
    assert clean_claim_text('He said "yes".') == 'He said "yes".'
    assert clean_claim_text('"Hello", she said.') == '"Hello", she said.'
    assert clean_claim_text("The U.S. has 50 states.") == "The U.S. has 50 states."


def test_context_refuses_itself_and_qa_tasks():
    with pytest.raises(ConfigError, match="cannot verify its own claims"):
        CheckTextContext(framework="check_text")
    with pytest.raises(ConfigError, match="not a claim-verification task"):
        CheckTextContext(label_set="pubmedqa")


_CHILD = textwrap.dedent("""
    import asyncio, sys, time
    sys.path.insert(0, {tests!r})
    import conftest  # the static retriever
    from factdebate.testing.scripted import SCENARIOS
    from factdebate.testing.scenarios import claim_of
    from factdebate.testing.scenarios_check_text import respond_check_text, respond_with_debris
    from factdebate.nodes.check_text.state import CheckTextContext
    from factdebate.graphs.check_text import build_check_text
    from factdebate.run.claims import open_sqlite_saver

    def respond(call):
        if call.role == "judge" and "Everest" in claim_of(call):
            open({marker!r}, "w").write("judge")
            time.sleep(120)  # killed here, the other claims done
        reply = respond_check_text(call)
        if call.role == "debater" and "Everest" in claim_of(call) and call.agent == "search":
            reply = {{**reply, "label": "SUPPORTS" if reply["label"] == "REFUTES" else "REFUTES"}}
        return reply

    SCENARIOS.register("killme", lambda: respond)

    async def main():
        ctx = CheckTextContext(debater_model="scripted:killme", rag_backend="static",
                               search_backend="static", llm_retries=0,
                               verifier_settings={{"scoring_mode": "none", "max_rounds": 2}})
        async with open_sqlite_saver({db!r}) as saver:
            graph = build_check_text().compile(checkpointer=saver)
            await graph.ainvoke({{"text": {text!r}}}, {{"configurable": {{"thread_id": "k"}}}},
                                context=ctx, durability="sync")

    asyncio.run(main())
""")
KILL_TEXT = ("The Eiffel Tower in Paris was completed in 1889. Mount Everest is 8,849 metres high. "
             "Marie Curie won the Nobel Prize in 1903.")


async def test_resume_after_kill_mid_fan_out_reruns_only_unfinished_claims(scenario, tmp_path):
    db, marker = tmp_path / "checkpoints.sqlite", tmp_path / "marker"
    script = _CHILD.format(tests=str(TESTS), marker=str(marker), db=str(db), text=KILL_TEXT)
    child = subprocess.Popen([sys.executable, "-c", script], env={**os.environ},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, (child.stderr.read() if child.stderr else b"").decode()
            assert time.monotonic() < deadline, "the child never reached the Everest judge"
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)  # the other branches' writes are saved before their step ends
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(10)
    seen: list[tuple[str, str]] = []

    def respond(call: ScriptCall) -> Any:
        seen.append((call.role, claim_of(call)))
        return respond_check_text(call)

    ctx = ctx_for(scenario(respond), verifier_settings={"scoring_mode": "none", "max_rounds": 2})
    async with open_sqlite_saver(db) as saver:
        graph = build_check_text().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "k"}}
        snapshot = await graph.aget_state(config)
        assert unfinished(snapshot) and snapshot.next == ("verify_claim",)
        done = [t for t in snapshot.tasks if t.name == "verify_claim" and not t.error
                and t.result is not None]
        assert len(done) == 2  # Eiffel and Curie finished before the kill
        out = await graph.ainvoke(None, config, context=ctx, durability="sync")
    assert {claim for _, claim in seen} == {"Mount Everest is 8,849 metres high."}
    assert ("extract", "") not in seen  # extraction is not redone
    # the Everest debate resumed inside: its rounds were checkpointed, only the judge is redone
    assert [role for role, _ in seen] == ["judge"]
    labels = {c["claim"]: c["label"] for c in out["check"]["claims"]}
    assert labels == {"The Eiffel Tower in Paris was completed in 1889.": "SUPPORTS",
                      "Mount Everest is 8,849 metres high.": "SUPPORTS",
                      "Marie Curie won the Nobel Prize in 1903.": "SUPPORTS"}
    assert out["check"]["counts"]["verified"] == 3


async def test_eval_html_drills_into_every_item(scenario, tmp_path):
    import json

    from factdebate.evaluation.html_report import write_eval_html

    spec = scenario(respond_check_text)
    async with open_sqlite_saver(tmp_path / "checkpoints.sqlite") as saver:
        out = await check(ctx_for(spec), {"claim": TEXT}, saver=saver, thread="run:item-1")
    rows = [{"item_id": "item-1", "status": "ok", "thread_id": "run:item-1", "claim": TEXT,
             "gold": {"label": "REFUTES"}, "prediction": {"label": out["label"]}},
            {"item_id": "item-2", "status": "ok", "thread_id": "run:missing", "claim": "c",
             "gold": {"label": "SUPPORTS"}, "prediction": {"label": "SUPPORTS", "rationale": "r"},
             "rounds": 1, "stopped_by": "consensus", "contexts": ["Paris: capital"]},
            {"item_id": "item-3", "status": "error", "thread_id": "x", "claim": "<b>c</b>",
             "gold": {"label": "SUPPORTS"}, "error": {"message": "boom"}}]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    html = write_eval_html(tmp_path).read_text(encoding="utf-8")
    for n in range(1, 5):  # item 1's four claims, each with its own drill-down
        assert f"id='i1-claim-{n}'" in html
    assert "id='i2-claim-1'" in html and "Paris: capital" in html
    assert "error: boom" in html and "&lt;b&gt;c&lt;/b&gt;" in html and "<b>c</b>" not in html
