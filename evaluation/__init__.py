"""Metrics, experiment runner, tables, figures, speed benchmarks."""
