"""MERMAID against real components: the MCP tool server as its own process (streamable HTTP on
loopback, and spawned over stdio) over a real index built here, the evidence memory in a SQLite
store shared by two processes, and the online API clients against a local stand-in server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.graphs.mermaid import build_mermaid
from factdebate.nodes.mermaid.state import MermaidContext
from factdebate.testing.scenarios import verdict
from factdebate.testing.scripted import ScriptCall
from factdebate.tools.base import clear_retriever_cache
from factdebate.tools.tool_providers import McpToolProvider
from factdebate.tools.toolbox import OFFLINE_TOOLS, Toolbox, ToolboxSettings
from factdebate.tools.web_apis import ArxivClient, MediaWikiClient, OpenAlexClient, PubMedClient
from tests.integration.loopback import mcp_http_server, stand_in
from tests.integration.servers import REPO, free_port, index_of

CORPUS = [
    {"doc_id": "e1", "title": "Eiffel Tower", "text": "The Eiffel Tower is a wrought-iron lattice "
     "tower in Paris, France. It was completed in 1889 for the World's Fair."},
    {"doc_id": "e2", "title": "Eiffel Tower", "text": "The tower is 330 metres tall. It was the "
     "tallest man-made structure in the world until 1930."},
    {"doc_id": "p1", "title": "Paris", "text": "Paris is the capital of France. The Eiffel Tower "
     "and the Louvre are in Paris."},
    {"doc_id": "m1", "title": "Mount Everest", "text": "Mount Everest is the highest mountain on "
     "Earth. It lies in the Himalayas."},
]

ATOM = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/abs/2401.00001v1</id>
<title>Wind loads on lattice towers</title><summary>We model wind loads on the Eiffel
Tower.</summary></entry></feed>"""
PUBMED = """<?xml version="1.0"?><PubmedArticleSet><PubmedArticle><MedlineCitation>
<PMID>123</PMID><Article><ArticleTitle>Climbing stairs and health</ArticleTitle><Abstract>
<AbstractText>Stair climbing improves fitness.</AbstractText></Abstract></Article>
</MedlineCitation></PubmedArticle></PubmedArticleSet>"""


class FakeApis(BaseHTTPRequestHandler):
    """Stands in for MediaWiki, OpenAlex, arXiv and PubMed; ``/broken`` answers 500."""

    requests: list[tuple[str, dict[str, list[str]]]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        url = urlparse(self.path)
        q = parse_qs(url.query)
        FakeApis.requests.append((url.path, q))
        body, kind = self._route(url.path, q)
        if body is None:
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"internal error")
            return
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.end_headers()
        self.wfile.write(data)

    def _route(self, path: str, q: dict[str, list[str]]) -> tuple[Any, str]:
        if path.startswith("/mediawiki"):
            return self._mediawiki(q), "application/json"
        if path == "/openalex/works":
            return {"results": [{"id": "https://openalex.org/W1", "display_name": "Iron towers",
                                 "publication_year": 1990, "doi": "https://doi.org/10.1/x",
                                 "abstract_inverted_index": {"Iron": [0], "towers": [1],
                                                             "rust": [2]}}]}, "application/json"
        if path == "/arxiv":
            return ATOM, "application/atom+xml"
        if path == "/pubmed/esearch.fcgi":
            return {"esearchresult": {"idlist": ["123"]}}, "application/json"
        if path == "/pubmed/efetch.fcgi":
            return PUBMED, "text/xml"
        return None, ""

    @staticmethod
    def _mediawiki(q: dict[str, list[str]]) -> dict[str, Any]:
        if q.get("list") == ["search"]:
            return {"query": {"search": [{"pageid": 9, "title": "Eiffel Tower",
                                          "snippet": "The <span>Eiffel</span> Tower"}]}}
        if q.get("action") == ["parse"]:
            return {"parse": {"sections": [{"line": "History"}, {"line": "Design"}]}}
        if q.get("prop") == ["links"]:
            return {"query": {"pages": [{"links": [{"title": "Paris"}, {"title": "Iron"}]}]}}
        return {"query": {"pages": [{"pageid": 9, "title": "Eiffel Tower",
                                     "extract": "The Eiffel Tower is in Paris. It opened in 1889."}]}}

    def log_message(self, *args: Any) -> None:
        """Keep test output quiet."""


fake_apis = stand_in(FakeApis)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = index_of(tmp_path_factory.mktemp("mermaid"), CORPUS)
    clear_retriever_cache()
    return index


