"""``factdebate bench``: overhead, scaling, retrieval, embedded-model, CPU-floor and token benchmarks.

Every benchmark writes ``OUT/<name>.json`` (figures + the command that produced them); with
``--markdown FILE`` its section of that file (``BENCHMARKS.md``) is regenerated from the JSON, so
no figure is shown without its command. Ratios are measured within one run; nothing here runs in
the default test suite except smoke tests on tiny inputs.

* ``overhead`` - Tool-MAD, T rounds, debaters forced to disagree (``scripted:disagree``) so all
  rounds and the judge run, over the real Milvus Lite + tantivy demo index with the SQLite
  checkpointer of CLI runs. The critical path follows from Algorithm 1 as implemented: per round a
  debater's query -> answer -> stability score, whose longest chain is RAGAS faithfulness' 2
  sequential calls (statements, then verdicts; answer relevancy's 3 questions - one request with
  ``n=3``, or 3 concurrent ones where ``n`` is not served - run beside them,
  ``tools/ragas_metrics.py``); plus the judge: ``T * (1 + 1 + 2) + 1``
  calls. It is checked against the longest chain of non-overlapping calls
  in the double's recorded timeline. The serial bound is every call one after another (the papers'
  reference code): ``T * debaters * (1 + 1 + 3) + 1`` (RAGAS: statements, verdicts, and answer
  relevancy's 3 questions in one request with ``n=3``).
* ``scaling`` - ``factdebate eval`` of FEVER claims with the same double at a realistic provider
  latency (1 s per call), in ONE process: a few claims at concurrency 1 give the per-claim time,
  then one claim per slot at each higher concurrency (default 128). Efficiency = throughput at c /
  (c x throughput at 1); budget >= 0.90 at c = 128. ``--workers N`` runs the items in a warm pool
  of N processes instead (the budget is for one process).
* ``retrieval`` - see ``evaluation/bench_retrieval.py``.
* ``index`` - index build (passages/s) and search (p50/p99) at 10k-1M passages into Milvus Lite
  and a Milvus server, embedding excluded and included (``evaluation/bench_index.py``).
* ``corpus`` - a synthetic FEVER ``wiki-pages`` dump of ``--pages`` pages (default 1,000,000)
  imported and keyword-indexed by ``factdebate index --format fever-wiki --keyword-only`` in a
  process of its own: pages/s and peak RSS at two sizes, both passage granularities, a sample of
  ``--embed-sample`` passages embedded, progress on stderr every few seconds
  (``evaluation/bench_corpus.py``).
* ``embedded`` - seconds and LLM calls per claim of Tool-MAD with ``local:smollm2``, and a new
  user's first ``verify`` and ``check`` with no flags as processes (budgets 60 s and 3 min).
* ``floor`` - CPU per Tool-MAD claim of ours next to a bare LangGraph graph of the same shape and
  the real compute (embeddings, retrieval, parsing), with a py-spy profile
  (``evaluation/bench_floor.py``).
* ``tokens`` - prompt, completion and cached tokens per claim of every framework and the share of
  prompt tokens in a common prefix (``evaluation/bench_tokens.py``).
* ``hostile`` - every class of hostile outside input (a 1 GiB dump line, a 300 MB FEVEROUS cell or
  corpus line, JSON nested 100,000 deep, NaN vectors, a 300 MB model reply, a 300 MB wiki
  extract, a gzip bomb, a redirect to another port) replayed against the installed CLI: peak RSS,
  wall time and exit code per case against ``core/input_limits`` (``evaluation/bench_hostile.py``).
* ``soak`` - a real ``langgraph dev`` (visible graphs) under several users' mixed load for
  ``--duration`` seconds (scripted double at 1 s per call): server RSS, stored checkpoints and
  bytes per user sampled over time, run latency, errors, lost runs, and the server's CPU per claim
  next to the CLI's lean variant (``evaluation/bench_soak.py``).

Every result lists its budgets under ``budgets`` (``evaluation/bench_budgets.py``: name, measured,
limit, met, and whether this run can judge it - a soak of a few seconds or a small dump says which
budgets it cannot judge instead of calling them met or missed); ``factdebate bench`` prints one
line per budget and exits 1 when a judged budget is missed. ``budget`` (the budgets in words) and
``budget_met`` (the verdicts in each bench's own shape; None where nothing is missed but something
is not judged) are written as before.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from factdebate.core.context import Context
from factdebate.core.errors import InputError
from factdebate.core.models import load_model
from factdebate.core.registry import Registry
from factdebate.evaluation.bench_budgets import budget, legacy_met, override_limits
from factdebate.evaluation.timeline import longest_chain
from factdebate.nodes.tool_mad.state import ToolMadContext
from factdebate.run.claims import event_loop_kind, git_sha, run_async
from factdebate.run.engine import run_graph
from factdebate.tools import DEMO_CORPUS_DIR

DEMO_CORPUS = DEMO_CORPUS_DIR / "passages.jsonl"
DEMO_CLAIMS = DEMO_CORPUS_DIR / "claims.jsonl"
SCORE_CHAIN_CALLS = 2
"""Longest chain of dependent LLM calls in one stability score (faithfulness: statements -> NLI)."""
BENCHES: Registry[Callable[..., dict[str, Any]]] = Registry("benchmark")


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def demo_index(work_dir: Path) -> Path:
    """The demo corpus indexed under ``work_dir`` (built once)."""
    from factdebate.tools.indexing import build_indexes, index_exists

    index_dir = work_dir / "demo-index"
    if not index_exists(index_dir):
        build_indexes(DEMO_CORPUS, index_dir)
    return index_dir


def _claims(path: Path, n: int, seed: int, field: str = "claim") -> list[str]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    random.Random(seed).shuffle(rows)
    return [r[field] for r in rows[:n]]


async def _timed_claims(ctx: Context, claims: list[str], db: Path) -> list[dict[str, Any]]:
    from factdebate.run.claims import open_sqlite_saver

    rows = []
    async with open_sqlite_saver(db) as saver:
        for claim in claims:
            model = load_model(ctx.debater_model)
            if hasattr(model, "reset"):
                model.reset()
            start = time.perf_counter()
            result = await run_graph("tool_mad", {"claim": claim}, ctx, checkpointer=saver)
            wall = time.perf_counter() - start
            rows.append({"claim": claim, "wall_s": round(wall, 4), "rounds": result["rounds"],
                         "stopped_by": result["stopped_by"],
                         "llm_calls": result["ledger"]["llm_calls"],
                         "timeline": getattr(model, "timeline", None)})
    return rows


OVERHEAD_BUDGET = 1.08
"""Median wall time per Tool-MAD claim over its critical path the overhead benchmark allows."""


@BENCHES.decorator("overhead")
def bench_overhead(work_dir: Path, *, latency: float | None = None, rounds: int = 3, claims: int = 5,
                   seed: int = 13, **_: Any) -> dict[str, Any]:
    """Wall time per claim against the critical-path and serial bounds."""
    latency = 0.1 if latency is None else latency
    ctx = ToolMadContext(debater_model=f"scripted:disagree?latency={latency}", max_rounds=rounds,
                         index_dir=str(demo_index(work_dir)), search_backend="local_search")
    texts = _claims(DEMO_CLAIMS, claims + 1, seed)
    rows = run_async(_timed_claims(ctx, texts, work_dir / "overhead.sqlite"))[1:]  # 1st: warm-up
    cp_calls = rounds * (1 + 1 + SCORE_CHAIN_CALLS) + 1
    per_claim = []
    for row in rows:
        timeline = row.pop("timeline")
        row["calls"] = len(timeline)
        row["longest_chain"] = longest_chain(timeline)
        row["critical_path_s"] = round(cp_calls * latency, 4)
        row["serial_s"] = round(len(timeline) * latency, 4)
        row["wall_over_critical_path"] = round(row["wall_s"] / row["critical_path_s"], 4)
        per_claim.append(row)
    ratio = statistics.median(r["wall_over_critical_path"] for r in per_claim)
    return {
        "latency_s": latency, "rounds": rounds, "critical_path_calls": cp_calls,
        "critical_path_matches_timeline": all(r["longest_chain"] == cp_calls for r in per_claim),
        "median_wall_s": statistics.median(r["wall_s"] for r in per_claim),
        "critical_path_s": round(cp_calls * latency, 4),
        "serial_s": statistics.median(r["serial_s"] for r in per_claim),
        "median_wall_over_critical_path": ratio,
        "median_wall_over_serial": round(
            statistics.median(r["wall_s"] / r["serial_s"] for r in per_claim), 4),
        "budget": f"wall <= {OVERHEAD_BUDGET:.2f} x critical path",
        "budgets": [budget("wall_over_critical_path",
                           f"median wall <= {OVERHEAD_BUDGET:.2f} x the critical path",
                           ratio, "<=", OVERHEAD_BUDGET, unit="x", why_not_judged="" if latency >= 0.1 else
                           f"stated at >= 0.1 s per call (this run: {latency:g} s; --latency): "
                           "below it a claim's own CPU time is not small next to its calls")],
        "peak_rss_mb": peak_rss_mb(), "claims": per_claim,
    }


async def _scaling_runs(index: Path, data_dir: Path, work_dir: Path, *, base_claims: int,
                        latency: float, concurrencies: tuple[int, ...], seed: int,
                        workers: int) -> dict[str, Any]:
    from factdebate.evaluation.runner import RunSpec, run_eval
    from factdebate.evaluation.workers import WorkerPool

    def spec(name: str, c: int, limit: int) -> RunSpec:
        out = work_dir / name
        if out.exists():
            shutil.rmtree(out)
        return RunSpec(framework="tool_mad", dataset="fever", out=out, limit=limit, seed=seed,
                       concurrency=c, model=f"scripted:disagree?latency={latency}",
                       data_dir=str(data_dir), workers=workers,
                       sets=[f"index_dir={index}", "search_backend=local_search"])

    async def timed(run: RunSpec, pool: WorkerPool | None) -> dict[str, Any]:
        start = time.perf_counter()
        await run_eval(run, console=None, pool=pool)
        wall = time.perf_counter() - start
        rows = [json.loads(x) for x in (run.out / "results.jsonl").read_text().splitlines() if x]
        failed = [r for r in rows if r.get("error")]
        if failed:  # a failed item is fast, so its figures would flatter the run
            raise RuntimeError(f"scaling benchmark: {len(failed)} of {len(rows)} items failed at "
                               f"concurrency {run.concurrency}, e.g. {failed[0]['error']}; "
                               f"see {run.out}")
        return {"concurrency": run.concurrency, "workers": run.workers, "wall_s": round(wall, 3),
                "items": len(rows), "errors": 0,
                "throughput_items_per_s": round(len(rows) / wall, 4)}

    pool = WorkerPool(workers) if workers > 1 else None
    out: dict[str, Any] = {"workers": workers}
    try:
        if pool is not None:
            await pool.start()
            out["worker_start_s"] = pool.start_s
        # untimed warm-up: models, indexes and code paths load once (paid once per `factdebate
        # eval` run, not per item; reported, not part of the ratios)
        warm = await timed(spec("scaling-warmup", workers, workers), pool)
        out["warmup_wall_s"] = warm["wall_s"]
        # c = 1 over a few claims gives the per-claim time; each higher c runs one claim per slot
        out["runs"] = [await timed(spec(f"scaling-c{c}", c, base_claims if c == 1 else c), pool)
                       for c in concurrencies]
        if pool is not None:
            out["worker_peak_rss_mb"] = pool.peak_rss_mb()
    finally:
        if pool is not None:
            await pool.shutdown()
    return out


SCALING_BUDGET = 0.90
"""Efficiency the scaling benchmark must reach at its top concurrency."""


@BENCHES.decorator("scaling")
def bench_scaling(work_dir: Path, *, data_dir: Path | None = None, claims: int = 4,
                  latency: float | None = None, concurrencies: tuple[int, ...] = (1, 128),
                  seed: int = 13, workers: int | None = None, **_: Any) -> dict[str, Any]:
    """Throughput of ``factdebate eval`` at concurrency 1 and up, one process, 1 s per call.

    ``claims`` is the number of claims of the concurrency-1 run (its per-claim time is the
    reference); every higher concurrency ``c`` runs ``c`` claims at once. Efficiency at ``c`` =
    throughput at ``c`` / (``c`` x throughput at 1). With ``workers`` > 1 the items run in a warm
    ``WorkerPool`` (``evaluation/workers.py``; start-up reported beside the figures).
    """
    if data_dir is None:
        raise InputError("the scaling benchmark needs the benchmark data folder",
                         "pass --data-dir or set FACTDEBATE_DATA_DIR")
    latency = 1.0 if latency is None else latency
    workers = workers or 1
    result = run_async(_scaling_runs(demo_index(work_dir), data_dir, work_dir, base_claims=claims,
                                     latency=latency, concurrencies=concurrencies, seed=seed,
                                     workers=workers))
    runs = result["runs"]
    base = runs[0]["items"] / runs[0]["wall_s"]
    for run in runs:
        run["efficiency"] = round(run["items"] / run["wall_s"] / (run["concurrency"] * base), 4)
    last = runs[-1]
    processes = f"{workers} process{'es' if workers > 1 else ''}"
    return {"latency_s": latency, "claims_at_c1": claims, **result,
            "budget": f"efficiency >= {SCALING_BUDGET:.2f} at c = {last['concurrency']} "
                      f"({processes})",
            "budgets": [budget("efficiency", f"efficiency >= {SCALING_BUDGET:.2f} at c = "
                               f"{last['concurrency']} ({processes})", last["efficiency"], ">=",
                               SCALING_BUDGET, why_not_judged="" if latency >= 1.0 else
                               f"stated at >= 1 s per call (this run: {latency:g} s; --latency)"
                               ": below it the claims' CPU time, not the waits, sets the rate")],
            "peak_rss_mb": peak_rss_mb()}


@BENCHES.decorator("embedded")
def bench_embedded(work_dir: Path, *, data_dir: Path | None = None, claims: int = 10,
                   rounds: int = 3, scoring: str = "auto", seed: int = 13,
                   **_: Any) -> dict[str, Any]:
    """Seconds and LLM calls per claim with the embedded model, offline; then a new user's first
    commands as processes (``verify`` and ``check`` with no flags over the demo index)."""
    source = (data_dir / "fever" / "paper_dev.jsonl") if data_dir else DEMO_CLAIMS
    first_hour = first_commands(work_dir)  # processes of their own, before this one opens an index
    index = demo_index(work_dir)
    ctx = ToolMadContext(debater_model="local:smollm2", max_rounds=rounds, scoring_mode=scoring,
                         index_dir=str(index), search_backend="local_search")
    rows = run_async(_timed_claims(ctx, _claims(source, claims, seed), work_dir / "emb.sqlite"))
    for row in rows:
        row.pop("timeline")
    per_claim = statistics.fmean(r["wall_s"] for r in rows)
    return {
        "model": "local:smollm2", "scoring_mode": f"{scoring} -> {ctx.scoring_mode}",
        "rounds": rounds, "claims_from": str(source.name), "n": len(rows),
        "mean_s_per_claim": round(per_claim, 2),
        "mean_llm_calls_per_claim": statistics.fmean(r["llm_calls"] for r in rows),
        **first_hour,
        "budget": (f"<= 30 s per claim; `verify` with no flags <= {CLI_VERIFY_BUDGET_S:.0f} s and "
                   f"`check` of {len(CHECK_TEXT_SENTENCES)} sentences <= "
                   f"{CLI_CHECK_BUDGET_S:.0f} s (process wall, 2 cores)"),
        "budgets": [
            budget("s_per_claim", "mean seconds per claim <= 30", round(per_claim, 2), "<=",
                   30.0, unit="s"),
            budget("cli_verify_s", f"`verify` with no flags <= {CLI_VERIFY_BUDGET_S:.0f} s "
                   "(process wall)", first_hour["cli_verify_wall_s"], "<=", CLI_VERIFY_BUDGET_S,
                   unit="s"),
            budget("cli_check_s", f"`check` of {len(CHECK_TEXT_SENTENCES)} sentences <= "
                   f"{CLI_CHECK_BUDGET_S:.0f} s (process wall)", first_hour["cli_check_wall_s"],
                   "<=", CLI_CHECK_BUDGET_S, unit="s")],
        "peak_rss_mb": peak_rss_mb(), "claims": rows,
    }


CLI_VERIFY_CLAIM = "The Eiffel Tower is located in Paris."
CLI_VERIFY_BUDGET_S = 60.0
CHECK_TEXT_SENTENCES = (
    "Marie Curie won two Nobel Prizes.",
    "The Eiffel Tower is located in Paris.",
    "The Nile flows north into the Mediterranean Sea.",
)
CLI_CHECK_BUDGET_S = 180.0


def first_commands(work_dir: Path) -> dict[str, Any]:
    """Wall seconds of ``factdebate verify CLAIM`` and ``factdebate check FILE`` run as a new user
    runs them after ``make demo`` (separate processes, no flags; ``--json`` only to read the
    result), over the demo index in ``FACTDEBATE_HOME`` (built first by ``factdebate index``, not
    timed), with what each printed: the verdict, model calls, notes, and the claims ``check``
    extracted (any markup debris or duplicate among them is counted)."""
    import os
    import subprocess
    import sys

    home = work_dir / "home"
    env = {**os.environ, "FACTDEBATE_HOME": str(home)}
    for key in ("FACTDEBATE_MODEL", "FACTDEBATE_BASE_URL", "FACTDEBATE_SEARCH_BACKEND",
                "FACTDEBATE_INDEX_DIR", "FACTDEBATE_MILVUS_URI", "TAVILY_API_KEY",
                "OPENAI_API_KEY"):
        env.pop(key, None)
    cli = [str(Path(sys.executable).parent / "factdebate")]  # the installed console script
    if not (home / "index").exists():
        subprocess.run([*cli, "index", str(DEMO_CORPUS), "--index-dir", str(home / "index")],
                       env=env, capture_output=True, text=True, timeout=1800, check=True)

    def timed(args: list[str]) -> tuple[float, dict[str, Any]]:
        start = time.perf_counter()
        done = subprocess.run([*cli, *args, "--json"], env=env, capture_output=True, text=True,
                              timeout=1800, check=False)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"factdebate {args[0]} exited {done.returncode}: "
                               f"{done.stderr.strip()[-400:]}")
        return wall, json.loads(done.stdout)

    verify_wall, verified = timed(["verify", CLI_VERIFY_CLAIM])
    text = work_dir / "three-sentences.txt"
    text.write_text(" ".join(CHECK_TEXT_SENTENCES), encoding="utf-8")
    check_wall, checked = timed(["check", str(text)])
    claims = [c.get("claim", "") for c in (checked.get("check") or checked).get("claims") or []]
    return {
        "cli_verify_wall_s": round(verify_wall, 1), "cli_verify_label": verified.get("label"),
        "cli_verify_llm_calls": (verified.get("ledger") or {}).get("llm_calls"),
        "cli_verify_notes": [f for f in verified.get("flags") or [] if f.startswith("scoring:")],
        "cli_check_wall_s": round(check_wall, 1),
        "cli_check_llm_calls": (checked.get("ledger") or {}).get("llm_calls"),
        "cli_check_claims": claims,
        "cli_check_claims_with_debris": sum(any(ch in c for ch in "<>{}") for c in claims),
        "cli_check_duplicate_claims": len(claims) - len(set(claims)),
    }


@BENCHES.decorator("floor")
def bench_floor(work_dir: Path, *, claims: int = 16, rounds: int = 3, seed: int = 13,
                profile: bool = True, profile_claims: int = 40, **_: Any) -> dict[str, Any]:
    """CPU per Tool-MAD claim: ours vs the bare-LangGraph floor vs real compute."""
    from factdebate.evaluation.bench_floor import run_floor_bench

    pool = _claims(DEMO_CLAIMS, 1000, seed + 1)
    result = run_floor_bench(work_dir, work_dir.parent, demo_index(work_dir),
                             _claims(DEMO_CLAIMS, claims + 1, seed),  # [0]: untimed warm-up
                             [pool[i % len(pool)] for i in range(profile_claims)],
                             rounds=rounds, profile=profile)
    return {**result, "peak_rss_mb": peak_rss_mb()}


@BENCHES.decorator("profile")
def bench_profile(work_dir: Path, *, claims: int = 40, latency: float | None = None,
                  seed: int = 13, **_: Any) -> dict[str, Any]:
    """CPU per claim of the CLI, the server and the server with inner checkpoints, and where
    it goes by owner under py-spy (``bench_profile.py``)."""
    from factdebate.evaluation.bench_profile import run_profile_bench

    return {**run_profile_bench(work_dir, work_dir.parent, demo_index(work_dir),
                                _claims(DEMO_CLAIMS, claims, seed),
                                latency=0.2 if latency is None else latency),
            "peak_rss_mb": peak_rss_mb()}


@BENCHES.decorator("tokens")
def bench_tokens(work_dir: Path, *, claims: int = 5, rounds: int = 3, seed: int = 13,
                 frameworks: list[str] | None = None, **_: Any) -> dict[str, Any]:
    """Prompt, completion and cached tokens per claim of every framework."""
    from factdebate.evaluation.bench_tokens import run_tokens_bench

    return {**run_tokens_bench(work_dir, demo_index(work_dir), _claims(DEMO_CLAIMS, claims, seed),
                               rounds=rounds, seed=seed, frameworks=frameworks),
            "claims_from": DEMO_CLAIMS.name, "peak_rss_mb": peak_rss_mb()}


@BENCHES.decorator("index")
def bench_index(work_dir: Path, *, sizes: tuple[int, ...] = (10_000, 100_000), **_: Any
                ) -> dict[str, Any]:
    """Index build and search at scale into Milvus Lite and a Milvus server (bench_index.py)."""
    from factdebate.evaluation.bench_index import run_index_bench

    result = run_index_bench(work_dir, sizes=tuple(sizes))  # sets its budgets and budget_met
    result["peak_rss_mb"] = peak_rss_mb()
    return result


@BENCHES.decorator("corpus")
def bench_corpus(work_dir: Path, *, pages: int | None = None, embed_sample: int | None = None,
                 seed: int = 13, data_dir: Path | None = None, **_: Any) -> dict[str, Any]:
    """A synthetic FEVER dump (``pages``, default 1M) imported and keyword-indexed, a sample of
    ``embed_sample`` passages embedded (``bench_corpus.py``)."""
    from factdebate.evaluation.bench_corpus import DEFAULT_PAGES, EMBED_SAMPLE, run_corpus_bench

    return {**run_corpus_bench(work_dir, pages=DEFAULT_PAGES if pages is None else pages,
                               seed=seed, data_dir=data_dir,
                               embed_sample=EMBED_SAMPLE if embed_sample is None else embed_sample),
            "peak_rss_mb": peak_rss_mb()}


@BENCHES.decorator("retrieval")
def bench_retrieval(work_dir: Path, *, data_dir: Path | None = None, limit: int = 300,
                    pad_to: int = 100_000, seed: int = 13, **_: Any) -> dict[str, Any]:
    """Recall/MRR per retriever on the data dir's gold evidence, latency at 100k passages."""
    from factdebate.evaluation.bench_retrieval import run_retrieval_bench

    if data_dir is None:
        raise InputError("the retrieval benchmark needs the benchmark data folder",
                         "pass --data-dir or set FACTDEBATE_DATA_DIR")
    result = run_retrieval_bench(data_dir, work_dir, limit=limit, seed=seed, pad_to=pad_to)
    result["budget"] = ("hybrid recall@3 >= best single + 3 points; p50 <= 20 ms dense and "
                        "<= 5 ms keyword at 100k")
    result["budgets"] = retrieval_budgets(result)
    result["budget_met"] = legacy_met({"hybrid_recall": dict.fromkeys(result["quality"]),
                                       "dense_p50": None, "keyword_p50": None}, result["budgets"])
    result["peak_rss_mb"] = peak_rss_mb()
    return result


