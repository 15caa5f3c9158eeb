"""Resuming through the CLI: a checkpoint of another run is refused; without a checkpoint the run
starts again and its logs (metrics, samples, TensorBoard) hold each step once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics

from .test_resume_logs import tensorboard_scalars
from .test_train import run, settings, stable

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def samples(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def test_resume_checks_the_checkpoint_and_logs_each_step_once(tmp_path: Path, model_cache: Path) -> None:
    common = settings(tmp_path, model_cache, **{"trainer.steps": "2", "trainer.save_every": "2", "trainer.val_every": "2"})
    target = tmp_path / "run"
    first = run("quickstart", "--run-dir", str(target), *common)
    assert first.returncode == 0, first.stderr[-3000:]
    rows, shown = read_metrics(target), samples(target)
    assert [r["step"] for r in rows] == [0, 1, 2] and {s["step"] for s in shown} == {1, 2}

    other = tmp_path / "other"  # the same checkpoint under a config of fewer steps
    shutil.copytree(target, other)
    config = json.loads((other / "config.json").read_text())
    config["trainer"]["steps"] = 1
    (other / "config.json").write_text(json.dumps(config))
    refused = run("--resume", str(other))
    assert refused.returncode == 2
    assert f"{other}/checkpoints/step_000002 was taken after step 2, beyond this run's trainer.steps=1" in refused.stderr
    assert read_metrics(other) == rows and samples(other) == shown  # refused before touching the logs

    shutil.rmtree(target / "checkpoints")  # as if killed before its first checkpoint
    again = run("--resume", str(target))
    assert again.returncode == 0, again.stderr[-3000:]
    assert stable(read_metrics(target)) == stable(rows)  # step 0 logged once, not twice
    assert samples(target) == shown
    score = [(r["step"], pytest.approx(r["val/data/val/accuracy"])) for r in rows if "val/data/val/accuracy" in r]
    assert tensorboard_scalars(target, "val/data/val/accuracy") == score
