"""docs/extending.md runs as written, outside the repository.

Every code block the page marks with ``<!-- file: PATH -->`` is written to a temporary folder
(outside the repository), which goes on ``sys.path``; the tests import the registration and run
the protocol with the package's own test doubles (``factdebate.testing``: the scripted model, the
``static`` retriever) - through the page's own ``try_it.verify``, through ``run_graph`` by name,
through the ``langgraph.json`` the page gives. In a subprocess started in that folder, with
nothing of the repository on its path but the installed package: the page's own tests
(``test_my_protocol.py``) under ``pytest``, and the command line with ``FACTDEBATE_PLUGINS`` -
``ls``, ``verify`` and ``eval`` over the page's dataset file in the shared record schema. A
change to the page that breaks its code, or to the code that breaks the page, fails here. The
public pieces the page relies on, ``add_prompt_sets`` and the plugin modules, are tested at the
end.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

import factdebate.prompts as prompts
from factdebate.core.errors import ConfigError
from factdebate.core.registry import import_plugin
from factdebate.graphs.registry import FRAMEWORKS, build_framework, context_class
from factdebate.prompts import add_prompt_sets, load_prompts
from factdebate.run.engine import run_graph
from factdebate.testing.scenarios import verdict
from factdebate.testing.scripted import ScriptCall

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "extending.md"
BIN = Path(sys.executable).parent
FACTDEBATE = BIN / "factdebate"
FILE_BLOCK = re.compile(r"<!-- file: (?P<path>\S+) -->\n```\w*\n(?P<body>.*?)\n```\n", re.DOTALL)
CLAIM = "The Eiffel Tower is located in Paris."
NODES = ["prepare", "gather_evidence", "advocate", "skeptic", "judge", "cite_verdict", "review"]
PAGE_FILES = {"my_protocol/graph.py", "my_protocol/__init__.py", "try_it.py", "langgraph.json",
              "my_protocol/prompts/devils_advocate/prompts.yaml", "test_my_protocol.py",
              "claims.jsonl"}


def page_files() -> dict[str, str]:
    """The page's files: path -> text."""
    return {m["path"]: m["body"] + "\n" for m in FILE_BLOCK.finditer(PAGE.read_text("utf-8"))}


def write_page_files(folder: Path) -> None:
    assert not folder.resolve().is_relative_to(REPO)  # outside the repository
    for path, text in page_files().items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")


