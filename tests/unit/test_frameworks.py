"""Every registered framework compiles, is exported for the server, and has Studio schemas."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from factdebate.graphs.registry import FRAMEWORKS, build_framework, context_class

REPO = Path(__file__).resolve().parents[2]
EXPORTED = json.loads((REPO / "langgraph.json").read_text())["graphs"]


@pytest.mark.parametrize("name", FRAMEWORKS.names())
def test_framework_is_exported_and_renders_in_studio(name):
    assert name in EXPORTED, f"{name} missing from langgraph.json"
    graph = build_framework(name).compile()
    assert "claim" in graph.get_input_jsonschema()["properties"]
    output = graph.get_output_jsonschema()["properties"]
    assert {"label", "rationale", "ledger", "flags"} <= set(output)
    context = graph.get_context_jsonschema()["properties"]
    assert all(prop.get("description") for prop in context.values()), name
    assert set(context) >= {"debater_model", "label_set"}
    assert context_class(name).__name__.endswith("Context")
    assert set(context) == {f.name for f in dataclasses.fields(context_class(name))}, name


def test_exported_graphs_point_at_modules_that_exist():
    for target in EXPORTED.values():
        path, _, attr = target.partition(":")
        assert (REPO / path).is_file() and attr == "graph", target


def test_langgraph_json_lists_exactly_the_registry_with_each_builders_module():
    """One registry: langgraph.json's graphs are the registry's names, each pointing
    at the file of the module whose ``build_<name>`` the registry holds."""
    assert list(EXPORTED) == FRAMEWORKS.names()
    for entry in FRAMEWORKS:
        builder = entry.load()
        module = builder.__module__
        assert module.startswith("factdebate.graphs.") and builder.__name__ == f"build_{entry.name}"
        path = "./" + "/".join(module.split(".")[1:]) + ".py"
        assert EXPORTED[entry.name] == f"{path}:graph", entry.name
