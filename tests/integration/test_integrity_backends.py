"""Backend faults are named, bounded and masked.

Real components: Milvus Lite indexes built from 30 passages of the bundled demo corpus, damaged
with random bytes file by file; the ``factdebate`` CLI in subprocesses; loopback HTTP servers
posing as a failing OpenAI-compatible model server and as MediaWiki/OpenAlex mirrors whose URLs
carry credentials; MERMAID's MCP tool server as its own process over streamable HTTP; a Milvus
URI whose port nothing listens on (grpc's error is its own ``__context__``: ``eval`` spun at 100%
CPU walking that chain).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from servers import REPO, free_port, warm_home

from factdebate.core.errors import IndexDamagedError
from factdebate.tools import DEMO_CORPUS_DIR
from factdebate.tools.base import RetrieverSettings, clear_retriever_cache
from factdebate.tools.index_lock import release
from factdebate.tools.indexing import build_indexes, read_vector_index
from factdebate.tools.tool_providers import InProcessToolProvider
from factdebate.tools.toolbox import ToolboxSettings
from tests.integration.cli_process import run_cli
from tests.integration.loopback import mcp_http_server, serve_http

SECRET = "0pSecretPw"


def _cli(args: list[str], home: Path, timeout: float = 180, **env: str) -> subprocess.CompletedProcess:
    """The CLI on ``home`` holding MiniLM's cached ONNX graph (no export at its start)."""
    return run_cli(args, warm_home(home), timeout=timeout, env=env, cwd=REPO)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pristine")
    lines = (DEMO_CORPUS_DIR / "passages.jsonl").read_text(encoding="utf-8").splitlines()[:30]
    corpus = folder / "corpus.jsonl"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    build_indexes(corpus, folder / "index")
    clear_retriever_cache()
    release(folder / "index")
    return folder / "index"


def _collection(index: Path) -> Path:
    return index / "milvus.db" / "collections" / "factdebate_passages"


def _scramble(*paths: Path) -> None:
    for path in paths:
        path.write_bytes(os.urandom(max(path.stat().st_size, 64)))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "data file (parquet)": lambda i: _scramble(next(_collection(i).rglob("*.parquet"))),
    "vector index (hnsw)": lambda i: _scramble(next(_collection(i).rglob("*.idx"))),
    "schema.json": lambda i: _scramble(_collection(i) / "schema.json"),
    "both manifests": lambda i: _scramble(*_collection(i).glob("manifest.json*")),
    "every file": lambda i: _scramble(*(p for p in _collection(i).rglob("*") if p.is_file())),
}


@pytest.fixture
def damaged(pristine: Path, tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    def make(case: str) -> Path:
        index = tmp_path / "index"
        shutil.copytree(pristine, index)
        DAMAGE[case](index)
        return index

    yield make
    clear_retriever_cache()
    release(tmp_path / "index")


# -- 10: random bytes in Milvus Lite files: the damage and the rebuild, no traceback -------------
@pytest.mark.parametrize("case", list(DAMAGE))
def test_verify_on_random_bytes_in_milvus_files_names_the_damage_and_the_rebuild(damaged, tmp_path,
                                                                                 case):
    index = damaged(case)
    done = _cli(["verify", "The Eiffel Tower is in Paris.", "--model", "scripted:agree",
                 "--index-dir", str(index), "--rounds", "1", "--scoring", "consistency"],
                tmp_path / "home")
    assert done.returncode == 3, done.stderr[-3000:]
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    text = " ".join(lines[0].split())
    assert f"vector index at {index / 'milvus.db'}" in text and "is damaged" in text, text
    assert f"factdebate index CORPUS.jsonl --index-dir {index} --replace" in text
    assert "the run stopped" not in text and "--resume" not in text


# -- 5: the start-up check reads the index -------------------------------------------------------
@pytest.mark.parametrize("case", ["data file (parquet)", "every file"])
def test_the_server_start_check_reads_the_vector_index(damaged, case):
    index = damaged(case)
    with pytest.raises(IndexDamagedError, match="is damaged"):
        read_vector_index(index)


def test_the_server_start_check_passes_a_sound_index(pristine):
    try:
        assert read_vector_index(pristine) == 30
    finally:
        clear_retriever_cache()
        release(pristine)


def test_a_server_on_random_milvus_bytes_refuses_to_start(damaged, tmp_path):
    """The real server (``langgraph dev``): before, it logged "serving ... (30 passages)"."""
    from servers import langgraph_dev_command, server_env, stop_server

    index = damaged("every file")
    port = free_port()
    log_path = tmp_path / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            langgraph_dev_command(tmp_path, port), cwd=tmp_path / "app", stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
            env=server_env({"FACTDEBATE_HOME": str(warm_home(tmp_path / "home")),
                            "FACTDEBATE_INDEX_DIR": str(index), "FACTDEBATE_AUTH": "off"}))
        try:
            code = proc.wait(timeout=240)
        except subprocess.TimeoutExpired:
            stop_server(proc)
            pytest.fail(f"the server started on a damaged index: {log_path.read_text()[-3000:]}")
    text = log_path.read_text()
    assert code == 3, text[-3000:]
    assert "factdebate: the server cannot start: vector index at" in text and "is damaged" in text
    assert f"--index-dir {index} --replace" in text
    assert "serving the index" not in text


