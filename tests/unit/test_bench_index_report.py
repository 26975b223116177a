"""The ``bench index`` result as BENCHMARKS.md and the docs' benchmarks page show it: a table of
size x target (a failed target named in its row), the budgets, the embedding cost, the load."""

from __future__ import annotations

import ast
import json
import sys
import types
from pathlib import Path
from typing import Any

from factdebate.evaluation.bench_index import _slower_because, index_budgets, index_markdown
from factdebate.evaluation.bench_report import write_markdown

ROOT = Path(__file__).resolve().parents[2]
FAILED = "stopped: the Lite process passed the 18,114 MB memory limit (18,200 MB) during load"


def _built(n: int, pps: int, p99: float, **extra: Any) -> dict[str, Any]:
    return {"passages": n, "create_s": 0.5, "insert_s": 1.0, "flush_s": 0.5, "index_s": 0.0,
            "load_s": 2.0, "build_s": 3.5, "passages_per_s": pps, "search_p50_ms": 2.0,
            "search_p99_ms": p99, "peak_rss_mb": 500.0, "load_1m": [1.0, 1.2], **extra}


def result(*, server_pps: int = 900, lite_fails: bool = True, p99: float = 9.5) -> dict[str, Any]:
    """A bench index result: 10k measured with embedding, 1M with Lite stopped at its memory limit."""
    lite_1m = ({"passages": 1_000_000, "failed": FAILED, "peak_rss_mb": 18200.0,
                "load_1m": [3.0, 3.5]} if lite_fails else _built(1_000_000, 800, p99))
    sizes = {
        "10000": {"lite": _built(10_000, 450, 4.7, passages_per_s_with_embedding=20.1),
                  "server": _built(10_000, 700, 8.5, passages_per_s_with_embedding=20.4)},
        "1000000": {"lite": lite_1m,
                    "server": _built(1_000_000, server_pps, p99,
                                     passages_per_s_with_embedding_derived=21.9)},
    }
    for per in sizes.values():
        per["server_slower_because"] = _slower_because(per["lite"], per["server"])
    figures = {"benchmark": "index", "command": "factdebate bench index --sizes 10000,1000000",
               "git_sha": "abc1234", "date": "2026-01-02", "machine": "2 cores, 24 GiB",
               "seconds": 4000.0, "sizes": sizes,
               "embedding": {"model": "minilm", "passages": 10_000,
                             "embed_s": {"lite": 470.0, "server": 480.0},
                             "ms_per_passage": 47.5, "passages_per_s": 21.1},
               "demo_build_s": {"lite": 17.9, "server": 24.2}, "demo_build_ratio": 1.35,
               "load_avg": {"start": [0.5, 0.7, 0.9], "end": [2.5, 2.0, 1.5]},
               "limits": {"memory_limit_mb": 18114, "timeout_s": 10800, "min_available_mb": 1024},
               "cpus": 2, "server": "Milvus standalone 2.3.5", "lite": "Milvus Lite 3.2.2"}
    figures["budgets"] = index_budgets(figures)
    figures["budget"] = "; ".join(b["budget"] for b in figures["budgets"])
    figures["budget_met"] = all(b["met"] is not False for b in figures["budgets"])
    return figures


