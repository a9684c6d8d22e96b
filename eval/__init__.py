"""Evaluation harness: datasets, metrics, runners and benchmarks (`python -m eval ...`)."""
