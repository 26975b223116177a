"""Structured output for models that produce JSON text themselves (embedded and scripted).

The model is bound with ``fd_schema`` (so its ``_generate`` knows what to produce - a grammar for
llama.cpp, a schema for the scripted responder) and its reply is validated here. The result
contract is LangChain's: with ``include_raw`` ``{"raw", "parsed", "parsing_error"}``, otherwise the
parsed object or the validation error raised.

:class:`JsonStructuredOutput` parses inline instead of chaining ``model | RunnableLambda(parse)``:
the chain opened two more traced runs per call (sequence + lambda, each with callback events and a
signature inspection), ~0.5 ms of event-loop time per call that sits on a debate's critical path
(``factdebate bench overhead``). Traces show the model run itself.

It also calls the model itself instead of going through ``model.bind(fd_schema=...)``: a
``RunnableBinding`` merges the caller's config with the enclosing run's config twice per call
(``_merge_configs`` = ``merge_configs(self.config, config)`` then once more for its config
factories), each merge copying the parent callback manager, ~50 us per call measured with
``timeit`` inside a LangGraph node. :meth:`JsonStructuredOutput.ainvoke` does the one merge that
changes anything (``merge_configs({}, config)``: the enclosing node's callbacks, tags and metadata
combined with the caller's; the second merge of an already merged config is a no-op) and passes
``fd_schema`` as the binding would, so the model sees the same config and kwargs as before; a
config that is already merged (``core.models.call_configs.MergedConfig``: every model call of the
nodes and of RAGAS) goes to the model as it is.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import ValidationError

from factdebate.core.models.call_configs import merged_with_run


class JsonStructuredOutput(Runnable[Any, Any]):
    """``model`` asked for ``schema`` (pydantic class or JSON-schema dict), its reply validated."""

    def __init__(self, model: BaseChatModel, schema: Any, *, include_raw: bool) -> None:
        self.model = model
        self.schema = schema
        self.include_raw = include_raw

    def parse(self, raw: AIMessage) -> Any:
        """Validate a reply: the LangChain structured-output result for it."""
        text = str(raw.content)
        try:
            parsed: Any = json.loads(text) if isinstance(self.schema, dict) else \
                self.schema.model_validate_json(text)
            err = None
        except (ValidationError, ValueError) as exc:
            parsed, err = None, exc
        if self.include_raw:
            return {"raw": raw, "parsed": parsed, "parsing_error": err}
        if err is not None:
            raise err
        return parsed

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Call the model, then :meth:`parse` its reply."""
        return self.parse(self.model.invoke(
            input, merged_with_run(config), **{"fd_schema": self.schema, **kwargs}))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Call the model, then :meth:`parse` its reply."""
        return self.parse(await self.model.ainvoke(
            input, merged_with_run(config), **{"fd_schema": self.schema, **kwargs}))


def json_structured_output(model: BaseChatModel, schema: Any, *, include_raw: bool) -> Runnable:
    """``model`` asked for ``schema`` (pydantic class or JSON-schema dict), reply validated."""
    return JsonStructuredOutput(model, schema, include_raw=include_raw)
