"""Shared fixtures of the eval tests: the 22 tiny benchmarks on disk, and the judge with the verdicts of
expected.py (the plain judge, one reply for all, is in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evr1.eval.fixtures import write_fixtures

from .expected import VERDICTS
from .verdict_judge import VerdictJudge, running_verdict_judge


@pytest.fixture(scope="session")
def bench_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All 22 benchmark fixtures (official formats, generated videos), written once per session."""
    root = tmp_path_factory.mktemp("benchmarks")
    write_fixtures(root)
    return root


@pytest.fixture
def verdict_judge() -> Iterator[VerdictJudge]:
    """A local judge replying to each open-ended answer of expected.py with its verdict in `VERDICTS`."""
    with running_verdict_judge(VERDICTS) as server:
        yield server
