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
    with pytest.raises(InputError,
                       match=r"line 1, item 'bad-a': label 'MAYBE' is not on the 'fever' label set"):
        load_items(str(path))
    path.write_text('{"id": "a", "label": "SUPPORTS"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 1, item 'bad-a': no claim or question"):
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
    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    with pytest.raises(ConfigError, match="data fetch NAME.*FACTDEBATE_DATA_DIR") as raised:
        resolve_data_dir(None)
    assert "../shared" not in str(raised.value)
    (tmp_path / "home" / "data").mkdir(parents=True)
    assert resolve_data_dir(None) == (tmp_path / "home" / "data").resolve()
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


# -- malformed gold evidence stops the load, naming file, line, item, field ----
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
    ({"evidence": 12345}, "evidence", "a number (12345)"),
    ({"dataset": "averitec", "evidence": True}, "evidence", "a boolean"),
    ({"evidence_sets": None}, "evidence_sets", "null on a REFUTES claim"),  # would halve FEVER
    ({"evidence_sets": []}, "evidence_sets", "a list ([]) on a REFUTES claim"),
    ({"verifiable": "VERIFIABLE", "evidence": [[[1, 2, None, None]]]}, "evidence",
     "a list ([[[1, 2, None, None]]]) with no page on a REFUTES claim"),
    ({"evidence": [{"content": "Moon_sentence_0"}]}, "evidence[0].content", "a string"),
    ({"evidence": [{"content": ["Moon"]}]}, "evidence[0].content[0]", "a string ('Moon')"),
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
        [{"page": "Moon", "sent_id": 0, "text": None, "page_id": "Moon"}],
        [{"page": "Earth", "sent_id": None, "text": None, "page_id": "Earth"}]]
    assert len(items) == len(records)
    release = load_items(str(write_jsonl(tmp_path / "feverous.jsonl", [
        {"id": 9, "label": "SUPPORTS", "claim": "c",
         "evidence": [{"content": ["Korean Air_cell_1_19_0", "Korean Air_sentence_0"],
                       "context": {}}]}])))
    assert [(e["page"], e["sent_id"]) for e in release[0].meta["gold_evidence"]["sets"][0]] == [
        ("Korean Air", "cell_1_19_0"), ("Korean Air", "sentence_0")]


def test_averitec_items_know_their_claim_id(tmp_path):
    from factdebate.evaluation.datasets import averitec_claim_id

    items = load_items(str(write_jsonl(tmp_path / "av.jsonl", [
        {"id": "averitec-dev-12", "dataset": "averitec", "claim": "c", "label": "REFUTES"},
        {"id": "averitec-dev-x", "dataset": "averitec", "claim": "c", "label": "REFUTES",
         "claim_id": 40}])))
    assert [it.meta.get("claim_id") for it in items] == ["12", "40"]
    assert averitec_claim_id({"dataset": "fever"}, "fever-3", "fever") is None
    assert "claim_id" not in load_items(str(write_jsonl(tmp_path / "f.jsonl", claims(1, 0, 0))))[
        0].meta


def test_datasets_find_their_index_by_name(tmp_path, monkeypatch):
    from factdebate.evaluation.datasets import dataset_index, index_folder

    home = tmp_path / "home"
    monkeypatch.setenv("FACTDEBATE_HOME", str(home))
    data = tmp_path / "data"
    data.mkdir()
    assert index_folder("fever-wiki") == home / "indexes" / "fever-wiki"
    assert index_folder(str(tmp_path / "x")) == tmp_path / "x"
    assert dataset_index("fever", data) is None  # the registry names fever-wiki; not built yet
    (home / "indexes" / "fever-wiki").mkdir(parents=True)
    (home / "indexes" / "fever-wiki" / "manifest.json").write_text("{}")
    assert dataset_index("fever", data) == ("fever-wiki", "the dataset 'fever'")
    assert dataset_index("hover_2hop", data) is None
    (data / "indexes.json").write_text(json.dumps({"fever": "my-wiki", "hover": "/srv/hover"}))
    assert dataset_index("fever", data) == ("my-wiki", str(data / "indexes.json"))
    assert dataset_index("hover", data)[0] == "/srv/hover"
    (data / "indexes.json").write_text(json.dumps({"fever": 5}))
    with pytest.raises(InputError, match=r"indexes.json: fever is a number \(5\), not an index"):
        dataset_index("fever", data)
    (data / "indexes.json").write_text("[1")
    with pytest.raises(InputError, match="indexes.json: not valid JSON"):
        dataset_index("fever", data)


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


