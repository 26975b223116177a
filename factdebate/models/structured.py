"""Structured output for models that produce JSON text themselves (embedded and scripted).

The model is bound with ``fd_schema`` (so its ``_generate`` knows what to produce - a grammar for
llama.cpp, a schema for the scripted responder) and its reply is validated here. The result
contract is LangChain's: with ``include_raw`` ``{"raw", "parsed", "parsing_error"}``, otherwise the
parsed object or the validation error raised.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import ValidationError


def json_structured_output(model: BaseChatModel, schema: Any, *, include_raw: bool) -> Runnable:
    """``model`` asked for ``schema`` (pydantic class or JSON-schema dict), reply validated."""
    bound = model.bind(fd_schema=schema)

    def parse(raw: AIMessage) -> Any:
        text = str(raw.content)
        try:
            parsed: Any = json.loads(text) if isinstance(schema, dict) else \
                schema.model_validate_json(text)
            err = None
        except (ValidationError, ValueError) as exc:
            parsed, err = None, exc
        if include_raw:
            return {"raw": raw, "parsed": parsed, "parsing_error": err}
        if err is not None:
            raise err
        return parsed

    return bound | RunnableLambda(parse)
