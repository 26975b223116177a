"""Which index a run searches (evaluation/index_identity.py) and what its reports say about it:
the choice without a named index, the resume comparison, the demo-corpus and low-ceiling caveats
at the top of report.md/report.html, compare's warning. Hand-made records and rows; no index is
built here (the end-to-end runs are in tests/integration/test_eval_index_identity.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factdebate.core.context import Context
from factdebate.core.errors import ConfigError, InputError
from factdebate.evaluation.compare import compare_outputs
from factdebate.evaluation.html_report import write_eval_html
from factdebate.evaluation.index_identity import (
    data_corpus,
    describe,
    index_change,
    public_identity,
    resolve_run_index,
    server_index,
)
from factdebate.evaluation.reports import render_report, summarize_run
from factdebate.evaluation.run_folder import check_resume

IDENTITY = {"index_dir": "/idx", "status": "ok", "corpus": "/data/corpus/wiki.jsonl",
            "corpus_sha256": "a" * 64, "documents": 4, "passages": 4, "chunk_chars": 2000,
            "embedding_model": "minilm", "dimension": 384, "metric": "COSINE",
            "vector_index": {"index_type": "HNSW", "metric": "COSINE",
                             "build_params": {"M": 16, "efConstruction": 200}},
            "keyword_index": {"kind": "tantivy BM25"}, "collection": "factdebate_passages",
            "milvus_uri": "/idx/milvus.db", "built": "2026-01-01T00:00:00+00:00", "demo": False}


def test_a_rebuild_of_the_same_corpus_is_the_same_index_another_corpus_is_not():
    rebuilt = dict(IDENTITY, built="2026-02-02T00:00:00+00:00", index_dir="/elsewhere")
    assert index_change(IDENTITY, rebuilt) == ""
    other = dict(IDENTITY, corpus="/other.jsonl", corpus_sha256="b" * 64, passages=9)
    change = index_change(IDENTITY, other)
    assert "/data/corpus/wiki.jsonl" in change and "/other.jsonl" in change
    assert "corpus_sha256" in change and "passages" in change
    record = {"run_id": "r", "framework": "tool_mad", "item_ids": ["a"], "limit": 1,
              "index": IDENTITY}
    with pytest.raises(InputError, match="the index changed since the run started"):
        check_resume(record, dict(record, index=other), Path("out"))
    assert check_resume(record, dict(record, index=rebuilt), Path("out")) is record


def test_describe_names_corpus_sha_passages_model_and_index_kinds():
    line = describe(IDENTITY)
    for part in ("corpus /data/corpus/wiki.jsonl", "sha256 aaaaaaaaaaaaaaaa", "4 passages",
                 "embeddings minilm", "HNSW", "M=16", "tantivy BM25", "Milvus /idx/milvus.db",
                 "built 2026-01-01"):
        assert part in line, part
    assert "DEMO" in describe(dict(IDENTITY, demo=True))
    assert describe(None).startswith("no index")


def test_a_servers_index_tells_no_paths_and_is_keyed_like_a_local_one(tmp_path):
    """What a server tells (public_identity) and eval records (server_index): no folder, no URI;
    the same corpus and settings are the same index locally and on a server, another corpus on
    the server is a change a resume refuses and compare warns about."""
    url = "http://op:SECRET-pw@127.0.0.1:2024"
    told = public_identity(dict(IDENTITY, milvus_uri="http://root:Milvus@db:19530",
                                keyword_index={"kind": "tantivy BM25", "folder": "/idx/keyword"}))
    assert told["corpus"] == "wiki.jsonl" and told["corpus_sha256"] == "a" * 64
    text = json.dumps(told)
    assert "/idx" not in text and "/data" not in text and "19530" not in text
    damaged = public_identity({"index_dir": "/srv/idx", "status": "damaged", "damage":
                               "the keyword index is unreadable (/srv/idx/keyword/meta.json: x)"})
    assert damaged["status"] == "damaged" and "/srv" not in json.dumps(damaged)
    served = server_index(url, told)
    assert served["searched_by"] == "server" and served["server"] == "http://op:***@127.0.0.1:2024"
    assert index_change(IDENTITY, served) == ""  # a local and a server run over the same index
    line = describe(served)
    assert "searched by the server http://op:***@127.0.0.1:2024" in line and "4 passages" in line
    assert "SECRET" not in line and "/idx" not in line
    other = server_index(url, public_identity(dict(IDENTITY, corpus_sha256="b" * 64)))
    assert "corpus_sha256" in index_change(served, other)
    record = {"run_id": "r", "framework": "tool_mad", "item_ids": ["a"], "limit": 1,
              "index": served}
    with pytest.raises(InputError, match="the index changed since the run started"):
        check_resume(record, dict(record, index=other), Path("out"))
    a = write_run(tmp_path / "a", IDENTITY, [True, True, False, False])
    [same] = compare_outputs(a, write_run(tmp_path / "s", served, [True] * 4))
    assert same["same_index"] and not any("DIFFERENT" in w for w in same["warnings"])
    [differs] = compare_outputs(a, write_run(tmp_path / "o", other, [True] * 4))
    assert any(w.startswith("DIFFERENT INDEXES") for w in differs["warnings"])
    older = server_index(url, None)  # a server without the route
    assert older["status"] == "server" and "not recorded" in describe(older)


def test_resolve_keeps_a_named_index_and_refuses_demo_beside_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FACTDEBATE_INDEX_DIR", raising=False)
    monkeypatch.delenv("FACTDEBATE_MILVUS_URI", raising=False)
    named = Context(index_dir=str(tmp_path / "idx"))
    assert resolve_run_index("tool_mad", named, data_dir=None, demo=False) is named
    with pytest.raises(InputError, match="--demo-index"):
        resolve_run_index("tool_mad", named, data_dir=None, demo=True)
    plain = Context()
    assert resolve_run_index("tool_mad", plain, data_dir=None, demo=True) is plain
    assert resolve_run_index("standard", plain, data_dir=None, demo=False) is plain  # no index


def test_no_index_and_no_corpus_is_refused_naming_the_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FACTDEBATE_DATA_DIR", raising=False)
    monkeypatch.delenv("FACTDEBATE_INDEX_DIR", raising=False)
    monkeypatch.delenv("FACTDEBATE_MILVUS_URI", raising=False)
    (tmp_path / "data").mkdir()
    for data_dir in (None, str(tmp_path / "data")):
        with pytest.raises(ConfigError) as refused:
            resolve_run_index("tool_mad", Context(), data_dir=data_dir, demo=False)
        text = f"{refused.value} {refused.value.remedy}"
        assert "factdebate index CORPUS.jsonl" in text and "--demo-index" in text
    assert not (tmp_path / "home" / "index").exists()
    (tmp_path / "data" / "corpus").mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / "data" / "corpus" / name).write_text("{}\n")
    with pytest.raises(InputError, match="several corpora"):
        data_corpus(tmp_path / "data")


def write_run(folder: Path, index: dict | None, gold_in: list[bool]) -> Path:
    folder.mkdir(parents=True)
    rows = []
    for i, present in enumerate(gold_in):
        gold = {"kind": "fever", "level": "page", "sets": [[{"page": f"P{i}", "sent_id": 0}]]}
        rows.append({"item_id": f"fever-{i}", "status": "ok", "task": "fever",
                     "gold": {"label": "SUPPORTS", "answers": [], "wrong_answers": [],
                              "evidence": gold},
                     "gold_in_index": {"page": present, "sentence": None, "level": "page"},
                     "prediction": {"label": "SUPPORTS", "answers": []},
                     "evidence": [{"id": f"P{i}", "title": f"P{i}", "text": "t"}] if present
                     else [], "retrieved": [], "citations": [],
                     "ledger": {"replies_cited": 1, "replies_uncited": 0}, "rounds": 1,
                     "wall_time_s": 0.1})
    record = {"run_id": folder.name, "framework": "tool_mad", "dataset": "fever",
              "dataset_version": "v", "task": "fever", "item_ids": [r["item_id"] for r in rows],
              "seed": 0, "models": {"debater": "scripted:agree"}, "prompt_version": "p",
              "context": {}, "index": index}
    (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                          encoding="utf-8")
    return folder


def test_demo_corpus_and_a_low_ceiling_head_every_report(tmp_path):
    folder = write_run(tmp_path / "demo", dict(IDENTITY, demo=True, passages=264),
                       [True, False, False, False])
    run = summarize_run(folder)
    assert run["caveats"]["demo_index"] and run["caveats"]["low_ceiling"] == {
        "share": 0.25, "n": 4, "level": "page"}
    report = render_report([run], {})
    top = report.split("\n- `demo`")[0]  # before the run list: the head of the report
    assert "**demo corpus**" in top and "264 passages" in top
    assert "**low retrieval ceiling**" in top and "25.0% (n=4)" in top
    html = write_eval_html(folder).read_text(encoding="utf-8")
    head = html.split("item(s)</p>")[0]
    assert "Caveat:" in head and "demo corpus" in head and "low retrieval ceiling" in head
    fine = summarize_run(write_run(tmp_path / "fine", IDENTITY, [True, True, False, False]))
    assert "Caveat" not in render_report([fine], {}).split("\n- `fine`")[0]


def test_compare_warns_loudly_when_the_runs_searched_different_indexes(tmp_path):
    a = write_run(tmp_path / "a", IDENTITY, [True, True, False, False])
    b = write_run(tmp_path / "b", dict(IDENTITY, corpus_sha256="b" * 64, corpus="/big.jsonl"),
                  [True, True, True, True])
    [result] = compare_outputs(a, b)
    assert not result["same_index"]
    assert any(w.startswith("DIFFERENT INDEXES") and "/big.jsonl" in w
               for w in result["warnings"])
    fever = next(e for e in result["evidence"] if e["metric"] == "fever_score")
    assert (fever["ceiling_a"], fever["ceiling_b"], fever["ceiling_n_a"]) == (0.5, 1.0, 4)
    [same] = compare_outputs(a, write_run(tmp_path / "c", IDENTITY, [True] * 4))
    assert same["same_index"] and not any("DIFFERENT" in w for w in same["warnings"])


def test_the_evaluation_browser_lists_each_runs_index_and_ceiling(tmp_path, monkeypatch):
    from factdebate.evaluation.reports import write_reports
    from factdebate.server import evals_browser

    folder = write_run(tmp_path / "runs" / "a", IDENTITY, [True, True, False, False])
    write_reports(folder, [folder])
    monkeypatch.setenv(evals_browser.RUNS_DIR_ENV, str(tmp_path / "runs"))
    [listed] = evals_browser._list((tmp_path / "runs").resolve())["runs"]
    assert listed["index"] == {"status": "ok", "corpus_sha256": "a" * 64, "passages": 4,
                               "embedding_model": "minilm", "built": IDENTITY["built"],
                               "demo": False, "corpus": "wiki.jsonl"}  # no server path
    assert listed["evidence"]["ceiling"]["share"] == 0.5
    assert listed["evidence"]["headline"]["ceiling"] == 0.5


def test_a_hand_edited_manifest_reaches_no_client_except_in_known_shapes():
    """``/factdebate/index`` sends the public fields only, each of its known shape: a path, a URI
    with ``user:password`` or any other value of another shape is sent as None."""
    edited = dict(IDENTITY, corpus="http://u:corpus-pw@host/wiki.jsonl",
                  corpus_sha256="see http://u:sha-pw@host", documents="4; /etc/passwd",
                  passages=-1, embedding_model="onnx:/srv/models/minilm.onnx",
                  dimension=True, metric="COSINE; http://u:m-pw@h", collection="/idx/milvus",
                  built="yesterday at /srv", demo="yes",
                  vector_index={"index_type": "HNSW", "metric": "COSINE", "field": "vector",
                                "build_params": {"M": 16, "uri": "http://root:vi-pw@db:19530",
                                                 "/path": 1},
                                "search_params": {"ef": "max(64, 2*k)"}, "folder": "/idx"},
                  keyword_index={"kind": "tantivy BM25", "fields": ["title", "/srv/x"],
                                 "title_boost": float("nan"), "tantivy": "0.22.0"},
                  status="ok http://u:st-pw@h", extra="http://u:extra-pw@h",
                  damage="cannot read /srv/idx/keyword (http://u:dmg-pw@db:1) " + "x" * 500)
    told = public_identity(edited)
    text = json.dumps(told)
    for secret in ("-pw", "/srv", "/etc", "/idx", "extra"):
        assert secret not in text, (secret, text)
    assert set(told) == {"status", "damage", "corpus", "corpus_sha256", "documents", "passages",
                         "chunk_chars", "embedding_model", "dimension", "metric", "vector_index",
                         "keyword_index", "collection", "built", "demo"}
    assert told["status"] is None and told["corpus_sha256"] is None and told["passages"] is None
    assert told["vector_index"] == {"field": "vector", "metric": "COSINE", "index_type": "HNSW",
                                    "build_params": {"M": 16},
                                    "search_params": {"ef": "max(64, 2*k)"}}
    assert told["keyword_index"] == {"kind": "tantivy BM25", "fields": ["title"],
                                     "tantivy": "0.22.0"}
    assert len(told["damage"]) <= 300
    clean = public_identity(IDENTITY)  # a built index's manifest passes whole
    assert clean["corpus"] == "wiki.jsonl" and clean["corpus_sha256"] == "a" * 64
    assert clean["built"] == "2026-01-01T00:00:00+00:00" and clean["embedding_model"] == "minilm"
    assert clean["vector_index"]["build_params"] == {"M": 16, "efConstruction": 200}
