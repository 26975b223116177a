"""State docstrings as JSON-schema field descriptions (what LangGraph Studio shows beside a field).

LangGraph builds a graph's input and output JSON schema from the state ``TypedDict`` with
pydantic's ``TypeAdapter``; pydantic keeps the class docstring but not the attribute docstrings
(the string under each key). :func:`described` gives a ``TypedDict`` a pydantic config whose
``json_schema_extra`` copies the attribute docstrings of the class and of its ``TypedDict`` bases
into each property's ``description``. TypedDict subclasses inherit the config (pydantic looks it
up along the bases), so decorating the base classes covers every state. Nothing else about the
type changes: annotations, reducers and required keys stay as they are.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from functools import cache
from typing import Any, TypeVar

from pydantic import ConfigDict, with_config
from typing_extensions import is_typeddict

T = TypeVar("T")


@cache
def attribute_docs(cls: type) -> dict[str, str]:
    """Key -> docstring of a ``TypedDict`` and its ``TypedDict`` bases (the class's own win)."""
    docs: dict[str, str] = {}
    for base in getattr(cls, "__orig_bases__", ()):
        if is_typeddict(base):
            docs.update(attribute_docs(base))
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):  # no source (built at run time): no descriptions
        return docs
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for stmt, after in zip(body, body[1:], strict=False):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[stmt.target.id] = " ".join(after.value.value.split())  # one line
    return docs


def _add_descriptions(schema: dict[str, Any], cls: type) -> None:
    properties = schema.get("properties") or {}
    for key, doc in attribute_docs(cls).items():
        if key in properties:
            properties[key].setdefault("description", doc)


STUDIO_SCHEMA = ConfigDict(json_schema_extra=_add_descriptions)  # type: ignore[typeddict-item]


def described(cls: type[T]) -> type[T]:
    """Class decorator: the ``TypedDict``'s attribute docstrings become schema descriptions."""
    return with_config(STUDIO_SCHEMA)(cls)
