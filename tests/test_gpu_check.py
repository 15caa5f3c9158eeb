"""scripts/gpu_check.sh on CPU with the tiny model (`--tiny`): the code path the GPU run takes."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def _module():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_tiny_check_reports_both_media_modes(tmp_path: Path) -> None:
    env = dict(os.environ, OUT=str(tmp_path), PYTHON=sys.executable)
    out = subprocess.run(["bash", "scripts/gpu_check.sh", "--tiny", "--steps", "2", "--workdir", str(tmp_path / "w")],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    for text in ("gpu check on", "rollout tok/s", "step live/cache", "peak memory", "engine-learner mismatch"):
        assert text in out.stdout
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    assert set(result["modes"]) == {"cache", "live"} and result["steps"] == 2 and result["dtype"] == "float32"
    for row in result["modes"].values():
        assert all(row[p] > 0 for p in ("media", "rollout", "learn", "sync"))
        assert row["step"] == pytest.approx(sum(row[p] for p in ("media", "rollout", "learn", "sync")))
        assert row["rollout_tokens_per_s"] > 0 and row["learner_tokens_per_s"] > 0
        assert 0 <= row["mismatch_abs_diff_mean"] < 1e-4  # float32 engine and learner: rounding only
    assert 0.1 < result["parameters_m"] < 1 and result["peak_memory_gb"] > 0
    assert (tmp_path / "w" / "cache.lmdb").exists()


def test_without_a_gpu_it_asks_for_tiny(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _module().main([]) == 2
    assert "--tiny" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("rewards", "expected"),
    [([1.0, 0.0, 1.0, 0.0], [1.0, -1.0, 1.0, -1.0]), ([1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]),
     ([1.0, 0.0, 0.0, 0.0], [1.0, -1.0, 0.0, 0.0])],
)
def test_group_advantages(rewards: list[float], expected: list[float]) -> None:
    assert _module().group_advantages(torch.tensor(rewards), 2).tolist() == expected
