"""Evaluation harness: datasets, metrics, runner, reports and benchmarks."""
