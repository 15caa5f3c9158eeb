"""A run that loses workers recovers by itself (`trainer.max_failures`): its reward worker, its rollout worker and
its learner are each killed with -9 while held at a known point (after the checkpoints of steps 1, 2 and 3, a hook
of the experiment file running in that worker waits until the test kills its process: the reward, the engine's
`generate`, the policy loss). The run restarts its workers each time, goes on from the last checkpoint, finishes
every step, records each loss in `run.json` and the metrics, and its metrics equal an uninterrupted run's. With no
failure budget a loss stops the run with the usual one-line message and resume command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics

from .test_train import EVR1, ROOT, run, settings, stable

pytestmark = [pytest.mark.slow, pytest.mark.ray]

EXPERIMENT = '''
import os
import time
from pathlib import Path

from evr1.engines.hf import HFEngine
from evr1.experiment_files import load_config
from evr1.registry import ENGINES, POLICY_LOSSES, REWARDS
from evr1.rewards import per_sample

RUN = Path({run_dir!r})


def hold_once(role, after_step):
    """Once the checkpoint after `after_step` exists, the first call writes this process's id to RUN.<role>.pid
    and waits for ever (the test kills this process)."""
    held = RUN.parent / f"{{RUN.name}}.{{role}}.pid"
    if (RUN / "checkpoints" / f"step_{{after_step:06d}}" / "trainer.json").exists() and not held.exists():
        held.write_text(str(os.getpid()))
        while True:
            time.sleep(1)


@REWARDS.register("test/held_reward")
@per_sample
def held_reward(inp, spec):
    """1 for the right letter, else 0.25."""
    hold_once("reward", 1)
    return 1.0 if f"<answer>{{inp.answer}}</answer>" in inp.response else 0.25


@ENGINES.register("test/held_hf")
class HeldEngine(HFEngine):
    def generate(self, prompts, params):
        hold_once("rollout", 2)
        return super().generate(prompts, params)


_ppo_clip = POLICY_LOSSES.get("ppo_clip")


@POLICY_LOSSES.register("test/held_ppo_clip")
def held_ppo_clip(*args, **kwargs):
    hold_once("learner", 3)
    return _ppo_clip(*args, **kwargs)


def experiment():
    cfg, _ = load_config("quickstart")
    cfg.reward.routes = {{"multiple_choice": "test/held_reward"}}
    cfg.reward.timeout_s = 3600.0  # the held call is ended by the kill, never by its time limit
    cfg.rollout.engine = "test/held_hf"
    cfg.algo.policy_loss = "test/held_ppo_clip"
    return cfg
'''


def start_held(tmp_path: Path, target: Path, common: list[str]) -> tuple[subprocess.Popen, Path]:
    """Start the run into `target` with its workers' hooks held as `EXPERIMENT` says; its process and stderr file."""
    file = tmp_path / f"{target.name}.py"
    file.write_text(EXPERIMENT.format(run_dir=str(target)))
    log = tmp_path / f"{target.name}.err"
    with log.open("w") as err:
        proc = subprocess.Popen([EVR1, "run", str(file), "--run-dir", str(target), *common], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=err)
    return proc, log


def kill_when_held(proc: subprocess.Popen, log: Path, target: Path, role: str) -> None:
    """Wait until the worker of `role` is held (its pid file written), then kill it with -9."""
    held = target.parent / f"{target.name}.{role}.pid"
    deadline = time.monotonic() + 900
    while not held.exists() or not held.read_text():
        assert proc.poll() is None, f"the run ended before its {role} was held:\n" + log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"the {role} was not held within 900 s"
        time.sleep(0.1)
    os.kill(int(held.read_text()), signal.SIGKILL)


def test_a_run_recovers_from_killed_reward_rollout_and_learner_workers(tmp_path: Path, model_cache: Path) -> None:
    common = settings(tmp_path, model_cache, **{"trainer.steps": "4", "trainer.save_every": "1",
                                                "trainer.val_every": "0"})
    plain = tmp_path / "plain.py"  # the same hooks, never held: they watch a run directory no run uses
    plain.write_text(EXPERIMENT.format(run_dir=str(tmp_path / "nowhere")))
    whole = run(str(plain), "--run-dir", str(tmp_path / "whole"), *common)
    assert whole.returncode == 0, whole.stderr[-3000:]

    target = tmp_path / "faulty"
    proc, log = start_held(tmp_path, target, common)
    try:
        for role in ("reward", "rollout", "learner"):  # held in steps 2, 3 and 4
            kill_when_held(proc, log, target, role)
        assert proc.wait(timeout=900) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    for step, role, failure in ((2, "reward 0", 1), (3, "rollout", 2), (4, "learner 0", 3)):
        assert f"step {step}: lost {role} (node " in text and f"failure {failure} of trainer.max_failures=3" in text
    rows = read_metrics(target)
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert [r.get("faults/lost_workers") for r in rows] == [None, 1.0, 2.0, 3.0]
    assert stable([{k: v for k, v in r.items() if not k.startswith("faults/")} for r in rows]) == stable(
        read_metrics(tmp_path / "whole"))
    info = json.loads((target / "run.json").read_text())
    assert info["status"] == "finished"
    lost = [e for e in info["history"] if e["event"] == "worker lost"]
    assert [(e["step"], list(e["workers"]), e["failure"]) for e in lost] == [
        (2, ["reward 0"], 1), (3, ["rollout"], 2), (4, ["learner 0"], 3)]
    assert all("ActorDiedError" in e["error"] for e in lost), lost


def test_with_no_failure_budget_a_lost_worker_stops_the_run_with_the_resume_command(tmp_path: Path,
                                                                                   model_cache: Path) -> None:
    common = settings(tmp_path, model_cache, **{"trainer.steps": "2", "trainer.save_every": "1",
                                                "trainer.val_every": "0", "trainer.max_failures": "0"})
    target = tmp_path / "faulty"
    proc, log = start_held(tmp_path, target, common)
    try:
        kill_when_held(proc, log, target, "reward")
        assert proc.wait(timeout=900) == 2, log.read_text()[-3000:]  # a TrainingError: exit status 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    last = log.read_text().strip().splitlines()[-1]
    assert last == (f"the run failed at step 2; after fixing the cause, continue with `evr1 run --resume {target}`"
                    " (from step_000001)")
    assert json.loads((target / "run.json").read_text())["status"] == "failed"
