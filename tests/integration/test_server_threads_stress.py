"""No thread is lost on a busy ``langgraph dev``: users run graphs, write state and delete their
own oldest threads, all at once; every thread a user did not delete answers every call.

The failure this guards against: langgraph-runtime-inmem's ``Threads.delete`` finds the
thread's index in the server's thread list, awaits the auth handler, then pops that index; a
handler that waits (it used to ask the server which runs made the thread, to free their bytes)
lets another delete pop an earlier thread in between, and the stale index then removes a
*different* thread - often another user's - with everything in it (``runs/wait`` answers 404
"Thread or assistant not found", its owner's DELETE 404). ``Threads.patch`` replaces by index the
same way. The server's delete and patch handlers now never wait (``factdebate.server.auth``), and
this test makes the race happen on demand: each user deletes two threads at once, so deletes of
four users overlap on every round.

Both run in the slow tier (a server of its own and 20 s or more of load each): the mix for 20 s
and for 150 s (the length of the reported failure).
``python -m tests.integration.test_server_threads_stress --seconds 600`` runs the 10-minute
measurement against a fresh server and prints its counts.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.servers import (
    needs_langgraph,
    serving,
    start_langgraph_dev,
    stop_server,
    users_env,
)

pytestmark = needs_langgraph

USERS = ("ann", "ben", "cat", "dan")
KEYS = {user: f"{user}-stress-key-0123456789" for user in USERS}
CLAIM = "Berlin is the capital of Germany."
RUNS = {  # the reported mix: Tool-MAD, MADKE and CoT, scripted debaters
    "tool_mad": {"debater_model": "scripted:agree", "scoring_mode": "consistency",
                 "max_rounds": 1},
    "madke": {"debater_model": "scripted:agree", "max_rounds": 1},
    "cot": {"debater_model": "scripted:agree"},
}
STARTED = "Starting In-Memory runtime"
"""The line langgraph-runtime-inmem logs once per server start (a reload logs it again)."""
LIVE = 4
"""Threads a user keeps; beyond them it deletes its two oldest at once."""


@dataclass
class Tally:
    """What the users saw."""

    runs: int = 0
    state_updates: int = 0
    deletes: int = 0
    checks: int = 0
    errors: list[str] = field(default_factory=list)
    lost: set[str] = field(default_factory=set)

    def summary(self) -> dict[str, Any]:
        """Counts for a report line."""
        return {"runs": self.runs, "state_updates": self.state_updates, "deletes": self.deletes,
                "checks": self.checks, "lost_threads": len(self.lost),
                "errors": len(self.errors), "first_errors": self.errors[:5]}


def _env(work: Path) -> dict[str, str]:
    return {**users_env(work, KEYS),
            "FACTDEBATE_MAX_RUNS_PER_USER": "0",  # the mix, not the admission, is under test
            "FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD": "20"}


async def _user(url: str, user: str, deadline: float, tally: Tally) -> None:
    """One user's loop: create a thread, run a graph on it, write its state; keep ``LIVE``
    threads, deleting the two oldest at once; after each round every live thread must answer."""
    graphs = itertools.cycle(RUNS)
    live: list[str] = []
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": KEYS[user]},
                                 timeout=120) as client:

        def fail(what: str, response: httpx.Response, thread: str | None = None) -> None:
            tally.errors.append(f"{user} {what}: {response.status_code} {response.text[:200]}")
            if thread is not None and response.status_code == 404:
                tally.lost.add(thread)

        while time.monotonic() < deadline:
            made = await client.post("/threads", json={"metadata": {"user": user}})
            if made.status_code != 200:
                fail("POST /threads", made)
                continue
            thread = made.json()["thread_id"]
            live.append(thread)
            graph = next(graphs)
            ran = await client.post(f"/threads/{thread}/runs/wait", json={
                "assistant_id": graph, "input": {"claim": CLAIM}, "context": RUNS[graph]})
            tally.runs += 1
            if ran.status_code != 200 or "label" not in ran.json():
                fail(f"runs/wait {graph} on {thread}", ran, thread)
            wrote = await client.post(f"/threads/{live[0]}/state",
                                      json={"values": {"claim": f"{CLAIM} ({user})"}})
            tally.state_updates += 1
            if wrote.status_code != 200:
                fail(f"state update of {live[0]}", wrote, live[0])
            if len(live) > LIVE:
                victims, live = live[:2], live[2:]
                gone = await asyncio.gather(*(client.delete(f"/threads/{v}") for v in victims))
                tally.deletes += len(victims)
                for victim, response in zip(victims, gone, strict=True):
                    if response.status_code not in (200, 204):
                        fail(f"DELETE own thread {victim}", response, victim)
            for kept in live:
                seen = await client.get(f"/threads/{kept}")
                tally.checks += 1
                if seen.status_code != 200:
                    fail(f"GET own thread {kept}", seen, kept)
        # the end: every thread still answers a run, and is then deleted
        for kept in live:
            ran = await client.post(f"/threads/{kept}/runs/wait", json={
                "assistant_id": "cot", "input": {"claim": CLAIM}, "context": RUNS["cot"]})
            tally.checks += 1
            if ran.status_code != 200:
                fail(f"final runs/wait on {kept}", ran, kept)
            gone = await client.delete(f"/threads/{kept}")
            if gone.status_code not in (200, 204):
                fail(f"final DELETE of {kept}", gone, kept)
        left = await client.post("/threads/search", json={"limit": 100})
        if left.status_code != 200 or left.json():
            tally.errors.append(f"{user} still has threads after deleting all: {left.text[:300]}")


async def _guarded(url: str, user: str, deadline: float, tally: Tally) -> None:
    try:
        await _user(url, user, deadline, tally)
    except httpx.HTTPError as exc:  # a dropped connection is a failure of the mix, not a crash
        tally.errors.append(f"{user}: {type(exc).__name__} {exc}")


async def run_mix(url: str, seconds: float, users: tuple[str, ...] = USERS) -> Tally:
    """The users' loops side by side for ``seconds``."""
    tally = Tally()
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(_guarded(url, user, deadline, tally) for user in users))
    return tally


