"""A run that loses a worker recovers by itself (`trainer.max_failures`): a reward worker is killed with -9 while
held at a known point (its reward waits, once the checkpoint after step 2 exists, until the test kills it); the run
restarts its workers, goes on from that checkpoint, finishes every step, records the loss in `run.json` and the
metrics, and its metrics equal an uninterrupted run's. With no failure budget the same loss stops the run with the
usual one-line message and resume command."""

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

from evr1.experiment_files import load_config
from evr1.registry import REWARDS
from evr1.rewards import per_sample

CHECKPOINT, HELD = Path({checkpoint!r}), Path({held!r})


@REWARDS.register("test/held_once")
@per_sample
def held_once(inp, spec):
    """1 for the right letter, else 0.25; the first call once CHECKPOINT exists writes its process id to HELD and
    waits for ever (the test kills that process)."""
    if CHECKPOINT.exists() and not HELD.exists():
        HELD.write_text(str(os.getpid()))
        while True:
            time.sleep(1)
    return 1.0 if f"<answer>{{inp.answer}}</answer>" in inp.response else 0.25


def experiment():
    cfg, _ = load_config("quickstart")
    cfg.reward.routes = {{"multiple_choice": "test/held_once"}}
    cfg.reward.timeout_s = 3600.0  # the held call is ended by the kill, never by its time limit
    return cfg
'''


def killed_reward_worker(tmp_path: Path, target: Path, common: list[str]) -> tuple[subprocess.Popen, Path]:
    """Start the held run into `target`, kill its reward worker once held (after step 2's checkpoint), and
    return the run's process (still running) and its stderr file."""
    held = tmp_path / "reward.pid"
    file = tmp_path / f"{target.name}.py"
    file.write_text(EXPERIMENT.format(checkpoint=str(target / "checkpoints" / "step_000002" / "trainer.json"),
                                      held=str(held)))
    log = tmp_path / f"{target.name}.err"
    with log.open("w") as err:
        proc = subprocess.Popen([EVR1, "run", str(file), "--run-dir", str(target), *common], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 900
    while not held.exists() or not held.read_text():
        assert proc.poll() is None, "the run ended before it was held:\n" + log.read_text()[-3000:]
        assert time.monotonic() < deadline, "the run was not held within 900 s"
        time.sleep(0.1)
    os.kill(int(held.read_text()), signal.SIGKILL)
    return proc, log


def test_a_run_recovers_from_a_killed_reward_worker_and_repeats_the_uninterrupted_run(tmp_path: Path,
                                                                                     model_cache: Path) -> None:
    common = settings(tmp_path, model_cache, **{"trainer.steps": "4", "trainer.save_every": "2",
                                                "trainer.val_every": "0"})
    file = tmp_path / "plain.py"  # the same reward, never held: its checkpoint path is no run's
    file.write_text(EXPERIMENT.format(checkpoint=str(tmp_path / "nowhere"), held=str(tmp_path / "never")))
    whole = run(str(file), "--run-dir", str(tmp_path / "whole"), *common)
    assert whole.returncode == 0, whole.stderr[-3000:]

    target = tmp_path / "faulty"
    proc, log = killed_reward_worker(tmp_path, target, common)
    assert proc.wait(timeout=900) == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert "step 3: lost reward 0 (node " in text and "failure 1 of trainer.max_failures=3" in text, text[-3000:]
    rows = read_metrics(target)
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert [r.get("faults/lost_workers") for r in rows] == [None, None, 1.0, None]
    assert stable([{k: v for k, v in r.items() if not k.startswith("faults/")} for r in rows]) == stable(
        read_metrics(tmp_path / "whole"))
    info = json.loads((target / "run.json").read_text())
    assert info["status"] == "finished"
    lost = [e for e in info["history"] if e["event"] == "worker lost"]
    assert len(lost) == 1 and lost[0]["step"] == 3 and list(lost[0]["workers"]) == ["reward 0"], lost
    assert lost[0]["failure"] == 1 and lost[0]["max_failures"] == 3


def test_with_no_failure_budget_a_lost_worker_stops_the_run_with_the_resume_command(tmp_path: Path,
                                                                                   model_cache: Path) -> None:
    common = settings(tmp_path, model_cache, **{"trainer.steps": "3", "trainer.save_every": "2",
                                                "trainer.val_every": "0", "trainer.max_failures": "0"})
    target = tmp_path / "faulty"
    proc, log = killed_reward_worker(tmp_path, target, common)
    assert proc.wait(timeout=900) == 2, log.read_text()[-3000:]  # a TrainingError: exit status 2
    last = log.read_text().strip().splitlines()[-1]
    assert last == (f"the run failed at step 3; after fixing the cause, continue with `evr1 run --resume {target}`"
                    " (from step_000002)")
    assert json.loads((target / "run.json").read_text())["status"] == "failed"
