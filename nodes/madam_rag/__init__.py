"""MADAM-RAG's own nodes: one agent per document, aggregator, convergence check."""
