"""A run that fails in its experiment's code, resumed after the fix: the failure is recorded and ends with a
resume hint; `--resume --update-code` runs the fixed file (the old copy kept); sibling modules of the
experiment file are imported by the driver and the Ray workers, on the first run and on the resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.runner.metrics import read_metrics

from .test_train import ROOT, run, settings

pytestmark = [pytest.mark.slow, pytest.mark.ray]

HELPERS = '''
from evr1.registry import REWARDS


@REWARDS.register("sibling/mc")
def mc(inp, spec):
    """Multiple choice, as the built-in reward scores it (run by the reward workers)."""
    return REWARDS.get("multiple_choice")(inp, spec)
'''

FLAKY = f'''
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
    """The quickstart's debug variant (3 steps) with the flaky advantage and the sibling reward."""
    cfg, _ = load_config("{ROOT / "experiments" / "quickstart.py"}:debug")
    cfg.name = "flaky"
    cfg.algo.advantage = "test/flaky"
    cfg.reward.routes = {{"multiple_choice": "sibling/mc"}}
    return cfg
'''



def test_failure_in_experiment_code_then_resume_with_update_code(tmp_path: Path, model_cache: Path) -> None:
    project = tmp_path / "project"
    (project / "experiments").mkdir(parents=True)
    (project / "experiments" / "helpers.py").write_text(HELPERS)
    exp_file = project / "experiments" / "flaky.py"
    exp_file.write_text(FLAKY)
    common = settings(tmp_path, model_cache, **{"trainer.save_every": "1", "trainer.val_every": "0"})

    failed = run("flaky", "--run-dir", "runs/flaky", *common, cwd=project)
    assert failed.returncode == 1, failed.stderr[-3000:]
    assert "RuntimeError: plugin bug" in failed.stderr  # the traceback of a plugin bug is shown
    assert failed.stderr.splitlines()[-1] == (
        f"the run failed at step 2 in the experiment's code ({exp_file}); after fixing {exp_file}, continue with"
        " `evr1 run --resume runs/flaky --update-code` (from step_000001)"
    )
    run_dir = project / "runs" / "flaky"
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "failed"
    assert {k: info["history"][-1][k] for k in ("event", "step", "error", "in_experiment_code")} == {
        "event": "failed", "step": 2, "error": "RuntimeError: plugin bug", "in_experiment_code": True
    }
    config = (run_dir / "config.json").read_bytes()

    exp_file.write_text(FLAKY.replace('raise RuntimeError("plugin bug")', "pass  # fixed"))
    resumed = run("--resume", "runs/flaky", "--update-code", cwd=project)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "note: this run failed at step 2 (RuntimeError: plugin bug)" in resumed.stderr
    assert f"updated runs/flaky/experiment.py from {exp_file} (the old copy is runs/flaky/experiment.py.1)" in resumed.stderr
    assert "resuming from checkpoint step_000001" in resumed.stdout
    assert (run_dir / "experiment.py").read_text() == exp_file.read_text()
    assert (run_dir / "experiment.py.1").read_text() == FLAKY
    assert (run_dir / "config.json").read_bytes() == config  # the recorded config stays as recorded
    assert [r["step"] for r in read_metrics(run_dir)] == [1, 2, 3] and (run_dir / "final_model").is_dir()
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "finished"
    assert [e["event"] for e in info["history"]] == ["running", "failed", "code updated", "running", "finished"]