# -- 4: a Milvus port nothing listens on: eval ends (it spun forever) ------------------------------
def test_eval_with_a_closed_milvus_port_ends_and_names_milvus(pristine, tmp_path):
    data = tmp_path / "mini.jsonl"
    data.write_text(json.dumps({"id": "a", "claim": "Paris is in France.", "label": "SUPPORTS"})
                    + "\n")
    start = time.monotonic()
    done = _cli(["eval", "--framework", "tool_mad", "--dataset", str(data), "--model",
                 "scripted:agree", "--out", str(tmp_path / "out"), "--set",
                 f"index_dir={pristine}", "--set", f"milvus_uri=http://127.0.0.1:{free_port()}",
                 "--set", "max_rounds=1", "--set", "scoring_mode=consistency"],
                tmp_path / "home", timeout=150)
    assert time.monotonic() - start < 150
    assert done.returncode == 4, done.stderr[-3000:]
    [row] = [json.loads(r) for r in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert row["status"] == "error" and "cannot connect to Milvus" in row["error"]["message"]


def test_verify_with_a_closed_milvus_port_is_one_error(pristine, tmp_path):
    done = _cli(["verify", "Paris is in France.", "--model", "scripted:agree", "--index-dir",
                 str(pristine), "--set", f"milvus_uri=http://u:{SECRET}@127.0.0.1:{free_port()}"],
                tmp_path / "home", timeout=150)
    assert done.returncode == 3, done.stderr[-3000:]
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "cannot connect to Milvus at http://u:***@127.0.0.1" in lines[0], \
        done.stderr[-3000:]
    assert SECRET not in done.stderr


# -- 5: a failing operator model endpoint is named (and its credentials masked) ----------------
class FailingModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that fails: ``/500`` overloaded, ``/401`` key refused."""

    def log_message(self, *args: object) -> None:
        """Quiet."""

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status = 401 if self.path.startswith("/401") else 500
        body = json.dumps({"error": {"message": f"backend exploded ({status})",
                                     "type": "server_error"}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self.do_POST()


@pytest.fixture(scope="module")
def failing() -> Iterator[str]:
    with serve_http(FailingModel) as host:
        yield host


@pytest.mark.parametrize("where,named", [
    ("served/500", "answered HTTP 500 (OpenAIAPIError: backend exploded (500))"),
    ("closed", "the model server is unreachable at http://op:***@127.0.0.1:"),
])
def test_a_failing_model_server_is_named_with_its_credentials_masked(failing, tmp_path, where,
                                                                     named):
    host = failing if where != "closed" else f"127.0.0.1:{free_port()}"
    base = f"http://op:{SECRET}@{host}/{'500/' if where != 'closed' else ''}v1"
    done = _cli(["verify", "Paris is in France.", "--framework", "standard", "--model",
                 "openai:m", "--base-url", base, "--set", "llm_retries=0"], tmp_path / "home")
    assert done.returncode == 3, done.stderr[-3000:]
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    text = " ".join(lines[0].split())
    assert named in text and "--resume --thread-id" in text, text
    assert SECRET not in done.stderr + done.stdout


# -- 6 (MCP): credentials in operator-set tool URLs stay out of MCP error texts -----------------
@pytest.fixture(scope="module")
def mcp_server(failing: str, pristine: Path, tmp_path_factory) -> Iterator[tuple[str, Path]]:
    log_path = tmp_path_factory.mktemp("mcp") / "server.log"
    env = {**os.environ, "FACTDEBATE_OPENALEX_URL": f"http://op:{SECRET}@{failing}/500",
           "FACTDEBATE_MEDIAWIKI_URL": f"http://op:{SECRET}@127.0.0.1:{free_port()}/w/api.php"}
    with mcp_http_server(["--index-dir", str(pristine), "--web-backend", "local_search",
                          "--wiki-backend", "mediawiki"], env, log_path) as (url, _):
        yield url, log_path


@pytest.mark.parametrize("tool,args,shown", [
    ("search_scholar", {"query": "Eiffel Tower"}, "http://op:***@127.0.0.1"),  # answers 500
    ("get_summary", {"title": "Eiffel Tower"}, "All connection attempts failed"),  # closed port
])
def test_mcp_tool_errors_mask_credentials_of_operator_urls(mcp_server, tool, args, shown):
    url, log_path = mcp_server

    async def call() -> object:
        async with streamablehttp_client(url) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool(tool, args)

    result = asyncio.run(call())
    assert result.isError is True
    text = result.content[0].text
    assert SECRET not in text and shown in text, text
    assert SECRET not in log_path.read_text()


def test_in_process_tool_errors_mask_credentials_too(failing, pristine, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_OPENALEX_URL", f"http://op:{SECRET}@{failing}/500")
    provider = InProcessToolProvider(ToolboxSettings(
        RetrieverSettings(index_dir=str(pristine), milvus_uri=""), wiki_backend="mediawiki"))
    with pytest.raises(Exception) as caught:
        asyncio.run(provider.call("search_scholar", "Eiffel Tower"))
    assert SECRET not in str(caught.value) and "op:***@" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_server_run_against_a_failing_operator_model_endpoint_names_it(failing, pristine,
                                                                         tmp_path):
    from langgraph_sdk import get_client
    from servers import start_langgraph_dev, stop_server

    index = tmp_path / "index"
    shutil.copytree(pristine, index)
    proc, url = start_langgraph_dev(tmp_path, {
        "FACTDEBATE_HOME": str(warm_home(tmp_path / "home")), "FACTDEBATE_INDEX_DIR": str(index),
        "FACTDEBATE_AUTH": "off", "FACTDEBATE_MODEL": "openai:m",
        "FACTDEBATE_BASE_URL": f"http://op:{SECRET}@{failing}/500/v1"})

    async def run() -> dict:
        c = get_client(url=url)
        thread = (await c.threads.create())["thread_id"]
        return await c.runs.wait(thread, "standard", input={"claim": "Paris is in France."},
                                 context={"llm_retries": 0}, raise_error=False)

    try:
        error = asyncio.run(run())["__error__"]
    finally:
        stop_server(proc)
    assert "internal error" not in error["message"], error
    assert "model server at http://op:***@" in error["message"] and SECRET not in str(error)


def test_an_unreachable_mcp_url_is_named_with_its_credentials_masked():
    from factdebate.core.errors import BackendUnavailableError
    from factdebate.tools.tool_providers import McpToolProvider

    url = f"http://op:{SECRET}@127.0.0.1:{free_port()}/mcp"
    provider = McpToolProvider({"url": url, "transport": "streamable_http"})

    async def listing() -> None:
        try:
            await provider.list_tools()
        finally:
            await provider.aclose()

    with pytest.raises(BackendUnavailableError) as caught:
        asyncio.run(listing())
    assert "MCP tool server http://op:***@127.0.0.1" in str(caught.value)
    assert SECRET not in str(caught.value)
