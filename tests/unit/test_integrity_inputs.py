"""Input decoding, config-file safety, prefix-stable sampling.

Real files in tmp; the CLI is driven in-process with typer's runner (stdin as raw bytes).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factdebate.cli.main import app
from factdebate.core.errors import InputError
from factdebate.evaluation.config import load_config
from factdebate.evaluation.datasets import load_items, stratified_sample
from factdebate.nodes.prepare import clean_claim


def _dataset(tmp_path: Path, counts: dict[str, int], name: str = "d.jsonl") -> Path:
    rows, i = [], 0
    for label, n in counts.items():
        for _ in range(n):
            rows.append({"id": f"x-{i}", "claim": f"claim {i}", "label": label})
            i += 1
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# -- 15: prefix-stable stratified sampling -------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_every_smaller_sample_is_part_of_every_larger_one(tmp_path, seed):
    items = load_items(str(_dataset(tmp_path, {"SUPPORTS": 61, "REFUTES": 29, "NOT ENOUGH INFO": 10})))
    previous: set[str] = set()
    for limit in range(1, len(items) + 1):
        sample = stratified_sample(items, limit, seed)
        ids = {it.id for it in sample}
        assert len(ids) == limit and previous <= ids, limit
        previous = ids
        # every stratum within one item of its share, at every prefix
        counts = Counter(it.gold_label for it in sample)
        for label, total in (("SUPPORTS", 61), ("REFUTES", 29), ("NOT ENOUGH INFO", 10)):
            assert abs(counts[label] - limit * total / 100) < 1, (limit, label, counts)


def test_issue_example_limit_3_inside_limit_20_and_seeded(tmp_path):
    items = load_items(str(_dataset(tmp_path, {"SUPPORTS": 60, "REFUTES": 30, "NOT ENOUGH INFO": 10})))
    three = {it.id for it in stratified_sample(items, 3, 0)}
    twenty = {it.id for it in stratified_sample(items, 20, 0)}
    assert three <= twenty  # before: the two samples shared one item
    assert twenty != {it.id for it in stratified_sample(items, 20, 1)}
    order = [int(it.id.rsplit("-", 1)[1]) for it in stratified_sample(items, 20, 0)]
    assert order == sorted(order)  # still returned in file order


# -- 13: config files ----------------------------------------------------------------------------
def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["../../x", "a/b", "..", ".hidden", "/abs", ""])
def test_run_name_cannot_leave_out(tmp_path, name):
    path = _config(tmp_path, f"out: {tmp_path}/o\nruns:\n  - {{framework: standard, dataset: fever, "
                             f"name: {json.dumps(name)}}}\n")
    with pytest.raises(InputError, match="not a plain folder name"):
        load_config(path, {})


@pytest.mark.parametrize("key,value", [("frameworks", "standard"), ("datasets", "fever"),
                                       ("metrics", "llm_judge"), ("runs", "standard")])
def test_scalar_where_a_list_belongs_names_the_key(tmp_path, key, value):
    base = {"frameworks": "[standard]", "datasets": "[fever]"}
    base[key] = value
    body = "".join(f"{k}: {v}\n" for k, v in base.items())
    with pytest.raises(InputError, match=f"'{key}' must be a list"):
        load_config(_config(tmp_path, f"out: {tmp_path}/o\n{body}"), {})


def test_same_file_stem_does_not_collide_and_duplicate_names_are_refused(tmp_path):
    path = _config(tmp_path, f"out: {tmp_path}/o\nframeworks: [standard]\n"
                             "datasets: [a/dev.jsonl, b/dev.jsonl, fever]\n")
    folder, specs = load_config(path, {})
    outs = [spec.out for _, spec in specs]
    assert len(set(outs)) == 3 and all(o.parent == folder for o in outs)
    assert outs[2].name == "standard__fever"
    dup = _config(tmp_path, f"out: {tmp_path}/o\nruns:\n"
                            "  - {framework: standard, dataset: fever, name: r}\n"
                            "  - {framework: cot, dataset: fever, name: r}\n")
    with pytest.raises(InputError, match="several runs would write to r"):
        load_config(dup, {})


def test_config_not_utf8_or_not_yaml_is_one_error(tmp_path):
    bad = tmp_path / "run.yaml"
    bad.write_bytes("out: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        load_config(bad, {})
    with pytest.raises(InputError, match="not valid YAML"):
        load_config(_config(tmp_path, "out: [unclosed\n"), {})
    with pytest.raises(InputError, match="must hold a mapping"):
        load_config(_config(tmp_path, "- a\n- b\n"), {})


# -- 12: input text ------------------------------------------------------------------------------
def test_latin1_stdin_is_a_decode_error_not_dropped_characters(tmp_path, monkeypatch):
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(app, ["verify", "-", "--framework", "standard", "--model",
                                      "scripted:agree"], input="Caf\xe9 is open".encode("latin-1"))
    assert result.exit_code == 2
    assert "stdin is not UTF-8 text (byte 0xe9 at offset 3)" in result.output
    assert not (tmp_path / "home").exists()  # refused before anything was written


def test_undecodable_argv_bytes_are_refused():
    from factdebate.cli.verify_checks import read_claim

    as_python_sees_it = b"Caf\xe9".decode("utf-8", "surrogateescape")
    with pytest.raises(InputError, match="byte 0xe9"):
        read_claim(as_python_sees_it)
    assert read_claim("Café") == "Café"


def test_zero_width_joiners_are_kept():
    persian = "می\u200cخواهم"  # ZWNJ inside a word
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # ZWJ emoji sequence
    assert clean_claim(f"{persian} {family}\u200b\x07") == f"{persian} {family}"