@pytest.fixture(scope="module")
def mcp_url(index_dir: Path, fake_apis: str) -> Iterator[str]:
    env = {**os.environ, "FACTDEBATE_OPENALEX_URL": f"{fake_apis}/broken",
           "FACTDEBATE_ARXIV_URL": f"{fake_apis}/arxiv"}
    with mcp_http_server(["--index-dir", str(index_dir), "--web-backend", "local_search"], env,
                         index_dir.parent / "mcp_server.log") as (url, _):
        yield url


async def test_server_tools_over_the_real_index(mcp_url: str):
    provider = McpToolProvider({"transport": "streamable_http", "url": mcp_url})
    try:
        names = {t.name for t in await provider.list_tools()}
        assert set(OFFLINE_TOOLS) <= names and {"search_arxiv", "search_pubmed"} <= names
        article = await provider.call("get_article", "eiffel tower")
        assert len(article) == 1 and "wrought-iron" in article[0]["text"] \
            and "330 metres" in article[0]["text"]
        sections = await provider.call("get_sections", "Eiffel Tower")
        assert [s["text"] for s in sections][:2] == [
            "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
            "It was completed in 1889 for the World's Fair."]
        summary = await provider.call("get_summary", "Eiffel Tower")
        assert summary[0]["text"].startswith("The Eiffel Tower") and "1930" not in summary[0]["text"]
        related = await provider.call("get_related_topics", "Eiffel Tower")
        assert "Paris" in [r["title"] for r in related]
        assert "Eiffel Tower" not in [r["title"] for r in related]
        web = await provider.call("search_web", "highest mountain Himalayas")
        assert web[0]["title"] == "Mount Everest" and web[0]["source"] == "local_search"
    finally:
        await provider.aclose()


def executor_script(steps: list[dict[str, Any]]) -> Any:
    def respond(call: ScriptCall) -> Any:
        if call.role == "decomposer":
            return {"triplets": [{"subject": "Eiffel Tower", "relation": "is in",
                                  "object": "Paris"}], "topic": "landmarks"}
        if call.role == "force_answer":
            return verdict(call, 0, "forced")
        return steps[min(call.round, len(steps)) - 1]

    return respond


def act(name: str, text: str) -> dict[str, Any]:
    return {"thought": f"use {name}", "action": {"name": name, "input": text, "reason": "r"}}


async def test_executor_calls_the_mcp_server_and_records_a_500(scenario, mcp_url: str):
    spec = scenario(executor_script([
        act("get_article", "Eiffel Tower"), act("search_arxiv", "Eiffel Tower wind"),
        act("search_scholar", "Eiffel Tower iron"), {"thought": "done", "answer": "SUPPORTS"}]))
    ctx = MermaidContext(debater_model=spec, mcp_url=mcp_url, tool_retries=0,
                         mcp_tools=[*OFFLINE_TOOLS, "search_scholar", "search_arxiv"])
    graph = build_mermaid().compile(checkpointer=InMemorySaver())
    out = await graph.ainvoke({"claim": "The Eiffel Tower is in Paris."},
                              {"configurable": {"thread_id": "mcp"}}, context=ctx)
    assert out["label"] == "SUPPORTS" and out["round"] == 4
    assert out["ledger"]["tool_calls"] == {"get_article": 1, "search_arxiv": 1,
                                           "search_scholar": 1}
    assert out["ledger"]["tool_faults"] == {"search_scholar": 1}
    assert any("search_scholar" in f and "500" in f for f in out["flags"])
    article, arxiv, scholar, _ = out["turns"]
    assert "330 metres" in article["evidence"][0]["text"]
    assert arxiv["evidence"][0]["title"] == "Wind loads on lattice towers"
    assert scholar["evidence"] == []


async def test_default_spawns_the_server_over_stdio(scenario, index_dir: Path):
    spec = scenario(executor_script([act("extract_key_facts", "Eiffel Tower"),
                                     {"thought": "done", "answer": "SUPPORTS"}]))
    ctx = MermaidContext(debater_model=spec, index_dir=str(index_dir), search_backend="local_search")
    graph = build_mermaid().compile(checkpointer=InMemorySaver())
    out = await graph.ainvoke({"claim": "The Eiffel Tower is in Paris."},
                              {"configurable": {"thread_id": "stdio"}}, context=ctx)
    assert out["ledger"]["tool_calls"] == {"extract_key_facts": 1}
    facts = [e["text"] for e in out["turns"][0]["evidence"]]
    assert "The tower is 330 metres tall." in facts and out["label"] == "SUPPORTS"


