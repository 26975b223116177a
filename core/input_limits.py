"""Every input that comes from outside, with its limit in memory and time, in one place.

A dump, a corpus, a dataset, a live source's reply, a provider's body, a client's request: each is
read against one :class:`InputLimit` of :data:`LIMITS`. Readers stream and stop at the limit:
an importer skips the record and counts it (``quirks.skipped`` in the index manifest), a live
source's call becomes a tool fault of that turn, a client's request is refused - never a process
that grows with the input. The table in ``docs/reliability.md`` ("Limits of outside input") is
printed from :data:`LIMITS` (``python -m factdebate.core.input_limits``; a test keeps them
equal).

A limit with a ``setting`` is read from that environment variable each time it is used
(:func:`limit`), so an operator changes it without a restart of the CLI; a value that is not a
positive integer is one :class:`~factdebate.core.errors.ConfigError` naming the variable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from factdebate.core.errors import ConfigError


@dataclass(frozen=True)
class InputLimit:
    """One outside input's limit."""

    name: str
    """Key used by the code (:func:`limit`)."""
    input: str
    """What comes from outside."""
    default: int
    unit: str
    """``bytes``, ``levels``, ``redirects``, ``seconds`` ..."""
    setting: str
    """Environment variable that changes it ("" = fixed)."""
    past_it: str
    """What happens past the limit."""
    where: str
    """The module that enforces it."""


MiB = 1 << 20

LIMITS: tuple[InputLimit, ...] = (
    InputLimit("dump_record_bytes", "one record of a dump (a JSON line of FEVER's wiki-pages, "
               "AVeriTeC's store or HotpotQA's abstracts; one FEVEROUS or HoVer database row)",
               32 * MiB, "bytes", "FACTDEBATE_IMPORT_MAX_RECORD_BYTES",
               "the record is read past without being held, its page skipped and counted "
               "(`quirks.skipped`, with file and line); `--strict` stops instead",
               "tools/sources/files.py, feverous_db.py, hover_db.py"),
    InputLimit("corpus_line_bytes", "one line of a JSONL corpus (`factdebate index corpus.jsonl`) "
               "or an eval dataset", 32 * MiB, "bytes", "FACTDEBATE_IMPORT_MAX_RECORD_BYTES",
               "one `error:` line naming file and line, exit 2, nothing written",
               "tools/indexing.py, evaluation/formats.py"),
    InputLimit("dataset_json_bytes", "a dataset given as one `.json` file (read whole, as "
               "HoVer's and AVeriTeC's releases are)", 256 * MiB, "bytes",
               "FACTDEBATE_DATASET_MAX_JSON_BYTES",
               "one `error:` line before anything is read, exit 2 (JSON lines have no such "
               "limit: they are read line by line)", "evaluation/formats.py"),
    InputLimit("json_depth", "nesting of any JSON read from outside (dumps, corpora, datasets)",
               1000, "levels", "",
               "decoded as malformed JSON: an importer skips that record (a file's first "
               "record: one `error:` line, exit 2); a corpus or dataset is one `error:` line",
               "core/json_input.py"),
    InputLimit("live_reply_bytes", "one reply of a live source (live Wikipedia, MERMAID's "
               "MediaWiki, OpenAlex, arXiv and PubMed tools), counted after decompression",
               8 * MiB, "bytes", "FACTDEBATE_LIVE_MAX_REPLY_BYTES",
               "the transfer stops there; a tool fault of that turn (`ReplyTooLarge`)",
               "tools/web_apis.py"),
    InputLimit("live_redirects", "redirects of a live source, each only within the configured "
               "URL's scheme, host and port", 3, "redirects", "",
               "a redirect elsewhere is not followed: a tool fault (`RedirectRefused`)",
               "tools/web_apis.py"),
    InputLimit("live_request_seconds", "one HTTP request of a live source", 20, "seconds",
               "FACTDEBATE_MEDIAWIKI_TIMEOUT_S",
               "the request fails (retried `tool_retries` times, then a tool fault); the whole "
               "search is bounded by `tool_timeout_s`", "tools/wikipedia_live.py, web_apis.py"),
    InputLimit("provider_reply_bytes", "one reply of a model or embedding provider "
               "(`openai:` models, any OpenAI-compatible server, `openai:` embeddings), counted "
               "after decompression, a streamed completion in total", 64 * MiB, "bytes",
               "FACTDEBATE_PROVIDER_MAX_REPLY_BYTES",
               "reading stops there, not retried; the run's (or the build's) error names the "
               "limit", 
               "core/bounded_http.py"),
    InputLimit("client_request_bytes", "one request body a server client sends", MiB, "bytes",
               "FACTDEBATE_MAX_REQUEST_BYTES", "413, nothing stored", "server/limits.py"),
    InputLimit("server_read_shape", "a history or state read's body and query (`limit`, `before`, "
               "`metadata`, `checkpoint`): `limit` 1-1000 checkpoints, ids and namespaces up to 256 "
               "characters, nesting up to 16 levels, maps up to 64 entries", 1000, "checkpoints", "",
               "422 naming the field; a checkpoint the caller's thread does not hold: 404",
               "server/reads.py"),
    InputLimit("claim_chars", "a claim (CLI, Python, server)", 4000, "characters", "",
               "one `error:` line / 422", "core/context.py"),
)

