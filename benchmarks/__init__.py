"""Timings and profiles of the library; run as ``python -m benchmarks.<script>``, not in the wheel."""
