"""Find-or-build rule of the index (tools/demo_index.py), shared by the CLI and the server start-up.

The demo build itself (~35 s) runs in tests/integration/test_server_runs.py (a fresh server) and
tests/integration/test_integrity_index.py (the CLI); here: the decisions that must never build.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from factdebate.core.context import Context
from factdebate.core.errors import ConfigError, IndexDamagedError
from factdebate.tools.demo_index import check_index_or_build_demo, demo_allowed


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FACTDEBATE_INDEX_DIR", raising=False)
    monkeypatch.delenv("FACTDEBATE_MILVUS_URI", raising=False)
    return tmp_path / "home"


def test_demo_only_in_the_default_folder_with_nothing_configured(home: Path):
    assert demo_allowed(Context())
    assert not demo_allowed(Context(), explicit_index=True)  # --index-dir / $FACTDEBATE_INDEX_DIR
    assert not demo_allowed(Context(index_dir=str(home / "index")))  # named, even if the default
    assert not demo_allowed(Context(milvus_uri="http://127.0.0.1:19530"))


def test_damaged_default_index_is_an_error_and_left_alone(home: Path):
    index = home / "index"
    index.mkdir(parents=True)
    (index / "notes.txt").write_text("mine")
    with pytest.raises(IndexDamagedError, match="manifest.json is missing") as failed:
        check_index_or_build_demo(Context(), announce=pytest.fail)  # no demo build is announced
    assert f"--index-dir {index} --replace" in str(failed.value)
    assert [p.name for p in index.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("setting", ["index_dir", "explicit", "milvus_uri"])
def test_absent_index_at_a_named_place_is_an_error_not_a_demo_build(home, tmp_path, setting):
    elsewhere = tmp_path / "elsewhere"
    ctx = Context(index_dir=str(elsewhere)) if setting == "index_dir" else (
        Context(milvus_uri=str(tmp_path / "m.db")) if setting == "milvus_uri" else Context())
    with pytest.raises(ConfigError, match="no index in") as failed:
        check_index_or_build_demo(ctx, explicit_index=setting == "explicit", announce=pytest.fail)
    assert "factdebate index CORPUS.jsonl --index-dir" in str(failed.value)
    assert not elsewhere.exists() and not (home / "index").exists()
