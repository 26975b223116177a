"""The ``openalex`` retriever (Tool-MAD's PubMedQA set-up) against a real local HTTP server.

A ``ThreadingHTTPServer`` on 127.0.0.1 answers ``/works`` with OpenAlex-shaped JSON (abstracts as
inverted indexes); ``FACTDEBATE_OPENALEX_URL`` points the client at it. Checked: the keywords and
filter the retriever sends, the abstracts it rebuilds, the summarising step with the run's model
(scripted double) inside a Tool-MAD debate, and faults.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from factdebate.graphs.tool_mad import build_tool_mad
from factdebate.nodes import llm
from factdebate.nodes.tool_mad.state import ToolMadContext
from factdebate.testing.scenarios import answer_role
from factdebate.testing.scripted import ScriptCall, ScriptFault
from factdebate.tools.base import RetrieverSettings, clear_retriever_cache, get_retriever
from factdebate.tools.openalex import keywords
from tests.integration.loopback import stand_in

QUESTION = "Do mitochondria play a role in remodelling lace plant leaves during cell death?"
ABSTRACTS = {
    "W1": ("Mitochondria in lace plant", "Mitochondrial dynamics precede programmed cell death "
           "in lace plant leaves."),
    "W2": ("Leaf remodelling", "Lace plant leaf perforations form through cell death."),
    "W3": ("Unrelated", ""),  # no abstract: never returned
    "W4": ("Cell death review", "Programmed cell death shapes plant organs."),
}


def inverted(text: str) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for pos, word in enumerate(text.split()):
        index.setdefault(word, []).append(pos)
    return index


def work(key: str) -> dict[str, Any]:
    title, abstract = ABSTRACTS[key]
    return {"id": f"https://openalex.org/{key}", "display_name": title,
            "doi": f"https://doi.org/10.1/{key}", "publication_year": 2020,
            "relevance_score": 10.0, "abstract_inverted_index": inverted(abstract) or None}


class OpenAlexStandIn(BaseHTTPRequestHandler):
    """``GET /works``: the works in ``results`` (or ``status`` with an error body); honours
    ``per-page`` and the ``has_abstract:true`` filter."""

    requests: list[dict[str, list[str]]] = []
    status = 200

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        url = urlparse(self.path)
        OpenAlexStandIn.requests.append({"path": [url.path], **parse_qs(url.query)})
        query = parse_qs(url.query)
        per_page = int(query.get("per-page", ["25"])[0])
        works = [work(k) for k in ABSTRACTS]
        if query.get("filter") == ["has_abstract:true"]:  # as OpenAlex does
            works = [w for w in works if w["abstract_inverted_index"]]
        body: dict[str, Any] = {"meta": {"count": len(works)}, "results": works[:per_page]}
        if self.status != 200:
            body = {"error": "Internal error"}
        data = json.dumps(body).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


server = stand_in(OpenAlexStandIn)


@pytest.fixture(autouse=True)
def fresh(server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("FACTDEBATE_OPENALEX_URL", server)
    monkeypatch.setattr(llm, "BACKOFF_BASE_S", 0.01)
    OpenAlexStandIn.requests, OpenAlexStandIn.status = [], 200
    clear_retriever_cache()
    yield
    clear_retriever_cache()


def test_keywords_drop_function_words_and_repeats():
    assert keywords("Is the effect of aspirin on the heart, and the heart's rhythm, real?") == [
        "aspirin", "heart", "rhythm", "real"]
    assert keywords("the of and") == []


async def test_retriever_sends_keywords_and_rebuilds_abstracts():
    retriever = get_retriever("openalex", RetrieverSettings(index_dir="", milvus_uri=""))
    found = await retriever.search(QUESTION, k=3)
    sent = OpenAlexStandIn.requests[-1]
    assert sent["path"] == ["/works"] and sent["per-page"] == ["3"]
    assert sent["filter"] == ["has_abstract:true"]
    assert sent["search"] == [" ".join(keywords(QUESTION))]
    assert "do" not in sent["search"][0].split() and "mitochondria" in sent["search"][0]
    assert [e["title"] for e in found] == ["Mitochondria in lace plant", "Leaf remodelling",
                                           "Cell death review"]
    assert found[0]["text"] == "(2020) " + ABSTRACTS["W1"][1]
    assert found[0]["url"] == "https://doi.org/10.1/W1" and found[0]["source"] == "openalex"


def summarising(prompts: list[str], fail: bool = False) -> Any:
    def respond(call: ScriptCall) -> Any:
        if call.role == "evidence_summary":
            prompts.append(call.prompt)
            if fail:
                raise ScriptFault("summariser down")
            return f"SUMMARY of {call.agent}."
        return answer_role(call, debater_label=0)

    return respond


async def debate(spec: str) -> dict:
    ctx = ToolMadContext(debater_model=spec, rag_backend="static", search_backend="openalex",
                         scoring_mode="none", llm_retries=0)
    graph = build_tool_mad().compile(checkpointer=InMemorySaver())
    return await graph.ainvoke({"claim": QUESTION, "task": "pubmedqa"},
                               {"configurable": {"thread_id": "t"}}, context=ctx)


async def test_search_debater_sees_summaries_of_three_abstracts(scenario):
    prompts: list[str] = []
    out = await debate(scenario(summarising(prompts)))
    search = next(t for t in out["turns"] if t["agent"] == "search")
    assert [e["text"] for e in search["evidence"]] == [
        "SUMMARY of https://openalex.org/W1.", "SUMMARY of https://openalex.org/W2.",
        "SUMMARY of https://openalex.org/W4."]
    assert len(prompts) == 3 and ABSTRACTS["W1"][1] in prompts[0]
    assert "Search keywords:" in prompts[0]
    rag = next(t for t in out["turns"] if t["agent"] == "rag")
    assert all(not e["text"].startswith("SUMMARY") for e in rag["evidence"])
    assert out["ledger"]["tool_calls"] == {"static": 1, "openalex": 1}
    debaters = 2  # one round, both agree
    assert out["ledger"]["llm_calls"] == 3 + 2 * debaters  # summaries + queries + answers
    assert any("DistilBART" in f for f in out["flags"])


async def test_a_failed_summary_keeps_the_abstract_and_is_flagged(scenario):
    out = await debate(scenario(summarising([], fail=True)))
    search = next(t for t in out["turns"] if t["agent"] == "search")
    assert search["evidence"][0]["text"] == "(2020) " + ABSTRACTS["W1"][1]
    assert any("3 openalex summary call(s) failed" in f for f in out["flags"])


async def test_an_openalex_error_is_a_tool_fault(scenario):
    OpenAlexStandIn.status = 500
    prompts: list[str] = []
    out = await debate(scenario(summarising(prompts)))
    search = next(t for t in out["turns"] if t["agent"] == "search")
    assert search["evidence"] == [] and prompts == []
    assert out["ledger"]["tool_faults"] == {"openalex": 1}
    assert len(OpenAlexStandIn.requests) == ToolMadContext().tool_retries + 1


@pytest.mark.parametrize(("config", "checks"), [
    ("toolmad_pubmedqa", {"tool_mad": {"search_backend": "openalex", "top_k": 3}}),
    ("toolmad_medqa", {"tool_mad": {"search_backend": "tavily"},
                       "madke": {"search_backend": "tavily"}}),
])
def test_medical_configs_build_every_runs_context(config, checks):
    from pathlib import Path

    from factdebate.evaluation.config import load_config
    from factdebate.graphs.registry import context_class
    from factdebate.run.setup import build_context

    repo = Path(__file__).resolve().parents[2]
    _, specs = load_config(repo / "evaluation" / "configs" / f"{config}.yaml", {})
    frameworks = {spec.framework: spec for _, spec in specs}
    assert set(frameworks) == {"mad", "madke", "tool_mad"}
    for name, spec in frameworks.items():
        ctx = build_context({}, spec.sets, context_class(name))  # every --set is a real field
        for field, value in checks.get(name, {}).items():
            assert getattr(ctx, field) == value, (name, field)
        if config == "toolmad_medqa":
            assert str(ctx.index_path).endswith("pubmed")  # the PubMed corpus index
        assert spec.limit == 200 and spec.dataset in ("pubmedqa", "medqa")