# -- every field a reader uses is checked at load, one line naming file, line, item ----
_HUGE = "x" * 100_000
MALFORMED_FIELDS = [
    # (record fields over a good claim record, what the error says after "FILE, line 2, item ID: ")
    ({"options": 5}, 'options is a number (5), not answer options {"A": text, ...}'),
    ({"options": [1]}, "options is a list ([1]), not answer options"),
    ({"options": "ABCD"}, "options is a string ('ABCD'), not answer options"),
    ({"options": True}, "options is a boolean (True), not answer options"),
    ({"options": {"A": 5}}, "options['A'] is a number (5), not an option text (a string)"),
    ({"options": {"A": None}}, "options['A'] is null, not an option text"),
    ({"options": {"A": ["x"]}}, "options['A'] is a list (['x']), not an option text"),
    ({"options": {"A": {"t": 1}}}, "options['A'] is an object ({'t': 1}), not an option text"),
    ({"options": {"A": _HUGE}}, "options['A'] has 100,000 characters, over the limit of 4000"),
    ({"documents": 5}, 'documents is a number (5), not a list of documents {"text": ..., '),
    ({"documents": "some text"}, "documents is a string ('some text'), not a list of documents"),
    ({"documents": {"text": "x"}}, "documents is an object ({'text': 'x'}), not a list of docum"),
    ({"documents": [5]}, 'documents[0] is a number (5), not a document {"text": ..., "title": ...}'),
    ({"documents": ["doc"]}, "documents[0] is a string ('doc'), not a document"),
    ({"documents": [None]}, "documents[0] is null, not a document"),
    ({"documents": [{"text": 5}]}, "documents[0].text is a number (5), not the document's text"),
    ({"documents": [{"title": "t"}]}, "documents[0].text is missing, not the document's text"),
    ({"documents": [{"text": "t"}, {"text": "t", "title": [1]}]},
     "documents[1].title is a list ([1]), not a string"),
    ({"documents": [{"text": "t", "url": {}}]}, "documents[0].url is an object ({}), not a string"),
    ({"answers": 5}, "answers is a number (5), not a list of strings"),
    ({"answers": "abc"}, "answers is a string ('abc'), not a list of strings"),
    ({"answers": {"a": 1}}, "answers is an object ({'a': 1}), not a list of strings"),
    ({"answers": [1]}, "answers[0] is a number (1), not a string"),
    ({"answers": ["a", None]}, "answers[1] is null, not a string"),
    ({"answers": [["x"]]}, "answers[0] is a list (['x']), not a string"),
    ({"wrong_answers": 5}, "wrong_answers is a number (5), not a list of strings"),
    ({"wrong_answers": "abc"}, "wrong_answers is a string ('abc'), not a list of strings"),
    ({"claim": 5}, "claim is a number (5), not a claim or question (a string)"),
    ({"claim": ["c"]}, "claim is a list (['c']), not a claim or question"),
    ({"claim": {"c": 1}}, "claim is an object ({'c': 1}), not a claim or question"),
    ({"claim": True}, "claim is a boolean (True), not a claim or question"),
    ({"claim": _HUGE}, "claim has 100,000 characters, over the limit of 4000"),
    ({"claim": " "}, "no claim or question text"),
    ({"claim": None, "question": 5}, "question is a number (5), not a claim or question"),
    ({"claim": None, "question": _HUGE}, "question has 100,000 characters, over the limit"),
    ({"label": 5}, "label is a number (5), not a label (a string)"),
    ({"label": ["SUPPORTS"]}, "label is a list (['SUPPORTS']), not a label (a string)"),
    ({"label": {"l": "SUPPORTS"}}, "label is an object ({'l': 'SUPPORTS'}), not a label"),
    ({"label": None}, "label None is not on the 'fever' label set"),
    ({"label": _HUGE}, "label a string ('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..., 100,000 "
                       "characters) is not on the 'fever' label set"),
    ({"num_hops": "x"}, "num_hops is a string ('x'), not a hop count (an integer)"),
    ({"num_hops": [2]}, "num_hops is a list ([2]), not a hop count"),
    ({"num_hops": 2.5}, "num_hops is a number (2.5), not a hop count"),
    ({"num_hops": True}, "num_hops is a boolean (True), not a hop count"),
    ({"num_hops": -1}, "num_hops is a number (-1), not a hop count"),
    ({"split": {"a": 1}}, "split is an object ({'a': 1}), not a string"),
    ({"split": 5}, "split is a number (5), not a string"),
    ({"task": {"t": 1}}, "task is an object ({'t': 1}), not a string"),
    ({"task": ["qa_mc"]}, "task is a list (['qa_mc']), not a string"),
    ({"dataset": 5}, "dataset is a number (5), not a string"),
    # official release formats: MedQA, RAMDocs, PubMedQA
    ({"answer_idx": "A"}, 'options is missing, not answer options {"A": text, ...}'),
    ({"answer_idx": "A", "options": {}}, "options is an object ({}), not answer options"),
    ({"answer_idx": 5, "options": {"A": "a"}}, "answer_idx is a number (5), not a label"),
    ({"answer_idx": "A", "options": {"A": "a"}, "answer": ["a"]}, "answer is a list (['a'])"),
    ({"gold_answers": 5, "documents": []}, "gold_answers is a number (5), not a list of strings"),
    ({"gold_answers": "x", "documents": []}, "gold_answers is a string ('x'), not a list of"),
    ({"gold_answers": [1], "documents": []}, "gold_answers[0] is a number (1), not a string"),
    ({"gold_answers": ["x"], "documents": [{"text": 1}]}, "documents[0].text is a number (1)"),
    ({"QUESTION": "Q?", "CONTEXTS": 5, "final_decision": "yes"},
     "CONTEXTS is a number (5), not a list of strings"),
    ({"QUESTION": "Q?", "final_decision": "yes"}, "CONTEXTS is missing, not a list of strings"),
    ({"QUESTION": "Q?", "CONTEXTS": ["c", 2], "final_decision": "yes"},
     "CONTEXTS[1] is a number (2), not a string"),
    ({"QUESTION": "Q?", "CONTEXTS": ["c"], "LABELS": "BACKGROUND", "final_decision": "yes"},
     "LABELS is a string ('BACKGROUND'), not a list of strings"),
    ({"QUESTION": 5, "CONTEXTS": ["c"], "final_decision": "yes"}, "QUESTION is a number (5)"),
    ({"QUESTION": "Q?", "CONTEXTS": ["c"], "final_decision": 1}, "final_decision is a number (1)"),
]
MALFORMED_IDS = [
    ({"id": [1]}, "id is a list ([1]), not an item id (a string or integer)"),
    ({"id": {"a": 1}}, "id is an object ({'a': 1}), not an item id"),
    ({"id": None}, "id is null, not an item id"),
    ({"id": True}, "id is a boolean (True), not an item id"),
    ({"id": 1.5}, "id is a number (1.5), not an item id"),
    ({"id": ""}, "id is a string (''), not an item id"),
    ({"id": _HUGE}, "id has 100,000 characters, over the limit of 200"),
    ({"id": None, "uid": ["u"]}, "id is null, not an item id"),
]


