"""An experiment built on another (`load_config("ex")` in its function), whose reward the other file
registers and a sibling module wraps, run as a user runs it, failing twice and resumed after each:

- the Ray reward workers import both files and the sibling module; a reward error in a worker is
  reported at the step the worker names, in both lines, with the `--update-code` hint;
- the resume imports the run's copies of the files (the project's `ex.py` deleted), in the driver
  and in the workers, and fails in the experiment's own code (a plugin advantage) with a resume hint;
- `--resume --update-code` runs the fixed file (the old copy kept, config.json as recorded).

(Once two tests and four runs: this one and `test_resume_code.py`; their assertions are all here.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics

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
    cfg, _ = load_config("{ROOT / "evr1" / "experiments" / "quickstart.py"}:debug")
    cfg.reward.routes = {{"multiple_choice": "base/fixed"}}
    return cfg
'''

HELPERS = '''
from evr1.registry import REWARDS


@REWARDS.register("sibling/fixed")
def fixed(inp, spec):
    """ex.py's reward (run by the reward workers)."""
    return REWARDS.get("base/fixed")(inp, spec)
'''

DERIVED = '''
from pathlib import Path

import helpers  # a module next to this file: the reward workers must import it too

from evr1.experiment_files import load_config
from evr1.registry import ADVANTAGES


@ADVANTAGES.register("test/flaky")
def flaky(scores, group_ids, response_mask, *, spec, offline=None):
    """GRPO; fails on its second call (step 2) until fixed."""
    calls = Path("calls")
    calls.write_text(str(int(calls.read_text()) + 1 if calls.exists() else 1))
    if int(calls.read_text()) == 2:
        raise RuntimeError("plugin bug")
    return ADVANTAGES.get("grpo")(scores, group_ids, response_mask, spec=spec, offline=offline)


def experiment():
    """ex, two steps, with the flaky advantage and the sibling module's reward."""
    cfg, _ = load_config("ex")
    cfg.name = "derived"
    cfg.trainer.steps = 2
    cfg.algo.advantage = "test/flaky"
    cfg.reward.routes = {"multiple_choice": "sibling/fixed"}
    return cfg
'''


def test_workers_and_resumes_import_the_experiment_files_and_update_code_runs_the_fix(
    tmp_path: Path, model_cache: Path
) -> None:
    project = tmp_path / "project"
    (project / "experiments").mkdir(parents=True)
    ex, exp_file = project / "experiments" / "ex.py", project / "experiments" / "derived.py"
    ex.write_text(EX)
    (project / "experiments" / "helpers.py").write_text(HELPERS)
    exp_file.write_text(DERIVED)
    (project / "broken").write_text("")
    common = settings(tmp_path, model_cache, **{"trainer.save_every": "1", "trainer.val_every": "0",
                                                "reward.fail_on_error": "True"})

    failed = run("derived", "--run-dir", "runs/d", *common, cwd=project)  # the reward fails at step 1
    assert failed.returncode == 2, failed.stderr[-3000:]
    assert "error: step 1: the reward worker failed" in failed.stderr and "RuntimeError: reward bug" in failed.stderr
    assert "UnknownNameError" not in failed.stderr  # the workers know sibling/fixed and base/fixed
    # the step the worker names (no metrics row was logged: stopped_step alone would say "before step 1"); the
    # scorer's error names the line of the experiment code it came from, so the fix goes through --update-code
    last = failed.stderr.splitlines()[-1]
    assert last.startswith("the run failed at step 1 in the experiment's code (") and "ex.py" in last, last
    assert last.endswith("continue with `evr1 run --resume runs/d --update-code` (from step 0: no checkpoint was saved)")
    run_dir = project / "runs" / "d"
    event = json.loads((run_dir / "run.json").read_text())["history"][-1]
    assert (event["event"], event["step"]) == ("failed", 1)
    config = (run_dir / "config.json").read_bytes()

    (project / "broken").unlink()
    ex.unlink()  # the resume imports the run's copy experiment_deps/ex.py
    again = run("--resume", "runs/d", cwd=project)  # step 1 trains; the plugin advantage fails at step 2
    assert again.returncode == 1, again.stderr[-3000:]
    assert "note: this run failed at step 1 (TrainingError: step 1: the reward worker failed:" in again.stderr
    assert "RuntimeError: plugin bug" in again.stderr  # the traceback of a plugin bug is shown
    assert again.stderr.splitlines()[-1] == (  # the code that ran is the run's copy; the fix goes into the project's
        f"the run failed at step 2 in the experiment's code ({run_dir / 'experiment.py'}); after fixing {exp_file},"
        " continue with `evr1 run --resume runs/d --update-code` (from step_000001)"
    )
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "failed"
    assert {k: info["history"][-1][k] for k in ("event", "step", "error", "in_experiment_code")} == {
        "event": "failed", "step": 2, "error": "RuntimeError: plugin bug", "in_experiment_code": True
    }
    assert [r["step"] for r in read_metrics(run_dir)] == [1]

    ex.write_text(EX)  # back as it was: only the experiment file changes
    exp_file.write_text(DERIVED.replace('raise RuntimeError("plugin bug")', "pass  # fixed"))
    resumed = run("--resume", "runs/d", "--update-code", cwd=project)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "note: this run failed at step 2 (RuntimeError: plugin bug)" in resumed.stderr
    assert f"updated runs/d/experiment.py from {exp_file} (the old copy is runs/d/experiment.py.1)" in resumed.stderr
    assert "resuming from checkpoint step_000001" in resumed.stdout
    assert (run_dir / "experiment.py").read_text() == exp_file.read_text()
    assert (run_dir / "experiment.py.1").read_text() == DERIVED
    assert (run_dir / "config.json").read_bytes() == config  # the recorded config stays as recorded
    rows = read_metrics(run_dir)
    assert [r["step"] for r in rows] == [1, 2] and (run_dir / "final_model").is_dir()
    for row in rows:  # every response scored by ex.py's reward in the reward workers
        assert row["reward/multiple_choice/accuracy"] == pytest.approx(SCORE)
        assert row["reward/errors"] == 0.0
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "finished"
    assert [e["event"] for e in info["history"]] == ["running", "failed", "running", "failed", "code updated", "running",
                                                     "finished"]
