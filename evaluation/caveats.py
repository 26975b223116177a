"""What a reader must know before trusting a run's figures, computed from ``run.json`` and the rows.

``summary.json`` carries it per run (``caveats``, ``memory``) and ``report.md`` states it next to
the tables (``evaluation/reports.py``):

* the model of every role, and which roles a test double answered (``scripted:...`` specs: the
  figures then describe the graph's plumbing, not a model);
* how many rows ran a search debater/tool on the offline stand-in for web search (the
  ``local_search`` keyword index instead of Tavily: flagged in each such row, or chosen with
  ``search_backend=local_search``);
* error rows (counted as wrong in "accuracy over all items") by error type, and items not run;
* for MERMAID, the evidence memory setting and the tool calls it saved (MERMAID Fig. 3);
* the index the run searched (``run.json`` ``index``, ``evaluation/index_identity.py``), loudly
  when it holds the bundled demo corpus (``eval --demo-index``: the evidence figures then describe
  that corpus, not the benchmark's);
* a retrieval ceiling below :data:`LOW_CEILING` (``evidence_metrics.ceiling_summary``): most
  items' gold evidence is not in the index at all, so low evidence figures are the index's, not
  the framework's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

LOW_CEILING = 0.5
"""A retrieval ceiling below this share heads the report as a caveat."""
TEST_DOUBLE_PREFIX = "scripted:"
STAND_IN_MARK = "stand-in for web search"
"""Words of every framework's offline-search flag (``nodes/retrieval.py`` ``STAND_IN_FLAG``)."""


def test_double_roles(models: dict[str, str]) -> list[str]:
    """Roles whose model spec is the scripted test double."""
    return sorted(role for role, spec in models.items()
                  if isinstance(spec, str) and spec.startswith(TEST_DOUBLE_PREFIX))


def used_stand_in(row: dict[str, Any], context: dict[str, Any]) -> bool:
    """The row's search ran on the offline stand-in (flagged, or chosen explicitly)."""
    if any(STAND_IN_MARK in str(flag) for flag in row.get("flags") or []):
        return True
    return context.get("search_backend") == "local_search" and row.get("status") == "ok"


def low_ceiling(evidence: dict[str, Any] | None) -> dict[str, Any] | None:
    """The run's retrieval ceiling when it is below :data:`LOW_CEILING`, else None."""
    ceiling = (evidence or {}).get("ceiling")
    if not ceiling or ceiling.get("share") is None or ceiling["share"] >= LOW_CEILING:
        return None
    return {"share": ceiling["share"], "n": ceiling["n"], "level": ceiling["level"]}