RETRIEVAL_JUDGED_FROM_CLAIMS = 100
"""Claims a gold set needs for its recall gain to be judged (a few points on fewer is noise)."""
RETRIEVAL_JUDGED_FROM_PASSAGES = 100_000
"""Passages the latency run needs for its p50 budgets (they are stated at 100k)."""


def retrieval_budgets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Hybrid recall@3 over the best single retriever per gold set (judged from
    ``RETRIEVAL_JUDGED_FROM_CLAIMS`` claims) and the p50 latencies (judged at
    ``RETRIEVAL_JUDGED_FROM_PASSAGES`` passages)."""
    budgets = []
    for name, per in result["quality"].items():
        gain = round(per["hybrid"]["recall@3"]
                     - max(per["milvus"]["recall@3"], per["keyword"]["recall@3"]), 4)
        n = result.get("sets", {}).get(name, 0)
        entry = budget(f"hybrid_recall.{name}", f"{name}: hybrid recall@3 >= the best single "
                       "retriever's + 3 points", gain, ">=", 0.03,
                       why_not_judged="" if n >= RETRIEVAL_JUDGED_FROM_CLAIMS else
                       f"needs >= {RETRIEVAL_JUDGED_FROM_CLAIMS} claims in the set (this run: "
                       f"{n}; --limit)")
        budgets.append(entry)
    lat = result["latency_at_pad"]
    small = "" if lat["passages"] >= RETRIEVAL_JUDGED_FROM_PASSAGES else \
        f"stated at {RETRIEVAL_JUDGED_FROM_PASSAGES:,} passages (this run: {lat['passages']:,}; " \
        "--pad-to)"
    for key, label, limit in (("dense_p50", "milvus", 20.0), ("keyword_p50", "keyword", 5.0)):
        budgets.append(budget(key, f"{label} search p50 <= {limit:g} ms at "
                              f"{RETRIEVAL_JUDGED_FROM_PASSAGES:,} passages",
                              lat[label]["p50_ms"], "<=", limit, unit="ms",
                              why_not_judged=small))
    return budgets


@BENCHES.decorator("hostile")
def bench_hostile(work_dir: Path, *, cases: list[str] | None = None, **_: Any) -> dict[str, Any]:
    """Every class of hostile outside input replayed against the installed CLI: peak RSS, wall
    time and exit code per case against ``core/input_limits`` (``bench_hostile.py``)."""
    from factdebate.evaluation.bench_hostile import run_hostile

    return run_hostile(work_dir, cases)


@BENCHES.decorator("soak")
def bench_soak(work_dir: Path, *, duration_s: float = 1800.0, users: int = 4,
               latency: float | None = None, claims: int = 24, seed: int = 13,
               **_: Any) -> dict[str, Any]:
    """A real ``langgraph dev`` under a mixed load, sampled over time (``bench_soak.py``)."""
    from factdebate.evaluation.bench_soak import run_soak_bench

    return {**run_soak_bench(work_dir, demo_index(work_dir), _claims(DEMO_CLAIMS, 200, seed),
                             duration_s=duration_s, users=users,
                             latency=1.0 if latency is None else latency, cpu_claims=claims),
            "peak_rss_mb": peak_rss_mb()}


def machine() -> str:
    """What the figures were measured on: cores, memory, CPU model, Python, OS."""
    import os
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        memory = 0.0
    return (f"{os.cpu_count()} cores, {memory:.0f} GiB, {cpu}, Python "
            f"{platform.python_version()}, {platform.system()} {platform.release()}")


def run_bench(name: str, out_dir: Path, command: str, *,
              budget_limits: dict[str, float] | None = None, **kwargs: Any) -> dict[str, Any]:
    """Run benchmark ``name`` and write ``OUT/<name>.json``.

    ``budget_met`` follows the result's ``budgets``: True, False, or None where nothing is missed
    but a budget is not judged, in the bench's own shape. ``budget_limits`` re-judges the named
    budgets against other limits (``--budget NAME=LIMIT``); the names applied are listed under
    ``budget_overrides``, those of budgets that take no other limit under
    ``budget_overrides_refused``.
    """
    fn = BENCHES.get(name)
    work = out_dir / "work"
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    sha = git_sha()  # the commit that runs (others may commit during a long run)
    result = fn(work, **kwargs)
    result = {"benchmark": name, "command": command, "git_sha": sha,
              "date": time.strftime("%Y-%m-%d", time.gmtime()), "machine": machine(),
              "event_loop": event_loop_kind(),
              "seconds": round(time.perf_counter() - start, 1), **result}
    result.setdefault("budgets", [])
    if result["budgets"]:  # budget_met in the bench's shape, None where a budget is not judged
        result["budget_met"] = legacy_met(result.get("budget_met"), result["budgets"])
    if budget_limits:
        applied, refused = override_limits(result, budget_limits)
        if applied:
            result["budget_overrides"] = {k: budget_limits[k] for k in sorted(applied)}
        if refused:
            result["budget_overrides_refused"] = sorted(refused)
    (out_dir / f"{name}.json").write_text(json.dumps(result, indent=2, default=str))
    return result