def _load_second(tmp_path: Path, fields: dict) -> str:
    good = {"id": "fever-1", "claim": "The Moon orbits the Earth.", "label": "SUPPORTS"}
    bad = {"id": "fever-2", "claim": "The Moon is made of cheese.", "label": "REFUTES", **fields}
    path = write_jsonl(tmp_path / "rec.jsonl", [good, bad])
    with pytest.raises(InputError) as caught:
        load_items(str(path))
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message[:600]
    return message


@pytest.mark.parametrize("fields,says", MALFORMED_FIELDS,
                         ids=[f"{i}-{next(iter(f))}" for i, (f, _) in enumerate(MALFORMED_FIELDS)])
def test_wrong_typed_fields_name_file_line_item_and_field(tmp_path, fields, says):
    message = _load_second(tmp_path, fields)
    prefix = re.escape(f"{tmp_path / 'rec.jsonl'}, line 2, item ") + "'(rec-)?fever-2': "
    assert re.match(prefix + re.escape(says), message), message  # "dataset" drops the prefix


@pytest.mark.parametrize("fields,says", MALFORMED_IDS,
                         ids=[f"{i}-id" for i in range(len(MALFORMED_IDS))])
def test_wrong_typed_ids_name_file_line_and_field(tmp_path, fields, says):
    message = _load_second(tmp_path, fields)
    assert message.startswith(f"{tmp_path / 'rec.jsonl'}, line 2: {says}"), message


