"""Tool faults from a real local HTTP server standing in for Tavily, MediaWiki and
OpenAlex, and from an MCP tool server killed in the middle of a run.

Tool-MAD's ``search`` debater uses the real ``tavily-python`` client (``search_backend="tavily"``,
a fake key, ``TAVILY_BASE_URL`` -> the local server); MERMAID's executor calls ``search_wikipedia``
(MediaWiki) and ``search_scholar`` (OpenAlex) through its tool provider. Whatever the server does,
retries are bounded (``tool_retries`` + 1 requests per call), a 429's ``Retry-After`` is waited
out (capped), and the debate finishes with the fault in ``flags`` and ledger ``tool_faults``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.graphs.mermaid import build_mermaid
from factdebate.graphs.tool_mad import build_tool_mad
from factdebate.nodes import llm
from factdebate.nodes.mermaid.state import MermaidContext
from factdebate.nodes.render import MAX_EVIDENCE_CHARS, MAX_PASSAGE_CHARS
from factdebate.nodes.tool_mad.state import ToolMadContext
from factdebate.testing.scenarios import answer_role, verdict
from factdebate.testing.scripted import ScriptCall
from factdebate.tools.base import clear_retriever_cache
from tests.integration.loopback import mcp_http_server, stand_in
from tests.integration.servers import free_port

CLAIM = "The Eiffel Tower is in Paris."
TIMEOUT_S = 0.5
BIG = "Iron lattice. " * (5_000_000 // 14)  # a 5 MB result text


class Stand_in(BaseHTTPRequestHandler):  # noqa: N801 (reads as what it is)
    """Answers by ``plan[path]``: a list of behaviours, one per request (the last one repeats)."""

    plan: dict[str, list[dict[str, Any]]] = {}
    seen: list[tuple[str, float]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        self._answer()

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    def _answer(self) -> None:
        path = urlparse(self.path).path
        Stand_in.seen.append((path, time.monotonic()))
        steps = Stand_in.plan.get(path) or [{"status": 404, "body": {}}]
        step = steps[min(sum(p == path for p, _ in Stand_in.seen) - 1, len(steps) - 1)]
        time.sleep(step.get("sleep", 0))
        data = json.dumps(step["body"]).encode()
        try:
            self.send_response(step["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in step.get("headers", {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (timeout) before the reply

    def log_message(self, *args: Any) -> None:
        """Quiet."""


def tavily_ok(text: str = "The Eiffel Tower is a wrought-iron tower in Paris.") -> dict[str, Any]:
    return {"status": 200, "body": {"query": "q", "results": [
        {"title": "Eiffel Tower", "url": "https://example.org/eiffel", "content": text,
         "score": 0.9}]}}


def status(code: int, **extra: Any) -> dict[str, Any]:
    return {"status": code, "body": {"detail": {"error": f"HTTP {code}"}}, **extra}


server = stand_in(Stand_in)


@pytest.fixture(autouse=True)
def fresh(server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-fake-key-for-tests")
    monkeypatch.setenv("TAVILY_BASE_URL", server)
    monkeypatch.setenv("FACTDEBATE_MEDIAWIKI_URL", f"{server}/mediawiki")
    monkeypatch.setenv("FACTDEBATE_OPENALEX_URL", f"{server}/openalex")
    monkeypatch.setattr(llm, "BACKOFF_BASE_S", 0.01)
    Stand_in.plan, Stand_in.seen = {}, []
    clear_retriever_cache()
    yield
    clear_retriever_cache()


def requests_to(path: str) -> list[float]:
    return [t for p, t in Stand_in.seen if p == path]


async def tool_mad(scenario: Any, prompts: list[str] | None = None, **overrides: Any) -> dict:
    def respond(call: ScriptCall) -> Any:
        if call.role == "debater" and prompts is not None:
            prompts.append(call.prompt)
        return answer_role(call, debater_label=0)

    ctx = ToolMadContext(debater_model=scenario(respond), debaters=["rag", "search"],
                         rag_backend="static", search_backend="tavily", scoring_mode="none",
                         max_rounds=1, tool_timeout_s=TIMEOUT_S, tool_retries=2, **overrides)
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    return await graph.ainvoke({"claim": CLAIM}, {"configurable": {"thread_id": "t"}}, context=ctx)


def assert_fault_recorded(out: dict, backend: str, why: str) -> None:
    assert out["label"] == "SUPPORTS" and out["stopped_by"] in ("consensus", "judge")
    assert out["ledger"]["tool_faults"] == {backend: 1}
    assert out["ledger"]["tool_calls"][backend] == 1
    fault = [f for f in out["flags"] if f.startswith(f"tool fault: {backend}")]
    assert len(fault) == 1 and why in fault[0], out["flags"]
    search = next(t for t in out["turns"] if t["agent"] == "search")
    rag = next(t for t in out["turns"] if t["agent"] == "rag")
    assert search["evidence"] == [] and rag["evidence"], "the debate went on without the tool"


async def test_healthy_tavily_stand_in_is_used(scenario):
    Stand_in.plan["/search"] = [tavily_ok()]
    out = await tool_mad(scenario)
    search = next(t for t in out["turns"] if t["agent"] == "search")
    assert search["evidence"][0]["source"] == "tavily" and not out["ledger"].get("tool_faults")
    assert len(requests_to("/search")) == 1


@pytest.mark.parametrize(("step", "why"), [
    (status(500), "HTTP 500"),
    (status(503), "HTTP 503"),
    ({**tavily_ok(), "sleep": TIMEOUT_S * 3}, "TimeoutError"),
], ids=["500", "503", "timeout"])
async def test_persistent_fault_is_retried_a_bounded_number_of_times(scenario, step, why):
    Stand_in.plan["/search"] = [step]
    out = await tool_mad(scenario)
    assert len(requests_to("/search")) == 3, "one call and tool_retries=2 retries, no more"
    assert_fault_recorded(out, "tavily", why)


async def test_connection_refused_is_a_fault_not_a_crash(scenario, monkeypatch):
    monkeypatch.setenv("TAVILY_BASE_URL", f"http://127.0.0.1:{free_port()}")
    out = await tool_mad(scenario)
    assert_fault_recorded(out, "tavily", "cannot reach Tavily")


async def test_429_retry_after_is_waited_out_then_the_search_succeeds(scenario):
    Stand_in.plan["/search"] = [status(429, headers={"Retry-After": "1"}), tavily_ok()]
    out = await tool_mad(scenario)
    first, second = requests_to("/search")
    assert second - first >= 0.95, "the retry came before the server's Retry-After"
    assert not out["ledger"].get("tool_faults")
    assert next(t for t in out["turns"] if t["agent"] == "search")["evidence"]


async def test_429_retry_after_is_capped_and_the_fault_recorded(scenario, monkeypatch):
    monkeypatch.setattr(llm, "MAX_RETRY_AFTER_S", 0.3)
    Stand_in.plan["/search"] = [status(429, headers={"Retry-After": "3600"})]
    started = time.monotonic()
    out = await tool_mad(scenario)
    times = requests_to("/search")
    assert len(times) == 3 and all(0.28 <= b - a < 2 for a, b in zip(times, times[1:], strict=False))
    assert time.monotonic() - started < 10
    assert_fault_recorded(out, "tavily", "HTTP 429")


async def test_rejected_key_is_the_users_to_fix(scenario):
    from factdebate.tools.tavily_search import SearchBackendError

    Stand_in.plan["/search"] = [status(401)]
    with pytest.raises(SearchBackendError, match="check TAVILY_API_KEY"):
        await tool_mad(scenario)
    assert len(requests_to("/search")) == 1, "a 401 is not retried"


async def test_empty_results_are_no_evidence_and_no_fault(scenario):
    Stand_in.plan["/search"] = [{"status": 200, "body": {"query": "q", "results": []}}]
    out = await tool_mad(scenario)
    search = next(t for t in out["turns"] if t["agent"] == "search")
    assert search["evidence"] == [] and not out["ledger"].get("tool_faults")
    assert out["label"] == "SUPPORTS"


async def test_oversized_document_is_cut_in_state_and_prompts(scenario):
    Stand_in.plan["/search"] = [tavily_ok(BIG)]
    prompts: list[str] = []
    out = await tool_mad(scenario, prompts)
    text = next(t for t in out["turns"] if t["agent"] == "search")["evidence"][0]["text"]
    assert len(text) == MAX_EVIDENCE_CHARS and text.endswith("...")
    assert any("cut to" in f and "tavily" in f for f in out["flags"])
    search_prompt = next(p for p in prompts if "Iron lattice." in p)
    assert len(search_prompt) < 4 * MAX_PASSAGE_CHARS + 8_000


# -- MERMAID: MediaWiki / OpenAlex through the tool provider ------------------------------------
def executor(actions: list[tuple[str, str]]) -> Any:
    """Take the actions in order, then answer SUPPORTS."""

    def respond(call: ScriptCall) -> Any:
        if call.role == "decomposer":
            return {"triplets": [], "topic": "landmarks"}
        if call.role == "force_answer":
            return verdict(call, 1, "forced")
        if call.round <= len(actions):
            name, text = actions[call.round - 1]
            return {"thought": f"use {name}", "action": {"name": name, "input": text}}
        return {"thought": "enough", "answer": "SUPPORTS"}

    return respond


def mermaid_ctx(spec: str, **overrides: Any) -> MermaidContext:
    base: dict[str, Any] = {"tool_provider": "in_process", "wiki_backend": "mediawiki",
                            "search_backend": "static", "memory": False, "tool_retries": 1,
                            "tool_timeout_s": TIMEOUT_S,
                            "mcp_tools": ["search_wikipedia", "search_scholar"]}
    return MermaidContext(debater_model=spec, **(base | overrides))


async def run_mermaid(ctx: MermaidContext) -> dict:
    graph = build_mermaid().compile(checkpointer=InMemorySaver())
    return await graph.ainvoke({"claim": CLAIM}, {"configurable": {"thread_id": "m"}}, context=ctx)


WIKI_OK = {"status": 200, "body": {"query": {"search": [
    {"pageid": 9, "title": "Eiffel Tower", "snippet": "The <b>Eiffel</b> Tower is in Paris"}]}}}
SCHOLAR_OK = {"status": 200, "body": {"results": []}}


@pytest.mark.parametrize(("wiki", "why"), [
    ([status(500)], "500"),
    ([{**WIKI_OK, "sleep": TIMEOUT_S * 3}], "TimeoutError"),
    ([status(429, headers={"Retry-After": "1"}), WIKI_OK], None),
], ids=["500", "timeout", "429-then-ok"])
async def test_mediawiki_and_openalex_faults_are_recorded_by_the_executor(scenario, wiki, why):
    Stand_in.plan = {"/mediawiki": wiki, "/openalex/works": [SCHOLAR_OK]}
    spec = scenario(executor([("search_wikipedia", "Eiffel Tower"),
                              ("search_scholar", "Eiffel Tower iron")]))
    out = await run_mermaid(mermaid_ctx(spec))
    assert out["label"] == "SUPPORTS" and out["stopped_by"] == "answer"
    assert out["ledger"]["tool_calls"] == {"search_wikipedia": 1, "search_scholar": 1}
    wiki_turn = out["turns"][0]
    if why is None:  # Retry-After honoured, second attempt answered
        first, second = requests_to("/mediawiki")
        assert second - first >= 0.95 and wiki_turn["evidence"][0]["title"] == "Eiffel Tower"
        assert not out["ledger"].get("tool_faults")
    else:
        assert len(requests_to("/mediawiki")) == 2, "one call and tool_retries=1 retry"
        assert out["ledger"]["tool_faults"] == {"search_wikipedia": 1}
        assert any("search_wikipedia" in f and why in f for f in out["flags"])
        assert wiki_turn["evidence"] == []
    assert len(requests_to("/openalex/works")) == 1


async def test_openalex_unreachable_is_a_fault(scenario, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_OPENALEX_URL", f"http://127.0.0.1:{free_port()}")
    spec = scenario(executor([("search_scholar", "Eiffel Tower iron")]))
    out = await run_mermaid(mermaid_ctx(spec))
    assert out["label"] == "SUPPORTS" and out["ledger"]["tool_faults"] == {"search_scholar": 1}
    assert any("ConnectError" in f for f in out["flags"])


# -- MERMAID: the MCP server process dies in the middle of a run --------------------------------
@pytest.fixture
def mcp_server(server: str, tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    env = {**os.environ, "FACTDEBATE_MEDIAWIKI_URL": f"{server}/mediawiki"}
    with mcp_http_server(["--index-dir", str(tmp_path / "no-index"), "--wiki-backend",
                          "mediawiki", "--web-backend", "local_search"], env) as (url, proc):
        yield url, proc


async def test_killed_mcp_server_is_a_fault_and_the_executor_answers(scenario, mcp_server):
    url, proc = mcp_server
    Stand_in.plan["/mediawiki"] = [WIKI_OK]
    script = executor([("search_wikipedia", "Eiffel Tower"), ("search_wikipedia", "Paris")])

    def respond(call: ScriptCall) -> Any:
        if call.role == "executor" and call.round == 2 and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)  # the server dies between two tool calls
            proc.wait(timeout=10)
        return script(call)

    ctx = mermaid_ctx(scenario(respond), tool_provider="mcp", mcp_url=url,
                      mcp_tools=["search_wikipedia"], tool_timeout_s=2.0)
    started = time.monotonic()
    out = await run_mermaid(ctx)
    assert out["label"] == "SUPPORTS" and out["stopped_by"] == "answer"
    first, second = out["turns"][0], out["turns"][1]
    assert first["evidence"][0]["title"] == "Eiffel Tower" and second["evidence"] == []
    assert out["ledger"]["tool_calls"] == {"search_wikipedia": 2}
    assert out["ledger"]["tool_faults"] == {"search_wikipedia": 1}
    assert any(f.startswith("tool fault: search_wikipedia in ReAct step 2") for f in out["flags"])
    assert time.monotonic() - started < 30, "bounded: timeouts and retries, no hang"
