"""One module per framework: wiring only (a ``build_<framework>()`` factory and an exported,
checkpointer-free compiled ``graph`` for ``langgraph.json``). The registry is in ``registry``."""
