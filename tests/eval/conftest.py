"""Shared fixtures of the eval tests: the 22 tiny benchmarks on disk (the judge is in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evr1.eval.fixtures import write_fixtures


@pytest.fixture(scope="session")
def bench_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All 22 benchmark fixtures (official formats, generated videos), written once per session."""
    root = tmp_path_factory.mktemp("benchmarks")
    write_fixtures(root)
    return root