@pytest.fixture
def tutorial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The page's files in ``tmp_path``, importable; the registry and the prompt sets are
    restored afterwards (other tests list every framework)."""
    assert set(page_files()) == PAGE_FILES  # every file of the layout is on the page, once
    write_page_files(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    FRAMEWORKS.names()  # plugins of this process loaded before the registry is copied
    monkeypatch.setattr(FRAMEWORKS, "_entries", dict(FRAMEWORKS._entries))
    monkeypatch.setattr(FRAMEWORKS, "_aliases", dict(FRAMEWORKS._aliases))
    monkeypatch.setattr(prompts, "_PROMPT_SETS", dict(prompts._PROMPT_SETS))
    monkeypatch.setattr(prompts, "_SOURCES", dict(prompts._SOURCES))
    yield tmp_path
    for module in [m for m in sys.modules if m.split(".")[0] in ("my_protocol", "try_it")]:
        del sys.modules[module]


def outside_env(folder: Path, **extra: str) -> dict[str, str]:
    """The environment of a process run in ``folder`` as a user outside the repository runs it:
    the folder on ``PYTHONPATH`` (not the repository's tests), a home of its own, the plugin."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FACTDEBATE_", "PYTEST_"))}
    return {**env, "PYTHONPATH": str(folder), "FACTDEBATE_HOME": str(folder / "home"),
            "FACTDEBATE_PLUGINS": "my_protocol", **extra}


def test_the_page_registers_a_framework_that_reaches_a_cited_verdict(tutorial: Path):
    try_it = importlib.import_module("try_it")  # imports my_protocol: the registration
    assert FRAMEWORKS.resolve("devils-advocate") == "devils_advocate"
    assert load_prompts("devils_advocate").version == "devils_advocate-1"

    out = try_it.verify(CLAIM, debater_model="scripted:agree", rag_backend="static")
    assert out["label"] == "SUPPORTS" and out["stopped_by"] == "judge" and out["round"] == 1
    assert [t["agent"] for t in out["turns"]] == ["advocate", "skeptic"]
    assert all(t["evidence"] and t["cited"] for t in out["turns"])  # both sides saw and cited
    assert out["ledger"]["llm_calls"] == 3 and out["ledger"]["tool_calls"] == {"static": 1}
    assert [p["title"] for p in out["verdict_evidence"]] == ["Eiffel Tower"]
    assert "judge" in out["verdict_evidence"][0]["cited_by"]
    assert {p["title"] for p in out["retrieved_evidence"]} == {"Paris", "Mount Everest",
                                                                "Marie Curie"}
    assert not out["flags"]


def test_the_skeptic_answers_the_advocate_and_the_judge_decides(tutorial: Path, scenario):
    try_it = importlib.import_module("try_it")
    seen: dict[str, str] = {}

    def respond(call: ScriptCall) -> Any:
        seen[call.agent or call.role] = call.prompt
        side = {"advocate": 0, "skeptic": 1}.get(call.agent, 2)  # judge: NOT ENOUGH INFO
        return verdict(call, side, f"{call.agent or call.role} reasoning")

    out = try_it.verify(CLAIM, debater_model=scenario(respond), rag_backend="static")
    assert set(seen) == {"advocate", "skeptic", "judge"}
    assert "advocate agent: SUPPORTS - advocate reasoning" in seen["skeptic"]
    assert "advocate reasoning" not in seen["advocate"]
    assert "skeptic reasoning" in seen["judge"] and "wrought-iron lattice tower" in seen["judge"]
    assert out["label"] == "NOT ENOUGH INFO" and out["rationale"] == "judge reasoning"


def test_the_graph_draws_its_nodes(tutorial: Path):
    importlib.import_module("my_protocol")
    for graph in (build_framework("devils_advocate").compile(),
                  importlib.import_module("my_protocol.graph").graph):
        drawn = [n for n in graph.get_graph(xray=True).nodes if not n.startswith("__")]
        assert drawn == NODES


async def test_run_graph_runs_it_by_name(tutorial: Path):
    importlib.import_module("my_protocol")
    ctx = context_class("devils_advocate")(debater_model="scripted:disagree?first=advocate",
                                           rag_backend="static")
    assert ctx.prompt_set == "devils_advocate" and ctx.top_k == 4
    result = await run_graph("devils-advocate", {"claim": CLAIM}, ctx,
                             checkpointer=InMemorySaver())  # the CLI's engine: lean turns
    assert result["framework"] == "devils_advocate"
    assert result["prompt_version"] == "devils_advocate-1"
    assert [t["label"] for t in result["turns"]] == ["SUPPORTS", "REFUTES"]  # the sides split
    assert result["label"] == "SUPPORTS" and result["stopped_by"] == "judge"  # judge: 1st label
    assert [p["title"] for p in result["evidence"]] == ["Eiffel Tower"]


def test_the_pages_langgraph_json_names_the_exported_graph(tutorial: Path):
    config = json.loads((tutorial / "langgraph.json").read_text("utf-8"))
    assert config["env"]["FACTDEBATE_PLUGINS"] == "my_protocol"
    module, _, attr = config["graphs"]["devils_advocate"].partition(":")
    graph = getattr(importlib.import_module(module), attr)  # as langgraph-api imports it
    assert isinstance(graph, CompiledStateGraph) and graph.get_name() == "Devil's advocate"
    assert "devils_advocate" in FRAMEWORKS  # importing the graph ran the registration


def test_a_stopping_rule_of_its_own_routes_the_same_after_a_state_edit(tutorial: Path):
    """``stop_on_agreement``: the skeptic's node decides and writes ``stopped_by``; the router
    reads only the state, so ``update_state`` (no run context) routes as the run did."""
    importlib.import_module("my_protocol")
    graph = build_framework("devils_advocate").compile(checkpointer=InMemorySaver())
    ctx = context_class("devils_advocate")(debater_model="scripted:agree", rag_backend="static",
                                           stop_on_agreement=True)
    config = {"configurable": {"thread_id": "stop"}}
    graph.invoke({"claim": CLAIM}, config, context=ctx)
    out = graph.get_state(config).values
    assert out["stopped_by"] == "agreement" and out["label"] == "SUPPORTS"
    assert [t["agent"] for t in out["turns"]] == ["advocate", "skeptic"]  # no judge
    assert out["ledger"]["llm_calls"] == 2 and out["verdict_evidence"]
    graph.update_state(config, {"stopped_by": "agreement"}, as_node="skeptic")
    assert graph.get_state(config).next == ("cite_verdict",)  # routed from the state alone
    graph.update_state(config, {"stopped_by": ""}, as_node="skeptic")
    assert graph.get_state(config).next == ("judge",)


@pytest.mark.slow  # pytest in a process of its own, importing the package afresh (~20-100 s)
def test_the_pages_own_tests_pass_under_pytest_outside_the_repository(tmp_path: Path):
    from tests.integration.servers import warm_home

    write_page_files(tmp_path)
    warm_home(tmp_path / "home")  # MiniLM's ONNX graph, as an installed home holds it
    done = subprocess.run(
        [str(BIN / "python"), "-m", "pytest", "test_my_protocol.py", "-q", "-p", "no:randomly",
         "-p", "no:cacheprovider"], cwd=tmp_path, env=outside_env(tmp_path),
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "4 passed" in done.stdout, done.stdout[-2000:]


def _factdebate(folder: Path, plugins: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(FACTDEBATE), *args], env=outside_env(folder,
                                                                    FACTDEBATE_PLUGINS=plugins),
                          cwd=folder, capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # the CLI in a process of its own with the plugin (~12 s): the slow tier
def test_the_command_line_finds_it_through_factdebate_plugins(tmp_path: Path):
    write_page_files(tmp_path)
    done = _factdebate(tmp_path, "my_protocol", "ls", "context", "--framework", "devils-advocate")
    assert done.returncode == 0, done.stderr
    assert "prompt_set='devils_advocate'" in done.stdout and "top_k=4" in done.stdout
    assert "judge_model=''" in done.stdout

    bad = _factdebate(tmp_path, "my_protocl", "ls", "context", "--framework", "devils_advocate")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: plugin module 'my_protocl' cannot be imported: No "
                                 "module named 'my_protocl'"), bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    listed = _factdebate(tmp_path, "my_protocl", "ls", "frameworks")
    assert listed.returncode == 2 and "Traceback" not in listed.stderr, listed.stderr
    assert listed.stderr.startswith("error: plugin module 'my_protocl' cannot be imported")
    assert "devils_advocate" in _factdebate(tmp_path, "my_protocol", "ls", "frameworks").stdout


@pytest.mark.slow  # a real index, a verify and an eval in processes of their own (~1 min)
def test_verify_and_eval_over_the_pages_dataset_run_outside_the_repository(tmp_path: Path):
    """The page's ``claims.jsonl`` follows the shared record schema: ``eval`` reads it by path
    and runs the plug-in framework on every record, as section 6 says."""
    from tests.integration.servers import tiny_index, warm_home

    write_page_files(tmp_path)
    warm_home(tmp_path / "home")
    index = tiny_index(tmp_path)
    done = _factdebate(tmp_path, "my_protocol", "verify", "--framework", "devils_advocate",
                       CLAIM, "--model", "scripted:agree", "--set", f"index_dir={index}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SUPPORTS" in done.stdout
    done = _factdebate(tmp_path, "my_protocol", "eval", "--framework", "devils_advocate",
                       "--dataset", "claims.jsonl", "--out", "runs/da", "--model",
                       "scripted:agree", "--set", f"index_dir={index}")
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "claims.jsonl").read_text().splitlines()]
    rows = [json.loads(line) for line in
            (tmp_path / "runs" / "da" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["item_id"] for r in rows) == sorted(r["id"] for r in records)
    assert all(r["status"] == "ok" and r["framework"] == "devils_advocate" for r in rows), rows
    assert {r["item_id"]: r["gold"]["label"] for r in rows} == {r["id"]: r["label"]
                                                                for r in records}
    assert all(r["prediction"]["label"] == "SUPPORTS" for r in rows)  # scripted:agree
    run = json.loads((tmp_path / "runs" / "da" / "run.json").read_text())
    assert run["dataset"] == "claims" and run["index"]["passages"] == 3


# -- the public pieces: add_prompt_sets, plugin modules ----------------------------------------
def _prompt_set(folder: Path, name: str, text: str) -> Path:
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "prompts.yaml").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def known_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prompts, "_PROMPT_SETS", dict(prompts._PROMPT_SETS))
    monkeypatch.setattr(prompts, "_SOURCES", dict(prompts._SOURCES))


