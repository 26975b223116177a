"""Studio field descriptions: the state docstrings reach every graph's input/output JSON schema."""

from __future__ import annotations

import pytest

from factdebate.core.schema_docs import attribute_docs
from factdebate.core.state import DebateOutput, DebateRecord, Evidence, Turn
from factdebate.graphs.registry import FRAMEWORKS, build_framework


def test_attribute_docs_include_the_bases_and_are_one_line():
    docs = attribute_docs(DebateOutput)
    assert set(docs) == set(DebateOutput.__annotations__)  # inherited keys too
    assert docs["turns"] == attribute_docs(DebateRecord)["turns"]
    assert docs["flags"].startswith("Anything a user should know") and "\n" not in docs["flags"]


@pytest.mark.parametrize("name", [e.name for e in FRAMEWORKS])
def test_every_graph_schema_field_has_its_docstring(name):
    builder = build_framework(name)
    graph = builder.compile()
    for cls, schema in ((builder.input_schema, graph.get_input_jsonschema()),
                        (builder.output_schema, graph.get_output_jsonschema())):
        described = {k: v.get("description") for k, v in schema["properties"].items()}
        assert described == attribute_docs(cls) and all(described.values()), cls.__name__
    if builder.output_schema is DebateOutput:
        for cls in (Turn, Evidence):
            props = graph.get_output_jsonschema()["$defs"][cls.__name__]["properties"]
            assert {k: v.get("description") for k, v in props.items()} == attribute_docs(cls)


def test_a_typeddict_without_source_still_validates():
    from pydantic import TypeAdapter
    from typing_extensions import TypedDict

    from factdebate.core.schema_docs import described

    Made = described(TypedDict("Made", {"x": int}))  # no source to read: no descriptions
    assert TypeAdapter(Made).json_schema()["properties"]["x"] == {"title": "X", "type": "integer"}
    assert TypeAdapter(Made).validate_python({"x": 1}) == {"x": 1}
