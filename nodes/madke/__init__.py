"""MADKE's own nodes: shared knowledge pool, orderly talk, knowledge selection, judge."""
