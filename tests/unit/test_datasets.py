"""Dataset loaders on temporary files, sampling, registry (evaluation/datasets.py, formats.py)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from factdebate.core.errors import ConfigError, InputError
from factdebate.evaluation.datasets import DATASETS, load_items, resolve_data_dir, stratified_sample


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def claims(n_sup: int, n_ref: int, n_nei: int) -> list[dict]:
    labels = ["SUPPORTS"] * n_sup + ["REFUTES"] * n_ref + ["NOT ENOUGH INFO"] * n_nei
    return [{"id": f"fever-{i}", "dataset": "fever", "task": "claim_verification",
             "claim": f"claim {i}", "label": lab} for i, lab in enumerate(labels)]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "fever").mkdir()
    write_jsonl(tmp_path / "fever" / "paper_dev.jsonl", claims(60, 30, 10))
    return tmp_path


def test_shared_schema_maps_onto_debate_input(data_dir):
    items = load_items("fever", data_dir)
    assert len(items) == 100
    first = items[0]
    assert first.id == "fever-0" and first.gold_label == "SUPPORTS"
    assert first.input == {"claim": "claim 0", "task": "fever"}


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "claim": "x", "label": "SUPPORTS"}\n\n{"id": "b", "claim": \n',
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.jsonl, line 3: not valid JSON"):
        load_items(str(path))
    path.write_text('{"id": "a", "claim": "x", "label": "MAYBE"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"line 1: label 'MAYBE' is not on the 'fever' label set"):
        load_items(str(path))
    path.write_text('{"id": "a", "label": "SUPPORTS"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 1: no claim or question"):
        load_items(str(path))
    path.write_text('[1, 2]\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 1: expected a JSON object"):
        load_items(str(path))


def test_official_release_formats(tmp_path):
    fever = write_jsonl(tmp_path / "fever_official.jsonl", [
        {"id": 75397, "verifiable": "VERIFIABLE", "label": "REFUTES", "claim": "Nikolaj ...",
         "evidence": [[[92206, 104971, "Nikolaj_Coster-Waldau", 7]]]}])
    assert load_items(str(fever))[0].gold_label == "REFUTES"
    hover = tmp_path / "hover_dev_release_v1.1.json"
    hover.write_text(json.dumps([{"uid": "u1", "claim": "c", "supporting_facts": [["A", 0]],
                                  "label": "NOT_SUPPORTED", "num_hops": 3}]))
    item = load_items(str(hover))[0]
    assert (item.id, item.gold_label, item.subset) == ("hover_dev_release_v1.1-u1", "REFUTES", "3hop")
    pubmed = tmp_path / "ori_pqal.json"
    pubmed.write_text(json.dumps({"123": {"QUESTION": "Does X?", "CONTEXTS": ["ctx a", "ctx b"],
                                          "LABELS": ["BACKGROUND", "RESULTS"],
                                          "final_decision": "maybe"}}))
    item = load_items(str(pubmed))[0]
    assert item.gold_label == "maybe" and item.input["task"] == "pubmedqa"
    assert [d["title"] for d in item.input["documents"]] == ["BACKGROUND", "RESULTS"]
    medqa = write_jsonl(tmp_path / "medqa_test.jsonl", [
        {"question": "Q?", "options": {"A": "a", "B": "b", "C": "c", "D": "d"},
         "answer_idx": "C", "answer": "c", "id": 0}])
    item = load_items(str(medqa))[0]
    assert item.gold_label == "C" and item.input["options"]["C"] == "c"
    ramdocs = write_jsonl(tmp_path / "RAMDocs_test.jsonl", [
        {"id": 1, "question": "Q?", "gold_answers": ["x", "y"], "wrong_answers": ["z"],
         "documents": [{"text": "doc", "type": "correct", "answer": "x"}]}])
    item = load_items(str(ramdocs))[0]
    assert item.input["task"] == "open_qa" and item.gold_label is None
    assert item.gold_answers == ("x", "y") and item.wrong_answers == ("z",)
    assert item.input["documents"][0]["text"] == "doc"
    averitec = tmp_path / "dev.json"
    averitec.write_text(json.dumps([{"claim": "c", "label": "Conflicting Evidence/Cherrypicking"}]))
    with pytest.raises(InputError, match="not on the 'fever' label set"):
        load_items(str(averitec))  # an ad-hoc file without a registered dataset is 3-way


def test_registered_task_mapping_on_shared_files(tmp_path):
    (tmp_path / "averitec").mkdir()
    write_jsonl(tmp_path / "averitec" / "dev.jsonl", [
        {"id": "averitec-dev-0", "dataset": "averitec", "claim": "c", "label": "CONFLICTING"}])
    item = load_items("averitec", tmp_path)[0]
    assert item.input["task"] == "averitec" and item.gold_label == "CONFLICTING"
    (tmp_path / "hover").mkdir()
    write_jsonl(tmp_path / "hover" / "dev.jsonl", [
        {"id": f"hover-{i}", "claim": "c", "label": "SUPPORTS", "num_hops": h}
        for i, h in enumerate([2, 3, 3, 4])])
    assert [i.id for i in load_items("hover_3hop", tmp_path)] == ["hover-1", "hover-2"]
    assert load_items("hover", tmp_path)[0].input["task"] == "binary"


def test_stratified_sampling_keeps_shares_and_is_seeded(data_dir):
    items = load_items("fever", data_dir)
    sample = stratified_sample(items, 20, seed=1)
    assert Counter(i.gold_label for i in sample) == {"SUPPORTS": 12, "REFUTES": 6,
                                                      "NOT ENOUGH INFO": 2}
    assert [i.id for i in sample] == [i.id for i in stratified_sample(items, 20, seed=1)]
    assert [i.id for i in sample] != [i.id for i in stratified_sample(items, 20, seed=2)]
    # file order is kept
    positions = [int(i.id.split("-")[1]) for i in sample]
    assert positions == sorted(positions)
    # largest remainders: 7 of 60/30/10 -> 4.2, 2.1, 0.7 -> 4, 2, 1
    assert Counter(i.gold_label for i in stratified_sample(items, 7, seed=0)) == {
        "SUPPORTS": 4, "REFUTES": 2, "NOT ENOUGH INFO": 1}
    assert len(stratified_sample(items, None, seed=0)) == 100
    assert len(stratified_sample(items, 500, seed=0)) == 100


def test_unknown_dataset_did_you_mean_and_data_dir_errors(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="did you mean 'feverous'"):
        DATASETS.get("feverus")
    monkeypatch.delenv("FACTDEBATE_DATA_DIR", raising=False)
    with pytest.raises(ConfigError, match="FACTDEBATE_DATA_DIR"):
        resolve_data_dir(None)
    monkeypatch.setenv("FACTDEBATE_DATA_DIR", str(tmp_path))
    assert resolve_data_dir(None) == tmp_path.resolve()
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_data_dir(tmp_path / "nope")
    assert DATASETS.entry("toolmad_faviq").meta["version"] == "toolmad-sample-faviq-200"
    with pytest.raises(InputError, match="duplicate id"):
        write_jsonl(tmp_path / "dup.jsonl", claims(1, 0, 0) * 2)
        load_items(str(tmp_path / "dup.jsonl"))


def test_parsed_files_are_reused_until_the_file_changes(data_dir, monkeypatch):
    import os

    import factdebate.evaluation.datasets as datasets

    first = load_items("fever", data_dir)
    first.clear()  # callers get their own list
    calls = []
    original = datasets._parse_items
    monkeypatch.setattr(datasets, "_parse_items", lambda *a: calls.append(a) or original(*a))
    again = load_items("fever", data_dir)
    assert len(again) == 100 and not calls  # served from the cache
    path = data_dir / "fever" / "paper_dev.jsonl"
    write_jsonl(path, claims(3, 2, 1))
    os.utime(path, ns=(1, 10**18))  # a different mtime even within the clock's resolution
    changed = load_items("fever", data_dir)
    assert len(changed) == 6 and len(calls) == 1


# -- issue #29 item 6: malformed gold evidence stops the load, naming file, line, item, field ----
MALFORMED_GOLD = [
    # (record fields, the field the error names, what it says the value is)
    ({"evidence_sets": 5}, "evidence_sets", "a number (5)"),
    ({"evidence_sets": {"t": "Moon"}}, "evidence_sets", "an object"),
    ({"evidence_sets": "Moon"}, "evidence_sets", "a string ('Moon')"),
    ({"evidence_sets": [5]}, "evidence_sets[0]", "a number (5)"),
    ({"evidence_sets": ["Moon"]}, "evidence_sets[0]", "a string ('Moon')"),
    ({"evidence_sets": [[5]]}, "evidence_sets[0][0]", "a number (5)"),
    ({"evidence_sets": [[{"page": 5, "sent_id": 0}]]}, "evidence_sets[0][0].page", "a number (5)"),
    ({"evidence_sets": [[{"page": ["Moon"], "sent_id": 0}]]}, "evidence_sets[0][0].page", "a list"),
    ({"evidence_sets": [[{"page": {"t": "Moon"}, "sent_id": 0}]]}, "evidence_sets[0][0].page",
     "an object"),
    ({"evidence_sets": [[{"sent_id": 0}]]}, "evidence_sets[0][0].page", "missing"),
    ({"evidence_sets": [[{"page": " ", "sent_id": 0}]]}, "evidence_sets[0][0].page", "a string"),
    ({"evidence_sets": [[{"page": "Moon", "sent_id": "x"}]]}, "evidence_sets[0][0].sent_id",
     "a string ('x')"),
    ({"evidence_sets": [[{"page": "Moon", "sent_id": True}]]}, "evidence_sets[0][0].sent_id",
     "a boolean"),
    ({"dataset": "hover", "evidence_sets": 5}, "evidence_sets", "a number (5)"),
    ({"dataset": "feverous", "evidence": [{"title": 5, "text": "The Moon."}]}, "evidence[0].title",
     "a number (5)"),
    ({"dataset": "feverous", "evidence": ["Moon"]}, "evidence[0]", "a string"),
    ({"dataset": "feverous", "evidence": [{"title": "Moon"}]}, "evidence[0].text", "missing"),
    ({"dataset": "scifact", "evidence": [{"doc_id": "1", "sentences": "0"}]},
     "evidence[0].sentences", "a string"),
    ({"dataset": "scifact", "evidence": [{"doc_id": [1], "sentences": [0]}]}, "evidence[0].doc_id",
     "a list"),
    ({"evidence": {"13": 5}}, "evidence['13']", "a number (5)"),  # SciFact release
    ({"evidence": {"13": [{"sentences": [0, "1"]}]}}, "evidence['13'][0].sentences[1]", "a string"),
    ({"verifiable": "VERIFIABLE", "evidence": [[[1, 2, 5, 0]]]}, "evidence[0][0][2]",
     "a number (5)"),
    ({"verifiable": "VERIFIABLE", "evidence": [["Moon"]]}, "evidence[0][0]", "a string"),
    ({"supporting_facts": [[["Moon"], 0]]}, "supporting_facts[0][0]", "a list"),
    ({"supporting_facts": ["Moon"]}, "supporting_facts[0]", "a string"),
]


@pytest.mark.parametrize("fields,field,what", MALFORMED_GOLD,
                         ids=[f"{i}-{f}" for i, (_, f, _w) in enumerate(MALFORMED_GOLD)])
def test_malformed_gold_evidence_names_file_line_item_and_field(tmp_path, fields, field, what):
    good = {"id": "fever-1", "claim": "The Moon orbits the Earth.", "label": "SUPPORTS",
            "evidence_sets": [[{"page": "Moon", "sent_id": 0}]]}
    bad = {"id": "fever-2", "claim": "The Moon is made of cheese.", "label": "REFUTES", **fields}
    if "evidence_sets" not in fields:
        good.pop("evidence_sets")
    path = write_jsonl(tmp_path / "gold.jsonl", [good, bad])
    with pytest.raises(InputError) as caught:
        load_items(str(path))
    message = str(caught.value)
    assert re.match(re.escape(f"{path}, line 2, item ") + r"'(gold-)?fever-2'"
                    + re.escape(f": gold evidence {field} is {what}"), message), message
    assert "\n" not in message


def test_well_formed_gold_evidence_loads(tmp_path):
    records = [
        {"id": "f-1", "claim": "c", "label": "SUPPORTS",
         "evidence_sets": [[{"page": "Moon", "sent_id": 0}], [{"page": "Earth", "sent_id": None}]]},
        {"id": "f-2", "claim": "c", "label": "NOT ENOUGH INFO", "evidence_sets": []},
        {"id": "f-3", "claim": "c", "label": "NOT ENOUGH INFO", "evidence_sets": None},
        {"id": "f-4", "claim": "c", "label": "REFUTES",  # AVeriTeC QA pairs: not gold evidence
         "evidence": [{"question": "q", "answer": "a"}]},
        {"id": "f-5", "dataset": "feverous", "claim": "c", "label": "SUPPORTS",
         "evidence": [{"title": "Moon", "text": "The Moon orbits the Earth."}]},
        {"id": "f-6", "dataset": "scifact", "claim": "c", "label": "SUPPORTS",
         "evidence": [{"doc_id": "13", "sentences": [0, 2], "label": "SUPPORT"}]},
        {"id": "f-7", "verifiable": "NOT VERIFIABLE", "claim": "c", "label": "NOT ENOUGH INFO",
         "evidence": [[[1, None, None, None]]]},
    ]
    items = load_items(str(write_jsonl(tmp_path / "ok.jsonl", records)))
    assert items[0].meta["gold_evidence"]["sets"] == [
        [{"page": "Moon", "sent_id": 0, "text": None}],
        [{"page": "Earth", "sent_id": None, "text": None}]]
    assert len(items) == len(records)


def test_eval_on_malformed_gold_evidence_is_one_error_line(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from factdebate.cli.main import app

    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    path = write_jsonl(tmp_path / "gold.jsonl", [
        {"id": "f-1", "claim": "The Moon orbits the Earth.", "label": "SUPPORTS",
         "evidence_sets": [[{"page": "Moon", "sent_id": 0}]]},
        {"id": "f-2", "claim": "The Moon is cheese.", "label": "REFUTES", "evidence_sets": 5}])
    done = CliRunner().invoke(app, ["eval", "--framework", "standard", "--dataset", str(path),
                                    "--model", "scripted:agree", "--out", str(tmp_path / "out")])
    assert done.exit_code == InputError.exit_code, done.output
    lines = [ln for ln in done.output.splitlines() if ln.strip()]
    flat = " ".join(done.output.split())
    assert lines[0].startswith("error:") and "Traceback" not in done.output, done.output
    assert "line 2, item 'gold-f-2': gold evidence evidence_sets is a number (5)" in flat, flat
    assert not (tmp_path / "out" / "results.jsonl").exists()
