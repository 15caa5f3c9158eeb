"""Checkpoint retention (`TrainerSpec.keep_checkpoints`, `keep_best`, `best_mode`).

`prune_checkpoints` runs after each save. It keeps the newest `keep_checkpoints` complete checkpoints
(those whose `trainer.json` marker is written) and, with `keep_best`, the checkpoint whose step holds
the best value of that metric: the value logged at that step, else the latest one logged before it
(validation metrics are logged every `val_every` steps only). Ties go to the earlier checkpoint. The
newest checkpoint, which `--resume` starts from, is always kept; incomplete folders are left alone.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evr1.specs import TrainerSpec


def checkpoint_values(steps: Sequence[int], rows: Sequence[Mapping[str, Any]], metric: str) -> dict[int, float]:
    """The value of `metric` at each of `steps`: the latest one logged at or before the step (steps before
    its first value are left out)."""
    values, latest, logged = {}, None, sorted((r["step"], r[metric]) for r in rows if r.get(metric) is not None)
    i = 0
    for step in sorted(steps):
        while i < len(logged) and logged[i][0] <= step:
            latest, i = logged[i][1], i + 1
        if latest is not None:
            values[step] = float(latest)
    return values


def prune_checkpoints(run_dir: Path, spec: TrainerSpec, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Remove the complete checkpoints `spec` does not keep (`rows`: the run's logged metrics); their names."""
    from evr1.run_dir import CHECKPOINTS, TRAINER_STATE

    if not spec.keep_checkpoints:
        return []
    folders = {int(f.parent.name[5:]): f.parent for f in (Path(run_dir) / CHECKPOINTS).glob(f"step_*/{TRAINER_STATE}")}
    steps = sorted(folders)
    keep = set(steps[-spec.keep_checkpoints:])
    if spec.keep_best is not None:
        values = checkpoint_values(steps, rows, spec.keep_best)
        if values:
            sign = 1 if spec.best_mode == "max" else -1
            keep.add(max(values, key=lambda s: (sign * values[s], -s)))
    removed = []
    for step in steps:
        if step not in keep:
            shutil.rmtree(folders[step])
            removed.append(folders[step].name)
    return removed
