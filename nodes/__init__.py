"""Node functions by role, shared by every framework (STYLE.md §1).

``prepare`` validates the input; ``formulate_query``, ``retrieve``, ``respond`` and ``score`` make
one debater turn; ``check_consensus`` decides early stopping; ``judge`` decides after the last
round. ``llm`` holds the one way nodes call models (metadata, retries, usage, parse fallback).
"""
