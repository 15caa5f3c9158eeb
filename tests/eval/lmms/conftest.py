"""lmms-eval offline, with its caches in a temporary folder and no judge set (restored afterwards)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ENV = ("HF_HOME", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "LMMS_EVAL_DATASETS_CACHE",
       "EVR1_JUDGE_URL", "EVR1_JUDGE_MODEL", "EVR1_JUDGE_API_KEY", "OPENAI_API_KEY", "API_TYPE")


@contextmanager
def lmms_offline(tmp: Path) -> Iterator[None]:
    """Set lmms-eval's environment (before tasks load: stock utils read HF_HOME on import)."""
    saved = {k: os.environ.pop(k, None) for k in ENV}
    os.environ.update(HF_HOME=str(tmp / "hf"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
                      LMMS_EVAL_DATASETS_CACHE=str(tmp / "datasets"))
    try:
        yield
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v


@pytest.fixture(scope="module")
def lmms_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One offline lmms-eval environment per test module; yields its temporary folder."""
    tmp = tmp_path_factory.mktemp("lmms")
    with lmms_offline(tmp):
        yield tmp