LIMITS_BY_NAME = {item.name: item for item in LIMITS}


def limit(name: str) -> int:
    """The limit ``name`` now: its setting's value when set, else its default.

    Raises:
        ConfigError: The setting is not a positive integer.
    """
    item = LIMITS_BY_NAME[name]
    raw = os.environ.get(item.setting, "").strip() if item.setting else ""
    if not raw:
        return item.default
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(f"{item.setting}={raw!r} is not a positive number of {item.unit}",
                          f"unset it for {item.default} or give a positive integer")
    return int(raw)


class Oversize(bytes):
    """A line over the record limit, read past and not kept: an empty ``bytes`` whose ``len`` is
    the line's length (a reader's byte offsets stay right), true and not blank (it is a record,
    not a blank line). Readers refuse it as a record without a right reading."""

    size: int
    limit: int

    def __new__(cls, size: int, limit: int) -> Oversize:
        """The marker of a ``size``-byte line over ``limit``."""
        self = super().__new__(cls, b"")
        self.size, self.limit = size, limit
        return self

    def __len__(self) -> int:
        """The line's length in bytes."""
        return self.size

    def __bool__(self) -> bool:
        """True: a line was read."""
        return True

    def strip(self, chars: Any = None, /) -> bytes:
        """Not blank (``chars`` is ignored)."""
        return b"oversize"

    def describe(self) -> str:
        """``a record of N bytes, over the limit of L (SETTING): read past, not kept``."""
        return (f"a record of {self.size} bytes, over the limit of {self.limit} "
                f"(FACTDEBATE_IMPORT_MAX_RECORD_BYTES): read past, not kept")


def bounded_lines(handle: IO[bytes], limit: int) -> Iterator[bytes]:
    """The lines of a binary ``handle``, each at most ``limit`` bytes held: a longer line is read
    past in 1 MiB pieces and given as an :class:`Oversize` (memory stays ``limit`` plus a piece
    whatever the line's length; time is one read of it)."""
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        if len(raw) > limit and not raw.endswith(b"\n"):
            size = len(raw)
            del raw
            while True:
                piece = handle.readline(1 << 20)
                size += len(piece)
                if not piece or piece.endswith(b"\n"):
                    break
            yield Oversize(size, limit)
            continue
        yield raw


def markdown_table() -> str:
    """The docs' table of :data:`LIMITS`."""
    rows = ["| Input | Limit | Setting | Past the limit | Enforced in |", "|---|---|---|---|---|"]
    for item in LIMITS:
        amount = (f"{item.default // MiB} MiB" if item.unit == "bytes" and item.default % MiB == 0
                  else f"{item.default:,} {item.unit}")
        setting = f"`{item.setting}`" if item.setting else "fixed"
        rows.append(f"| {item.input} | {amount} | {setting} | {item.past_it} | `{item.where}` |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
