"""Evaluation harness: datasets, metrics, runner, reports and benchmarks (see issues #4, #5)."""
