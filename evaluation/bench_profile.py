"""``factdebate bench profile``: where the CPU of a claim goes, by owner, on each path users take.

The same Tool-MAD claims (the scripted test double with a provider's latency, the demo index) run
on three paths, each measured twice - once for its CPU seconds per claim (nothing attached), once
under ``py-spy record --gil`` (raw collapsed stacks, 250 Hz, the thread holding the GIL: Python
work on any thread; native work that releases the GIL, such as SQLite or ONNX Runtime, shows as
its caller's absence):

* ``cli_lean`` - the CLI's path: ``run_graph`` with the lean turns and the SQLite saver of CLI
  runs, in a subprocess of its own (``python -m factdebate.evaluation.bench_profile --cli``);
* ``server`` - a real ``langgraph dev`` (the graphs ``langgraph.json`` exports: visible turns;
  ``--n-jobs-per-worker 8``, one API key), each claim a new thread, ``runs.wait``, the thread
  deleted: the CPU of the server's process tree;
* ``server_inner_checkpoints`` - the same server and claims with ``inner_checkpoints`` set in the
  run's context: every node inside a turn writes a checkpoint, as every server run did before the
  visible turns wrote them only on demand (graphs/turns.py).

Each profile's samples are grouped by **owner**: a sample belongs to the innermost frame of its
stack that has one (a standard-library frame - ``json``, ``re``, ``asyncio`` - counts for the code
that called it), in the order of :data:`OWNERS`: checkpoint serialisation and writes, LangGraph's
loop, LangChain callbacks and tracing, the rest of LangChain, our filters, our reducers and state,
our nodes and tools, the scripted model and the real compute (embeddings, Milvus Lite, numpy), the
HTTP/SSE layer (langgraph-api, Starlette, uvicorn), and the event loop with nothing else on the
stack. Checkpoints per claim are counted in this process on an ``InMemorySaver`` (every namespace)
for the exported graph and for the lean one, over the same claims - the server's own saver is not
readable from outside.

The CPU is measured in blocks of 4 claims (the demo set's 40 claims: ten blocks), each block on
every path in an order that alternates (the CLI in one warm worker process that measures a block
per request, :class:`CliWorker`; the two server paths on one server), so that the machine's drift
over seconds and minutes - large on a shared host - falls on every path alike; every path warms up
on the same two claims first. The ratio of each block is reported beside the ratio of the sums,
which is the figure judged.

Figures: CPU seconds per claim of each path and the ratios ``server / cli_lean`` (budget <= 1.3)
and ``server_inner_checkpoints / cli_lean``; per path the owner shares and seconds per claim; the
profiles are kept as ``OUT/profile-<path>.txt``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from factdebate.evaluation.bench_budgets import budget, overall
from factdebate.evaluation.bench_floor import _frame_name, raw_samples

SERVER_OVER_LEAN_BUDGET = 1.3
"""Largest server CPU per claim over the CLI's lean variant's (the same claims, one run)."""
PATHS = ("cli_lean", "server", "server_inner_checkpoints")
GRAPH = "tool_mad"

OWNERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("checkpoints", ("factdebate/run/checkpoint", "factdebate/evaluation/checkpointers",
                     "checkpoint/", "serde/", "sqlite/", "memory/", "aiosqlite/", "ormsgpack/",
                     "langgraph_runtime_inmem/checkpoint", "langgraph_checkpoint")),
    ("langgraph_loop", ("pregel/", "_internal/", "channels/", "graph/", "managed/", "func/",
                        "runtime", "types.py", "langgraph/")),
    ("langchain_callbacks_tracing", ("langchain_core/callbacks/", "langchain_core/tracers/",
                                     "langsmith/")),
    ("langchain_other", ("langchain_core/", "langchain/", "langchain_openai/", "pydantic/",
                         "pydantic_core/", "tenacity/")),
    ("filters", ("factdebate/core/secrets_filter", "factdebate/core/trace_filter",
                 "factdebate/core/control", "factdebate/core/egress", "factdebate/core/redact",
                 "factdebate/server/egress")),
    ("our_state", ("factdebate/nodes/state", "/state.py", "factdebate/core/reducers",
                   "factdebate/nodes/reducers")),
    ("model_double_and_compute", ("factdebate/testing/", "testing/", "numpy/", "onnxruntime/",
                                  "tokenizers/", "transformers/", "torch/", "pymilvus/", "grpc/",
                                  "milvus_lite/", "sentence_transformers/", "tantivy/")),
    ("our_nodes_tools", ("factdebate/",)),
    ("http_sse", ("langgraph_api/", "langgraph_runtime_inmem/", "starlette/", "uvicorn/",
                  "sse_starlette/", "httptools/", "h11/", "anyio/", "orjson/", "structlog/",
                  "langgraph_license/", "langgraph_sdk/", "httpx/", "httpcore/", "watchfiles/",
                  "jsonschema_rs/", "blockbuster/", "cloudpickle/")),
)
"""Owner -> path prefixes (or parts) of its frames as ``_frame_name`` names them (langgraph's
own modules appear without ``langgraph/``; the checkout's files as ``factdebate/...``). The first
owner whose pattern a frame matches owns it; a frame no owner matches (the standard library,
anything else) passes the sample on to its caller."""

EVENT_LOOP = "event_loop_only"
"""The owner of a sample whose whole stack is the standard library (asyncio's loop, threads)."""


def frame_owner(frame: str) -> str | None:
    """The owner (:data:`OWNERS`) of one raw py-spy frame, or None (standard library, other)."""
    name, package = _frame_name(frame)
    if package == "stdlib":
        return None
    path = name.rsplit(" (", 1)[-1].rstrip(")")
    if package == "langgraph":
        path = "langgraph/" + path if not path.startswith("langgraph") else path
        for owner, parts in OWNERS[:1]:
            if any(p in path for p in parts):
                return owner
        return "langgraph_loop"
    for owner, parts in OWNERS:
        if owner == "langgraph_loop":
            continue
        if any(path.startswith(p) or ("/" in p and p.startswith("/") and p in path)
               for p in parts):
            return owner
    return None


def owners_of(path: Path) -> dict[str, Any]:
    """Samples of a py-spy raw profile by owner: ``{"samples": n, "shares": {owner: share}}``,
    each sample counted once, for the innermost frame that has an owner."""
    counts: Counter[str] = Counter()
    total = 0
    for frames, n in raw_samples(path):
        total += n
        owner = next((o for o in map(frame_owner, reversed(frames)) if o), EVENT_LOOP)
        counts[owner] += n
    names = [o for o, _ in OWNERS] + [EVENT_LOOP]
    return {"samples": total,
            "shares": {o: round(counts[o] / total, 4) if total else 0.0 for o in names}}


def _spy() -> list[str]:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return [spy, "record", "--gil", "-r", "250", "-f", "raw", "--subprocesses"]


def _context(index: Path | None, latency: float, rounds: int, inner: bool = False
             ) -> dict[str, Any]:
    ctx: dict[str, Any] = {"debater_model": f"scripted:agree?latency={latency:g}",
                           "max_rounds": rounds}
    if index is not None:  # the server's index is the operator's (FACTDEBATE_INDEX_DIR)
        ctx["index_dir"] = str(index)
    if inner:
        ctx["inner_checkpoints"] = True
    return ctx


# --- the CLI path: a subprocess of its own ------------------------------------------------------
def _lean_claim(index: Path, latency: float, rounds: int, concurrency: int, saver: Any
                ) -> Callable[[str], Awaitable[None]]:
    """One claim of the CLI's lean Tool-MAD on ``saver`` (``run_graph``, as the CLI runs it), at
    most ``concurrency`` at once; a run without a label raises."""
    from factdebate.nodes.tool_mad.state import ToolMadContext
    from factdebate.run.engine import run_graph

    ctx = ToolMadContext(**_context(index, latency, rounds))
    gate = asyncio.Semaphore(concurrency)

    async def one(claim: str) -> None:
        async with gate:
            out = await run_graph(GRAPH, {"claim": claim}, ctx, checkpointer=saver)
            if "label" not in out:
                raise RuntimeError(f"lean run of {claim!r} has no label")

    return one


async def _cli_claims(index: Path, db: Path, claims: Sequence[str], latency: float, rounds: int,
                      concurrency: int, spy: list[str] | None, profile: Path | None
                      ) -> dict[str, Any]:
    from factdebate.run.claims import open_sqlite_saver

    async with open_sqlite_saver(db) as saver:
        one = _lean_claim(index, latency, rounds, concurrency, saver)
        for claim in claims[:2]:  # warm-up: imports, the index opened, caches filled
            await one(claim)
        recorder = None
        if spy and profile:
            recorder = subprocess.Popen([*spy, "-o", str(profile), "--pid", str(os.getpid())])
            await asyncio.sleep(1.0)
        cpu0, t0 = time.process_time(), time.monotonic()
        await asyncio.gather(*(one(c) for c in claims))
        cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
        if recorder is not None:
            recorder.send_signal(signal.SIGINT)
            recorder.wait(timeout=120)
    return {"cpu_s_per_claim": round(cpu / len(claims), 4), "wall_s": round(wall, 2)}


async def _cli_serve(index: Path, db: Path, warmup: Sequence[str], latency: float, rounds: int,
                     concurrency: int) -> None:
    """The CLI path's worker process: the ``warmup`` claims untimed, then one block per line of
    stdin (a JSON list of claims), each answered with one line on stdout (the block's CPU per
    claim and wall time, as :func:`_cli_claims` measures them); ends at end of input."""
    from factdebate.run.claims import open_sqlite_saver

    loop = asyncio.get_running_loop()
    async with open_sqlite_saver(db) as saver:
        one = _lean_claim(index, latency, rounds, concurrency, saver)
        for claim in warmup:  # imports, the index opened, caches filled, the heap frozen
            await one(claim)
        print(json.dumps({"ready": True}), flush=True)
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            claims = json.loads(line)
            cpu0, t0 = time.process_time(), time.monotonic()
            await asyncio.gather(*(one(c) for c in claims))
            cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
            print(json.dumps({"cpu_s_per_claim": round(cpu / len(claims), 4),
                              "wall_s": round(wall, 2)}), flush=True)


class CliWorker:
    """The CLI path as one long-lived subprocess (``--cli-serve``) that measures a block of
    claims per request: one warm process for every block, as a CLI ``eval`` runs its items, so
    blocks can be small and alternate often with the server paths."""

    def __init__(self, index: Path, work: Path, warmup: Sequence[str], latency: float,
                 rounds: int, concurrency: int) -> None:
        db = work / "cli.sqlite"
        db.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "factdebate.evaluation.bench_profile", "--cli-serve",
             "--index", str(index), "--work", str(work), "--latency", str(latency),
             "--rounds", str(rounds), "--concurrency", str(concurrency),
             "--claims-json", json.dumps(list(warmup))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._answer()  # {"ready": true}

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=30)
            err = self.proc.stderr.read() if self.proc.stderr is not None else ""
            raise RuntimeError(f"cli_lean worker: exit {self.proc.returncode}: "
                               f"{err.strip()[-600:]}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def measure(self, claims: Sequence[str]) -> dict[str, Any]:
        """CPU per claim and wall seconds of ``claims`` run at once in the worker."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(list(claims)) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        """End the worker (end of its input), killed if it does not end within 60 s."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _cli_path(index: Path, work: Path, claims: Sequence[str], latency: float, rounds: int,
              concurrency: int, profile: Path | None) -> dict[str, Any]:
    """``cli_lean`` in a subprocess (its own interpreter, as the CLI runs)."""
    out = work / ("cli-profiled.json" if profile else "cli.json")
    command = [sys.executable, "-m", "factdebate.evaluation.bench_profile", "--cli",
               "--index", str(index), "--work", str(work), "--latency", str(latency),
               "--rounds", str(rounds), "--concurrency", str(concurrency),
               "--claims-json", json.dumps(list(claims)), "--out-json", str(out)]
    if profile:
        command += ["--spy-json", json.dumps(_spy()), "--profile", str(profile)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if proc.returncode != 0 or not out.is_file():
        raise RuntimeError(f"cli_lean subprocess: exit {proc.returncode}: "
                           f"{proc.stderr.strip()[-600:]}")
    return json.loads(out.read_text())


# --- the server paths ---------------------------------------------------------------------------
async def _server_claims(url: str, key: str, pid: int, claims: Sequence[str],
                         context: dict[str, Any], concurrency: int) -> dict[str, Any]:
    from langgraph_sdk import get_client

    from factdebate.evaluation.bench_soak import tree_cpu_s

    client = get_client(url=url, api_key=key)
    gate = asyncio.Semaphore(concurrency)

    async def one(claim: str) -> None:
        async with gate:
            thread = await client.threads.create()
            out = await client.runs.wait(thread["thread_id"], GRAPH, input={"claim": claim},
                                         context=context)
            if not isinstance(out, dict) or "label" not in out:
                raise RuntimeError(f"server run of {claim!r} failed: {str(out)[:300]}")
            await client.threads.delete(thread["thread_id"])

    cpu0, t0 = tree_cpu_s(pid), time.monotonic()
    await asyncio.gather(*(one(c) for c in claims))
    cpu, wall = tree_cpu_s(pid) - cpu0, time.monotonic() - t0
    return {"cpu_s_per_claim": round(cpu / len(claims), 4), "wall_s": round(wall, 2)}


def _server_paths(index: Path, work: Path, out_dir: Path, claims: Sequence[str], latency: float,
                  rounds: int, concurrency: int, profile: bool, block: int
                  ) -> tuple[dict[str, dict[str, Any]], list[dict[str, float]]]:
    """All three paths, measured on one ``langgraph dev`` in blocks of ``block`` claims: each
    block runs on every path, in an order that alternates (A B C, C B A, ...), so a drift of the
    machine or of the server over time (its in-memory store, background work a window leaves to
    the next) falls on every path alike; then each path is profiled. Returns the figures per path
    and each block's CPU per claim per path."""
    from factdebate.evaluation.bench_soak import User, server_env
    from factdebate.evaluation.langgraph_dev import start_langgraph_dev, stop_langgraph_dev
    from factdebate.run.claims import run_async

    server_work = work / "server"
    shutil.rmtree(server_work, ignore_errors=True)
    server_work.mkdir(parents=True)
    server_index = server_work / "index"  # Milvus Lite opens a folder in one process at a time
    shutil.copytree(index, server_index)
    user = User("profile", secrets.token_urlsafe(24))
    env = server_env(server_work, [user], server_index)
    proc, url = start_langgraph_dev(server_work, env, args=("--n-jobs-per-worker", "8"))
    contexts = {"server": _context(None, latency, rounds),
                "server_inner_checkpoints": _context(None, latency, rounds, inner=True)}

    cli: CliWorker | None = None

    def measure(path: str, some: Sequence[str]) -> dict[str, Any]:
        if path == "cli_lean":
            assert cli is not None
            return cli.measure(some)
        return run_async(_server_claims(url, user.key, proc.pid, some, contexts[path],
                                        concurrency))

    spent = {path: [0.0, 0.0] for path in PATHS}
    blocks: list[dict[str, float]] = []
    try:
        # warm-up, the same claims on every path (imports, the index, the model double, caches)
        cli = CliWorker(index, work, claims[:2], latency, rounds, concurrency)
        for ctx in contexts.values():
            run_async(_server_claims(url, user.key, proc.pid, claims[:2], ctx, concurrency))
        for k in range(0, len(claims), block):
            some = claims[k:k + block]
            row: dict[str, float] = {}
            for path in (PATHS if (k // block) % 2 == 0 else PATHS[::-1]):
                got = measure(path, some)
                spent[path][0] += got["cpu_s_per_claim"] * len(some)
                spent[path][1] += got["wall_s"]
                row[path] = got["cpu_s_per_claim"]
            blocks.append(row)
        figures: dict[str, dict[str, Any]] = {
            path: {"cpu_s_per_claim": round(cpu / len(claims), 4), "wall_s": round(wall, 2)}
            for path, (cpu, wall) in spent.items()}
        if profile:
            for path, ctx in contexts.items():
                target = out_dir / f"profile-{path}.txt"
                target.unlink(missing_ok=True)
                recorder = subprocess.Popen([*_spy(), "-o", str(target), "--pid", str(proc.pid)])
                time.sleep(1.0)
                run_async(_server_claims(url, user.key, proc.pid, claims, ctx, concurrency))
                recorder.send_signal(signal.SIGINT)
                recorder.wait(timeout=120)
                figures[path]["profile"] = target
    finally:
        if cli is not None:
            cli.close()
        stop_langgraph_dev(proc)
    return figures, blocks


# --- checkpoints per claim ----------------------------------------------------------------------
async def _checkpoints(index: Path, claims: Sequence[str], latency: float, rounds: int
                       ) -> dict[str, Any]:
    """Checkpoints per claim (every namespace) of the exported graph without and with
    ``inner_checkpoints``, and of the lean graph, on an ``InMemorySaver``."""
    from langgraph.checkpoint.memory import InMemorySaver

    from factdebate.graphs.registry import build_framework
    from factdebate.nodes.tool_mad.state import ToolMadContext

    out: dict[str, Any] = {}
    for path, turns, inner in (("cli_lean", "lean", False), ("server", "visible", False),
                               ("server_inner_checkpoints", "visible", True)):
        saver = InMemorySaver()
        graph = build_framework(GRAPH, turns=turns).compile(checkpointer=saver)
        settings = _context(index, 0.0, rounds, inner=inner)
        if "inner_checkpoints" not in {f.name for f in dataclasses.fields(ToolMadContext)}:
            settings.pop("inner_checkpoints", None)  # a build before the knob: every visible
            # run wrote them (the profile of an earlier commit, for a before/after)
        ctx = ToolMadContext(**settings)
        for i, claim in enumerate(claims):
            await graph.ainvoke({"claim": claim}, {"configurable": {"thread_id": f"t{i}"}},
                                context=ctx)
        stored = sum(len(per_ns) for per_thread in saver.storage.values()
                     for per_ns in per_thread.values())
        out[path] = round(stored / len(claims), 1)
    return out


# --- the benchmark ------------------------------------------------------------------------------
def run_profile_bench(work_dir: Path, out_dir: Path, index: Path, claims: Sequence[str], *,
                      latency: float = 0.2, rounds: int = 1, concurrency: int = 4,
                      profile: bool = True, block: int = 4) -> dict[str, Any]:
    """The three paths (module docstring) on ``claims``, in blocks of ``block`` claims: CPU per
    claim, checkpoints per claim, the profiles by owner; ``claims[:2]`` are every path's
    warm-up."""
    from factdebate.run.claims import run_async

    work = work_dir / "profile"
    work.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures, blocks = _server_paths(index, work, out_dir, claims, latency, rounds, concurrency,
                                    profile, block)
    if profile:
        target = out_dir / "profile-cli_lean.txt"
        target.unlink(missing_ok=True)
        _cli_path(index, work, claims, latency, rounds, concurrency, target)
        figures["cli_lean"]["profile"] = target
    checkpoints = run_async(_checkpoints(index, claims[:4], latency, rounds))
    lean = figures["cli_lean"]["cpu_s_per_claim"]
    result: dict[str, Any] = {
        "graph": GRAPH, "model": f"scripted:agree?latency={latency:g}", "rounds": rounds,
        "claims": len(claims), "concurrency": concurrency,
        "profile_command": " ".join(_spy()) + " -o OUT/profile-<path>.txt --pid <pid>",
    }
    by_owner: dict[str, dict[str, Any]] = {}
    for path in PATHS:
        cpu = figures[path]["cpu_s_per_claim"]
        result[f"{path}_cpu_s_per_claim"] = cpu
        result[f"{path}_checkpoints_per_claim"] = checkpoints[path]
        if path != "cli_lean":
            result[f"{path}_over_cli_lean"] = round(cpu / lean, 3) if lean else None
        target = figures[path].get("profile")
        if isinstance(target, Path) and target.is_file():
            owners = owners_of(target)
            by_owner[path] = {"file": target.name, "samples": owners["samples"],
                              "cpu_s_per_claim": cpu,
                              "shares": owners["shares"],
                              "s_per_claim": {o: round(s * cpu, 4)
                                              for o, s in owners["shares"].items()}}
    result["by_owner"] = by_owner
    ratios = sorted(round(b["server"] / b["cli_lean"], 3) for b in blocks if b.get("cli_lean"))
    result["server_over_cli_lean_per_block"] = ratios  # the spread the one figure hides (sorted)
    result["blocks"] = len(blocks)
    result["cpu_s_per_claim_by_block"] = [  # in the order they ran
        {path: round(cpu, 4) for path, cpu in row.items()} for row in blocks]
    ratio = result["server_over_cli_lean"]
    result["budget"] = (f"server CPU per claim <= {SERVER_OVER_LEAN_BUDGET} x the CLI's lean "
                        "variant's")
    result["budgets"] = [budget("server_over_cli_lean", result["budget"], ratio, "<=",
                                SERVER_OVER_LEAN_BUDGET, unit="x")]
    result["budget_met"] = overall(result["budgets"])
    return result


def owner_table(by_owner: dict[str, Any]) -> list[str]:
    """Markdown: one row per owner, per path its share of the samples and CPU seconds per claim."""
    paths = [p for p in PATHS if p in by_owner]
    if not paths:
        return []
    lines = ["Where the CPU goes, by owner (share of py-spy samples; CPU s per claim = share x the "
             "path's CPU per claim):", "",
             "| owner | " + " | ".join(f"{p} share | {p} s/claim" for p in paths) + " |",
             "| --- |" + " --- | --- |" * len(paths)]
    owners = [o for o, _ in OWNERS] + [EVENT_LOOP]
    for owner in owners:
        cells = [f"{by_owner[p]['shares'].get(owner, 0):.1%} | "
                 f"{by_owner[p]['s_per_claim'].get(owner, 0):.4f}" for p in paths]
        lines.append(f"| {owner} | " + " | ".join(cells) + " |")
    lines.append("| samples | " + " | ".join(f"{by_owner[p]['samples']} | "
                                             f"{by_owner[p]['cpu_s_per_claim']}"
                                             for p in paths) + " |")
    return lines


def main(argv: list[str] | None = None) -> None:
    """The CLI path's subprocess (``--cli``)."""
    from factdebate.run.claims import run_async

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--cli", action="store_true", help="measure the claims once")
    mode.add_argument("--cli-serve", action="store_true",
                      help="warm up on the claims, then measure one block per line of stdin")
    parser.add_argument("--index", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--latency", type=float, required=True)
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--claims-json", required=True)
    parser.add_argument("--out-json")
    parser.add_argument("--spy-json")
    parser.add_argument("--profile")
    args = parser.parse_args(argv)
    work = Path(args.work)
    if args.cli_serve:
        run_async(_cli_serve(Path(args.index), work / "cli.sqlite", json.loads(args.claims_json),
                             args.latency, args.rounds, args.concurrency))
        return
    if not args.out_json:
        parser.error("--cli needs --out-json")
    db = work / "cli.sqlite"
    db.unlink(missing_ok=True)
    out = run_async(_cli_claims(Path(args.index), db, json.loads(args.claims_json),
                                args.latency, args.rounds, args.concurrency,
                                json.loads(args.spy_json) if args.spy_json else None,
                                Path(args.profile) if args.profile else None))
    Path(args.out_json).write_text(json.dumps(out), encoding="utf-8")


if __name__ == "__main__":
    main()
