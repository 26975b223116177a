"""factdebate: multi-agent-debate claim verification as LangGraph state graphs.

The shared core lives here: typed state (`state`), the run configuration (`context`), model loading
(`models`), registries (`registry`), label sets and verdict parsing (`labels`), the token ledger
(`ledger`) and the CLI (`cli`). Framework wiring lives in the top-level `graphs` package, node
functions in `nodes`, retrievers in `tools`, prompt templates in `prompts`.
"""

__version__ = "0.1.0"
