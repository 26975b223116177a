"""Nodes of the 13 baselines (single-agent, retrieval and debate baselines)."""
