"""The driver's side of checkpoints: `RUN_DIR/checkpoints/step_N/` holds the learner state (`learner/`,
written by learner 0, `evr1.runner.learner.checkpoint`) and the trainer state (`trainer_state.json`: the step, the
sampler, the KL coefficient, the failed records, and what else the loop keeps). The trainer state is
written last, atomically: a folder without it is incomplete and never resumed from.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evr1.run_dir import CHECKPOINTS, TRAINER_STATE
from evr1.runner.ray.workers import TrainingError, Workers, get


def save_checkpoint(run_dir: Path, step: int, workers: Workers, state: Mapping[str, Any],
                    write: Callable[[Path], None] | None = None) -> Path:
    """Checkpoint after `step` steps: the learner state, the loop's own files (`write(folder)`), then `state`
    (JSON) as the completion marker."""
    folder = run_dir / CHECKPOINTS / f"step_{step:06d}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    learner = (folder / "learner").resolve()
    get([w.save.remote(str(learner)) for w in workers.learners], step, "learner (checkpoint)")
    workers.learner_dir_seen(learner, "checkpoint")
    if write is not None:
        write(folder)
    tmp = folder / (TRAINER_STATE + ".tmp")
    tmp.write_text(json.dumps({"step": step, **state}))
    tmp.rename(folder / TRAINER_STATE)
    return folder


def load_checkpoint(folder: Path, steps: int, workers: Workers) -> dict[str, Any]:
    """Load the learner state of `folder` into the learners; returns its trainer state. Refused when it was
    taken beyond this run's `steps` (it belongs to another run)."""
    state = json.loads((folder / TRAINER_STATE).read_text())
    if state["step"] > steps:
        raise TrainingError(
            f"{folder} was taken after step {state['step']}, beyond this run's trainer.steps={steps}: it belongs to another run"
        )
    get([w.load.remote(str((folder / "learner").resolve())) for w in workers.learners], state["step"], "learner (restore)")
    return state


def discard_evaluations(run_dir: Path, first_step: int) -> list[str]:
    """Remove the periodic evaluations (`eval/step_N`) of steps a resumed run trains again, so none
    mixes answers of two sets of weights; returns the names removed."""
    removed = []
    for folder in sorted((run_dir / "eval").glob("step_*")):
        if folder.is_dir() and folder.name[5:].isdigit() and int(folder.name[5:]) >= first_step:
            shutil.rmtree(folder)
            removed.append(folder.name)
    return removed