def run_caveats(record: dict[str, Any], rows: list[dict[str, Any]],
                evidence: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``caveats`` entry of one run in ``summary.json`` (``evidence``: its evidence summary)."""
    context = record.get("context") or {}
    errors = [r for r in rows if r.get("status") != "ok"]
    index = record.get("index")
    return {
        "demo_index": bool(index and index.get("demo")),
        "low_ceiling": low_ceiling(evidence),
        "models": dict(record.get("models") or {}),
        "test_double_roles": test_double_roles(record.get("models") or {}),
        "stand_in_rows": sum(1 for r in rows if used_stand_in(r, context)),
        "n_rows": len(rows),
        "error_rows": len(errors),
        "error_types": dict(Counter((r.get("error") or {}).get("type", "unknown")
                                    for r in errors)),
        "not_run": max(len(record.get("item_ids") or []) - len(rows), 0),
    }


def memory_summary(record: dict[str, Any], ok_rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Evidence-memory setting and effort of a MERMAID run (None for other frameworks)."""
    context = record.get("context") or {}
    memory = record.get("memory")
    if memory is None and "memory" not in context:
        return None
    enabled = bool(memory["enabled"]) if memory else bool(context.get("memory"))
    calls = [sum((r.get("ledger") or {}).get("tool_calls", {}).values()) for r in ok_rows]
    hits = [(r.get("ledger") or {}).get("memory_hits", 0) for r in ok_rows]
    return {
        "enabled": enabled, "memory_only": bool((memory or context).get("memory_only")),
        # a run from before evaluations had a store: MERMAID's memory was skipped
        "store": (memory or {}).get("store"), "n": len(ok_rows),
        "tool_calls_total": sum(calls), "memory_hits_total": sum(hits),
        "items_with_hits": sum(1 for h in hits if h),
    }


def loud_caveats(run: dict[str, Any]) -> list[str]:
    """The caveats that head every report of a summarised run (Markdown): a search of the demo
    corpus, a retrieval ceiling below :data:`LOW_CEILING`."""
    c = run.get("caveats") or {}
    lines = []
    if c.get("demo_index"):
        lines.append("**demo corpus**: the run searched the bundled demo corpus "
                     f"({searched(run.get('index') or {})}), not the benchmark's corpus: its "
                     "evidence figures (and accuracy, as far as it rests on retrieval) describe "
                     "that corpus, not the framework")
    ceiling = c.get("low_ceiling")
    if ceiling:
        lines.append(f"**low retrieval ceiling**: the complete gold evidence of only "
                     f"{100 * ceiling['share']:.1f}% (n={ceiling['n']}) of the items is in the "
                     f"index at all ({ceiling['level']} level): most evidence misses are the "
                     "index's, not the framework's")
    return lines


def searched(index: dict[str, Any]) -> str:
    """Where a run's index was, in words: its passages and its name, folder or server."""
    where = (f"on the server {index.get('server')}" if index.get("searched_by") == "server"
             else f"index folder {index.get('index_dir')}")
    name = f"index {index['name']!r}, " if index.get("name") else ""
    return f"{index.get('passages')} passages, {name}{where}"


def caveat_lines(run: dict[str, Any]) -> list[str]:
    """Markdown bullet lines of one summarised run's caveats (``report.md``)."""
    c = run["caveats"]
    name = f"`{run['name']}`"
    models = ", ".join(f"{role} `{spec}`" for role, spec in sorted(c["models"].items()) if spec)
    lines = [f"- {name}: models per role: {models or '-'}"]
    lines += [f"  - {line}" for line in loud_caveats(run)]
    if c["test_double_roles"]:
        lines.append(f"  - **test double**: the answers of {', '.join(c['test_double_roles'])} "
                     "came from the scripted double (`scripted:`), not a model: these figures "
                     "check the pipeline and say nothing about a model's accuracy")
    if c["stand_in_rows"]:
        lines.append(f"  - offline search: {c['stand_in_rows']} of {c['n_rows']} rows ran with the "
                     "local keyword index standing in for web search (no Tavily; flagged in "
                     "each row)")
    if c["error_rows"]:
        kinds = ", ".join(f"{k} x{v}" for k, v in sorted(c["error_types"].items()))
        lines.append(f"  - error rows: {c['error_rows']} of {c['n_rows']} ({kinds}); they count "
                     "as wrong in accuracy over all items and are left out of the other figures")
    if c["not_run"]:
        lines.append(f"  - not run yet: {c['not_run']} sampled items (the run is unfinished)")
    memory = run.get("memory")
    if memory is not None and memory["enabled"] and not memory["store"]:
        lines.append("  - memory: on in the settings, but the run had no store (a run from "
                     "before evaluations opened one): the memory was not used")
    return lines


def memory_table_rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    """Rows of the "Evidence memory" table: per run, then memory on vs off per framework/dataset."""
    with_memory = [r for r in runs if r.get("memory")]
    rows = []
    for r in with_memory:
        m = r["memory"]
        per_item = m["tool_calls_total"] / m["n"] if m["n"] else None
        rows.append([r["name"], "on" if m["enabled"] else "off", str(m["n"]),
                     str(m["tool_calls_total"]), "-" if per_item is None else f"{per_item:.2f}",
                     str(m["memory_hits_total"]), str(m["items_with_hits"]), "-"])
    for on in (r for r in with_memory if r["memory"]["enabled"]):
        for off in (r for r in with_memory if not r["memory"]["enabled"]
                    and (r["framework"], r["dataset"]) == (on["framework"], on["dataset"])):
            a, b = on["memory"], off["memory"]
            change = ((a["tool_calls_total"] - b["tool_calls_total"]) / b["tool_calls_total"]
                      if b["tool_calls_total"] and a["n"] == b["n"] else None)
            rows.append([f"{on['name']} vs {off['name']}", "on - off", f"{a['n']} / {b['n']}",
                         f"{a['tool_calls_total']} vs {b['tool_calls_total']}", "-", "-", "-",
                         "-" if change is None else f"{100 * change:+.1f}%"])
    return rows
