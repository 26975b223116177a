"""A real ``langgraph dev`` on loopback, started and stopped for a benchmark or a test.

Started by ``factdebate bench soak`` (``evaluation/bench_soak.py``) and by the integration tests
(``tests/integration/servers.py``), so both start the server the same way and wait for it by the
same rule.

The server runs from a copy of this checkout's ``langgraph.json`` in ``work/app`` with the graph,
auth and dependency paths made absolute: the server's ``.langgraph_api`` state then stays in the
caller's ``work`` folder, never in the checkout. It listens on a port the OS hands out free, runs in
a session of its own (so stopping it stops its workers too) and writes its output to
``work/server.log``. :func:`start_langgraph_dev` returns once ``GET /ok`` answers 200; the wait
ends early when the process exits, and a start that fails names the log's last line.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from factdebate.core.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
"""The checkout (the package ``factdebate``), which holds ``langgraph.json``."""
LANGGRAPH = Path(sys.executable).parent / "langgraph"
"""The ``langgraph`` command of ``langgraph-cli`` beside this Python (the ``server`` extra)."""


class ServerStartError(RuntimeError):
    """``langgraph dev`` exited or did not answer ``/ok`` in time; ``log`` is its output."""

    def __init__(self, message: str, log: Path) -> None:
        super().__init__(message)
        self.log = log


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def langgraph_dev_command(work: Path, port: int, args: Sequence[str] = ()) -> list[str]:
    """``langgraph dev`` on ``port`` with extra command-line ``args``, from a copy of
    ``langgraph.json`` written to ``work/app`` (paths absolute); run it with ``cwd=work / "app"``.

    Raises:
        ConfigError: ``langgraph-cli`` is not installed beside this Python, or the checkout has no
            ``langgraph.json``.
    """
    if not LANGGRAPH.exists() or not (REPO / "langgraph.json").is_file():
        raise ConfigError("langgraph dev needs langgraph-cli beside this Python and the "
                          "checkout's langgraph.json", "pip install -e '.[server]' in the checkout")
    app = work / "app"
    app.mkdir(parents=True, exist_ok=True)
    config = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))
    config["dependencies"] = [str(REPO)]
    config["graphs"] = {k: str(REPO / v.removeprefix("./")) for k, v in config["graphs"].items()}
    if "auth" in config:
        config["auth"]["path"] = str(REPO / config["auth"]["path"].removeprefix("./"))
    (app / "langgraph.json").write_text(json.dumps(config), encoding="utf-8")
    return [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(port),
            "--config", str(app / "langgraph.json"), *args]


def start_langgraph_dev(work: Path, env: dict[str, str], *, args: Sequence[str] = (),
                        timeout_s: float = 300.0) -> tuple[subprocess.Popen, str]:
    """Start ``langgraph dev`` with environment ``env`` (the whole of it) and extra ``args``
    (e.g. ``("--n-jobs-per-worker", "2")``); wait until ``/ok`` answers.

    Returns the process and its URL; the caller stops it with :func:`stop_langgraph_dev`.

    Raises:
        ServerStartError: The server exited or did not answer within ``timeout_s`` (it is stopped;
            the message names the log's last line).
    """
    port = free_port()
    log_path = work / "server.log"
    command = langgraph_dev_command(work, port, args)
    with log_path.open("w") as log:
        proc = subprocess.Popen(command, cwd=work / "app", env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    code = proc.poll()
    stop_langgraph_dev(proc)
    tail = [line for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    why = f"exited with code {code}" if code is not None else f"did not answer within {timeout_s:.0f} s"
    raise ServerStartError(f"langgraph dev {why}; last line of {log_path}: "
                           f"{tail[-1] if tail else '(empty)'}", log_path)


def stop_langgraph_dev(proc: subprocess.Popen) -> None:
    """Stop the server's process group (SIGTERM, then SIGKILL after 20 s)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
