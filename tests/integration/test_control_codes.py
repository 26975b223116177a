"""Control codes from a corpus never reach the user's terminal.

A real index whose passage title and text carry terminal commands (clear screen, an OSC 8 link to
another site, cursor-up + erase line, C1 CSI, BEL, backspace, carriage return); ``factdebate
verify`` and ``factdebate check`` run in a real pseudo-terminal (``pty``) with the scripted
model. None of the injected sequences may appear in what the terminal receives (rich's own styling
codes and its live display's ``ESC [1A`` / ``ESC [2K`` do: the cursor-up injected moves 9 lines,
which rich never does), the passage shows as visible escapes, and the verdict line is intact.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from servers import warm_home

from factdebate.tools.base import clear_retriever_cache
from factdebate.tools.indexing import build_indexes

REPO = Path(__file__).resolve().parents[2]
FACTDEBATE = Path(sys.executable).parent / "factdebate"
INJECTED = {
    "clear screen": "\x1b[2J", "OSC 8 link": "\x1b]8;;http://evil.example\x1b\\",
    "cursor up + erase line": "\x1b[9A\x1b[2K", "C1 CSI": "\x9b31m", "BEL": "\x07",
    "backspace": "\x08", "carriage return": "\rFAKE VERDICT: REFUTES",
    "bidi override": "\u202e",
}
HOSTILE = "".join(INJECTED.values())


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("control-codes")
    corpus = root / "corpus.jsonl"
    corpus.write_text(json.dumps({
        "doc_id": "d1", "title": f"Eiffel {HOSTILE}Tower",
        "text": f"The Eiffel Tower is in Paris.{HOSTILE} It is a landmark."}) + "\n")
    build_indexes(corpus, root / "index")
    clear_retriever_cache()
    return root / "index"


def in_terminal(args: list[str], home: Path) -> bytes:
    """Run the CLI with a pseudo-terminal as stdin/stdout/stderr; all bytes it wrote. ``home``
    gets MiniLM's cached ONNX graph (``servers.warm_home``): the run does not export it first."""
    leader, follower = pty.openpty()
    env = {**os.environ, "FACTDEBATE_HOME": str(warm_home(home)), "TERM": "xterm-256color",
           "COLUMNS": "160", "LINES": "50"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([str(FACTDEBATE), *args], stdin=follower, stdout=follower,
                            stderr=follower, env=env, cwd=REPO, close_fds=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=240) == 0, b"".join(chunks)[-3000:]
    return b"".join(chunks)


def assert_neutralised(shown: bytes) -> None:
    assert b"\x1b[1m" in shown or b"\x1b[" in shown  # a real terminal: rich styled its output
    for name, sequence in INJECTED.items():
        assert sequence.encode() not in shown, name
    assert "\x9b".encode() not in shown and b"\x07" not in shown and b"\x08" not in shown
    assert b"\\x1b[2J" in shown  # the passage is there, its codes visible as text


def test_verify_in_a_terminal(index_dir: Path, tmp_path: Path):
    shown = in_terminal(["verify", "The Eiffel Tower is in Paris.", "--model", "scripted:agree",
                         "--index-dir", str(index_dir), "--rag-backend", "keyword",
                         "--rounds", "1"], tmp_path / "home")
    assert_neutralised(shown)
    verdict = next(line for line in shown.splitlines() if b"SUPPORTS" in line)
    assert b"consensus after 1 round" in verdict and b"REFUTES" not in verdict


def test_check_in_a_terminal(index_dir: Path, tmp_path: Path):
    text = tmp_path / "text.txt"
    text.write_text("The Eiffel Tower is in Paris. It is a landmark.\n")
    shown = in_terminal(["check", str(text), "--model", "scripted:agree",
                         "--index-dir", str(index_dir), "--rag-backend", "keyword"],
                        tmp_path / "home")
    assert_neutralised(shown)


@pytest.mark.parametrize("command", ["verify", "check"])
def test_json_output_in_a_terminal(index_dir: Path, tmp_path: Path, command: str):
    """``--json`` prints the passages too: JSON escapes C0 characters itself, the C1 ones and the
    bidi overrides it would write raw are escaped, and the text parses to the corpus's value."""
    claim = tmp_path / "text.txt"
    claim.write_text("The Eiffel Tower is in Paris.\n")
    what = ["The Eiffel Tower is in Paris."] if command == "verify" else [str(claim)]
    shown = in_terminal([command, *what, "--json", "--model", "scripted:agree", "--index-dir",
                         str(index_dir), "--rag-backend", "keyword"], tmp_path / "home")
    for name, sequence in INJECTED.items():
        assert sequence.encode() not in shown, name
    assert "\x9b".encode() not in shown and "\u202e".encode() not in shown
    start = shown.index(b"{")
    result = json.loads(shown[start:shown.rindex(b"}") + 1].replace(b"\r\n", b"\n"))
    assert any(f"Paris.{HOSTILE}" in text for text in strings(result))  # parsed back: the same


def strings(value: object) -> list[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in strings(item)]