def test_add_prompt_sets_adds_a_folder_once_and_refuses_a_taken_name(tmp_path: Path, known_sets):
    ours = _prompt_set(tmp_path / "ours", "mine", "version: mine-1\nask:\n  user: '{claim}?'\n")
    assert add_prompt_sets(ours) == ["mine"]
    assert add_prompt_sets(str(ours)) == ["mine"]  # the same folder again: no clash
    assert load_prompts("mine").render("ask", claim="Is it")[0].content == "Is it?"

    other = _prompt_set(tmp_path / "other", "mine", "version: other-1\nask:\n  user: x\n")
    with pytest.raises(ConfigError, match=r"prompt set 'mine' in .*other/mine clashes with the "
                                          r"set of that name in .*ours/mine"):
        add_prompt_sets(other)
    builtin = _prompt_set(tmp_path / "b", "baselines", "version: x\n")
    with pytest.raises(ConfigError, match="'baselines' .* clashes"):
        add_prompt_sets(builtin)
    assert load_prompts("mine").version == "mine-1"
    assert load_prompts("baselines").version.startswith("baselines-")


@pytest.mark.parametrize(("text", "problem"), [
    ("ask:\n  user: x\n", "is no YAML mapping with a 'version'"),
    ("- a\n", "is no YAML mapping with a 'version'"),
    ("version: 1\nask: [x]\n", "entry 'ask' is neither a mapping nor a text"),
    ("version: 1\nask:\n  user: [x]\n", "ask.user is no text"),
    ("version: 1\nask: {user: 'x'\n", "cannot be read: while parsing a flow mapping"),
])
def test_a_malformed_prompt_set_is_one_error_naming_it(tmp_path: Path, known_sets, text, problem):
    folder = _prompt_set(tmp_path, "bad", text)
    _prompt_set(tmp_path, "good", "version: 1\n")
    with pytest.raises(ConfigError, match=re.escape(problem)) as caught:
        add_prompt_sets(folder)
    assert "prompt set 'bad' in " in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match="unknown prompt set 'good'"):
        load_prompts("good")  # all of the folder's sets or none