def test_hop_filter_checks_every_line(tmp_path):
    (tmp_path / "hover").mkdir()
    write_jsonl(tmp_path / "hover" / "dev.jsonl", [
        {"id": "hover-1", "claim": "c", "label": "SUPPORTS", "num_hops": 3},
        {"id": "hover-2", "claim": "c", "label": "SUPPORTS", "num_hops": "two"}])
    with pytest.raises(InputError, match=r"line 2, item 'hover-2': num_hops is a string \('two'\)"):
        load_items("hover_3hop", tmp_path)


def test_well_typed_fields_load(tmp_path):
    records = [
        {"id": 7, "claim": "c", "label": "SUPPORTS", "answers": [], "options": {},
         "documents": [{"text": "t", "title": None, "url": None}], "num_hops": 2, "split": None},
        {"id": "m-1", "dataset": "medqa", "task": "qa_mc", "question": "Q?", "label": "B",
         "options": {"A": "a", "B": "b"}, "answers": ["b"]},
        {"id": "r-1", "dataset": "ramdocs", "task": "qa_conflict", "question": "Q?", "label": None,
         "answers": ["x"], "wrong_answers": [], "documents": [{"text": "d", "type": "correct"}]},
        {"id": "f-1", "claim": "c", "label": True},  # FIRE release: a boolean label
    ]
    items = load_items(str(write_jsonl(tmp_path / "ok.jsonl", records)))
    assert [i.gold_label for i in items] == ["SUPPORTS", "B", None, "SUPPORTS"]
    assert items[0].subset == "2hop" and items[1].input["options"] == {"A": "a", "B": "b"}
    assert items[2].gold_answers == ("x",) and items[2].input["documents"][0]["text"] == "d"


@pytest.mark.parametrize("fields,says", [
    ({"options": 5}, "options is a number (5)"), ({"documents": 5}, "documents is a number (5)")])
def test_eval_on_wrong_typed_fields_is_one_error_line(tmp_path, monkeypatch, fields, says):
    from typer.testing import CliRunner

    from factdebate.cli.main import app

    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    path = write_jsonl(tmp_path / "rec.jsonl", [
        {"id": "f-1", "claim": "The Moon orbits the Earth.", "label": "SUPPORTS"},
        {"id": "f-2", "claim": "The Moon is cheese.", "label": "REFUTES", **fields}])
    done = CliRunner().invoke(app, ["eval", "--framework", "standard", "--dataset", str(path),
                                    "--model", "scripted:agree", "--out", str(tmp_path / "out")])
    assert done.exit_code == InputError.exit_code, done.output
    flat = " ".join(done.output.split())
    assert done.output.lstrip().startswith("error:") and "Traceback" not in done.output, flat
    assert f"line 2, item 'rec-f-2': {says}" in flat, flat
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_run_yaml_names_an_index_per_run_or_for_all(tmp_path):
    from factdebate.evaluation.config import load_config

    config = tmp_path / "run.yaml"
    config.write_text("out: out\nindex: fever-wiki\nframeworks: [tool_mad]\ndatasets: [fever]\n"
                      "runs:\n  - {framework: cot, dataset: hover, index: /srv/hover}\n")
    _, specs = load_config(config, {})
    assert [(name, spec.index) for name, spec in specs] == [
        ("tool_mad__fever", "fever-wiki"), ("cot__hover", "/srv/hover")]
    assert load_config(config, {"index": "mine"})[1][0][1].index == "mine"  # --index: top level
    config.write_text("out: out\nindex: 5\nframeworks: [tool_mad]\ndatasets: [fever]\n")
    with pytest.raises(InputError, match="'index' must be an index name or folder, got 5"):
        load_config(config, {})
