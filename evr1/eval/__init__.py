"""Evaluation on video benchmarks: the benchmark registry, our evaluation loop, reports, lmms-eval.

Importing this package is cheap; lmms-eval, torch and the models load only where used.
"""
