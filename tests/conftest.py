"""Shared test set-up: tiny models of every family; `gpu` tests skip without CUDA (the only default skip)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from evr1.models import FAMILIES, load_processor
from evr1.models.testing import tiny_spec


@pytest.fixture
def judge():
    """A local OpenAI-compatible judge endpoint (see tests/judge_server.py)."""
    from judge_server import running_judge

    with running_judge() as server:
        yield server


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tiny models are built once per test session in a temporary cache."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session", params=FAMILIES)
def fam(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session")
def spec(fam: str, model_cache: Path):
    return tiny_spec(fam, model_cache)


@pytest.fixture(scope="session")
def processor(spec):
    return load_processor(spec)


def _has_cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any("gpu" in item.keywords for item in items) and not _has_cuda():
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
