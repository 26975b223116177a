"""First use from Python behaves as the command line's (graphs/first_use.py).

On a home without an index, the README's Python example (``graph.invoke`` on an exported graph)
indexes the bundled demo corpus first, with the CLI's one announcement line, and runs on it (a
real ``python`` process on a fresh home: the slow tier). A damaged index in the default folder is
one error line naming the rebuild command, raised before any model is called; a run that reads no
local index (the ``static`` retriever) or names its own index folder builds nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from factdebate.core.errors import IndexDamagedError
from factdebate.graphs.tool_mad import graph as tool_mad_graph
from factdebate.run.engine import run_graph
from factdebate.testing.scenarios import answer_role

CLAIM = "The Eiffel Tower is in Paris."
README_EXAMPLE = '''
from factdebate.graphs.tool_mad import graph
result = graph.invoke({"claim": "The Eiffel Tower is in Paris."},
                      context={"debater_model": "scripted:agree"})
print(result["label"], [p["title"] for p in result["verdict_evidence"]])
'''


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``FACTDEBATE_HOME`` (holding MiniLM's ONNX graph, as an installed home does) with
    no index folder named anywhere."""
    from tests.integration.servers import warm_home

    monkeypatch.setenv("FACTDEBATE_HOME", str(warm_home(tmp_path / "home")))
    for name in ("FACTDEBATE_INDEX_DIR", "FACTDEBATE_MILVUS_URI", "TAVILY_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def damage(home: Path) -> None:
    index = home / "index"
    index.mkdir(parents=True)
    (index / "milvus.db").write_bytes(b"not an index")


def test_a_damaged_default_index_is_one_line_before_any_model_call(home: Path, scenario):
    damage(home)
    calls: list[Any] = []
    spec = scenario(lambda call: calls.append(call) or answer_role(call, debater_label=0))
    with pytest.raises(IndexDamagedError) as refused:
        tool_mad_graph.invoke({"claim": CLAIM}, context={"debater_model": spec})
    message = str(refused.value)
    assert f"the index at {home / 'index'} is damaged" in message and "\n" not in message
    assert "factdebate index" in message  # the rebuild command
    assert calls == []


async def test_run_graph_applies_the_same_rule(home: Path):
    from factdebate.nodes.tool_mad.state import ToolMadContext

    damage(home)
    with pytest.raises(IndexDamagedError, match="is damaged"):
        await run_graph("tool_mad", {"claim": CLAIM}, ToolMadContext(debater_model="scripted:agree"),
                        checkpointer=None)  # type: ignore[arg-type]  # refused before it is used


def test_a_run_that_reads_no_local_index_builds_none(home: Path):
    out = tool_mad_graph.invoke({"claim": CLAIM}, context={
        "debater_model": "scripted:agree", "rag_backend": "static", "search_backend": "static"})
    assert out["label"] == "SUPPORTS"
    assert not (home / "index").exists()


def test_a_framework_that_retrieves_nothing_builds_none(home: Path):
    from factdebate.graphs.baselines.cot import graph as cot

    out = cot.invoke({"claim": CLAIM}, context={"debater_model": "scripted:agree"})
    assert out["label"] == "SUPPORTS" and not (home / "index").exists()


@pytest.mark.slow  # indexes the 264-passage demo corpus in a process of its own (~40-70 s)
def test_the_readme_python_example_runs_on_a_fresh_home(tmp_path: Path):
    from tests.integration.servers import warm_home

    home = warm_home(tmp_path / "home")  # MiniLM's ONNX graph, as every installed home has it
    env = {k: v for k, v in os.environ.items()
           if k not in ("FACTDEBATE_INDEX_DIR", "FACTDEBATE_MILVUS_URI", "TAVILY_API_KEY")}
    done = subprocess.run([sys.executable, "-c", README_EXAMPLE], cwd=tmp_path,
                          env={**env, "FACTDEBATE_HOME": str(home)}, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert (f"factdebate: No index yet: indexing the bundled demo corpus into {home / 'index'} "
            "(once).") in done.stderr.splitlines()
    label, _, titles = done.stdout.strip().partition(" ")
    assert label == "SUPPORTS" and "Eiffel" in titles, done.stdout