PROCESS = textwrap.dedent("""
    import asyncio, json, sys
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.sqlite.aio import AsyncSqliteStore
    from factdebate.nodes.mermaid.state import MermaidContext
    from factdebate.testing.scripted import SCENARIOS
    from factdebate.run.engine import run_graph

    claim, db, url = sys.argv[1:4]

    def respond(call):
        if call.role == "decomposer":
            return {"triplets": [{"subject": "Eiffel Tower", "relation": "is",
                                  "object": ""}], "topic": "landmarks"}
        if "Memory (evidence recalled" in call.prompt or "Observation:" in call.prompt:
            return {"thought": "known", "answer": "SUPPORTS"}
        return {"thought": "look", "action": {"name": "get_summary", "input": "Eiffel Tower"}}

    SCENARIOS.register("proc", lambda: respond)

    async def main():
        ctx = MermaidContext(debater_model="scripted:proc", mcp_url=url)
        async with AsyncSqliteStore.from_conn_string(db) as store:
            await store.setup()
            out = await run_graph("mermaid", {"claim": claim}, ctx,
                                  checkpointer=InMemorySaver(), store=store)
        print(json.dumps(out["ledger"]))

    asyncio.run(main())
""")


def test_memory_persists_across_processes(tmp_path: Path, mcp_url: str):
    db = str(tmp_path / "memory.sqlite")

    def run(claim: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-c", PROCESS, claim, db, mcp_url], cwd=REPO,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run("The Eiffel Tower is in Paris.")
    second = run("The Eiffel Tower was finished in 1889.")
    assert first["tool_calls"] == {"get_summary": 1} and first["memory_hits"] == 0
    assert first["memory_writes"] >= 1
    assert second["tool_calls"] == {} and second["memory_hits"] >= 1


async def test_api_clients_map_replies_and_raise_on_500(fake_apis: str, monkeypatch):
    wiki = MediaWikiClient(f"{fake_apis}/mediawiki")
    hits = await wiki.search("eiffel", k=3)
    assert hits[0]["title"] == "Eiffel Tower" and hits[0]["text"] == "The Eiffel Tower"
    assert (await wiki.sections("Eiffel Tower")) == ["History", "Design"]
    assert (await wiki.links("Eiffel Tower", k=5)) == ["Paris", "Iron"]
    path, query = FakeApis.requests[-1]
    assert path == "/mediawiki" and query["titles"] == ["Eiffel Tower"]
    scholar = await OpenAlexClient(f"{fake_apis}/openalex").search("iron", k=2)
    assert scholar[0]["text"] == "(1990) Iron towers rust" and scholar[0]["source"] == "openalex"
    assert FakeApis.requests[-1][1]["search"] == ["iron"]
    arxiv = await ArxivClient(f"{fake_apis}/arxiv").search("wind", k=1)
    assert arxiv[0]["text"] == "We model wind loads on the Eiffel Tower."
    assert FakeApis.requests[-1][1]["search_query"] == ["all:wind"]
    pubmed = await PubMedClient(f"{fake_apis}/pubmed").search("stairs", k=1)
    assert pubmed[0]["id"] == "123" and pubmed[0]["title"] == "Climbing stairs and health"
    assert pubmed[0]["text"] == "Stair climbing improves fitness."
    with pytest.raises(httpx.HTTPStatusError, match="500"):
        await PubMedClient(f"{fake_apis}/broken").search("x", k=1)
    monkeypatch.setenv("FACTDEBATE_MEDIAWIKI_URL", f"{fake_apis}/mediawiki")
    from factdebate.tools.base import RetrieverSettings

    box = Toolbox(ToolboxSettings(RetrieverSettings("", ""), wiki_backend="mediawiki"))
    summary = await box.get_summary("Eiffel Tower")
    assert summary[0]["text"] == "The Eiffel Tower is in Paris. It opened in 1889."
    assert FakeApis.requests[-1][1]["exintro"] == ["1"]
    facts = await box.extract_key_facts("Eiffel Tower", topic="opened 1889")
    assert facts[0]["text"] == "It opened in 1889."


async def test_unreachable_server_is_a_backend_error(scenario):
    from factdebate.core.errors import BackendUnavailableError

    spec = scenario(executor_script([{"thought": "done", "answer": "SUPPORTS"}]))
    ctx = MermaidContext(debater_model=spec, mcp_url=f"http://127.0.0.1:{free_port()}/mcp")
    graph = build_mermaid().compile(checkpointer=InMemorySaver())
    with pytest.raises(BackendUnavailableError, match="cannot be reached"):
        await graph.ainvoke({"claim": "The Eiffel Tower is in Paris."},
                            {"configurable": {"thread_id": "down"}}, context=ctx)
