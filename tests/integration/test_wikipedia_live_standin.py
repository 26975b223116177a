"""``rag_backend=wikipedia`` against a MediaWiki stand-in on loopback (``mediawiki_standin.py``).

The retriever's own behaviour (passages cited by revision, the on-disk cache, ``maxlag``, the
rate limit, the User-Agent) and ``factdebate verify`` end to end with a scripted model: it cites
the stand-in's pages, a repeated run sends no request, and a wiki answering 500 or hanging is a
tool fault of that turn with a verdict all the same.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.nodes import llm
from factdebate.tools.base import clear_retriever_cache
from factdebate.tools.wikipedia_live import WikipediaRetriever
from tests.integration import mediawiki_standin as wiki
from tests.integration.mediawiki_standin import StandIn

CLAIM = "The Eiffel Tower was completed in 1889."
runner = CliRunner()


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with wiki.running() as url:
        yield url


@pytest.fixture(autouse=True)
def fresh(api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FACTDEBATE_MEDIAWIKI_URL", api)
    monkeypatch.setenv("FACTDEBATE_CONTACT", "tests@example.org")
    monkeypatch.setenv("FACTDEBATE_MEDIAWIKI_RATE", "0")
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    monkeypatch.setattr(llm, "BACKOFF_BASE_S", 0.01)
    wiki.reset()
    clear_retriever_cache()
    yield
    clear_retriever_cache()


def test_passages_of_the_top_pages_ranked_and_cited_by_revision(api: str):
    import asyncio

    found = asyncio.run(WikipediaRetriever().search("When was the Eiffel Tower completed?", k=3))
    top = found[0]
    assert top["id"] == "Eiffel Tower#2" and "completed in 1889" in top["text"]
    base = api.removesuffix("api.php")
    assert top["url"] == f"{base}index.php?title=Eiffel_Tower&oldid=1100001"
    assert (top["title"], top["page"], top["revision"]) == ("Eiffel Tower", "Eiffel Tower", 1100001)
    assert top["sentences"] == [] and top["pool"] == "" and top["source"] == "wikipedia"
    assert [p["score"] for p in found] == sorted((p["score"] for p in found), reverse=True)
    assert asyncio.run(WikipediaRetriever().search("When was the Eiffel Tower completed?",
                                                   k=1)) == found[:1], "k cuts one cached ranking"
    every = asyncio.run(WikipediaRetriever().search("Eiffel Tower Paris Gustave", k=50))
    assert not any("official site" in p["text"] or "tallest towers" in p["text"] for p in every), \
        "the See also and References sections are not evidence"
    assert {p["page"] for p in every} == {"Eiffel Tower", "Gustave Eiffel", "Paris"}
    searches = [r for r in StandIn.seen if r["params"].get("list") == "search"]
    pages = [r for r in StandIn.seen if r["params"].get("prop")]
    assert len(searches) == 2 and len(pages) == 3, "another query reads the same pages from disk"
    for request in StandIn.seen:
        assert request["params"]["maxlag"] == "5"
        assert request["agent"].startswith("factdebate/")
        assert "contact: tests@example.org" in request["agent"]


def test_a_repeated_query_sends_no_request_until_the_ttl_ends(monkeypatch: pytest.MonkeyPatch):
    import asyncio

    first = asyncio.run(WikipediaRetriever().search(CLAIM, k=3))
    assert len(StandIn.seen) == 4  # one search, three pages
    wiki.reset()
    assert asyncio.run(WikipediaRetriever().search(f"  {CLAIM} ", k=3)) == first
    assert StandIn.seen == [], "a repeated query asks nothing"
    monkeypatch.setenv("FACTDEBATE_WIKIPEDIA_CACHE_TTL_S", "0")
    assert asyncio.run(WikipediaRetriever().search(CLAIM, k=3)) == first
    assert len(StandIn.seen) == 4, "without a cache every search asks the wiki"


def test_a_query_nothing_matches_is_an_empty_result_and_cached():
    import asyncio

    assert asyncio.run(WikipediaRetriever().search("zzzz qqqq", k=3)) == []
    assert len(StandIn.seen) == 1
    assert asyncio.run(WikipediaRetriever().search("zzzz qqqq", k=3)) == []
    assert len(StandIn.seen) == 1


def test_maxlag_is_waited_out_by_the_retry_policy():
    import asyncio

    wiki.reset("maxlag", lagged=1)
    found = asyncio.run(llm.with_retries(
        lambda: WikipediaRetriever().search(CLAIM, k=2), retries=2, what="wikipedia search"))
    assert found and found[0]["page"] == "Eiffel Tower"
    first, second = StandIn.seen[0]["at"], StandIn.seen[1]["at"]
    assert second - first >= 0.95, "the retry came before the wiki's Retry-After"


def test_requests_keep_the_process_rate(monkeypatch: pytest.MonkeyPatch):
    import asyncio

    monkeypatch.setenv("FACTDEBATE_MEDIAWIKI_RATE", "10")

    async def two() -> None:  # two debaters searching at once share the one limit
        await asyncio.gather(WikipediaRetriever().search(CLAIM, k=2),
                             WikipediaRetriever().search("Paris landmarks", k=2))

    started = time.monotonic()  # the stand-in runs in this process: one clock
    asyncio.run(two())
    times = sorted(r["at"] for r in StandIn.seen)
    assert len(times) >= 5
    assert all(at >= started + i * 0.1 for i, at in enumerate(times)), \
        "the i-th request started no sooner than i tenths of a second after the first"


def verify(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["verify", CLAIM, "--model", "scripted:agree", "--json",
                                 "--set", "scoring_mode=none", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def evidence_of(out: dict[str, Any], agent: str) -> list[dict[str, Any]]:
    return [e for t in out["turns"] if t["agent"] == agent for e in t["evidence"]]


def test_verify_cites_the_wiki_and_a_repeated_run_asks_nothing(api: str, demo_head_index: Path):
    out = verify("--set", "rag_backend=wikipedia", "--index-dir", str(demo_head_index))
    cited = evidence_of(out, "rag")
    base = api.removesuffix("api.php")
    assert cited and all(e["url"].startswith(f"{base}index.php?title=") for e in cited)
    assert cited[0]["page"] == "Eiffel Tower" and "oldid=1100001" in cited[0]["url"]
    assert out["ledger"]["tool_calls"]["wikipedia"] == 1
    assert any(e["url"].startswith(base) for e in out["evidence"]), "the verdict cites the wiki"
    assert StandIn.seen
    wiki.reset()
    again = verify("--set", "rag_backend=wikipedia", "--index-dir", str(demo_head_index))
    assert StandIn.seen == [], "the same query again sends no request"
    assert evidence_of(again, "rag") == cited


def test_verify_wikipedia_shortcut_needs_no_index(api: str, tmp_path: Path):
    out = verify("--wikipedia")
    assert out["label"] == "SUPPORTS"
    assert out["ledger"]["tool_calls"] == {"wikipedia": 2}
    for agent in ("rag", "search"):
        assert evidence_of(out, agent)[0]["page"] == "Eiffel Tower"
    assert not (tmp_path / "home" / "index").exists(), "no demo index was built"
    refused = runner.invoke(app, ["verify", CLAIM, "--model", "scripted:agree", "--wikipedia",
                                  "--rag-backend", "keyword"])
    assert refused.exit_code == 2 and "--rag-backend" in refused.output


@pytest.mark.parametrize(("mode", "why"), [("500", "500 Internal Server Error"),
                                           ("hang", "TimeoutError"),
                                           ("html", "answered something other than JSON")])
def test_a_failing_wiki_is_a_tool_fault_with_a_verdict(mode: str, why: str):
    wiki.reset(mode)
    StandIn.hang_s = 5.0
    started = time.monotonic()
    out = verify("--wikipedia", "--set", "tool_timeout_s=1", "--set", "tool_retries=1")
    elapsed = time.monotonic() - started
    assert out["label"] in ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
    assert out["ledger"]["tool_faults"] == {"wikipedia": 2}  # both debaters' turns
    faults = [f for f in out["flags"] if f.startswith("tool fault: wikipedia")]
    assert len(faults) == 2 and all(why in f for f in faults), out["flags"]
    assert evidence_of(out, "rag") == [] and evidence_of(out, "search") == []
    searches = [r for r in StandIn.seen if r["params"].get("list") == "search"]
    assert len(searches) == 4, "each debater: one attempt and tool_retries=1 retry"
    if mode == "hang":
        assert elapsed < 2 * 2 * 1.0 + 6, "each attempt ends at tool_timeout_s"
    wiki.reset()
    healed = verify("--wikipedia")
    assert evidence_of(healed, "rag"), "a fault is not cached"


def test_check_wikipedia_shortcut_cites_the_wiki_without_an_index(api: str, tmp_path: Path):
    source = tmp_path / "text.txt"
    source.write_text("The Eiffel Tower was completed in 1889. Paris is the capital of France.",
                      encoding="utf-8")
    result = runner.invoke(app, ["check", str(source), "--model", "scripted:check_text",
                                 "--wikipedia", "--rounds", "1", "--json",
                                 "--set", "scoring_mode=none"])
    assert result.exit_code == 0, result.output
    claims = [c for c in json.loads(result.stdout)["check"]["claims"] if c["status"] == "verify"]
    assert claims
    base = api.removesuffix("api.php")
    urls = [e["url"] for c in claims for t in c["turns"] for e in t["evidence"]]
    assert urls and all(u.startswith(f"{base}index.php?title=") for u in urls)
    assert not (tmp_path / "home" / "index").exists(), "no demo index was built"


def write_fever(folder: Path) -> Path:
    """A data folder with a two-claim FEVER file (the shared JSONL schema) and a corpus nothing
    should index: the run searches the wiki only."""
    (folder / "fever").mkdir(parents=True)
    claims = [("fever-1", CLAIM, "SUPPORTS", "Eiffel_Tower"),
              ("fever-2", "Paris is the capital of France.", "SUPPORTS", "Paris")]
    (folder / "fever" / "paper_dev.jsonl").write_text("".join(json.dumps({
        "id": i, "dataset": "fever", "split": "paper_dev", "task": "claim_verification",
        "claim": c, "label": lab, "evidence_sets": [[{"page": page, "sent_id": 0}]]}) + "\n"
        for i, c, lab, page in claims), encoding="utf-8")
    (folder / "corpus").mkdir()
    (folder / "corpus" / "wiki.jsonl").write_text(json.dumps(
        {"doc_id": "wiki-0", "title": "Paris", "text": "Paris is in France."}) + "\n",
        encoding="utf-8")
    return folder


def test_eval_searches_the_wiki_without_any_local_index(api: str, tmp_path: Path):
    data, out, home = write_fever(tmp_path / "data"), tmp_path / "run", tmp_path / "home"
    args = ["eval", "--framework", "tool_mad", "--dataset", "fever", "--data-dir", str(data),
            "--limit", "2", "--model", "scripted:agree", "--set", "rag_backend=wikipedia",
            "--set", "search_backend=wikipedia", "--set", "scoring_mode=none"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    index = json.loads((out / "run.json").read_text(encoding="utf-8"))["index"]
    assert index["status"] == "live" and "corpus_sha256" not in index
    assert index["backends"] == {"rag_backend": "wikipedia", "search_backend": "wikipedia"}
    assert index["live"]["wikipedia"]["wiki"] == api
    assert index["ceiling"].startswith("not applicable: the run reads no local index")
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert all("gold_in_index" not in r for r in rows), "no index to look the gold evidence up in"
    assert rows[0]["ledger"]["tool_calls"] == {"wikipedia": 2}
    assert any(r["params"].get("list") == "search" for r in StandIn.seen)
    for folder in ("index", "corpora", "indexes"):
        assert not (home / folder).exists(), f"{folder}: nothing reads a local index"
    assert "retrieval ceiling not applicable" in result.output

    refused = runner.invoke(app, [*args, "--out", str(tmp_path / "demo"), "--demo-index"])
    assert refused.exit_code == 2
    assert "--demo-index names an index, but this run reads none" in refused.output
    assert not (home / "index").exists()