def test_benchmarks_md_shows_a_table_with_the_failed_target_named(tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.json").write_text(json.dumps(result()))
    target = tmp_path / "BENCHMARKS.md"
    write_markdown(out, target)
    section = target.read_text().split("## index", 1)[1]
    assert "| passages | target | passages/s (embedding excluded) | passages/s with embedding |" \
        in section
    assert f"| 1,000,000 | lite | **failed**: {FAILED} | - |" in section
    assert "| 1,000,000 | server | 900 | 21.9 (derived) | 1.0 | 0.5 | 0.0 | 2.0 | 2.0 | 9.5 |" \
        in section
    assert "| 10,000 | lite | 450 | 20.1 |" in section
    assert "not slower (Lite failed)" in section
    assert "2026-01-02" in section and "date not recorded" not in section
    assert "Machine: 2 cores, 24 GiB" in section
    assert "[0.5, 0.7, 0.9] at the start, [2.5, 2.0, 1.5] at the end" in section
    assert "47.5 ms per passage" in section and "*derived*" in section
    assert '{"' not in section  # no JSON blob in a cell
    assert "| figure | value |" not in section


def test_budgets_count_a_lite_failure_for_the_server_and_a_server_failure_against_it():
    throughput = next(b for b in result()["budgets"] if b["budget"].startswith("server build"))
    assert throughput["met"] is True and "Lite failed" in throughput["measured"]
    slow = result(server_pps=700, lite_fails=False)
    throughput = next(b for b in slow["budgets"] if b["budget"].startswith("server build"))
    assert throughput["met"] is False and slow["budget_met"] is False
    figures = result()
    figures["sizes"]["1000000"]["server"] = {"passages": 1_000_000, "failed": "the Milvus "
                                             "server exited during index (0 of 1,000,000)"}
    budgets = index_budgets(figures)
    assert next(b for b in budgets if b["budget"].startswith("server build"))["met"] is False
    lines = index_markdown({**figures, "budgets": budgets})
    assert any(line.startswith("| 1,000,000 | server | **failed**: the Milvus server exited")
               for line in lines)


def test_search_p99_budget_uses_the_worst_target():
    over = result(p99=300.0)
    p99 = next(b for b in over["budgets"] if b["budget"].startswith("search p99"))
    assert p99["met"] is False and "300.0 ms (server, 1,000,000)" in p99["measured"]
    assert "Milvus' published p99" in p99["budget"]
    assert next(b for b in result()["budgets"] if b["budget"].startswith("search p99"))["met"]


def test_a_slower_server_search_is_named_with_the_background_work_it_ran_beside():
    lite = _built(1_000_000, 1093, 18.2)
    server = _built(1_000_000, 1263, 359.0, search_p50_ms=27.4,
                    at_search_start={"pending_index_rows": 719_616, "segments_loaded": 16},
                    at_search_end={"pending_index_rows": 660_480, "segments_loaded": 16})
    why = _slower_because(lite, server)
    assert why == ("search: p50 +25.4 ms, p99 +340.8 ms - searched while the server compacted "
                   "and re-indexed (719,616 rows pending an index, 16 segments loaded)")
    assert _slower_because(lite, _built(1_000_000, 1263, 18.2)) == "not slower"
    slow_build = {**_built(1_000_000, 900, 18.2), "index_s": 400.0, "build_s": 1100.0}
    assert _slower_because(lite, slow_build).startswith("build: index +400.0s")
    # creating the empty collection is not part of build_s, so it is not named as a cause
    slow_create = {**_built(1_000_000, 900, 18.2), "create_s": 9.0, "flush_s": 3.0, "build_s": 6.0}
    assert _slower_because(lite, slow_create) == "build: flush +2.5s"


def _gen_pages(stub_files: dict[str, str], root: Path, monkeypatch: Any) -> dict[str, Any]:
    """docs/gen_pages.py's functions, without running its page build (which needs mkdocs)."""
    stub = types.ModuleType("mkdocs_gen_files")

    class _Page:
        def __init__(self, name: str) -> None:
            self.name = name

        def write(self, text: str) -> None:
            stub_files[self.name] = text

    stub.open = lambda name, mode="w": _Page(name)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mkdocs_gen_files", stub)
    path = ROOT / "docs" / "gen_pages.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tree.body = [node for node in tree.body if not isinstance(node, ast.If)]  # the entry point
    namespace: dict[str, Any] = {"__name__": "gen_pages_under_test", "__file__": str(path)}
    exec(compile(tree, str(path), "exec"), namespace)  # noqa: S102 - the project's own file
    namespace["ROOT"] = root
    return namespace


def test_docs_benchmarks_page_renders_index_json_as_the_table(tmp_path: Path, monkeypatch):
    (tmp_path / "docs" / "benchmarks").mkdir(parents=True)
    (tmp_path / "docs" / "benchmarks" / "index.json").write_text(json.dumps(result()))
    pages: dict[str, str] = {}
    _gen_pages(pages, tmp_path, monkeypatch)["benchmarks_page"]()
    page = pages["benchmarks.md"].split("## index", 1)[1]
    assert f"| 1,000,000 | lite | **failed**: {FAILED} | - |" in page
    assert "- commit: `abc1234`, date: 2026-01-02, machine: 2 cores, 24 GiB" in page
    assert '{"' not in page and "| figure | value |" not in page
