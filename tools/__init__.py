"""Retrievers and search behind one interface, embeddings, indexing and the bundled demo corpus."""

from pathlib import Path as _Path

DEMO_CORPUS_DIR = _Path(__file__).resolve().parent / "demo_corpus"
"""The bundled demo corpus (written for this project): ``passages.jsonl`` and ``claims.jsonl``."""