def test_add_prompt_sets_refuses_a_folder_without_sets(tmp_path: Path):
    with pytest.raises(ConfigError, match="no prompt set in .*nothing"):
        add_prompt_sets(tmp_path / "nothing")


def test_a_plugin_that_fails_at_import_is_one_error(tmp_path: Path, monkeypatch):
    (tmp_path / "broken_plugin.py").write_text("raise RuntimeError('half written')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="plugin module 'broken_plugin' failed at import: "
                                          "RuntimeError: half written"):
        import_plugin("broken_plugin")
    with pytest.raises(ConfigError, match="plugin module 'no_such_plugin' cannot be imported"):
        import_plugin("no_such_plugin")


def test_the_static_retriever_and_the_first_agents_option_come_with_the_package():
    import asyncio

    from factdebate.testing.scripted import load_scripted_model
    from factdebate.tools.base import RetrieverSettings, get_retriever

    static = get_retriever("static", RetrieverSettings(index_dir="", milvus_uri=""))
    hits = asyncio.run(static.search("Eiffel Tower Paris France", k=2))
    assert [h["title"] for h in hits] == ["Eiffel Tower", "Paris"]
    assert {h["source"] for h in hits} == {"static"}
    model = load_scripted_model("disagree?first=advocate,doc1", {})
    assert model.scenario == "disagree"
    with pytest.raises(ConfigError, match="first= is for the disagree scenario, not 'agree'"):
        load_scripted_model("agree?first=advocate", {})
