"""Tool-MAD's own nodes (query formulation, stability/consistency scoring)."""
