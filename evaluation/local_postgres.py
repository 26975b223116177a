"""A throwaway PostgreSQL server on loopback, for the crash trials and the Postgres tests.

Uses the Debian ``postgresql`` package's binaries (``/usr/lib/postgresql/<v>/bin``; install with
``apt-get install -y postgresql``): ``initdb`` into a fresh folder with trust authentication for a
``factdebate`` superuser, ``pg_ctl start`` on a free port, listening on 127.0.0.1 only, stopped
and deleted when the block ends. PostgreSQL refuses to run as root, so under root the server runs
as the ``postgres`` system user (``runuser``), in a folder that user owns.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from factdebate.core.errors import BackendUnavailableError

USER = "factdebate"


def postgres_bin() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl`` (newest version), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


@contextmanager
def local_postgres(root: Path | None = None) -> Iterator[str]:
    """Start a server; yields its URI ``postgresql://factdebate@127.0.0.1:PORT/postgres``.

    Raises:
        BackendUnavailableError: the binaries are missing or the server does not start.
    """
    bindir = postgres_bin()
    if bindir is None:
        raise BackendUnavailableError("PostgreSQL server binaries (initdb, pg_ctl) not found",
                                      "apt-get install -y postgresql")
    folder = Path(tempfile.mkdtemp(prefix="fd-pg-", dir=root))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, port = folder / "data", _free_port()
    run = _runner(folder)
    try:
        run([str(bindir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8",
             "--no-sync"])
        run([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-w",
             "-t", "60", "-o", f"-p {port} -h 127.0.0.1 -k {folder} -c fsync=on", "start"])
        yield f"postgresql://{USER}@127.0.0.1:{port}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast",
                                             "-w", "stop"]), capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


def _runner(folder: Path):  # noqa: ANN202 - a small closure
    def run(cmd: list[str]) -> None:
        done = subprocess.run(_as_server_user(cmd), capture_output=True, text=True, timeout=120,
                              cwd=folder)
        if done.returncode != 0:
            log = folder / "server.log"
            tail = log.read_text()[-800:] if log.exists() else ""
            raise BackendUnavailableError(
                f"{Path(cmd[0]).name} failed: {(done.stderr or done.stdout).strip()[-400:]} {tail}",
                "check the PostgreSQL installation (apt-get install -y postgresql)")

    return run
