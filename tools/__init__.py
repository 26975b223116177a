"""Retrievers and search behind one interface, embeddings, indexing and the bundled demo corpus."""
