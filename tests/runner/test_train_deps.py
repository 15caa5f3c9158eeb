"""An experiment built on another (`load_config("ex")` in its function), whose reward the other file
registers, run as a user runs it: the Ray reward workers import both files; a reward error in a worker
is reported at the step the worker names, in both lines; the resume imports the run's copies of both
files (the project's `ex.py` deleted), in the driver and in the workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.runner.metrics import read_metrics

from .test_train import ROOT, run, settings

pytestmark = [pytest.mark.slow, pytest.mark.ray]

SCORE = 0.37  # what ex.py's reward gives every answer: no built-in reward gives it to all

EX = f'''
from pathlib import Path

from evr1.experiment_files import load_config
from evr1.registry import REWARDS
from evr1.rewards import RewardOutput, per_sample


@REWARDS.register("base/fixed")
@per_sample
def fixed(inp, spec):
    """{SCORE} for every answer; fails while the file `broken` exists."""
    if Path("broken").exists():
        raise RuntimeError("reward bug")
    return RewardOutput({SCORE}, {{"accuracy": {SCORE}}})


def experiment():
    """The quickstart's debug variant scored by this file's reward."""
    cfg, _ = load_config("{ROOT / "experiments" / "quickstart.py"}:debug")
    cfg.reward.routes = {{"multiple_choice": "base/fixed"}}
    return cfg
'''

DERIVED = '''
from evr1.experiment_files import load_config


def experiment():
    """ex, two steps."""
    cfg, _ = load_config("ex")
    cfg.name = "derived"
    cfg.trainer.steps = 2
    return cfg
'''



def test_workers_and_resume_import_the_experiment_a_config_builds_on(tmp_path: Path, model_cache: Path) -> None:
    project = tmp_path / "project"
    (project / "experiments").mkdir(parents=True)
    (project / "experiments" / "ex.py").write_text(EX)
    (project / "experiments" / "derived.py").write_text(DERIVED)
    (project / "broken").write_text("")
    common = settings(tmp_path, model_cache, **{"trainer.save_every": "1", "trainer.val_every": "0",
                                                        "reward.fail_on_error": "True"})

    failed = run("derived", "--run-dir", "runs/d", *common, cwd=project)
    assert failed.returncode == 2, failed.stderr[-3000:]
    assert "error: step 1: the reward worker failed" in failed.stderr and "RuntimeError: reward bug" in failed.stderr
    assert "UnknownNameError" not in failed.stderr  # the workers know base/fixed
    ex = project / "experiments" / "ex.py"
    # the step the worker names (no metrics row was logged: stopped_step alone would say "before step 1"); the
    # scorer's error names the line of the experiment code it came from, so the fix goes through --update-code
    last = failed.stderr.splitlines()[-1]
    assert last.startswith("the run failed at step 1 in the experiment's code (") and "ex.py" in last, last
    assert last.endswith("continue with `evr1 run --resume runs/d --update-code` (from step 0: no checkpoint was saved)")
    run_dir = project / "runs" / "d"
    event = json.loads((run_dir / "run.json").read_text())["history"][-1]
    assert (event["event"], event["step"]) == ("failed", 1)

    (project / "broken").unlink()
    ex.unlink()  # the resume imports the run's copy experiment_deps/ex.py
    resumed = run("--resume", "runs/d", cwd=project)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "note: this run failed at step 1 (TrainingError: step 1: the reward worker failed:" in resumed.stderr
    rows = read_metrics(run_dir)
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:  # every response scored by ex.py's reward in the reward workers
        assert row["reward/multiple_choice/accuracy"] == pytest.approx(SCORE)
        assert row["reward/errors"] == 0.0
