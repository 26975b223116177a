"""``factdebate bench soak``: a real ``langgraph dev`` under a long mixed load, sampled over time.

The benchmark starts ``langgraph dev`` (the graphs ``langgraph.json`` exports: visible turns) from
a copy of ``langgraph.json`` in ``OUT/work/soak``, with one API key per user
(``FACTDEBATE_API_KEYS``), the demo index and ``--n-jobs-per-worker`` job slots, and drives it
through ``langgraph_sdk`` as its users would. Runs use the scripted test double with a provider's
latency (``scripted:agree?latency=1.0``; every fourth episode ``scripted:disagree``, two rounds and
the judge), which the server accepts only with ``FACTDEBATE_ALLOW_SCRIPTED=1`` in its environment.

**The mix.** Each user runs ``sessions`` sessions at once (below the server's per-user run limit, so
no request is refused by design); a session repeats episodes until the duration is over:

* a run on a new thread, or (every third episode) a second claim on one of the session's kept
  threads (read first: a 404 there is a lost thread); runs alternate between streaming
  (``runs.stream``, node updates of the subgraphs too), a background run (``runs.create`` then
  ``runs.join``) and ``runs.wait``;
* a state update (``threads.update_state`` as ``cite_verdict``) on every second episode;
* a fork on every third: the history read back, a state update at the checkpoint before the
  consensus check (a new branch), and a run from it (``checkpoint_id``);
* then every run of the thread is read back (``runs.list``): each must have ended ``success``;
  one still pending or running is a lost run, any other status an error;
* the session keeps its ``keep`` newest threads and deletes the oldest (``threads.delete``).

**Sampled** every ``sample_s`` seconds while the mix runs: the server's resident memory and CPU
seconds (the process tree of ``langgraph dev`` from ``/proc``), and per user the threads, the stored
checkpoints (every checkpoint of the root graph in each thread's history, read through the API) and
their bytes (the history's states as compact JSON: what the API hands back of what the server
stores; subgraph checkpoints are not listed by the API and show only in the memory). The usage
ledger's charges per user live inside the server process and have no route to read them. Each
sample is also appended to ``OUT/work/soak/samples.jsonl`` as it is taken, and a line on stderr
every 10 s names the stage (server start, the mix, the final reads, the CPU phases) with the
mix's seconds, runs and errors so far and the server's last sampled RSS.

**After the mix**: every kept thread is read back (404: lost) with its runs; then the server's CPU
per claim is measured alone (``cpu_claims`` Tool-MAD claims, default 24 - twelve gave ratios that
moved by a tenth between runs - four at a time, through
``runs.wait``); then one ``agree`` run at a time per client mode (``runs.wait``, ``runs.stream``,
``runs.create`` + ``runs.join``; :data:`ALONE_RUNS_PER_MODE` each, medians in
``run_alone_latency_s`` and over the critical path), and after the server stops the CLI's lean
variant runs the same claims in this process (``run_graph`` with the SQLite saver of CLI runs; one
untimed warm-up claim), so the visible variant's cost (``server_cpu_over_lean``) is measured in
the same run on the same machine.

**Budgets.** After the warm-up (``warmup_s``, default a tenth of the duration) the samples are
split into quarters by time: the mean resident memory and the mean stored checkpoints of the last
quarter may exceed the first quarter's by at most 10 %; no errors; no lost runs or threads. p50 and
p99 run latency (request to final reply, queueing included) are reported beside them. The growth
budgets are judged from a soak of ``GROWTH_JUDGED_FROM_S`` seconds with ``MIN_QUARTER_SAMPLES``
samples in each quarter (a shorter run reports the growth, not judged: memory and checkpoints
still climb while the server warms up); errors and losses are judged at any duration. Two more
budgets are judged at any duration: the server's CPU per claim at most 1.3 x the CLI lean
variant's, and the p50 run latency at most 1.10 x the critical path of the ``agree`` episode (the
longest chain of the scripted model's calls in one claim run alone, times its latency; 3 in 4
episodes are ``agree``, so the median run is one). ``langgraph dev``'s in-memory runtime
looks for queued runs every 0.5 s once its queue was empty; the server wakes the queue when a run
is created or ends (``factdebate.patches.inmem_run_events``), so the p50 measures the runs
themselves and not that poll: one run alone took 4.6 s (``runs.wait``) to 5.0 s (``runs.stream``,
``runs.create`` + ``runs.join``) for the 4.0 s critical path before, 4.09-4.13 s with the wake-up
(the same graph in-process: 4.05 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import statistics
import sys
import time
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factdebate.evaluation.bench_budgets import budget, legacy_met, verdict_text
from factdebate.evaluation.bench_progress import StageProgress
from factdebate.evaluation.langgraph_dev import start_langgraph_dev, stop_langgraph_dev

GROWTH_BUDGET = 0.10
"""Largest growth of the mean RSS and stored checkpoints from the first to the last quarter."""
GROWTH_JUDGED_FROM_S = 600.0
"""The shortest soak whose memory and checkpoint growth is judged."""
MIN_QUARTER_SAMPLES = 3
"""Samples each of the first and the last quarter needs for its growth to be judged."""
SCRIPTED_ENV = "FACTDEBATE_ALLOW_SCRIPTED"
TERMINAL_OK = "success"
UNFINISHED = ("pending", "running")
OP_TIMEOUT_S = 300.0
"""The longest one client operation (a run and its reply included) may take before it is an
error (the server's read timeout of ``eval --server``)."""
MAX_ERROR_MESSAGES = 20


# --- the server's process tree from /proc -------------------------------------------------------
def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (``/proc/<pid>/task/*/children``, else a scan of ``/proc``)."""
    found: list[int] = []
    tasks = Path(f"/proc/{pid}/task")
    try:
        for task in tasks.iterdir():
            with contextlib.suppress(OSError):
                found += [int(x) for x in (task / "children").read_text().split()]
        return found
    except OSError:
        pass
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its live descendants."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        if current in out:
            continue
        out.append(current)
        todo.extend(_children(current))
    return out


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid``'s process tree (sum of ``VmRSS``), MiB; 0 when it is gone."""
    total_kb = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
                    break
    return round(total_kb / 1024, 1)


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of ``pid``'s live process tree, with the children each member
    has already waited for."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / ticks


# --- pure figures (tests/unit/test_bench_soak_report.py) ---------------------------------------
def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of ``values`` by linear interpolation; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def quarter_growth(samples: Sequence[dict[str, Any]], key: str, start_s: float,
                   end_s: float) -> dict[str, Any]:
    """Mean of ``key`` over the samples in the first and the last quarter of ``[start_s, end_s]``
    (their ``t_s``) and the growth between them (last / first - 1; None without samples in both
    quarters or a first mean of 0)."""
    span = end_s - start_s
    first = [s[key] for s in samples if start_s <= s["t_s"] <= start_s + span / 4]
    last = [s[key] for s in samples if end_s - span / 4 <= s["t_s"] <= end_s]
    out: dict[str, Any] = {"first_quarter_mean": None, "last_quarter_mean": None, "growth": None,
                           "samples": [len(first), len(last)]}
    if first and last:
        a, b = statistics.fmean(first), statistics.fmean(last)
        out.update(first_quarter_mean=round(a, 2), last_quarter_mean=round(b, 2))
        if a > 0:
            out["growth"] = round(b / a - 1, 4)
    return out


def slope(samples: Sequence[dict[str, Any]], x: str, y: str) -> float | None:
    """Least-squares slope of ``y`` over ``x`` in ``samples``; None with fewer than 2 distinct x."""
    points = [(s[x], s[y]) for s in samples]
    if len({p[0] for p in points}) < 2:
        return None
    mx = statistics.fmean(p[0] for p in points)
    my = statistics.fmean(p[1] for p in points)
    den = sum((px - mx) ** 2 for px, _ in points)
    return sum((px - mx) * (py - my) for px, py in points) / den


def verdicts(figures: dict[str, Any], budget: float = GROWTH_BUDGET) -> dict[str, bool]:
    """Each budget of the soak, met or not: RSS and stored checkpoints flat (growth of the quarter
    means <= ``budget``; a growth that could not be measured is not met), no errors, nothing lost.
    """
    def flat(name: str) -> bool:
        growth = figures[name]["growth"]
        return growth is not None and growth <= budget

    return {"rss_flat": flat("rss_growth"), "checkpoints_flat": flat("checkpoints_growth"),
            "no_errors": figures["errors"] == 0,
            "no_lost_runs": figures["lost_runs"] == 0 and figures["lost_threads"] == 0}


def soak_budgets(figures: dict[str, Any], duration_s: float,
                 growth_budget: float = GROWTH_BUDGET) -> list[dict[str, Any]]:
    """The soak's budgets (``evaluation/bench_budgets.py``) from :func:`summarize`'s figures: the
    growth budgets judged only from ``GROWTH_JUDGED_FROM_S`` seconds and ``MIN_QUARTER_SAMPLES``
    samples a quarter, errors and losses at any duration."""
    def growth(name: str, what: str) -> dict[str, Any]:
        quarters = figures[name]
        why = ""
        if duration_s < GROWTH_JUDGED_FROM_S:
            why = (f"needs --duration >= {GROWTH_JUDGED_FROM_S:.0f} s (this run: {duration_s:g} s)"
                   ": it still climbs while the server warms up")
        elif min(quarters.get("samples") or [0]) < MIN_QUARTER_SAMPLES:
            why = (f"needs >= {MIN_QUARTER_SAMPLES} samples in the first and the last quarter "
                   f"(this run: {quarters.get('samples')})")
        elif quarters.get("growth") is None:
            why = "not measured (a first quarter mean of 0)"
        return budget(name, f"mean {what} of the last quarter <= {1 + growth_budget:.2f} x the "
                      "first quarter's (after the warm-up)", quarters.get("growth"), "<=",
                      growth_budget, why_not_judged=why)

    lost = figures["lost_runs"] + figures["lost_threads"]
    entries = [growth("rss_growth", "server RSS"),
               growth("checkpoints_growth", "stored checkpoints"),
               budget("errors", "no errors", figures["errors"], "<=", 0),
               budget("lost", "no lost runs or threads", lost, "<=", 0)]
    for entry, legacy in zip(entries, ("rss_flat", "checkpoints_flat", "no_errors",
                                       "no_lost_runs"), strict=True):
        entry["legacy"] = legacy
    return entries


SERVER_OVER_LEAN_BUDGET = 1.3
"""Largest server CPU per claim over the CLI lean variant's (the same claims, one run)."""
P50_OVER_CRITICAL_BUDGET = 1.10
"""Largest p50 run latency over the critical path of the mix's ``agree`` episode."""


def cpu_budgets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The server's CPU per claim against the CLI lean variant's, and the p50 run latency against
    the critical path of the scripted ``agree`` episode (3 in 4 episodes: the median run's)."""
    why_cpu = "" if result.get("server_cpu_over_lean") is not None else \
        "not measured (a CPU phase failed; see the errors)"
    why_p50 = "" if result.get("run_latency_p50_over_critical_path") is not None else \
        "not measured (no runs, or the lean phase failed)"
    return [
        budget("server_cpu_over_lean", f"server CPU per claim <= {SERVER_OVER_LEAN_BUDGET} x the "
               "CLI lean variant's", result.get("server_cpu_over_lean"), "<=",
               SERVER_OVER_LEAN_BUDGET, unit="x", why_not_judged=why_cpu),
        budget("p50_over_critical_path", f"p50 run latency <= {P50_OVER_CRITICAL_BUDGET} x the "
               "critical path of the agree episode", result.get("run_latency_p50_over_critical_path"),
               "<=", P50_OVER_CRITICAL_BUDGET, unit="x", why_not_judged=why_p50),
    ]


def summarize(samples: list[dict[str, Any]], latencies: list[tuple[float, float]], *,
              duration_s: float, warmup_s: float, errors: int, lost_runs: int,
              lost_threads: int) -> dict[str, Any]:
    """The soak's figures from its samples and ``(t_s, seconds)`` run latencies: growth of RSS,
    checkpoints and bytes between the post-warm-up quarters, RSS per 100 runs, the server's CPU
    per run over the mix after the warm-up (everything it served: runs, reads, the sampler's
    history reads), latency percentiles (all runs and after the warm-up), errors and losses, and
    the budget verdicts."""
    steady = [s for s in samples if s["t_s"] >= warmup_s]
    end = max((s["t_s"] for s in samples), default=duration_s)
    per_100 = slope(steady, "runs_done", "rss_mb")
    after = [sec for t, sec in latencies if t >= warmup_s]
    every = [sec for _, sec in latencies]

    def q(values: list[float], p: float) -> float | None:
        found = percentile(values, p)
        return None if found is None else round(found, 3)

    done = steady[-1]["runs_done"] - steady[0]["runs_done"] if len(steady) > 1 else 0
    cpu_per_run = (round((steady[-1]["cpu_s"] - steady[0]["cpu_s"]) / done, 4)
                   if done > 0 and "cpu_s" in steady[0] else None)
    figures: dict[str, Any] = {
        "rss_growth": quarter_growth(samples, "rss_mb", warmup_s, end),
        "checkpoints_growth": quarter_growth(samples, "checkpoints", warmup_s, end),
        "bytes_growth": quarter_growth(samples, "bytes", warmup_s, end),
        "rss_mb_per_100_runs_after_warmup": None if per_100 is None else round(per_100 * 100, 3),
        "server_cpu_s_per_run_in_mix": cpu_per_run,
        "runs": len(latencies),
        "run_latency_p50_s": q(after, 0.5), "run_latency_p99_s": q(after, 0.99),
        "run_latency_p50_s_all": q(every, 0.5), "run_latency_p99_s_all": q(every, 0.99),
        "errors": errors, "lost_runs": lost_runs, "lost_threads": lost_threads,
    }
    figures["verdicts"] = verdicts(figures)
    return figures


def summary_text(result: dict[str, Any]) -> str:
    """One screen: the load, the sampled figures and each budget's verdict (``met``, ``NOT MET``,
    or ``not judged: why`` where ``budgets`` says a run cannot judge it)."""
    judged = {b.get("legacy"): b for b in result.get("budgets") or []}

    def mark(name: str) -> str:
        if name in judged and not judged[name]["judged"]:
            return verdict_text(judged[name])
        return "met" if result["verdicts"][name] else "NOT MET"

    rss, cps, size = result["rss_growth"], result["checkpoints_growth"], result["bytes_growth"]
    lines = [
        f"soak: {result['duration_s']:.0f} s, {result['users']} users x {result['sessions']} "
        f"sessions, {result['jobs']} job slots, model {result['model']}",
        f"  runs {result['runs']} ({result['runs_per_s']} /s), episodes {result['episodes']}, "
        f"operations {sum(result['operations'].values())}",
        f"  run latency p50 {result['run_latency_p50_s']} s, p99 {result['run_latency_p99_s']} s "
        f"(after the {result['warmup_s']:.0f} s warm-up)",
        f"  server RSS MB: first quarter {rss['first_quarter_mean']}, last "
        f"{rss['last_quarter_mean']} (growth {rss['growth']}; "
        f"{result['rss_mb_per_100_runs_after_warmup']} MB per 100 runs): {mark('rss_flat')}",
        f"  stored checkpoints: first quarter {cps['first_quarter_mean']}, last "
        f"{cps['last_quarter_mean']} (growth {cps['growth']}): {mark('checkpoints_flat')}",
        f"  stored bytes: first quarter {size['first_quarter_mean']}, last "
        f"{size['last_quarter_mean']} (growth {size['growth']})",
        f"  errors {result['errors']}: {mark('no_errors')}; lost runs {result['lost_runs']}, "
        f"lost threads {result['lost_threads']}: {mark('no_lost_runs')}",
        f"  CPU per claim: server (visible) {result['server_cpu_s_per_claim']} s, CLI lean "
        f"{result['lean_cpu_s_per_claim']} s, ratio {result['server_cpu_over_lean']}; server "
        f"per run over the mix {result['server_cpu_s_per_run_in_mix']} s",
        "  budget: " + {True: "met", False: "NOT MET"}.get(
            result["budget_met"], "nothing missed, some budgets not judged"),
    ]
    lines += [f"  error: {m}" for m in result["error_messages"][:3]]
    return "\n".join(lines)


# --- the load ----------------------------------------------------------------------------------
@dataclass
class Tally:
    """What the users saw: runs and their latencies, operations, errors and losses."""

    t0: float = field(default_factory=time.monotonic)
    latencies: list[tuple[float, float]] = field(default_factory=list)
    operations: Counter = field(default_factory=Counter)
    episodes: int = 0
    errors: int = 0
    error_messages: list[str] = field(default_factory=list)
    lost_runs: list[str] = field(default_factory=list)
    lost_threads: list[str] = field(default_factory=list)
    runs_checked: int = 0

    def error(self, what: str, exc: BaseException | str) -> None:
        """Count an error and keep its first messages (one line each)."""
        self.errors += 1
        if len(self.error_messages) < MAX_ERROR_MESSAGES:
            text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
            self.error_messages.append(f"{what}: {' '.join(str(text).split())[:300]}")

    def ran(self, seconds: float) -> None:
        """Record a run's latency at the current time."""
        self.latencies.append((time.monotonic() - self.t0, seconds))


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a client error, or None."""
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


@dataclass
class User:
    """One identity: its key and its client."""

    name: str
    key: str
    client: Any = None
    deleted: set[str] = field(default_factory=set)
    kept: list[deque[str]] = field(default_factory=list)


@dataclass
class Load:
    """The settings of the mix (see the module docstring)."""

    claims: list[str]
    latency: float = 1.0
    rounds: int = 1
    keep: int = 3
    graph: str = "tool_mad"

    def context(self, episode: int) -> dict[str, Any]:
        """The run context of an episode: ``agree`` (one round), every fourth ``disagree``
        (two rounds and the judge)."""
        if episode % 4 == 3:
            return {"debater_model": f"scripted:disagree?latency={self.latency:g}",
                    "max_rounds": max(2, self.rounds)}
        return {"debater_model": f"scripted:agree?latency={self.latency:g}",
                "max_rounds": self.rounds}


async def _op(tally: Tally, name: str, coro: Any) -> Any:
    """Await one client operation within :data:`OP_TIMEOUT_S`, counted by ``name``."""
    tally.operations[name] += 1
    async with asyncio.timeout(OP_TIMEOUT_S):
        return await coro


async def _run(user: User, tally: Tally, thread: str, load: Load, mode: str,
               **kwargs: Any) -> None:
    """One run on ``thread`` by ``mode`` (stream, background or wait), timed to its last reply."""
    runs = user.client.runs
    start = time.monotonic()
    if mode == "stream":
        async def consume() -> None:
            async for part in runs.stream(thread, load.graph, stream_mode="updates",
                                          stream_subgraphs=True, **kwargs):
                if part.event == "error":
                    raise RuntimeError(f"stream error event: {part.data}")
        await _op(tally, "runs.stream", consume())
    elif mode == "background":
        run = await _op(tally, "runs.create", runs.create(thread, load.graph, **kwargs))
        await _op(tally, "runs.join", runs.join(thread, run["run_id"]))
    else:
        out = await _op(tally, "runs.wait", runs.wait(thread, load.graph, **kwargs))
        if isinstance(out, dict) and "__error__" in out:
            raise RuntimeError(f"run failed: {out['__error__']}")
    tally.ran(time.monotonic() - start)


async def _check_runs(user: User, tally: Tally, thread: str) -> None:
    """Every run of ``thread`` ended ``success`` (pending or running: lost; else an error)."""
    listed = await _op(tally, "runs.list", user.client.runs.list(thread, limit=1000))
    for run in listed:
        tally.runs_checked += 1
        if run["status"] in UNFINISHED:
            tally.lost_runs.append(f"{user.name} {thread} run {run['run_id']} {run['status']}")
        elif run["status"] != TERMINAL_OK:
            tally.error(f"{user.name} run {run['run_id']}", f"status {run['status']}")


async def _fork(user: User, tally: Tally, thread: str, load: Load, episode: int) -> None:
    """A new branch from the checkpoint before the consensus check, and a run from it."""
    history = await _op(tally, "threads.get_history",
                        user.client.threads.get_history(thread, limit=100))
    before_check = [h for h in history if h.get("next") == ["check_consensus"]]
    if not before_check:
        tally.error(f"{user.name} fork", f"no checkpoint before check_consensus in {thread}")
        return
    fork = await _op(tally, "threads.update_state", user.client.threads.update_state(
        thread, {"flags": [f"soak fork of episode {episode}"]}, as_node="debate_turn",
        checkpoint_id=before_check[0]["checkpoint"]["checkpoint_id"]))
    await _run(user, tally, thread, load, "wait", input=None,
               context=load.context(episode), checkpoint_id=fork["checkpoint"]["checkpoint_id"])


async def _episode(user: User, session: int, tally: Tally, load: Load, episode: int) -> None:
    """One episode of a session (the module docstring's mix), chosen by its number."""
    kept = user.kept[session]
    claim = load.claims[episode % len(load.claims)]
    threads = user.client.threads
    if episode % 3 == 2 and kept:
        thread = kept[-1]
        try:
            await _op(tally, "threads.get", threads.get(thread))
        except Exception as exc:
            if status_of(exc) == 404:
                tally.lost_threads.append(f"{user.name} {thread} (read before a run)")
                kept.remove(thread)
                return
            raise
    else:
        created = await _op(tally, "threads.create", threads.create(metadata={"soak": user.name}))
        thread = created["thread_id"]
        kept.append(thread)
    mode = ("stream", "background", "wait")[(episode + episode // 3) % 3]
    await _run(user, tally, thread, load, mode, input={"claim": claim},
               context=load.context(episode))
    if episode % 2 == 1:
        await _op(tally, "threads.update_state", threads.update_state(
            thread, {"flags": ["soak: reviewed"]}, as_node="cite_verdict"))
    if episode % 3 == 0:
        await _fork(user, tally, thread, load, episode)
    await _check_runs(user, tally, thread)
    while len(kept) > load.keep:
        oldest = kept.popleft()
        await _op(tally, "threads.delete", threads.delete(oldest))
        user.deleted.add(oldest)


async def _session(user: User, session: int, tally: Tally, load: Load, stop_at: float,
                   first: int) -> None:
    """Episodes until ``stop_at``, numbered from ``first`` (sessions start at different points
    of the mix)."""
    episode = first
    while time.monotonic() < stop_at:
        try:
            await _episode(user, session, tally, load, episode)
        except Exception as exc:  # noqa: BLE001  # every failure is counted, the load goes on
            tally.error(f"{user.name} session {session} episode {episode}", exc)
            await asyncio.sleep(1.0)
        tally.episodes += 1
        episode += 1


async def _stored(user: User) -> dict[str, int]:
    """The user's threads, root checkpoints and their bytes as the API lists them."""
    threads = []
    offset = 0
    while True:
        page = await user.client.threads.search(limit=100, offset=offset)
        threads += [t["thread_id"] for t in page]
        if len(page) < 100:
            break
        offset += 100
    checkpoints = size = 0
    for thread in threads:
        before = None
        try:
            while True:
                page = await user.client.threads.get_history(thread, limit=100, before=before)
                checkpoints += len(page)
                size += sum(len(json.dumps(h, separators=(",", ":")).encode()) for h in page)
                if len(page) < 100:
                    break
                before = page[-1]["checkpoint"]
        except Exception as exc:
            if status_of(exc) != 404:  # deleted by its session meanwhile
                raise
    return {"threads": len(threads), "checkpoints": checkpoints, "bytes": size}


async def _sampler(pid: int, users: list[User], tally: Tally, stop_at: float, every_s: float,
                   samples: list[dict[str, Any]], log: Path) -> None:
    """A sample every ``every_s`` seconds until ``stop_at``, each also appended to ``log`` (one
    JSON line; a long soak's figures so far can be read while it runs)."""
    while True:
        t = time.monotonic() - tally.t0
        row: dict[str, Any] = {"t_s": round(t, 1), "rss_mb": tree_rss_mb(pid),
                               "cpu_s": round(tree_cpu_s(pid), 2), "runs_done": len(tally.latencies)}
        try:
            per = [await _stored(u) for u in users]
            row["per_user"] = {u.name: p for u, p in zip(users, per, strict=True)}
            for key in ("threads", "checkpoints", "bytes"):
                row[key] = sum(p[key] for p in per)
            samples.append(row)
            with log.open("a", encoding="utf-8") as out:
                out.write(json.dumps({**row, "errors": tally.errors,
                                      "lost": len(tally.lost_runs) + len(tally.lost_threads)})
                          + "\n")
        except Exception as exc:  # noqa: BLE001
            tally.error("sampler", exc)
        if time.monotonic() + every_s > stop_at:
            return
        await asyncio.sleep(max(0.0, every_s - (time.monotonic() - tally.t0 - t)))


async def _final_checks(users: list[User], tally: Tally) -> None:
    """Every thread a session kept answers, and all its runs ended."""
    for user in users:
        for kept in user.kept:
            for thread in list(kept):
                try:
                    await _op(tally, "threads.get", user.client.threads.get(thread))
                    await _check_runs(user, tally, thread)
                except Exception as exc:  # noqa: BLE001
                    if status_of(exc) == 404:
                        tally.lost_threads.append(f"{user.name} {thread} (final read)")
                    else:
                        tally.error(f"{user.name} final read of {thread}", exc)


async def _server_cpu_per_claim(pid: int, user: User, tally: Tally, load: Load,
                                claims: list[str], concurrency: int = 4) -> dict[str, Any]:
    """Server CPU seconds per Tool-MAD claim (a new thread, ``runs.wait``, the thread deleted),
    nothing else running; the server's idle CPU over as long is reported beside it. A failed
    claim is one of the soak's errors, and the figure is per claim that succeeded."""
    idle0, t_idle = tree_cpu_s(pid), time.monotonic()
    await asyncio.sleep(5.0)
    idle_rate = (tree_cpu_s(pid) - idle0) / (time.monotonic() - t_idle)
    gate = asyncio.Semaphore(concurrency)
    ctx = {"debater_model": f"scripted:agree?latency={load.latency:g}", "max_rounds": load.rounds}

    async def one(claim: str) -> bool:
        async with gate:
            try:
                thread = (await _op(tally, "threads.create", user.client.threads.create()))
                out = await _op(tally, "runs.wait", user.client.runs.wait(
                    thread["thread_id"], load.graph, input={"claim": claim}, context=ctx))
                if not isinstance(out, dict) or "__error__" in out or "label" not in out:
                    raise RuntimeError(f"run on {thread['thread_id']} failed: {out}")
                await _op(tally, "threads.delete", user.client.threads.delete(thread["thread_id"]))
            except Exception as exc:  # noqa: BLE001  # counted; the other claims go on
                tally.error(f"{user.name} CPU phase", exc)
                return False
            return True

    cpu0, t0 = tree_cpu_s(pid), time.monotonic()
    done = sum(await asyncio.gather(*(one(c) for c in claims)))
    cpu, wall = tree_cpu_s(pid) - cpu0, time.monotonic() - t0
    return {"server_cpu_s_per_claim": round(cpu / done, 4) if done else None,
            "server_idle_cpu_s_per_s": round(idle_rate, 4),
            "server_cpu_s_per_claim_less_idle": (round((cpu - idle_rate * wall) / done, 4)
                                                 if done else None),
            "cpu_phase_claims_done": done, "cpu_phase_wall_s": round(wall, 2)}


ALONE_RUNS_PER_MODE = 4
"""Runs per client mode in the alone phase (after the CPU phase, nothing else running)."""


async def _one_alone(user: User, tally: Tally, load: Load, mode: str) -> float | None:
    """Seconds of one ``agree`` run on a new thread started 0-0.5 s after the thread's create
    (so a queue that polls shows its wait); None when it failed (one of the soak's errors)."""
    import random

    try:
        thread = (await _op(tally, "threads.create", user.client.threads.create()))
        await asyncio.sleep(random.uniform(0.0, 0.5))  # noqa: S311  # a phase, not a secret
        quiet = Tally()  # this run stays out of the mix's latencies
        await _run(user, quiet, thread["thread_id"], load, mode,
                   input={"claim": load.claims[0]}, context=load.context(0))
        await _op(tally, "threads.delete", user.client.threads.delete(thread["thread_id"]))
    except Exception as exc:  # noqa: BLE001  # counted; the other runs go on
        tally.error(f"{user.name} alone phase ({mode})", exc)
        return None
    return quiet.latencies[0][1]


async def _alone_latency(user: User, tally: Tally, load: Load,
                         runs: int = ALONE_RUNS_PER_MODE) -> dict[str, Any]:
    """Median latency of one ``agree`` run at a time on a new thread, per client mode (wait,
    stream, background)."""
    out: dict[str, Any] = {}
    for mode in ("wait", "stream", "background"):
        seconds = [s for s in [await _one_alone(user, tally, load, mode) for _ in range(runs)]
                   if s is not None]
        out[mode] = round(statistics.median(seconds), 3) if seconds else None
    return {"run_alone_latency_s": out, "run_alone_runs_per_mode": runs}


async def _lean_cpu_per_claim(index: Path, db: Path, load: Load, claims: list[str],
                              concurrency: int = 4) -> dict[str, Any]:
    """This process's CPU seconds per claim of the CLI's lean Tool-MAD (``run_graph``, the SQLite
    saver of CLI runs), the same model and claims; one untimed warm-up claim first, then one
    alone whose model calls' longest chain is the critical path of the mix's ``agree`` episode
    (the model's latency per call on that chain)."""
    from factdebate.core.models import load_model
    from factdebate.evaluation.timeline import longest_chain
    from factdebate.nodes.tool_mad.state import ToolMadContext
    from factdebate.run.claims import open_sqlite_saver
    from factdebate.run.engine import run_graph

    ctx = ToolMadContext(debater_model=f"scripted:agree?latency={load.latency:g}",
                         max_rounds=load.rounds, index_dir=str(index))
    gate = asyncio.Semaphore(concurrency)
    async with open_sqlite_saver(db) as saver:
        async def one(claim: str) -> None:
            async with gate:
                out = await run_graph(load.graph, {"claim": claim}, ctx, checkpointer=saver)
                if "label" not in out:
                    raise RuntimeError(f"lean run of {claim!r} has no label: {out}")

        await one(claims[0])
        model = load_model(ctx.debater_model)  # the scripted double: one instance per spec
        model.reset()
        await one(claims[0])  # alone: its calls' timeline gives the episode's critical path
        chain = longest_chain(model.timeline)
        cpu0, t0 = time.process_time(), time.monotonic()
        await asyncio.gather(*(one(c) for c in claims))
        cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
    return {"lean_cpu_s_per_claim": round(cpu / len(claims), 4), "lean_wall_s": round(wall, 2),
            "critical_path_calls": chain, "critical_path_s": round(chain * load.latency, 3)}


# --- the server --------------------------------------------------------------------------------
def server_env(work: Path, users: Iterable[User], index: Path) -> dict[str, str]:
    """The server's environment: this one, the users' keys, the scripted double allowed, the
    index and a home of its own, no analytics or tracing."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FACTDEBATE_API_KEY", "FACTDEBATE_MAX_", "FACTDEBATE_ALLOWED",
                                "FACTDEBATE_AUTH"))}
    env.update({
        "FACTDEBATE_API_KEYS": ",".join(f"{u.name}:{u.key}" for u in users),
        SCRIPTED_ENV: "1", "FACTDEBATE_HOME": str(work / "home"),
        "FACTDEBATE_INDEX_DIR": str(index), "FACTDEBATE_MILVUS_URI": "",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
    })
    return env


# --- the benchmark -----------------------------------------------------------------------------
async def _soak(pid: int, url: str, users: list[User], load: Load, *, duration_s: float,
                sessions: int, sample_s: float, cpu_claims: list[str], log: Path,
                progress: StageProgress | None = None) -> dict[str, Any]:
    """The mix with its sampler, the final reads, then the server's CPU per claim (each a stage
    of ``progress``)."""
    from langgraph_sdk import get_client

    for user in users:
        user.client = get_client(url=url, api_key=user.key)
        user.kept = [deque() for _ in range(sessions)]
    tally = Tally()
    stop_at = tally.t0 + duration_s
    samples: list[dict[str, Any]] = []

    def how_far() -> tuple[int, str]:
        rss = f", server RSS {samples[-1]['rss_mb']:,.0f} MB" if samples else ""
        return (min(int(time.monotonic() - tally.t0), int(duration_s)),
                f"{len(tally.latencies):,} runs, {tally.errors} errors{rss}")

    if progress:
        progress.stage(f"mixed load of {len(users)} user{'s' if len(users) > 1 else ''}",
                       int(duration_s), "s", rate=False, probe=how_far)
    sampler = asyncio.create_task(_sampler(pid, users, tally, stop_at, sample_s, samples, log))
    await asyncio.gather(*(
        _session(u, s, tally, load, stop_at, first=i * sessions + s)
        for i, u in enumerate(users) for s in range(sessions)))
    mix_wall = time.monotonic() - tally.t0
    await sampler
    if progress:
        progress.end()
        progress.stage("read back every kept thread and its runs")
    await _final_checks(users, tally)
    if progress:
        progress.end()
        progress.stage(f"server CPU per claim ({len(cpu_claims)} claims)")
    cpu = await _server_cpu_per_claim(pid, users[0], tally, load, cpu_claims)
    if progress:
        progress.end()
        progress.stage(f"one run at a time ({3 * ALONE_RUNS_PER_MODE} runs)")
    alone = await _alone_latency(users[0], tally, load)
    if progress:
        progress.end()
    return {"tally": tally, "samples": samples, "mix_wall_s": round(mix_wall, 1), **cpu,
            **alone}


def run_soak_bench(work_dir: Path, index: Path, claims: list[str], *, duration_s: float = 1800.0,
                   users: int = 4, sessions: int = 2, jobs: int = 8, latency: float = 1.0,
                   rounds: int = 1, keep: int = 3, sample_s: float | None = None,
                   warmup_s: float | None = None, cpu_claims: int = 24,
                   progress_every: float = 10.0) -> dict[str, Any]:
    """The soak (module docstring): start the server on a copy of ``index``, run the mix for
    ``duration_s``, measure CPU per claim of the server and of the lean variant, stop it; a
    progress line on stderr every ``progress_every`` seconds (the stage, the runs so far)."""
    from factdebate.run.claims import run_async

    if sessions > 4:
        raise ValueError("bench soak: at most 4 sessions per user (the server's per-user run "
                         "limit, FACTDEBATE_MAX_RUNS_PER_USER, is 4)")
    work = work_dir / "soak"
    if work.exists():
        shutil.rmtree(work / "app", ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    server_index = work / "server-index"  # Milvus Lite opens a folder in one process at a time
    shutil.rmtree(server_index, ignore_errors=True)
    shutil.copytree(index, server_index)
    (work / "samples.jsonl").unlink(missing_ok=True)
    sample_s = sample_s or max(10.0, duration_s / 60)
    warmup_s = duration_s / 10 if warmup_s is None else warmup_s
    people = [User(f"soak{i + 1}", secrets.token_urlsafe(24)) for i in range(users)]
    load = Load(claims=claims, latency=latency, rounds=rounds, keep=keep)
    timed = claims[:cpu_claims] if len(claims) >= cpu_claims else \
        [claims[i % len(claims)] for i in range(cpu_claims)]
    with StageProgress("soak", every=progress_every) as progress:
        progress.stage("start langgraph dev")
        proc, url = start_langgraph_dev(work, server_env(work, people, server_index),
                                        args=("--n-jobs-per-worker", str(jobs)))
        progress.end(url)
        try:
            start_rss = tree_rss_mb(proc.pid)
            out = run_async(_soak(proc.pid, url, people, load, duration_s=duration_s,
                                  sessions=sessions, sample_s=sample_s, cpu_claims=timed,
                                  log=work / "samples.jsonl", progress=progress))
            end_rss = tree_rss_mb(proc.pid)
        finally:
            stop_langgraph_dev(proc)
        tally: Tally = out.pop("tally")
        progress.stage(f"CLI lean CPU per claim ({len(timed)} claims)")
        try:
            lean = run_async(_lean_cpu_per_claim(index, work / "lean.sqlite", load, timed))
        except Exception as exc:  # noqa: BLE001  # the soak's figures are kept, the failure counted
            tally.error("lean CPU phase", exc)
            lean = {"lean_cpu_s_per_claim": None, "lean_wall_s": None,
                    "critical_path_calls": None, "critical_path_s": None}
        progress.end()
    samples = out.pop("samples")
    figures = summarize(samples, tally.latencies, duration_s=duration_s, warmup_s=warmup_s,
                        errors=tally.errors, lost_runs=len(tally.lost_runs),
                        lost_threads=len(tally.lost_threads))
    ratio = (round(out["server_cpu_s_per_claim"] / lean["lean_cpu_s_per_claim"], 3)
             if out["server_cpu_s_per_claim"] and lean["lean_cpu_s_per_claim"] else None)
    result: dict[str, Any] = {
        "duration_s": duration_s, "users": users, "sessions": sessions, "jobs": jobs,
        "model": f"scripted:agree?latency={latency:g} (every 4th episode scripted:disagree, "
                 f"{max(2, rounds)} rounds)", "graph": load.graph, "rounds": rounds,
        "keep_threads_per_session": keep, "sample_s": sample_s, "warmup_s": warmup_s,
        "server_rss_mb_at_start": start_rss, "server_rss_mb_at_end": end_rss,
        "stored_per_user_at_end": samples[-1]["per_user"] if samples else {},
        **figures, "runs_per_s": round(len(tally.latencies) / max(out["mix_wall_s"], 1e-9), 3),
        "episodes": tally.episodes, "runs_checked": tally.runs_checked,
        "operations": dict(sorted(tally.operations.items())),
        **out, **lean, "server_cpu_over_lean": ratio, "cpu_claims": len(timed),
        "error_messages": tally.error_messages,
        "lost": (tally.lost_runs + tally.lost_threads)[:MAX_ERROR_MESSAGES],
        "budget": (f"after the warm-up, mean server RSS and stored checkpoints of the last quarter "
                   f"<= {1 + GROWTH_BUDGET:.2f} x the first quarter's; 0 errors; 0 lost runs "
                   f"and threads; server CPU per claim <= {SERVER_OVER_LEAN_BUDGET} x the CLI "
                   f"lean variant's; p50 run latency <= {P50_OVER_CRITICAL_BUDGET:.2f} x the "
                   "critical path"),
        "samples": samples,
    }
    critical = lean.get("critical_path_s")
    p50 = figures.get("run_latency_p50_s")
    result["run_latency_p50_over_critical_path"] = (round(p50 / critical, 3)
                                                    if p50 and critical else None)
    result["run_alone_latency_over_critical_path"] = {
        mode: round(seconds / critical, 3) if seconds and critical else None
        for mode, seconds in result.get("run_alone_latency_s", {}).items()}
    result["budgets"] = [*soak_budgets(figures, duration_s), *cpu_budgets(result)]
    result["budget_met"] = legacy_met(True, result["budgets"])
    print(summary_text(result), file=sys.stderr, flush=True)
    return result
