"""The review queue of the web page in a real browser (Playwright + Debian's chromium) against
``langgraph dev``: a run started from the page with "Review before publishing" waits in the
queue; the reviewer sees the claim (HTML in it shown as text), the draft and its evidence,
approves it and sees the outcome; a decision the graph refuses shows its error on the item."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.chromium import needs_chromium
from tests.integration.servers import serving, users_env

pytestmark = needs_chromium

ALICE = "alice-key-0123456789"
HOSTILE = 'The Eiffel Tower <img src=x onerror="window.__pwned=1"> stands in Paris.'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("review-page")
    with serving(work, users_env(work, {"alice": ALICE})) as url:
        yield url


def sign_in(page, url: str) -> None:
    page.goto(f"{url}/app")
    page.fill("#key", ALICE)
    page.keyboard.press("Enter")
    page.wait_for_selector("#verify-form", state="visible")


def api_review_run(url: str, claim: str) -> str:
    headers = {"x-api-key": ALICE}
    thread = httpx.post(f"{url}/threads", json={}, headers=headers, timeout=10).json()["thread_id"]
    done = httpx.post(f"{url}/threads/{thread}/runs/wait", headers=headers, timeout=120, json={
        "assistant_id": "tool_mad", "input": {"claim": claim},
        "context": {"debater_model": "scripted:agree", "max_rounds": 1, "review": True}})
    assert done.status_code == 200, done.text
    return thread


def test_a_run_from_the_page_waits_in_the_queue_and_is_approved(page, server, tmp_path):
    sign_in(page, server)
    page.fill("#model", "scripted:agree")
    page.check("#review-first")
    page.fill("#subject", HOSTILE)
    page.click("#verify-btn")
    page.wait_for_selector(".pane[data-status=review]")
    assert page.locator(".pane .status").inner_text() == "waiting for review"

    page.click("#tab-reviews")
    item = page.locator(".review-queue .review-item").first
    item.wait_for()
    assert item.locator(".review-claim").inner_text() == HOSTILE  # the markup, as text
    assert page.locator(".review-item img").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert item.locator(".review-draft .chip").inner_text() == "SUPPORTS"
    assert "Eiffel Tower" in item.locator(".review-evidence").inner_text()
    assert "round" in item.locator(".review-summary").inner_text()
    page.screenshot(path=tmp_path / "queue.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing wider than it
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 900})

    thread = item.get_attribute("data-thread")
    item.locator("button.approve").click()  # no reviewer name yet: asked for it
    assert "reviewer" in item.locator(".review-error").inner_text()
    page.fill("#reviewer", "Ana Reviewer")
    item.locator("button.approve").click()
    done = page.locator(f".review-decided .review-item[data-thread='{thread}']")
    done.wait_for()
    assert done.get_attribute("data-outcome") == "approve"
    assert "approve by Ana Reviewer: final label SUPPORTS" in done.locator(
        ".review-outcome").inner_text()
    assert page.locator(f".review-queue .review-item[data-thread='{thread}']").count() == 0
    state = httpx.get(f"{server}/threads/{thread}/state", headers={"x-api-key": ALICE}).json()
    assert state["values"]["review"]["reviewer"] == "Ana Reviewer"

    page.reload()  # the key stays for the tab, the reviewer's name in the browser
    page.wait_for_selector("#verify-form", state="visible")
    page.click("#tab-reviews")
    page.wait_for_selector("#reviews [role=status]:has-text('review')")
    assert page.input_value("#reviewer") == "Ana Reviewer"
    assert page.locator(f".review-item[data-thread='{thread}']").count() == 0


def test_an_edit_the_graph_refuses_shows_its_error_on_the_item(page, server):
    thread = api_review_run(server, "Berlin is the capital of Germany.")
    refused = httpx.post(f"{server}/app/api/reviews/{thread}", headers={"x-api-key": ALICE},
                         timeout=60, json={"decision": "edit", "reviewer": "Ana",
                                           "label": "REFUTES", "evidence_ids": ["nope"]})
    assert refused.json()["status"] == "waiting", refused.text
    sign_in(page, server)
    page.click("#tab-history")  # reopened from the history: waiting, decided in the queue
    page.click(f".history button[data-thread='{thread}']")
    page.wait_for_selector(".pane[data-status=review]")
    assert page.locator(".pane .status").inner_text() == "waiting for review"
    assert page.locator(".pane .resume").is_disabled()
    page.click("#tab-reviews")
    item = page.locator(f".review-queue .review-item[data-thread='{thread}']")
    item.wait_for()
    assert "unknown evidence id" in item.locator(".review-error").inner_text()

    page.fill("#reviewer", "Ana")
    item.locator("button.edit").click()
    item.locator("select.edit-label").select_option("REFUTES")
    item.locator("textarea.edit-rationale").fill("Berlin <b>is</b> the capital; the draft erred.")
    item.locator("button.save-edit").click()
    done = page.locator(f".review-decided .review-item[data-thread='{thread}']")
    done.wait_for()
    assert "edit by Ana: final label REFUTES" in done.locator(".review-outcome").inner_text()
    values = httpx.get(f"{server}/threads/{thread}/state", headers={"x-api-key": ALICE}).json()
    assert values["values"]["label"] == "REFUTES"
    assert values["values"]["rationale"] == "Berlin <b>is</b> the capital; the draft erred."
