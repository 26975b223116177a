"""One way to name an index (core/context.py ``resolve_index``, ``index_named`` and the Context's
``index``), and what ``ls indexes`` / ``index --info`` read of a manifest
(tools/index_state.py). The indexes here are folders holding a hand-written manifest: nothing
is searched."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from factdebate.core.context import (
    Context,
    check_client_settings,
    index_named,
    named_indexes,
    resolve_index,
)
from factdebate.core.errors import ConfigError, InputError
from factdebate.nodes.tool_mad.state import ToolMadContext
from factdebate.tools.index_state import granularity_of, quirk_counts, source_format_of


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$FACTDEBATE_HOME`` holding the indexes ``fever-wiki`` and ``my.docs`` (each a folder
    with a manifest), a damaged one (``broken``: no manifest), an unfinished build and an empty
    folder."""
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FACTDEBATE_INDEX_DIR", raising=False)
    indexes = tmp_path / "home" / "indexes"
    for name in ("fever-wiki", "my.docs", ".fever-wiki.building-1"):
        (indexes / name).mkdir(parents=True)
        (indexes / name / "manifest.json").write_text("{}", encoding="utf-8")
    (indexes / "empty").mkdir()
    (indexes / "broken").mkdir()  # damaged: no manifest; named, and refused with its damage later
    (indexes / "broken" / "keyword").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def test_named_indexes_are_the_built_ones_only(home):
    assert named_indexes() == ["broken", "fever-wiki", "my.docs"]


def test_a_name_is_the_folder_under_the_indexes_home_and_a_path_is_that_folder(home, tmp_path):
    assert resolve_index("fever-wiki") == (home / "indexes" / "fever-wiki", "fever-wiki")
    assert resolve_index(" my.docs ") == (home / "indexes" / "my.docs", "my.docs")
    assert resolve_index("broken") == (home / "indexes" / "broken", "broken")  # damage: later
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert resolve_index(str(elsewhere)) == (elsewhere, "")
    assert resolve_index("./elsewhere") == (elsewhere, "")
    assert resolve_index("elsewhere") == (elsewhere, "")  # a folder here is that folder


def test_a_folder_here_that_is_no_index_does_not_hide_the_index_of_its_name(home, tmp_path):
    (tmp_path / "fever-wiki" / "wiki-pages").mkdir(parents=True)  # the dump, unpacked here
    assert resolve_index("fever-wiki") == (home / "indexes" / "fever-wiki", "fever-wiki")
    (tmp_path / "fever-wiki" / "manifest.json").write_text("{}", encoding="utf-8")
    assert resolve_index("fever-wiki") == (tmp_path / "fever-wiki", "")  # an index here: it


def test_an_unknown_name_lists_the_indexes_there_are_and_suggests_the_closest(home):
    with pytest.raises(ConfigError) as caught:
        resolve_index("fever_wiki")
    text = str(caught.value)
    assert "--index 'fever_wiki': no index of that name" in text
    assert "did you mean 'fever-wiki'?" in text
    assert f"indexes in {home / 'indexes'}: broken, fever-wiki, my.docs (factdebate ls indexes)" in text
    assert f"--index-dir {home / 'indexes' / 'fever_wiki'}" in text


def test_no_index_at_all_says_none_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "nothing"))
    with pytest.raises(ConfigError, match="no index is built in .* yet"):
        resolve_index("fever-wiki")


@pytest.mark.parametrize("value,error", [("", InputError), ("  ", InputError),
                                         ("./missing", InputError), ("/no/such/folder", InputError)])
def test_an_empty_value_or_a_missing_folder_is_one_error(home, value, error):
    with pytest.raises(error) as caught:
        resolve_index(value)
    assert "\n" not in str(caught.value)


def test_the_context_searches_a_named_index(home):
    ctx = ToolMadContext(index="fever-wiki")
    assert ctx.index_path == home / "indexes" / "fever-wiki"
    assert ctx.index_dir == str(home / "indexes" / "fever-wiki")
    again = dataclasses.replace(ctx, max_rounds=2)  # replace passes the resolved folder back
    assert again.index_path == ctx.index_path and again.index == "fever-wiki"
    assert Context().index_path == home / "index"  # no name: the default folder, as before


