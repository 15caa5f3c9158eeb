"""An experiment file that registers its own reward, run as a user runs it: the Ray workers import the
file too; Ctrl-C says where the run stopped; `--resume` reads the run directory's copy of the file, says
where it restarts, and says when there is nothing left to do; checkpoint retention keeps the newest two
and the best. The run is held at step 2 (`holding`) before it is interrupted, so it cannot finish first.

The reward's scores are known (1 for the curated answer, SCORE for any sampled one), so the same run
also pins `reward/online_score` and `reward/offline_score` in mixed groups (once `test_online_score.py`,
a run of its own)."""

from __future__ import annotations

import signal
import subprocess
import textwrap
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics

from ..holding import hold_code, wait_until_held
from .test_train import EVR1, run, settings

pytestmark = [pytest.mark.slow, pytest.mark.ray]

SCORE = 0.37  # what the file's reward gives every sampled answer: no built-in reward gives it to all

EXPERIMENT = f'''
import fiddle as fdl

from evr1.experiment import Experiment
from evr1.registry import REWARDS
from evr1.rewards import RewardOutput, per_sample
from evr1.specs import DataSpec, MixerSpec, ModelSpec, RewardSpec, RolloutSpec, SynthSpec, TrainerSpec


@REWARDS.register("me/curated_or_not")
@per_sample
def curated_or_not(inp, spec):
    """1 for the curated answer (the records' offline_response), {SCORE} for anything the policy samples."""
    score = 1.0 if inp.response.strip() == f"<answer>{{inp.answer}}</answer>" else {SCORE}
    return RewardOutput(score, {{"accuracy": score}})


def experiment():
    """Quickstart data, groups of 4 with one curated answer each, scored by this file's reward."""
    return fdl.Config(
        Experiment,
        model=fdl.Config(ModelSpec, name="tiny-qwen2.5-vl", dtype="float32"),
        data=fdl.Config(DataSpec, synth=fdl.Config(SynthSpec, tasks=("quickstart",))),
        rollout=fdl.Config(RolloutSpec, n=4, max_prompt_tokens=512, max_response_tokens=8),
        mixer=fdl.Config(MixerSpec, name="offline_k", k=1),
        reward=fdl.Config(RewardSpec, routes={{"multiple_choice": "me/curated_or_not"}}, format="none"),  # score = accuracy
        trainer=fdl.Config(TrainerSpec, steps=4, save_every=1, keep_checkpoints=2,
                           keep_best="reward/multiple_choice/accuracy"),
    )
'''  # with `holding.hold_code` added: data.sampler="test/held_uniform" holds the run at step 2



def test_a_reward_registered_in_the_experiment_file_scores_an_interrupted_and_resumed_run(tmp_path: Path, model_cache: Path) -> None:
    project, run_dir = tmp_path / "project", tmp_path / "project" / "run"
    (project / "experiments").mkdir(parents=True)
    (project / "experiments" / "my_exp.py").write_text(textwrap.dedent(EXPERIMENT) + hold_code(run_dir, after_step=1))
    args = ("my_exp", "--run-dir", str(run_dir), *settings(tmp_path, model_cache, **{"trainer.val_every": "0"}),
            "--set", "data.sampler='test/held_uniform'")
    with (tmp_path / "err.txt").open("w") as err_file:  # a file, not a pipe a chatty run could fill
        proc = subprocess.Popen([EVR1, "run", *args], cwd=project, stdout=subprocess.DEVNULL, stderr=err_file, text=True)
        try:
            wait_until_held(proc, run_dir, log=tmp_path / "err.txt")
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            proc.wait(timeout=120)
    err = (tmp_path / "err.txt").read_text()
    assert proc.returncode == 130, err[-3000:]
    last = [line for line in err.splitlines() if line.startswith("interrupted at step")]
    assert last and last[-1].startswith("interrupted at step 2;"), err[-3000:]
    assert f"continue with `evr1 run --resume {run_dir}` (from step_000001)" in last[-1], err[-3000:]
    assert "Traceback" not in err

    (project / "experiments" / "my_exp.py").unlink()  # --resume reads the run directory's copy
    resumed = run("--resume", str(run_dir), cwd=project)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming from checkpoint step_000001" in resumed.stdout
    rows = read_metrics(run_dir)
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    for row in rows:  # every response, online and offline, scored by the file's reward in the reward workers
        assert row["reward/errors"] == 0.0
        # 2 groups per step, each 3 sampled rows (SCORE) + 1 curated row (1.0)
        assert row["mixer/offline_share"] == pytest.approx(1 / 4)
        assert row["reward/online_score"] == pytest.approx(SCORE)  # (3 * SCORE) / 3 per group, offline rows left out
        assert row["reward/offline_score"] == pytest.approx(1.0)
        assert row["reward/score"] == pytest.approx((3 * SCORE + 1.0) / 4)  # every row: 0.5275
        assert row["reward/multiple_choice/accuracy"] == pytest.approx(SCORE)  # sampled rows only, not 0.5275
        assert row["reward/multiple_choice/count"] == 6.0
        assert row["reward/offline_accuracy"] == pytest.approx(1.0)
    report = (run_dir / "report.md").read_text()
    assert f"| reward/multiple_choice/accuracy | {SCORE:.3f} | {SCORE:.3f} | {SCORE:.3f} |" in report
    assert "| reward/offline_score | 1.000 | 1.000 | 1.000 |" in report

    # the newest two and the best: every step ties on the constant score, so the earliest, step 1
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["step_000001", "step_000003", "step_000004"]

    again = run("--resume", str(run_dir), cwd=project)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "already finished all 4 steps" in " ".join(again.stdout.split())  # rich wraps long paths
    assert "ray" not in again.stderr.lower()  # Ray never started
    assert read_metrics(run_dir) == rows
