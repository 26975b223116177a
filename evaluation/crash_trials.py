"""Crash trials: ``kill -9`` an evaluation at random points, resume, count the damage.

One uninterrupted reference run, then K trials. In each trial ``factdebate eval`` runs in its own
process group on the same items; after a seeded random number of finished rows (0 to N-2) plus a
seeded random delay it is killed with SIGKILL, then rerun with ``--resume`` until it exits 0.
Figures (written to ``OUT/crash_trials.json``):

* ``results_lost``: items of the run without a row after the resume (must be 0);
* ``results_duplicated``: extra rows of an item in ``results.jsonl`` - raw lines, not the
  de-duplicated view readers take (must be 0);
* ``summaries_identical``: trials whose summary (metrics, CI, per-class F1, stopping reasons,
  tool calls; wall time excluded) and per-item predictions equal the reference run's.

The model is the scripted double with a small latency, so a kill lands while items are in the
middle of their graphs and the checkpointer (SQLite file or PostgreSQL server) has to restore
them. Usage::

    python -m factdebate.evaluation.crash_trials --trials 10 --checkpointer sqlite --out runs/crash
    python -m factdebate.evaluation.crash_trials --trials 10 --checkpointer postgres --out runs/crash-pg

With ``postgres`` the database is ``$FACTDEBATE_POSTGRES_URI`` or, when unset, a throwaway local
server (``evaluation/local_postgres.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

FACTDEBATE = Path(sys.executable).parent / "factdebate"
LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
FRAMEWORK = "multi_agent_debate"
"""Three agents over two rounds and a vote: several checkpointed steps per item, no index."""


def write_items(path: Path, n: int) -> Path:
    """``n`` synthetic claims with balanced gold labels (control flow is tested, not accuracy)."""
    path.write_text("".join(json.dumps({"id": f"c{i:03d}", "claim": f"Claim {i} about a tower.",
                                        "label": LABELS[i % 3]}) + "\n" for i in range(n)),
                    encoding="utf-8")
    return path


def eval_command(items: Path, out: Path, args: argparse.Namespace) -> list[str]:
    cmd = [str(FACTDEBATE), "eval", "--framework", args.framework, "--dataset", str(items),
           "--model", f"scripted:disagree?latency={args.latency}", "--out", str(out),
           "--concurrency", str(args.concurrency), "--checkpointer", args.checkpointer]
    return cmd


def raw_rows(out: Path) -> list[dict[str, Any]]:
    """Every complete line of ``results.jsonl``, duplicates included."""
    path = out / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines(True)
            if line.endswith("\n")]


def comparable(out: Path) -> dict[str, Any]:
    """Summary and per-item predictions without what legitimately differs between runs."""
    run = json.loads((out / "summary.json").read_text(encoding="utf-8"))["runs"][0]
    run = {k: v for k, v in run.items() if k not in ("run_id", "run_dir", "name")}  # name = folder
    run["metrics"] = {k: v for k, v in run["metrics"].items() if k != "wall_time_s"}
    rows = {r["item_id"]: [r["status"], r.get("prediction"), r.get("rounds"), r.get("stopped_by"),
                           r.get("ledger", {}).get("llm_calls")] for r in raw_rows(out)}
    return {"summary": run, "rows": rows}


def differences(got: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    """What a resumed run's ``comparable`` output has that the reference's has not (first 5)."""
    found = [f"summary.{k}: {got['summary'].get(k)!r} != {v!r}"
             for k, v in reference["summary"].items() if got["summary"].get(k) != v]
    found += [f"row {i}: {got['rows'].get(i)!r} != {v!r}"
              for i, v in reference["rows"].items() if got["rows"].get(i) != v]
    return found[:5]


def _kill_at(proc: subprocess.Popen, out: Path, rows: int, delay: float, deadline: float) -> int:
    """SIGKILL the process group once ``rows`` rows exist plus ``delay``; rows seen at the kill."""
    while time.monotonic() < deadline and proc.poll() is None:
        if len(raw_rows(out)) >= rows:
            time.sleep(delay)
            break
        time.sleep(0.02)
    seen = len(raw_rows(out))
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return seen


def trial(n: int, items: Path, out: Path, args: argparse.Namespace, rng: random.Random,
          env: dict[str, str], reference: dict[str, Any]) -> dict[str, Any]:
    """One kill and resume; the trial's figures."""
    target, delay = rng.randint(0, args.items - 2), rng.uniform(0, 0.1)
    proc = subprocess.Popen(eval_command(items, out, args), env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows_at_kill = _kill_at(proc, out, target, delay, time.monotonic() + args.timeout)
    resumes = 0
    while True:
        resumes += 1
        done = subprocess.run([*eval_command(items, out, args), "--resume"], env=env,
                              capture_output=True, text=True, timeout=args.timeout)
        if done.returncode == 0 or resumes >= 3:
            break
    rows = raw_rows(out)
    ids = Counter(r["item_id"] for r in rows)
    expected = set(reference["rows"])
    diff = differences(comparable(out), reference) if done.returncode == 0 else []
    return {
        "trial": n, "kill_after_rows": target, "kill_delay_s": round(delay, 3),
        "rows_at_kill": rows_at_kill, "resume_exit_code": done.returncode, "resumes": resumes,
        "results_lost": len(expected - set(ids)), "results_duplicated": sum(ids.values()) - len(ids),
        "summary_identical": done.returncode == 0 and not diff, "differences": diff,
        "error": "" if done.returncode == 0 else done.stderr.strip()[-500:],
    }


def run_trials(args: argparse.Namespace) -> dict[str, Any]:
    """Reference run, then ``args.trials`` kill/resume trials; the figures."""
    args.out.mkdir(parents=True, exist_ok=True)
    items = write_items(args.out / "items.jsonl", args.items)
    with ExitStack() as stack:
        env = {**os.environ, "FACTDEBATE_HOME": str(args.out / "home"), "LANGSMITH_TRACING": "false"}
        if args.checkpointer == "postgres" and not env.get("FACTDEBATE_POSTGRES_URI"):
            from factdebate.evaluation.local_postgres import local_postgres

            env["FACTDEBATE_POSTGRES_URI"] = stack.enter_context(local_postgres())
        started = time.monotonic()
        ref_out = args.out / "reference"
        done = subprocess.run(eval_command(items, ref_out, args), env=env, capture_output=True,
                              text=True, timeout=args.timeout)
        if done.returncode != 0:
            raise SystemExit(f"reference run failed: {done.stderr[-2000:]}")
        reference = comparable(ref_out)
        rng = random.Random(args.seed)
        trials = [trial(n, items, args.out / f"trial-{n:02d}", args, rng, env, reference)
                  for n in range(1, args.trials + 1)]
    figures = {
        "checkpointer": args.checkpointer, "framework": args.framework, "items": args.items,
        "trials": args.trials, "seed": args.seed, "latency_s": args.latency,
        "concurrency": args.concurrency,
        "results_lost": sum(t["results_lost"] for t in trials),
        "results_duplicated": sum(t["results_duplicated"] for t in trials),
        "summaries_identical": sum(t["summary_identical"] for t in trials),
        "kills_mid_run": sum(0 < t["rows_at_kill"] < args.items for t in trials),
        "wall_time_s": round(time.monotonic() - started, 1),
        "per_trial": trials,
    }
    (args.out / "crash_trials.json").write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--checkpointer", choices=["sqlite", "postgres"], default="sqlite")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--items", type=int, default=12)
    p.add_argument("--concurrency", type=int, default=3)
    p.add_argument("--latency", type=float, default=0.05, help="Scripted model latency, s.")
    p.add_argument("--framework", default=FRAMEWORK)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=300, help="Per eval process, s.")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    figures = run_trials(parse_args(argv))
    shown = {k: v for k, v in figures.items() if k != "per_trial"}
    print(json.dumps(shown, indent=2))
    bad = figures["results_lost"] or figures["results_duplicated"] or \
        figures["summaries_identical"] != figures["trials"]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
