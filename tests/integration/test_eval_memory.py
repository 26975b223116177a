"""MERMAID's evidence memory in evaluations (``evaluation/memory_store.py``).

Real SQLite store beside the run's checkpoints (and a real local PostgreSQL when its binaries are
installed), MERMAID's tools in process over the static test retriever (the worker test: the
tantivy index of ``wiki_index``), the scripted double ``scripted:lookup`` as executor: it searches
each named entity of a claim once unless the recalled memory already covers it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path

import pytest

from factdebate.evaluation.memory_store import MEMORY_FILE
from factdebate.evaluation.reports import write_reports
from factdebate.evaluation.runner import RunSpec, run_eval
from factdebate.testing.scenarios_memory import named_entities

CLAIMS = [  # every claim names the Eiffel Tower: each one after the first can recall it
    ("a", "The Eiffel Tower is in Paris.", "SUPPORTS"),
    ("b", "The Eiffel Tower was completed in 1889.", "SUPPORTS"),
    ("c", "Gustave Eiffel designed the Eiffel Tower.", "REFUTES"),
    ("d", "The Eiffel Tower is taller than Mount Everest.", "REFUTES"),
]
STATIC = ["tool_provider=in_process", "wiki_backend=static", "search_backend=static"]


@pytest.fixture(autouse=True)
def _no_index(monkeypatch):
    # the static test retriever needs no index on disk
    monkeypatch.setattr("factdebate.evaluation.runner._check_index", lambda spec, ctx, console: ctx)


def dataset(tmp_path: Path, claims=CLAIMS) -> Path:
    path = tmp_path / "eiffel.jsonl"
    path.write_text("".join(json.dumps({"id": f"e-{i}", "dataset": "eiffel", "claim": c,
                                        "label": lab}) + "\n" for i, c, lab in claims))
    return path


def spec(tmp_path: Path, out: str, *, memory: bool = True, sets=STATIC, claims=CLAIMS,
         **extra) -> RunSpec:
    return RunSpec(framework="mermaid", dataset=str(dataset(tmp_path, claims)), out=tmp_path / out,
                   concurrency=4, model="scripted:lookup",
                   sets=[*sets, f"memory={str(memory).lower()}"], **extra)


def stream(out: Path) -> tuple[dict, list[dict]]:
    """run.json and the rows in the order the memory saw them."""
    record = json.loads((out / "run.json").read_text())
    rows = {r["item_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    return record, [rows[i] for i in record["item_ids"] if i in rows]


def calls(row: dict) -> int:
    return sum(row["ledger"]["tool_calls"].values())


def check_stream(record: dict, rows: list[dict]) -> None:
    """First item: nothing to recall, a search per entity; every later one recalls and saves."""
    assert [r["memory_stream_position"] for r in rows] == list(range(len(rows)))
    first, *later = rows
    assert first["ledger"]["memory_hits"] == 0
    assert calls(first) == len(named_entities(first["claim"]))
    assert first["ledger"]["memory_writes"] > 0
    for row in later:
        assert row["ledger"]["memory_hits"] > 0, row["item_id"]
        assert calls(row) < len(named_entities(row["claim"])), row["item_id"]


def test_memory_is_written_and_recalled_across_items(tmp_path):
    out = asyncio.run(run_eval(spec(tmp_path, "on")))
    record, rows = stream(out)
    assert record["memory"] == {"enabled": True, "memory_only": False, "store": MEMORY_FILE,
                                "scope": record["run_id"], "order": "item_ids",
                                "sequential": True}
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows)
    check_stream(record, rows)
    # the records sit in OUT/memory.sqlite under (local owner, ..., fingerprint, run scope, entity)
    with sqlite3.connect(out / MEMORY_FILE) as db:
        prefixes = {p for (p,) in db.execute("SELECT DISTINCT prefix FROM store")}
    assert prefixes and all(p.startswith("factdebate:local.mermaid.evidence.") for p in prefixes)
    scope = "scope:" + record["run_id"].replace(".", "_")  # no "." in a namespace label
    assert any(p.endswith(f".{scope}.eiffel tower") for p in prefixes)


def test_memory_off_is_recorded_and_costs_a_search_per_entity(tmp_path):
    on = asyncio.run(run_eval(spec(tmp_path, "on")))
    off = asyncio.run(run_eval(spec(tmp_path, "off", memory=False)))
    record, rows = stream(off)
    assert record["memory"]["enabled"] is False and record["memory"]["sequential"] is False
    assert not (off / MEMORY_FILE).exists()
    assert all(r["ledger"]["memory_hits"] == 0 and "memory_stream_position" not in r for r in rows)
    assert [calls(r) for r in rows] == [len(named_entities(r["claim"])) for r in rows]
    summary = write_reports(tmp_path, [on, off])
    memory = {r["name"]: r["memory"] for r in summary["runs"]}
    assert memory["on"]["tool_calls_total"] < memory["off"]["tool_calls_total"] == 7
    report = (tmp_path / "report.md").read_text()
    change = (memory["on"]["tool_calls_total"] - 7) / 7
    assert f"| on vs off | on - off | 4 / 4 | {memory['on']['tool_calls_total']} vs 7 |" in report
    assert f"{100 * change:+.1f}%" in report


def test_order_is_recorded_and_kept_on_resume(tmp_path):
    class Stop(Exception):
        pass

    seen: list[str] = []

    def stop_after_two(row: dict) -> None:
        seen.append(row["item_id"])
        if len(seen) == 2:
            raise Stop

    first = spec(tmp_path, "resumed", limit=2)
    with pytest.raises(Stop):
        asyncio.run(run_eval(first, on_row=stop_after_two))
    record, rows = stream(first.out)
    assert [r["item_id"] for r in rows] == record["item_ids"][:2] == seen
    # resume with the whole dataset: the two finished items keep their places, the new ones
    # follow in sample order and recall what the first two stored (the memory survived)
    asyncio.run(run_eval(spec(tmp_path, "resumed", resume=True)))
    resumed, rows = stream(first.out)
    assert resumed["item_ids"][:2] == record["item_ids"] and len(resumed["item_ids"]) == 4
    assert resumed["memory"] == record["memory"]
    check_stream(resumed, rows)


def test_memory_setting_cannot_change_on_resume(tmp_path):
    asyncio.run(run_eval(spec(tmp_path, "run", limit=2)))
    from factdebate.core.errors import InputError

    with pytest.raises(InputError, match="memory"):
        asyncio.run(run_eval(spec(tmp_path, "run", memory=False, limit=2, resume=True)))


def test_postgres_store_and_runs_do_not_share_memory(tmp_path):
    from factdebate.evaluation.local_postgres import local_postgres, postgres_bin

    if postgres_bin() is None:
        pytest.skip("no PostgreSQL server binaries (apt-get install -y postgresql)")
    with local_postgres() as uri:
        first = asyncio.run(run_eval(spec(tmp_path, "pg1", checkpointer=uri)))
        second = asyncio.run(run_eval(spec(tmp_path, "pg2", checkpointer=uri)))
    for out in (first, second):
        record, rows = stream(out)
        assert record["memory"]["store"] == "postgres" and not (out / MEMORY_FILE).exists()
        check_stream(record, rows)  # the second run starts from an empty memory of its own


@pytest.mark.skipif(not os.environ.get("FACTDEBATE_DATA_DIR"),
                    reason="FACTDEBATE_DATA_DIR is not set (CI sets it to ../shared/data)")
def test_workers_stream_the_same_order_as_one_process(tmp_path, wiki_index):
    # titles of the first corpus passages (wiki_index): the keyword tools find them
    claims = [("a", "The Michigan Wolverines won in 1911.", "SUPPORTS"),
              ("b", "The Michigan Wolverines played in 1912.", "SUPPORTS"),
              ("c", "Tennessee Volunteers beat the Michigan Wolverines.", "REFUTES"),
              ("d", "The Michigan Wolverines lost to Tennessee Volunteers.", "REFUTES")]
    sets = ["tool_provider=in_process", "wiki_backend=keyword", "search_backend=local_search",
            f"index_dir={wiki_index}"]
    one = asyncio.run(run_eval(spec(tmp_path, "one", sets=sets, claims=claims)))
    two = asyncio.run(run_eval(spec(tmp_path, "two", sets=sets, claims=claims, workers=2)))
    (_, rows_one), (record, rows_two) = stream(one), stream(two)
    check_stream(record, rows_two)
    assert [(r["item_id"], r["ledger"]["tool_calls"], r["ledger"]["memory_hits"])
            for r in rows_two] == [(r["item_id"], r["ledger"]["tool_calls"],
                                    r["ledger"]["memory_hits"]) for r in rows_one]
