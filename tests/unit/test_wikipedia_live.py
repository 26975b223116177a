"""The live Wikipedia backend's pure parts: passages, BM25, the disk cache, the rate limit, the
settings it reads, the ``--wikipedia`` shortcut and who may choose the backend on a server."""

from __future__ import annotations

import json
import threading
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from factdebate.core.context import Context, operator_fields
from factdebate.core.errors import ConfigError
from factdebate.core.retrievers import RETRIEVERS, reads_local_index
from factdebate.tools import wikipedia_live as live
from factdebate.tools.wikipedia_live import (
    PASSAGE_CHARS,
    DiskCache,
    RateLimit,
    bm25_rank,
    live_sources,
    page_link,
    shortcut_settings,
    split_passages,
    user_agent,
    wiki_url,
)

PAGE = """The Eiffel Tower is a lattice tower in Paris.
It is named after Gustave Eiffel.

== History ==
Construction began in 1887.
=== Opening ===
It opened in 1889.
== References ==
A citation that is not evidence.
"""


def test_passages_follow_paragraphs_and_headings_and_stop_at_references():
    assert split_passages(PAGE) == [
        "The Eiffel Tower is a lattice tower in Paris. It is named after Gustave Eiffel.",
        "Construction began in 1887.", "It opened in 1889."]


def test_long_paragraphs_are_cut_at_sentence_ends_within_the_limit():
    sentence = "The tower was painted again in a new colour. "
    text = sentence * 60 + "x" * (PASSAGE_CHARS * 2)  # and one "word" longer than the limit
    passages = split_passages(text)
    assert all(0 < len(p) <= PASSAGE_CHARS for p in passages)
    assert passages[0].endswith("colour.")
    assert "".join(passages).replace(" ", "") == text.replace(" ", "")  # nothing lost


def test_bm25_ranks_the_passage_with_the_rare_query_words_first():
    texts = ["Paris is the capital of France.", "The tower was completed in 1889 in Paris.",
             "Paris has many museums and Paris has parks."]
    scores = bm25_rank("When was the tower completed?", texts)
    assert scores.index(max(scores)) == 1 and min(scores) == 0.0
    assert bm25_rank("anything", []) == []
    assert all(s >= 0 for s in bm25_rank("Paris", texts)), "a common word never counts against"


def test_disk_cache_keeps_entries_for_the_ttl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cache = DiskCache(tmp_path / "c", ttl_s=60)
    key = ("https://wiki/api.php", "search", "3", "eiffel")
    assert cache.get(key) is None
    cache.put(key, [{"id": "Eiffel Tower#1"}])
    assert cache.get(key) == [{"id": "Eiffel Tower#1"}]
    assert cache.get(("https://other/api.php", *key[1:])) is None, "keyed by the wiki's URL too"
    from factdebate.tools import live_cache

    now = live_cache.time.time()
    monkeypatch.setattr(live_cache.time, "time", lambda: now + 61)
    assert cache.get(key) is None, "an entry older than the TTL is a miss"
    assert DiskCache(tmp_path / "off", ttl_s=0).get(key) is None
    DiskCache(tmp_path / "off", ttl_s=0).put(key, 1)
    assert not (tmp_path / "off").exists(), "TTL 0 stores nothing"


def test_disk_cache_survives_damaged_entries_and_leaves_no_temporary_files(tmp_path: Path):
    cache = DiskCache(tmp_path, ttl_s=60)
    key = ("w", "page", "Paris")
    cache.put(key, {"title": "Paris"})
    (entry,) = tmp_path.glob("*.json")
    entry.write_text('{"key": ["w", "page", "Par', encoding="utf-8")  # a torn write
    assert cache.get(key) is None
    entry.write_text(json.dumps({"key": ["w", "page", "Lyon"], "stored": 0, "value": 1}))
    assert cache.get(key) is None, "an entry of another key (a hash collision) is a miss"

    def write(n: int) -> None:
        for i in range(50):
            cache.put(key, {"writer": n, "i": i})

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.get(key)["i"] == 49  # a whole entry of one writer, never a mix
    assert [p.name for p in tmp_path.iterdir()] == [entry.name], "no temporary file left"


def _write_entries(folder: str, writer: int) -> None:
    cache = DiskCache(Path(folder), ttl_s=60)
    for i in range(200):
        cache.put(("w", "search", "q"), {"writer": writer, "i": i, "pad": "x" * 20_000})