def test_a_named_index_wins_over_the_environment_but_not_over_a_folder_named_with_it(
        home, monkeypatch, tmp_path):
    monkeypatch.setenv("FACTDEBATE_INDEX_DIR", str(tmp_path / "operator-index"))
    assert Context(index="my.docs").index_path == home / "indexes" / "my.docs"
    assert Context().index_path == tmp_path / "operator-index"
    with pytest.raises(ConfigError, match="index='my.docs' and index_dir both name"):
        Context(index="my.docs", index_dir=str(tmp_path / "other"))


@pytest.mark.parametrize("name", ["../fever-wiki", "/etc", "fever-wiki/../../x", ".hidden",
                                  "..", "a b", "~/x", "x" * 101, "fever-wiki/x"])
def test_a_clients_index_never_leaves_the_operators_indexes_folder(home, name):
    check_client_settings(ToolMadContext, {"index": name}, set())  # a run field: allowed
    with pytest.raises(ConfigError) as caught:
        ToolMadContext(index=name)  # ... but only as a plain name of a built index
    assert "is not an index name" in str(caught.value) or "no index of that name" in str(
        caught.value)


def test_what_a_client_is_told_holds_no_path_of_the_operator(home):
    with pytest.raises(ConfigError) as caught:
        ToolMadContext(index="nope")
    text = str(caught.value)
    assert "indexes: broken, fever-wiki, my.docs" in text and str(home) not in text
    assert str(home) in str(pytest.raises(ConfigError, index_named, "nope").value)


def test_index_dir_stays_operator_only_and_index_is_a_run_field(home):
    from factdebate.core.context import operator_fields, run_fields

    assert "index" in run_fields(ToolMadContext) and "index_dir" in operator_fields(ToolMadContext)


def test_format_granularity_and_quirks_of_a_dump_and_of_the_jsonl_corpus():
    dump = {"source_format": "fever-wiki", "granularity": "sentence",
            "quirks": {"repaired": 3, "skipped": 1, "examples": []}}
    jsonl = {"corpus": "/c.jsonl", "passages": 4}
    assert (source_format_of(dump), granularity_of(dump)) == ("fever-wiki", "sentence")
    assert (source_format_of(jsonl), granularity_of(jsonl)) == ("jsonl", "chunk")
    assert (source_format_of(None), granularity_of(None)) == (None, None)
    assert quirk_counts(dump) == (3, 1)
    assert quirk_counts({"repaired": 2, "skipped": 0}) == (2, 0)  # top-level counts read too
    assert quirk_counts(jsonl) == (None, None)
    assert json.dumps(quirk_counts({"quirks": {"repaired": True}})) == "[null, null]"


def test_a_server_accepts_a_clients_index_name_and_refuses_a_path_or_a_folder(home):
    from factdebate.server.policy import Refused, check_settings

    check_settings({"index": "fever-wiki"}, "context", "tool_mad", stored=True)
    for value in ("../fever-wiki", str(home / "indexes" / "fever-wiki"), "nope"):
        with pytest.raises(Refused) as caught:
            check_settings({"index": value}, "context", "tool_mad", stored=True)
        assert caught.value.field == "index" and caught.value.status == 422
    assert "indexes: broken, fever-wiki, my.docs" in str(caught.value)  # "nope": names, no path
    assert str(home) not in str(caught.value)
    with pytest.raises(Refused) as caught:
        check_settings({"index_dir": str(home / "indexes" / "fever-wiki")}, "context", "tool_mad")
    assert caught.value.field == "index_dir" and caught.value.status == 403


def test_describe_names_the_format_and_granularity_and_a_keyword_only_index():
    from factdebate.evaluation.index_identity import describe, public_identity

    dump = {"index_dir": "/idx", "status": "ok", "corpus": "/dumps/wiki-pages",
            "corpus_sha256": "a" * 64, "passages": 9, "source_format": "fever-wiki",
            "granularity": "sentence", "embedding_model": None, "vector_index": None,
            "keyword_index": {"kind": "tantivy BM25"}, "milvus_uri": "/idx/milvus.db",
            "built": "2026-01-01T00:00:00+00:00"}
    line = describe(dump)
    assert "9 passages, format fever-wiki, granularity sentence)" in line
    assert "keyword-only (no embeddings, no vector index)" in line and "Milvus" not in line
    told = public_identity(dict(dump, source_format="/etc/passwd"))  # a hand-edited manifest
    assert told["granularity"] == "sentence" and told["source_format"] is None
