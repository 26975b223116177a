"""``factdebate data fetch``: one catalogue entry downloaded into the data folder, verified, recorded.

A download goes to ``<file>.part`` beside its target and resumes there: the next attempt (or the
next run of the command) asks for the rest with an HTTP ``Range`` header; a server that answers
the whole file instead (200, or a ``Content-Range`` that starts elsewhere) restarts the file
cleanly. Bytes are read raw (``Accept-Encoding: identity``), so offsets are file offsets.

Timeouts: a connection that sends no byte for ``timeout`` seconds, or under :data:`MIN_BYTES` in
any ``timeout`` seconds (a slow drip), counts as stalled. Stalls, broken connections, 408, 429 and
5xx answers are transient and retried through ``core/retry.call_with_retries_blocking`` (the
``.part`` file is kept, so each attempt resumes); another 4xx (a 404) is one error naming the URL.

When the publisher gives a checksum (or an exact size) the finished ``.part`` is checked against
it; a mismatch deletes it and raises one error, so nothing of a wrong download stays. The file's
SHA-256 is recorded in the data folder's ``fetched.json`` (``evaluation/data_catalog.py``).

``$FACTDEBATE_DATA_MIRROR`` replaces each official URL by ``<mirror>/<host>/<path>``. A file on the
Hugging Face Hub is fetched with ``huggingface_hub.hf_hub_download`` (which resumes by itself and
honours ``HF_ENDPOINT``, the Hub's mirror setting) instead of this downloader.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import time
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from factdebate.core.errors import BackendUnavailableError, ConfigError, InputError, StorageError
from factdebate.core.retry import call_with_retries_blocking
from factdebate.evaluation.data_catalog import (
    CatalogEntry,
    mirror_url,
    read_fetched,
    record_fetched,
    to_json_lines,
)

MIRROR_ENV = "FACTDEBATE_DATA_MIRROR"
TIMEOUT_ENV = "FACTDEBATE_FETCH_TIMEOUT"
RETRIES_ENV = "FACTDEBATE_FETCH_RETRIES"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_RETRIES = 4
MIN_BYTES = 1024
"""Fewer bytes than this in ``timeout`` seconds is a stalled transfer."""


class Progress(Protocol):
    """What a download reports to (the CLI's progress bar)."""

    def start(self, description: str, total: int | None, completed: int) -> None:
        """A transfer (re)starts: ``completed`` of ``total`` bytes are already here."""

    def advance(self, count: int) -> None:
        """``count`` more bytes arrived."""


class _Transient(Exception):
    """A fault worth another attempt (the ``.part`` file keeps what arrived)."""


class _Stalled(_Transient):
    pass


class _HttpStatus(Exception):
    """An HTTP error status; ``response`` lets the retry policy read ``Retry-After``."""

    def __init__(self, url: str, response: Any) -> None:
        self.url, self.response, self.status = url, response, response.status_code
        super().__init__(f"{url}: HTTP {response.status_code} {response.reason_phrase}".strip())


def settings() -> tuple[float, int]:
    """``(timeout seconds, retries)`` from ``$FACTDEBATE_FETCH_TIMEOUT``/``$FACTDEBATE_FETCH_RETRIES``.

    Raises:
        ConfigError: A value that is not a positive number (retries: a whole number >= 0).
    """
    raw_t, raw_r = os.environ.get(TIMEOUT_ENV), os.environ.get(RETRIES_ENV)
    try:
        timeout = float(raw_t) if raw_t else DEFAULT_TIMEOUT_S
    except ValueError:
        timeout = math.nan
    if not 0 < timeout < math.inf:
        raise ConfigError(f"{TIMEOUT_ENV}={raw_t!r} is not a number of seconds above 0",
                          f"set it to e.g. {DEFAULT_TIMEOUT_S:g}, or unset it")
    if raw_r and not (raw_r.strip().isdigit()):
        raise ConfigError(f"{RETRIES_ENV}={raw_r!r} is not a whole number of 0 or more",
                          f"set it to e.g. {DEFAULT_RETRIES}, or unset it")
    return timeout, int(raw_r) if raw_r else DEFAULT_RETRIES


def _transient(exc: BaseException) -> bool:
    import httpx

    if isinstance(exc, _Transient | httpx.TransportError):
        return True
    return isinstance(exc, _HttpStatus) and (exc.status in (408, 429) or exc.status >= 500)


def _range_start(header: str | None) -> int | None:
    match = re.match(r"bytes (\d+)-", header or "")
    return int(match.group(1)) if match else None


def _attempt(url: str, part: Path, timeout: float, progress: Progress, label: str) -> None:
    """One GET of ``url`` into ``part``, from where it stops."""
    import httpx

    offset = part.stat().st_size if part.exists() else 0
    headers = {"Accept-Encoding": "identity", "User-Agent": "factdebate-data-fetch"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=True) as client, \
            client.stream("GET", url, headers=headers) as resp:
        if resp.status_code == 416 and offset:  # the .part is no prefix of this file
            part.unlink()
            raise _Transient(f"{url} refused the range of {part.name}: starting over")
        if resp.status_code >= 400:
            raise _HttpStatus(url, resp)
        if resp.status_code != 206 or _range_start(resp.headers.get("content-range")) != offset:
            offset = 0  # the server sent the whole file: start the .part again
        length = resp.headers.get("content-length")
        expected = int(length) if length and length.isdigit() else None
        progress.start(label, offset + expected if expected is not None else None, offset)
        received, window_bytes, window_start = 0, 0, time.monotonic()
        with part.open("ab" if offset else "wb") as fh:
            for chunk in resp.iter_raw():  # as it arrives (a chunk size would wait to fill it)
                fh.write(chunk)
                received += len(chunk)
                window_bytes += len(chunk)
                progress.advance(len(chunk))
                now = time.monotonic()
                if now - window_start >= timeout:
                    if window_bytes < MIN_BYTES:
                        raise _Stalled(f"under {MIN_BYTES} bytes in {timeout:g} s")
                    window_bytes, window_start = 0, now
        if expected is not None and received < expected:
            raise _Transient(f"the connection closed after {received} of {expected} bytes")


def download(url: str, dest: Path, *, progress: Progress, label: str,
             timeout: float, retries: int) -> None:
    """Download ``url`` to ``dest.part`` (resuming it), retrying transient faults.

    The finished file stays ``dest.part``: the caller checks it, then renames it.

    Raises:
        BackendUnavailableError: An HTTP error status, or the transfer failed ``retries + 1`` times; one line
            naming the URL (the ``.part`` file is kept for the next run to resume).
    """
    import httpx

    part = dest.with_name(dest.name + ".part")
    try:
        call_with_retries_blocking(lambda: _attempt(url, part, timeout, progress, label),
                                   retries=retries, what=f"download {url}", base_delay=1.0,
                                   max_retry_after=60.0, max_delay=30.0, retry_if=_transient)
    except _HttpStatus as exc:
        raise BackendUnavailableError(
            str(exc), f"check the URL (factdebate data list --json), or ${MIRROR_ENV} when a "
            "mirror serves it") from None
    except _Stalled as exc:
        raise BackendUnavailableError(
            f"the download of {url} stalled ({exc}), {_attempts(retries)}",
            f"run the command again to resume from {part.name}, or raise {TIMEOUT_ENV}") from None
    except (_Transient, httpx.HTTPError) as exc:
        raise BackendUnavailableError(
            f"cannot download {url}: {exc} ({_attempts(retries)})",
            f"run the command again to resume from {part.name}" if part.exists() else
            f"check the network (or ${MIRROR_ENV}) and run the command again") from None


def _attempts(retries: int) -> str:
    return "after 1 attempt" if retries == 0 else f"after {retries + 1} attempts"


def digests(path: Path, algorithms: tuple[str, ...]) -> dict[str, str]:
    """``{algorithm: hex digest}`` of a file, read once."""
    hashes = {name: hashlib.new(name) for name in algorithms}
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            for h in hashes.values():
                h.update(block)
    return {name: h.hexdigest() for name, h in hashes.items()}


def verify(entry: CatalogEntry, part: Path, url: str) -> str:
    """The SHA-256 of a finished download, after checking the publisher's checksum and size.

    Raises:
        BackendUnavailableError: The checksum or size differs; ``part`` is deleted first.
    """
    algorithm, _, want = (entry.checksum or "").partition(":")
    found = digests(part, tuple(dict.fromkeys(("sha256", algorithm or "sha256"))))
    size = part.stat().st_size
    problem = ""
    if algorithm and found[algorithm] != want:
        problem = f"has {algorithm} {found[algorithm]}, the publisher gives {want}"
    elif entry.size_bytes is not None and size != entry.size_bytes:
        problem = f"is {size} bytes, the publisher gives {entry.size_bytes}"
    if problem:
        part.unlink(missing_ok=True)
        raise BackendUnavailableError(
            f"the download of {entry.name} from {url} {problem}; nothing was kept",
            "fetch again (a mirror may serve another file)")
    return found["sha256"]


def _hub_download(entry: CatalogEntry, folder: Path, progress: Progress, timeout: float) -> Path:
    """``entry``'s Hub file via ``huggingface_hub`` into a staging folder beside its target.

    ``data fetch`` is an explicit download: the offline switch the CLI sets so that model loading
    never reaches the Hub (``HF_HUB_OFFLINE``) is lifted for it, read when huggingface_hub is
    first imported.
    """
    import sys

    if "huggingface_hub" not in sys.modules:
        os.environ["HF_HUB_OFFLINE"] = "0"
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled

    class _Bar:  # huggingface_hub's tqdm_class: constructed per file, updated per chunk
        def __init__(self, total: int | None = None, initial: int = 0, **_: Any) -> None:
            progress.start(entry.name, total, initial)

        def update(self, n: int | float | None = 1) -> None:
            progress.advance(int(n or 0))

        def close(self) -> None:
            """Nothing to release."""

        def __enter__(self) -> _Bar:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    hub = entry.hub
    staging = folder / Path(entry.target).parent / ".hub"
    try:
        found = hf_hub_download(hub["repo_id"], hub["filename"], repo_type=hub["repo_type"],
                                revision=hub["revision"], local_dir=staging, etag_timeout=timeout,
                                endpoint=os.environ.get("HF_ENDPOINT") or None,
                                tqdm_class=_Bar)  # type: ignore[arg-type]
    except (OfflineModeIsEnabled, LocalEntryNotFoundError) as exc:
        raise BackendUnavailableError(
            f"cannot reach the Hugging Face Hub for {hub['repo_id']}/{hub['filename']} "
            f"({' '.join(str(exc).split())[:200]})",
            "check the network, HF_ENDPOINT and HF_HUB_OFFLINE") from None
    except HfHubHTTPError as exc:
        raise BackendUnavailableError(
            f"the Hugging Face Hub refused {hub['repo_id']}/{hub['filename']} "
            f"({' '.join(str(exc).split())[:200]})",
            "check the repository and file (factdebate data list --json)") from None
    return Path(str(found))


def _unpack(entry: CatalogEntry, archive: Path, folder: Path) -> None:
    """Unzip ``archive`` into the entry's ``source_path`` (a fresh folder, renamed when done)."""
    dest = folder / entry.index_input
    temp = dest.with_name(f".{dest.name}.unpacking")
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir(parents=True)
    try:
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(temp)
    except (zipfile.BadZipFile, EOFError) as exc:
        shutil.rmtree(temp, ignore_errors=True)
        raise BackendUnavailableError(f"cannot unpack {archive}: {exc}",
                                      "delete it and fetch again") from None
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(temp, dest)


def fetch(entry: CatalogEntry, folder: Path, progress: Progress, *, force: bool = False,
          say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Download ``entry`` into the data folder ``folder``; returns its ``fetched.json`` record.

    Already fetched with the same bytes: nothing is downloaded. A target that exists without a
    fetch record (a file the user put there) is not overwritten unless ``force``.

    Raises:
        BackendUnavailableError: The download failed or its bytes are wrong (nothing wrong is kept).
        InputError: The target exists and was not fetched here (and not ``force``).
        StorageError: The folder cannot be written.
    """
    timeout, retries = settings()
    dest = folder / entry.target
    records = read_fetched(folder)
    known = records.get(entry.target)
    if dest.is_file() and known and known.get("size") == dest.stat().st_size and not force:
        say(f"{entry.name}: already fetched ({dest}, sha256 {str(known.get('sha256'))[:16]})")
        converts = entry.kind == "dataset" and entry.convert and entry.reads != entry.target
        if converts and (entry.reads not in records or not (folder / str(entry.reads)).is_file()):
            _convert(entry, folder, str(known.get("url")), str(known.get("fetched_at")), say)
        return known
    for rel in dict.fromkeys((entry.target, entry.reads if entry.convert else None)):
        if rel and (folder / rel).exists() and rel not in records and not force:
            raise InputError(f"{folder / rel} exists and was not fetched by factdebate data fetch",
                             "move it away, fetch into another folder (--to DIR), or pass --force")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(dest.parent, os.W_OK):
            raise PermissionError(13, "permission denied")
    except OSError as exc:
        raise StorageError(f"cannot write the data folder {folder}: {exc.strerror}",
                           "pass --to DIR (a folder you can write) or set FACTDEBATE_DATA_DIR") \
            from None
    part, url = _to_part(entry, folder, progress, timeout, retries)
    sha = verify(entry, part, url)
    os.replace(part, dest)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    record = {"entry": entry.name, "url": url, "official_url": entry.urls[0], "sha256": sha,
              "size": dest.stat().st_size, "fetched_at": now, "checksum": entry.checksum}
    record_fetched(folder, entry.target, record)
    if entry.unpack:
        say(f"{entry.name}: unpacking {dest.name} into {folder / entry.index_input}")
        _unpack(entry, dest, folder)
    if entry.kind == "dataset" and entry.convert and entry.reads and entry.reads != entry.target:
        _convert(entry, folder, url, now, say)
    return record


def _to_part(entry: CatalogEntry, folder: Path, progress: Progress, timeout: float,
             retries: int) -> tuple[Path, str]:
    """The finished, unchecked download (``<target>.part``) and the URL it came from."""
    dest = folder / entry.target
    part = dest.with_name(dest.name + ".part")
    if entry.hub:
        found = _hub_download(entry, folder, progress, timeout)
        os.replace(found, part)
        shutil.rmtree(folder / Path(entry.target).parent / ".hub", ignore_errors=True)
        return part, entry.urls[0]
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    url = mirror_url(entry.urls[0], mirror) if mirror else entry.urls[0]
    download(url, dest, progress=progress, label=entry.name, timeout=timeout, retries=retries)
    return part, url


def _convert(entry: CatalogEntry, folder: Path, url: str, now: str,
             say: Callable[[str], None]) -> None:
    """Write the file eval reads from the official one, and record it."""
    out = folder / str(entry.reads)
    count = to_json_lines(folder / entry.target, out)
    say(f"{entry.name}: {count} records written to {out} (one per line)")
    record_fetched(folder, str(entry.reads), {
        "entry": entry.name, "url": url, "sha256": digests(out, ("sha256",))["sha256"],
        "size": out.stat().st_size, "fetched_at": now, "converter": entry.convert,
        "converted_from": entry.target})