def test_disk_cache_is_whole_under_concurrent_processes(tmp_path: Path):
    import multiprocessing

    cache = DiskCache(tmp_path, ttl_s=60)
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_write_entries, args=(str(tmp_path), n)) for n in range(3)]
    for w in writers:
        w.start()
    reads: list[Any] = []
    while any(w.is_alive() for w in writers):
        value = cache.get(("w", "search", "q"))
        if value is not None or reads:  # a miss only before the first write lands
            reads.append(value)  # a torn entry would read as a miss (None) here
    for w in writers:
        w.join()
        assert w.exitcode == 0
    reads.append(cache.get(("w", "search", "q")))
    assert len(reads) > 1 and None not in reads, "every read after the first write is whole"
    assert all(len(r["pad"]) == 20_000 and r["writer"] in (0, 1, 2) for r in reads)
    assert reads[-1]["i"] == 199
    assert len(list(tmp_path.iterdir())) == 1, "no temporary file left"


def test_disk_cache_in_an_unwritable_folder_loses_only_the_entry(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = DiskCache(blocker / "cache", ttl_s=60)  # a folder under a file cannot be made
    cache.put(("k",), 1)
    assert cache.get(("k",)) is None


def test_rate_limit_spaces_request_starts():
    limit = RateLimit()
    waits = [limit.delay(4.0) for _ in range(4)]
    assert waits[0] == 0.0
    assert [round(b - a, 2) for a, b in zip(waits, waits[1:], strict=False)] == [0.25] * 3
    assert RateLimit().delay(0) == 0.0, "rate 0: no limit"


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("FACTDEBATE_MEDIAWIKI_URL", raising=False)
    assert wiki_url() == "https://en.wikipedia.org/w/api.php"
    monkeypatch.setenv("FACTDEBATE_MEDIAWIKI_URL", "ftp://wiki")
    with pytest.raises(ConfigError, match="FACTDEBATE_MEDIAWIKI_URL"):
        wiki_url()
    monkeypatch.setenv("FACTDEBATE_MEDIAWIKI_URL", "https://user:secret@wiki.example/w/api.php")
    assert "secret" not in json.dumps(live.describe_source())
    monkeypatch.setenv("FACTDEBATE_WIKIPEDIA_CACHE_TTL_S", "-1")
    with pytest.raises(ConfigError, match="FACTDEBATE_WIKIPEDIA_CACHE_TTL_S"):
        live.describe_source()
    monkeypatch.setenv("FACTDEBATE_CONTACT", "ops@example.org\nX-Injected: 1")
    agent = user_agent()
    assert "contact: ops@example.org X-Injected: 1" in agent and "\n" not in agent
    monkeypatch.delenv("FACTDEBATE_CONTACT")
    assert "FACTDEBATE_CONTACT" in user_agent()


def test_page_links_are_permanent_links_of_the_revision():
    assert page_link("https://en.wikipedia.org/w/api.php", "Eiffel Tower", 42) == \
        "https://en.wikipedia.org/w/index.php?title=Eiffel_Tower&oldid=42"
    assert page_link("http://h/api.php", "AT&T", None) == "http://h/index.php?title=AT%26T"


def test_the_backend_is_registered_and_a_context_accepts_it():
    assert "wikipedia" in RETRIEVERS.names()
    assert Context(rag_backend="wikipedia", search_backend="wikipedia").rag_backend == "wikipedia"


def test_shortcut_settings(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    assert shortcut_settings(None, None) == {"rag_backend": "wikipedia",
                                             "search_backend": "wikipedia",
                                             "wiki_backend": "mediawiki"}
    assert shortcut_settings("wikipedia", "local_search")["search_backend"] == "local_search"
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-x")
    assert shortcut_settings(None, None)["search_backend"] == "auto"
    with pytest.raises(ConfigError, match="--rag-backend"):
        shortcut_settings("milvus", None)


def test_which_runs_read_the_local_index(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    assert not reads_local_index(Context(rag_backend="wikipedia", search_backend="wikipedia"))
    assert reads_local_index(Context(rag_backend="wikipedia"))  # auto: the keyword stand-in
    assert reads_local_index(Context(rag_backend="rag", search_backend="wikipedia"))  # alias
    for local in ("milvus", "keyword", "local_search", "hybrid"):
        assert reads_local_index(Context(rag_backend=local, search_backend="wikipedia")), local
    assert reads_local_index(Context(rag_backend="wikipedia", search_backend="local_search"))
    assert not reads_local_index(Context(rag_backend="static", search_backend="static"))
    assert not reads_local_index(Context(rag_backend="wikipedia", search_backend="web"))  # tavily
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-x")
    assert not reads_local_index(Context(rag_backend="wikipedia"))
    assert reads_local_index(Context()), "milvus, whatever the search backend"

    from factdebate.nodes.check_text.state import CheckTextContext
    from factdebate.nodes.mermaid.state import MermaidContext

    assert reads_local_index(MermaidContext(rag_backend="wikipedia"))  # offline wiki tools
    assert reads_local_index(MermaidContext(rag_backend="wikipedia", wiki_backend="milvus"))
    assert not reads_local_index(MermaidContext(rag_backend="wikipedia",
                                                wiki_backend="mediawiki"))
    check = CheckTextContext(rag_backend="wikipedia",
                             verifier_settings={"rag_backend": "keyword"})
    assert reads_local_index(check), "the verifier's own settings count"
    assert not reads_local_index(CheckTextContext(
        rag_backend="keyword", verifier_settings={"rag_backend": "wikipedia"})), \
        "they override the shared fields"
    assert reads_local_index(CheckTextContext(
        rag_backend="wikipedia", verifier_settings={"wiki_backend": "keyword"}))


def test_a_text_check_reads_the_index_its_verifier_reads(monkeypatch: pytest.MonkeyPatch):
    from factdebate.graphs.first_use import debates_read_local_index
    from factdebate.nodes.check_text.state import CheckTextContext

    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    live = {"rag_backend": "wikipedia", "search_backend": "wikipedia"}
    assert not debates_read_local_index(CheckTextContext(**live))
    assert debates_read_local_index(CheckTextContext(framework="mermaid", **live)), \
        "MERMAID's own wiki_backend default (keyword) reads the index"
    assert not debates_read_local_index(CheckTextContext(
        framework="mermaid", verifier_settings={"wiki_backend": "mediawiki"}, **live))
    assert not debates_read_local_index(CheckTextContext(framework="cot")), "searches nothing"
    assert debates_read_local_index(CheckTextContext(verifier_settings={"rag_backend": "hybrid"},
                                                     **live))
    assert debates_read_local_index(Context()) and not debates_read_local_index(Context(**live))
    for bad in ({"framework": "nope"}, {"verifier_settings": {"rag_backend": "nope"}}):
        assert not debates_read_local_index(CheckTextContext(**bad)), "the run names the fault"


def test_a_plug_in_backend_reads_the_local_index_unless_it_says_otherwise(
        monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    monkeypatch.setattr(RETRIEVERS, "_entries", dict(RETRIEVERS._entries))
    RETRIEVERS.register("lab_vectors", "lab.vectors:open_retriever")  # declares nothing
    RETRIEVERS.register("lab_service", "lab.service:open_retriever", reads_local_index=False)
    assert reads_local_index(Context(rag_backend="lab_vectors", search_backend="wikipedia"))
    assert not reads_local_index(Context(rag_backend="lab_service", search_backend="wikipedia"))
    assert reads_local_index(Context(rag_backend="lab_service", search_backend="lab_vectors"))
    assert reads_local_index(Context(rag_backend="lab_service")), "auto: the keyword stand-in"

    from factdebate.nodes.mermaid.state import MermaidContext

    assert not reads_local_index(MermaidContext(rag_backend="wikipedia", search_backend="tavily",
                                                wiki_backend="lab_service"))
    assert reads_local_index(MermaidContext(rag_backend="wikipedia", search_backend="tavily",
                                            wiki_backend="lab_vectors"))


def test_a_backend_no_one_registered_is_named():
    from factdebate.nodes.check_text.state import CheckTextContext

    check = CheckTextContext(verifier_settings={"rag_backend": "wikipedai"})
    with pytest.raises(ConfigError, match="unknown retriever backend 'wikipedai'.*wikipedia"):
        reads_local_index(check)


def test_a_server_client_can_neither_choose_the_wiki_nor_its_url():
    from factdebate.server.policy import Refused, check_run_kwargs, context_classes

    for field in ("rag_backend", "search_backend"):
        with pytest.raises(Refused) as refused:
            check_run_kwargs({"context": {field: "wikipedia"}}, "tool_mad")
        assert refused.value.field == field
        with pytest.raises(Refused):
            check_run_kwargs({"config": {"configurable": {field: "wikipedia"}}}, None)
    with pytest.raises(Refused, match="rag_backend"):
        check_run_kwargs({"context": {"verifier_settings": {"rag_backend": "wikipedia"}}},
                         "check_text")
    with pytest.raises(Refused, match="wiki_backend"):
        check_run_kwargs({"context": {"wiki_backend": "mediawiki"}}, "mermaid")
    # the wiki's URL is the operator's environment only; any Context field naming a URL is too
    for cls in context_classes():
        urls = {f.name for f in fields(cls) if "url" in f.name or "uri" in f.name}
        assert urls <= operator_fields(cls), (cls, urls - operator_fields(cls))
        assert "mediawiki_url" not in {f.name for f in fields(cls)}


def test_results_name_the_wiki_beside_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from factdebate.evaluation.index_identity import describe, index_change, index_identity

    monkeypatch.setenv("FACTDEBATE_MEDIAWIKI_URL", "https://user:pw@wiki.example/w/api.php")
    plain = index_identity(Context(index_dir=str(tmp_path)))
    live = index_identity(Context(index_dir=str(tmp_path), rag_backend="wikipedia"))
    assert "live" not in plain
    assert live["live"]["wikipedia"]["wiki"].endswith("@wiki.example/w/api.php")
    assert "pw" not in json.dumps(live["live"])
    assert "searched live: wikipedia at https://" in describe(live)
    assert "[live]" in index_change(plain, live), "a resume over another source is refused"


def test_a_run_on_live_sources_only_records_no_index(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch):
    from factdebate.evaluation.index_identity import describe, index_change, run_index

    monkeypatch.setenv("FACTDEBATE_MEDIAWIKI_URL", "https://wiki.example/w/api.php")
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    (tmp_path / "index").mkdir()  # a folder the run would otherwise describe
    live = run_index("tool_mad", Context(index_dir=str(tmp_path / "index"),
                                         rag_backend="wikipedia", search_backend="wikipedia"))
    assert live is not None and live["status"] == "live"
    assert live["backends"] == {"rag_backend": "wikipedia", "search_backend": "wikipedia"}
    assert live["live"]["wikipedia"]["wiki"] == "https://wiki.example/w/api.php"
    assert "index_dir" not in live and "corpus_sha256" not in live
    line = describe(live)
    assert line.startswith("no local index: the run searched rag_backend=wikipedia")
    assert "retrieval ceiling not applicable" in line and "wiki.example" in line
    local = run_index("tool_mad", Context(index_dir=str(tmp_path / "index"),
                                          rag_backend="wikipedia"))  # auto: the stand-in
    assert local is not None and local["status"] == "absent" and "live" in local
    assert index_change(local, live), "a resume over another source is refused"
    assert run_index("cot", Context(rag_backend="wikipedia")) is None  # searches nothing


def test_mermaids_mediawiki_tools_are_recorded_as_a_live_source(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch):
    """MERMAID's wiki tools on the MediaWiki API cite that wiki: run.json names it, with the
    credentials of its URL masked, beside (or without) the wikipedia retriever."""
    from factdebate.evaluation.index_identity import describe, run_index
    from factdebate.nodes.mermaid.state import MermaidContext

    monkeypatch.setenv("FACTDEBATE_MEDIAWIKI_URL", "https://bot:pw@wiki.example/w/api.php")
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    online = MermaidContext(index_dir=str(tmp_path), rag_backend="wikipedia",
                            search_backend="wikipedia", wiki_backend="mediawiki")
    assert live_sources(online) == {
        "wikipedia": live_sources(Context(rag_backend="wikipedia"))["wikipedia"],
        "mediawiki": {"backend": "mediawiki", "wiki": "https://bot:***@wiki.example/w/api.php",
                      "searched_by": "MERMAID's wiki tools"}}
    record = run_index("mermaid", online)
    assert record is not None and record["status"] == "live"
    assert "searched live: mediawiki at https://bot:***@wiki.example" in describe(record)
    assert "pw" not in json.dumps(record)
    assert "mediawiki" not in live_sources(MermaidContext(wiki_backend="keyword"))
    assert live_sources(Context(rag_backend="milvus")) == {}
