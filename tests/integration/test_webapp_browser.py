"""The web page at /app in a real browser (Playwright + Debian's chromium) against `langgraph dev`.

Real server (in-memory runtime, two users' API keys), real Milvus Lite + keyword indexes of a small
corpus, a real evaluation run folder made by `factdebate eval`; the scripted model double is
chosen in the page's model picker (FACTDEBATE_ALLOW_SCRIPTED=1). Screenshots of the main views go
to each test's tmp_path; ``FACTDEBATE_UPDATE_SCREENSHOT=1`` also copies the side-by-side view to
``server/static/screenshot.png`` (the picture of docs/web-page.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.chromium import needs_chromium
from tests.integration.servers import start_langgraph_dev, stop_server, warm_home

pytestmark = needs_chromium

ALICE, BOB = "alice-key-0123456789", "bob-key-0123456789ab"
CORPUS = [
    {"doc_id": "d1", "title": "Eiffel Tower",
     "text": "The Eiffel Tower is 330 metres tall and stands in Paris."},
    {"doc_id": "d2", "title": "Berlin",
     "text": "Berlin is the capital of Germany, with 3.7 million inhabitants."},
    {"doc_id": "d3", "title": "Nile", "text": "The Nile flows north into the Mediterranean."},
]
EVAL_ITEMS = [
    {"id": "e1", "dataset": "mini", "task": "fever", "claim": "The Eiffel Tower is in Paris.",
     "label": "SUPPORTS"},
    {"id": "e2", "dataset": "mini", "task": "fever", "claim": "Berlin is in France.",
     "label": "REFUTES"},
]

PAGE_TOP = "el => el.getBoundingClientRect().top + window.scrollY"
README_SCREENSHOT = Path(__file__).resolve().parents[2] / "server/static/screenshot.png"


def titles(section) -> list[str]:
    """The passage titles listed in a section of the page (its links or title spans)."""
    return [t.strip() for t in section.locator("li > :first-child").all_inner_texts()]


def assert_cited_apart_from_retrieved(verdict) -> tuple[list[str], list[str]]:
    """The verdict lists the cited passages under their heading and the rest under another."""
    assert "Evidence behind the verdict" in verdict.locator(".sources h4").inner_text()
    assert verdict.locator(".retrieved h4").inner_text().startswith("Retrieved, not cited")
    cited = titles(verdict.locator(".sources .cited-evidence"))
    retrieved = titles(verdict.locator(".retrieved"))
    assert cited and not set(cited) & set(retrieved), (cited, retrieved)
    return cited, retrieved


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path | str]]:
    from factdebate.tools.indexing import build_indexes

    work = tmp_path_factory.mktemp("webapp")
    corpus = work / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in CORPUS), encoding="utf-8")
    items = work / "mini.jsonl"
    items.write_text("".join(json.dumps(p) + "\n" for p in EVAL_ITEMS), encoding="utf-8")
    runs = work / "runs"
    env = {"FACTDEBATE_HOME": str(warm_home(work / "home")), "FACTDEBATE_ALLOW_SCRIPTED": "1"}
    evaluation = subprocess.Popen(  # a real run folder, made while the index builds
        [str(Path(sys.executable).parent / "factdebate"), "eval", "--framework", "cot",
         "--dataset", str(items), "--model", "scripted:agree", "--out", str(runs / "cot_mini")],
        env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    build_indexes(corpus, work / "index")  # the server checks it at start
    proc, url = start_langgraph_dev(work, {
        **env, "FACTDEBATE_INDEX_DIR": str(work / "index"), "FACTDEBATE_RUNS_DIR": str(runs),
        "FACTDEBATE_API_KEYS": f"alice:{ALICE},bob:{BOB}"})
    if evaluation.wait(timeout=60) != 0:
        stop_server(proc)
        pytest.fail(f"factdebate eval failed: {evaluation.stderr.read().decode()[-2000:]}")
    secret = work / "secret"  # a run folder outside the root, linked into it: never served
    secret.mkdir()
    (secret / "results.jsonl").write_text((runs / "cot_mini" / "results.jsonl").read_text())
    (runs / "outside").symlink_to(secret, target_is_directory=True)
    try:
        yield {"url": url, "runs": runs, "work": work}
    finally:
        stop_server(proc)


def sign_in(page, server, key: str) -> None:
    page.goto(f"{server['url']}/app")
    page.focus("#key")
    page.keyboard.type(key)
    page.keyboard.press("Enter")  # keyboard only
    page.wait_for_selector("#verify-form", state="visible")


def open_settings(page) -> None:
    if not page.locator(".settings").evaluate("details => details.open"):
        page.click(".settings summary")


def verify(page, claim: str, model: str, framework: str = "tool_mad") -> None:
    page.select_option("#framework", framework)
    page.fill("#model", model)
    if framework == "tool_mad":  # a run setting from the form (fewer model calls than ragas)
        open_settings(page)
        page.select_option("#set-scoring_mode", "consistency")
        page.click(".settings summary")  # closed again
    page.fill("#subject", claim)
    page.focus("#subject")
    page.keyboard.press("Control+Enter")


def api_run(url: str, key: str, graph: str, claim: str) -> str:
    headers = {"x-api-key": key}
    thread = httpx.post(f"{url}/threads", json={}, headers=headers, timeout=10).json()["thread_id"]
    done = httpx.post(f"{url}/threads/{thread}/runs/wait", headers=headers, timeout=60, json={
        "assistant_id": graph, "input": {"claim": claim},
        "context": {"debater_model": "scripted:agree"}})
    assert done.status_code == 200, done.text
    return thread


def test_wrong_key_shows_the_servers_message(page, server, tmp_path):
    page.goto(f"{server['url']}/app")
    page.fill("#key", "not-a-key-of-this-server")
    page.keyboard.press("Enter")
    error = page.wait_for_selector("#key-error", state="visible")
    assert error.inner_text() == "invalid API key"
    assert page.is_hidden("#app")
    page.screenshot(path=tmp_path / "wrong-key.png")


def test_a_claim_streams_round_by_round_then_the_verdict(page, server, tmp_path):
    sign_in(page, server, ALICE)
    assert page.inner_text("#who") == "alice"
    verify(page, "The Eiffel Tower is in Paris.", "scripted:disagree?latency=0.15")
    first = page.wait_for_selector(".pane .round[data-key=round-1] .turn:not(.pending)")
    assert page.is_hidden(".pane .verdict")  # round 1 is shown while the debate goes on
    top = first.evaluate(PAGE_TOP)
    first.scroll_into_view_if_needed()
    page.screenshot(path=tmp_path / "streaming.png")
    page.wait_for_selector(".pane .round[data-key=round-2]")
    page.wait_for_selector(".pane[data-status=done]")
    assert page.locator(".pane .round").count() == 3  # disagreement: max_rounds, then the judge
    round1 = page.locator(".pane .round[data-key=round-1]")
    assert sorted(round1.locator(".turn .agent").all_inner_texts()) == ["rag", "search"]
    assert "The Eiffel Tower is in Paris." in round1.locator(".query").first.inner_text()
    assert "Eiffel Tower" in round1.locator(".evidence").first.inner_text()
    assert "consistency" in round1.locator(".score").first.inner_text()
    assert "debaters disagree" in round1.locator(".consensus").inner_text()
    assert "the judge decides" in page.locator(".round[data-key=round-3] .consensus").inner_text()
    verdict = page.locator(".pane .verdict")
    assert verdict.locator(".chip").first.inner_text() == "SUPPORTS"
    assert "decided by judge after 3 rounds" in verdict.inner_text()
    # the passage the verdict cites is under its heading, with who cited it and the
    # stance; the passages only retrieved are under theirs (never both)
    cited, retrieved = assert_cited_apart_from_retrieved(verdict)
    assert cited == ["Eiffel Tower"] and "Berlin" in retrieved and "Nile" in retrieved
    behind = verdict.locator(".sources .cited-evidence li").first.inner_text()
    assert "cited by judge" in behind and "supports" in behind
    assert "labelled replies cited a passage" in verdict.locator(".citation-checks").inner_text()
    card = round1.locator(".turn", has=page.locator(".agent", has_text="rag"))
    assert [t.strip() for t in card.locator("li.cited > :first-child").all_inner_texts()] == [
        "Eiffel Tower"]  # the turn's card marks what that turn cited
    assert first.evaluate(PAGE_TOP) == top  # nothing above round 1 moved while streaming
    page.screenshot(path=tmp_path / "claim-done.png", full_page=True)

    page.select_option(".pane .compare select", "cot")  # the same claim, another framework
    page.click(".pane .compare-run")
    page.wait_for_selector(".pane:nth-child(2)[data-status=done]")
    left, right = (page.locator(".pane").nth(i).bounding_box() for i in (0, 1))
    assert left["y"] == right["y"] and right["x"] > left["x"] + left["width"] - 1  # side by side
    assert "Zero-shot CoT" in page.locator(".pane").nth(1).locator("h2").inner_text()
    page.screenshot(path=tmp_path / "side-by-side.png", full_page=True)
    if os.environ.get("FACTDEBATE_UPDATE_SCREENSHOT"):
        shutil.copyfile(tmp_path / "side-by-side.png", README_SCREENSHOT)


def test_hallucinated_and_missing_citations_are_shown(page, server, tmp_path):
    sign_in(page, server, ALICE)
    verify(page, "The Eiffel Tower is in Paris.", "scripted:agree?cite=wrong")
    page.wait_for_selector(".pane[data-status=done]")
    verdict = page.locator(".pane .verdict")
    cited, _ = assert_cited_apart_from_retrieved(verdict)  # the shown ids it cited are kept
    assert "never shown were dropped" in verdict.locator(".citation-checks").inner_text()
    page.click(".pane .close")
    verify(page, "The Eiffel Tower is in Paris.", "scripted:agree?cite=none")
    page.wait_for_selector(".pane[data-status=done]")
    verdict = page.locator(".pane .verdict")
    assert "Uncited verdict" in verdict.locator(".uncited-verdict").inner_text()
    assert verdict.locator(".cited-evidence li").count() == 0
    assert "Eiffel Tower" in titles(verdict.locator(".retrieved"))  # retrieved, never called cited
    page.screenshot(path=tmp_path / "uncited.png", full_page=True)


def test_stop_then_resume_finishes_the_debate(page, server, tmp_path):
    sign_in(page, server, ALICE)
    verify(page, "Berlin is the capital of Germany.", "scripted:disagree?latency=0.4")
    page.wait_for_selector(".pane .round[data-key=round-1] .turn:not(.pending)")
    page.click(".pane .stop")
    page.wait_for_selector(".pane[data-status=stopped]")
    assert page.locator(".pane .round[data-key=round-3]").count() == 0
    assert page.is_hidden(".pane .verdict")
    page.screenshot(path=tmp_path / "stopped.png")
    page.click(".pane .resume")
    page.wait_for_selector(".pane[data-status=done]")
    assert page.locator(".pane .round").count() == 3
    assert page.locator(".pane .verdict .chip").first.inner_text() == "SUPPORTS"


def test_a_three_claim_text_marks_each_sentence(page, server, tmp_path):
    sign_in(page, server, ALICE)
    page.check("#mode-text")
    page.fill("#model", "scripted:check_text")
    page.fill("#subject", "The Eiffel Tower is 330 metres tall. Berlin has 9 million inhabitants. "
              "The Nile flows north.")
    page.click("#verify-btn")
    page.wait_for_selector(".pane[data-status=done]", timeout=90_000)
    marks = page.locator(".pane .checked-text .sentence")
    assert marks.count() == 3
    classes = [marks.nth(i).get_attribute("class") for i in range(3)]
    assert ["mark-supported" in classes[0], "mark-refuted" in classes[1],
            "mark-unverifiable" in classes[2]] == [True, True, True], classes
    assert page.locator(".pane .claims .claim").count() == 3
    verdict = page.locator(".pane-body > .verdict")  # not the claims' debates
    assert verdict.locator(".chip").first.inner_text() == "REFUTES"
    assert "contains refuted claims" in verdict.inner_text()
    cited = titles(verdict.locator(".sources .cited-evidence"))
    assert "Eiffel Tower" in cited  # a sentence's citations: what its claims' verdicts cite
    if verdict.locator(".retrieved").count():  # claims that carry their retrieved passages
        assert not set(cited) & set(titles(verdict.locator(".retrieved")))
    page.screenshot(path=tmp_path / "text.png", full_page=True)


def test_server_errors_show_as_their_one_line_message(page, server):
    sign_in(page, server, ALICE)
    verify(page, "The Nile flows north.", "openai:gpt-4o")  # refused before the run starts
    error = page.wait_for_selector(".pane .error", state="visible")
    assert error.inner_text() == ("run context: debater_model='openai:gpt-4o' is not on this "
                                  "server's model allow-list. use one of: local:smollm2, scripted:*")
    page.check("#mode-text")  # a failed run: the error event of the stream
    page.fill("#model", "scripted:check_text")
    open_settings(page)
    page.fill("#set-label_set", "medqa")
    page.fill("#subject", "The Nile flows north.")
    page.click("#verify-btn")
    error = page.wait_for_selector(".pane .error", state="visible")
    assert error.inner_text().startswith("label_set='medqa' is not a claim-verification task. ")
    assert "\n" not in error.inner_text() and page.locator(".pane[data-status=failed]").count() == 1


def test_history_lists_only_the_users_own_threads(page, server, tmp_path):
    url = str(server["url"])
    api_run(url, BOB, "cot", "Bob's private claim about Mars.")
    api_run(url, ALICE, "cot", "Alice's claim about the Moon.")
    sign_in(page, server, ALICE)
    page.click("#tab-history")
    page.wait_for_selector(".history-item")
    listed = page.locator(".history .h-subject").all_inner_texts()
    assert "Alice's claim about the Moon." in listed
    assert not any("Bob" in s for s in listed)
    page.screenshot(path=tmp_path / "history.png", full_page=True)
    page.get_by_text("Alice's claim about the Moon.").click()
    page.wait_for_selector(".pane .verdict", state="visible")
    assert page.locator(".pane .subject").inner_text() == "Alice's claim about the Moon."
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing wider than it
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=tmp_path / "phone.png", full_page=True)
    page.click("#signout")
    page.fill("#key", BOB)
    page.keyboard.press("Enter")
    page.click("#tab-history")
    page.wait_for_selector(".history-item")
    assert page.locator(".history .h-subject").all_inner_texts() == ["Bob's private claim about Mars."]


def test_evaluation_runs_are_browsed_filtered_and_opened(page, server, tmp_path):
    sign_in(page, server, ALICE)
    page.click("#tab-evals")
    page.click("button[data-run=cot_mini]")
    page.wait_for_selector("table.results tbody tr")
    assert page.locator("table.results tbody tr").count() == 2
    page.select_option("select[aria-label=Outcome]", "incorrect")
    assert page.locator("table.results tbody tr").count() == 1  # scripted:agree says SUPPORTS
    page.click("button[data-item=e2]")
    page.wait_for_selector(".transcript .turn")
    assert "Berlin is in France." in page.locator(".transcript").inner_text()
    page.screenshot(path=tmp_path / "evals.png", full_page=True)


@pytest.mark.parametrize("run", ["../runs", "/etc", "cot_mini/../../index", "cot_mini/..", ".hidden",
                                 "a\\b", "outside"])
def test_run_folders_outside_the_root_are_refused(server, run):
    r = httpx.get(f"{server['url']}/app/api/evals/results", params={"run": run},
                  headers={"x-api-key": ALICE}, timeout=10)
    assert r.status_code in (400, 404) and "rows" not in r.json(), r.text


def test_the_pages_json_routes_need_a_key(server):
    url = f"{server['url']}/app/api/evals"
    assert httpx.get(url, timeout=10).status_code == 401
    assert httpx.get(url, headers={"x-api-key": "wrong-key-0123456"}, timeout=10).status_code == 403
    assert httpx.get(url, headers={"x-auth-scheme": "langsmith"}, timeout=10).status_code == 401
    ok = httpx.get(url, headers={"x-api-key": BOB}, timeout=10)
    assert [r["run"] for r in ok.json()["runs"]] == ["cot_mini"]
