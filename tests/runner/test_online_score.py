"""`reward/online_score` and `reward/offline_score` in mixed groups, by a reward whose scores are known:
the training loop run as a user runs it, with an experiment file that registers that reward."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from evr1.runner.metrics import read_metrics

from .test_train import EVR1, settings

pytestmark = [pytest.mark.slow, pytest.mark.ray]

EXPERIMENT = '''
import fiddle as fdl

from evr1.experiment import Experiment
from evr1.registry import REWARDS
from evr1.rewards import RewardOutput, per_sample
from evr1.specs import DataSpec, MixerSpec, ModelSpec, RewardSpec, RolloutSpec, SynthSpec, TrainerSpec


@REWARDS.register("me/curated_or_not")
@per_sample
def curated_or_not(inp, spec):
    """1 for the curated answer (the records' offline_response), 0.25 for anything the policy samples."""
    score = 1.0 if inp.response.strip() == f"<answer>{inp.answer}</answer>" else 0.25
    return RewardOutput(score, {"accuracy": score})


def experiment():
    """Quickstart data, groups of 4 with one curated answer each, scored by this file's reward."""
    return fdl.Config(
        Experiment,
        model=fdl.Config(ModelSpec, name="tiny-qwen2.5-vl", dtype="float32"),
        data=fdl.Config(DataSpec, synth=fdl.Config(SynthSpec, tasks=("quickstart",))),
        rollout=fdl.Config(RolloutSpec, n=4, max_prompt_tokens=512, max_response_tokens=8),
        mixer=fdl.Config(MixerSpec, name="offline_k", k=1),
        reward=fdl.Config(RewardSpec, routes={"multiple_choice": "me/curated_or_not"}, format="none"),  # score = accuracy
        trainer=fdl.Config(TrainerSpec, steps=2),
    )
'''


def test_online_score_is_the_mean_over_sampled_rows_only(tmp_path: Path, model_cache: Path) -> None:
    project = tmp_path / "project"
    (project / "experiments").mkdir(parents=True)
    (project / "experiments" / "my_exp.py").write_text(textwrap.dedent(EXPERIMENT))
    args = ("my_exp", "--run-dir", str(project / "run"), *settings(tmp_path, model_cache, **{"trainer.val_every": "0"}))
    done = subprocess.run([EVR1, "run", *args], capture_output=True, text=True, cwd=project, timeout=400, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = read_metrics(project / "run")
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:  # 2 groups per step, each 3 sampled rows (0.25) + 1 curated row (1.0)
        assert row["mixer/offline_share"] == pytest.approx(1 / 4)
        assert row["reward/online_score"] == pytest.approx(0.25)  # (3 * 0.25) / 3 per group, offline rows left out
        assert row["reward/offline_score"] == pytest.approx(1.0)
        assert row["reward/score"] == pytest.approx((3 * 0.25 + 1.0) / 4)  # every row: 0.4375
        assert row["reward/multiple_choice/accuracy"] == pytest.approx(0.25)  # sampled rows only, not 0.4375
        assert row["reward/multiple_choice/count"] == 6.0
        assert row["reward/offline_accuracy"] == pytest.approx(1.0)
    report = (project / "run" / "report.md").read_text()
    assert "| reward/multiple_choice/accuracy | 0.250 | 0.250 | 0.250 |" in report
    assert "| reward/offline_score | 1.000 | 1.000 | 1.000 |" in report
