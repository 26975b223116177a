"""A real Milvus server on loopback: Milvus standalone from PyPI's ``milvus`` package (dev extra).

Started by the test suite (``tests/integration/milvus_server.py``) and by ``factdebate bench index``.

The ``milvus`` package (2.3.5) ships the Milvus standalone binary (the server components of a
cluster in one process, embedded etcd, local storage); :class:`MilvusStandalone` starts it with
every port it listens on chosen free by the OS, its data in a given folder, waits until the proxy
answers a ``list_collections`` call, and stops it. ``kill()`` + ``start()`` restarts it on the same
ports and data (the restart tests). :func:`milvus_unavailable` says in one line why the server
cannot run here (package missing, not Linux x86-64), for ``pytest.skip``.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import time
from pathlib import Path

START_TIMEOUT_S = 180.0
COMPONENTS = ("rootCoord", "proxy", "queryCoord", "queryNode", "indexNode", "dataCoord", "dataNode")
"""Milvus components that register an address in etcd: all set to loopback."""


def _free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports nothing listens on right now (held open together while chosen)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def milvus_unavailable() -> str | None:
    """Why Milvus standalone cannot run on this machine (one line), or None if it can."""
    try:
        import milvus  # noqa: F401
    except ImportError:
        return "PyPI's milvus package (Milvus standalone) is not installed (make install adds it)"
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"the milvus package ships a Linux x86-64 server binary, not {platform.platform()}"
    return None



def unpack_binaries(bin_dir: Path) -> None:
    """Unpack the Milvus binaries the ``milvus`` package ships (``milvus/data/bin/*.lzma``, its
    package data) into ``bin_dir``, each unless the copy there comes from the same archive
    (its MD5 recorded beside it)."""
    import hashlib
    import lzma
    from importlib import resources

    bin_dir.mkdir(parents=True, exist_ok=True)
    for archive in resources.files("milvus").joinpath("data", "bin").iterdir():
        if not archive.name.endswith(".lzma"):
            continue
        target = bin_dir / archive.name.removesuffix(".lzma")
        stamp = target.with_name(target.name + ".lzma.md5")
        packed = archive.read_bytes()
        digest = hashlib.md5(packed, usedforsecurity=False).hexdigest()
        if target.is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
            continue
        target.write_bytes(lzma.decompress(packed))
        target.chmod(0o755)
        stamp.write_text(digest, encoding="utf-8")

class MilvusStandalone:
    """One Milvus standalone process on loopback ports, its data in ``data_dir``."""

    def __init__(self, data_dir: Path, cache_dir: Path | None = None) -> None:
        """Choose the ports; nothing runs until :meth:`start`.

        Args:
            data_dir: Configuration, logs, etcd and segment data of this server.
            cache_dir: The server binary is unpacked into ``<cache_dir>/bin`` (~250 MB, ~5 s of
                CPU); a folder kept between sessions (pytest's cache) unpacks it once.
                Default: ``data_dir``.
        """
        from milvus import MilvusServerConfig

        self.data_dir = Path(data_dir)
        self.bin_dir = Path(cache_dir or data_dir) / "bin"
        self._config = MilvusServerConfig(data_dir=str(self.data_dir))
        port_keys = sorted(k for k in self._config.configurable_items if k.endswith("_port"))
        ports = _free_ports(len(port_keys) + 2)
        self._config.update(**dict(zip(port_keys, ports, strict=False)))
        for component in COMPONENTS:  # else each advertises the host's first non-loopback address
            self._config.set(f"{component}.ip", "127.0.0.1")
        self.port = int(self._config.configs["proxy_port"])
        self.etcd_port = int(self._config.configs["etcd_port"])
        self.etcd_peer_port, self.metrics_port = ports[-2:]
        self._proc: subprocess.Popen | None = None
        self._configured = False

    @property
    def uri(self) -> str:
        """The URI clients use: ``http://127.0.0.1:<proxy port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """Process id of the running server (None when stopped)."""
        return self._proc.pid if self._proc else None

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Start the server and return once its proxy answers; raise with its log tail if not."""
        if not self._configured:  # a restart keeps them (its ports may still be in TIME_WAIT)
            self._config.resolve()  # writes configs/milvus.yaml with the chosen ports and folders
            self._configured = True
        unpack_binaries(self.bin_dir)  # unless up to date
        binary = self.bin_dir / "milvus"
        # The embedded etcd listens on 2379/2380 unless told otherwise: its own config file
        etcd = self.data_dir / "configs" / "embedEtcd.yaml"
        client, peer = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{self.etcd_peer_port}"
        etcd.write_text(
            f"listen-client-urls: {client}\nadvertise-client-urls: {client}\n"
            f"listen-peer-urls: {peer}\ninitial-advertise-peer-urls: {peer}\n"
            f"initial-cluster: default={peer}\n", encoding="utf-8")
        env = {**os.environ, "DEPLOY_MODE": "STANDALONE", "METRICS_PORT": str(self.metrics_port),
               "MILVUSCONF": f"{self.data_dir / 'configs'}/", "ETCD_CONFIG_PATH": str(etcd),
               "MILVUS_RUN_DIR": str(self.data_dir / "run"),
               "LD_LIBRARY_PATH": f"{binary.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
        log = (self.data_dir / "logs" / "standalone.out").open("ab")
        self._proc = subprocess.Popen([str(binary), "run", "standalone"], cwd=self.data_dir,
                                      env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        log.close()
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        from pymilvus import MilvusClient

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                break
            try:
                client = MilvusClient(uri=self.uri, timeout=5)
                try:
                    client.list_collections()
                    return
                finally:
                    client.close()
            except Exception:
                time.sleep(0.5)
        tail = self.log_tail()
        self.stop()
        raise RuntimeError(f"Milvus standalone did not answer on {self.uri}: {tail}")

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the server's output (for failure messages)."""
        path = self.data_dir / "logs" / "standalone.out"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def kill(self) -> None:
        """SIGKILL the server (a crash); ``start()`` brings it back on the same ports and data."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(timeout=30)
            self._proc = None

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 5 s: its data is not kept)."""
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=30)
        self._proc = None

    def remove(self) -> None:
        """Stop the server and delete its data folder."""
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)