def _check(tally: Tally, work: Path) -> None:
    log = (work / "server.log").read_text(errors="replace")
    tail = "\n".join(line for line in log.splitlines()[-400:]
                     if "error" in line.lower() or "warn" in line.lower())[-3000:]
    assert log.count(STARTED) == 1, f"the server restarted during the mix: {tail}"
    assert tally.runs >= 8 and tally.deletes >= 8, (tally.summary(), tail)  # the mix really ran
    assert not tally.lost and not tally.errors, (tally.summary(), tail)


@pytest.mark.slow  # a server of its own and 20 s or more of load: the slow tier
@pytest.mark.parametrize("seconds", [20, 150])
def test_no_thread_is_lost_while_users_delete_their_own(tmp_path: Path, seconds: int):
    """The mix for ``seconds`` on a fresh server with 8 job slots."""
    with serving(tmp_path, _env(tmp_path), args=("--n-jobs-per-worker", "8")) as url:
        tally = asyncio.run(run_mix(url, seconds))
    _check(tally, tmp_path)


def _rss_mb(pid: int) -> float | None:
    """The resident memory of process ``pid`` in MB (Linux ``/proc``), or None."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    kb = next((int(line.split()[1]) for line in status.splitlines()
               if line.startswith("VmRSS:")), None)
    return None if kb is None else round(kb / 1024, 1)


def main(argv: list[str] | None = None) -> int:
    """Run the mix against a fresh server for ``--seconds`` and print the counts as JSON, with
    the server's resident memory every ``--every`` seconds."""
    import tempfile
    import threading

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--every", type=float, default=30)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="factdebate-stress-") as folder:
        work = Path(folder)
        proc, url = start_langgraph_dev(work, _env(work), args=("--n-jobs-per-worker", "8"))
        started = time.monotonic()
        rss: list[tuple[int, float | None]] = []
        done = threading.Event()

        def sample() -> None:
            while not done.wait(args.every):
                rss.append((round(time.monotonic() - started), _rss_mb(proc.pid)))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            tally = asyncio.run(run_mix(url, args.seconds))
        finally:
            done.set()
            stop_server(proc)
        log = (work / "server.log").read_text(errors="replace")
        print(json.dumps({**tally.summary(), "seconds": round(time.monotonic() - started, 1),
                          "server_starts": log.count(STARTED),
                          "missing_thread_warnings": log.count("Unexpected missing thread"),
                          "server_rss_mb": rss}))
    return 0 if not tally.errors else 1


if __name__ == "__main__":
    sys.exit(main())
