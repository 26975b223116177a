"""GBNF grammars for the ``local:`` provider's structured output (JSON schema -> llama.cpp grammar)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from factdebate.core.errors import ConfigError

_STRING_RULE = re.compile(r'^string ::= "\\"" char\* "\\"" space$', re.M)
_CHAR_RULE = re.compile(r"^char ::= \[\^\"\\\\\]", re.M)
_CHAR_STRICT = r'char ::= [^"\\\x7F\x00-\x1F]'
# llama-cpp's rendering of {"type": "string", "maxLength": n}: n nested optional chars.
_BOUNDED_STRING = re.compile(r'^([\w-]+) ::= "\\"" ((?:\(char )*\(char)(?:\)\?)+ "\\"" space$', re.M)


def _cap_schema(node: Any, max_items: int) -> Any:
    """Copy of a JSON schema with an item cap on unbounded arrays (a small model may loop)."""
    if isinstance(node, list):
        return [_cap_schema(x, max_items) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _cap_schema(v, max_items) for k, v in node.items()}
    if out.get("type") == "array" and "maxItems" not in out:
        if int(out.get("minItems", 0)) <= max_items:
            out["maxItems"] = max_items
    return out


@lru_cache(maxsize=64)
def schema_grammar(schema_json: str, max_string_chars: int, max_items: int) -> str:
    """GBNF for a JSON schema: enums enforced, strings capped and free of raw control characters.

    Raw newlines inside JSON strings are invalid JSON (pydantic rejects them), and llama-cpp's
    converter allows them. Every string is capped at ``max_string_chars``, or at its schema's
    ``maxLength`` when that is smaller; llama-cpp's own ``maxLength`` rendering nests one rule per
    character, so both caps are written with GBNF's ``{0,n}`` repetition instead.
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    schema = _cap_schema(json.loads(schema_json), max_items)
    gbnf = json_schema_to_gbnf(json.dumps(schema))
    gbnf = _CHAR_RULE.sub(lambda _: _CHAR_STRICT, gbnf)
    gbnf = _BOUNDED_STRING.sub(
        lambda m: (
            f'{m.group(1)} ::= "\\"" char{{0,{min(m.group(2).count("char"), max_string_chars)}}}'
            ' "\\"" space'
        ),
        gbnf,
    )
    return _STRING_RULE.sub(
        lambda _: f'string ::= "\\"" char{{0,{max_string_chars}}} "\\"" space', gbnf
    )


def json_schema_of(schema: Any) -> dict[str, Any]:
    """The JSON schema of a pydantic model class, or a JSON-schema dict as given."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, dict):
        return schema
    raise ConfigError(
        f"the local: model cannot produce structured output for {schema!r}",
        "pass a pydantic model class or a JSON-schema dict",
    )
