"""Checkpoint retention: the newest N complete checkpoints, and the best by a named metric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from evr1.runner.loop.retention import checkpoint_values, prune_checkpoints
from evr1.specs import TrainerSpec

# accuracy logged at steps 2, 4 and 6 only (validation every 2 steps); a checkpoint at every step
ROWS = [{"step": s, "loss": 1.0 / s, **({"acc": {2: 0.5, 4: 0.75, 6: 0.25}[s]} if s % 2 == 0 else {})} for s in range(1, 7)]


def checkpoints(run_dir: Path, steps: list[int], incomplete: tuple[int, ...] = ()) -> None:
    for step in steps:
        folder = run_dir / "checkpoints" / f"step_{step:06d}"
        folder.mkdir(parents=True)
        if step not in incomplete:  # an incomplete checkpoint lacks its trainer.json marker
            (folder / "trainer.json").write_text(json.dumps({"step": step}))


def kept(run_dir: Path) -> list[int]:
    return sorted(int(p.name[5:]) for p in (run_dir / "checkpoints").iterdir())


def test_the_value_at_a_step_is_the_latest_logged_at_or_before_it() -> None:
    assert checkpoint_values([1, 2, 3, 5, 6], ROWS, "acc") == {2: 0.5, 3: 0.5, 5: 0.75, 6: 0.25}
    assert checkpoint_values([1, 2], ROWS, "missing") == {}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"keep_checkpoints": 0}, [1, 2, 3, 4, 5, 6]),  # keep all
        ({"keep_checkpoints": 2}, [5, 6]),
        ({"keep_checkpoints": 1, "keep_best": "acc"}, [4, 6]),  # 0.75 at step 4 (step 5 repeats it: the earlier wins)
        ({"keep_checkpoints": 1, "keep_best": "acc", "best_mode": "min"}, [6]),  # 0.25: the newest itself
        ({"keep_checkpoints": 2, "keep_best": "loss", "best_mode": "min"}, [5, 6]),  # 1/6 at step 6
        ({"keep_checkpoints": 1, "keep_best": "never_logged"}, [6]),
    ],
)
def test_prune_keeps_the_newest_and_the_best(tmp_path: Path, fields: dict, expected: list[int]) -> None:
    checkpoints(tmp_path, [1, 2, 3, 4, 5, 6])
    spec = TrainerSpec(save_every=1, **fields)
    removed = prune_checkpoints(tmp_path, spec, ROWS)
    assert kept(tmp_path) == expected
    assert removed == [f"step_{s:06d}" for s in range(1, 7) if s not in expected]


def test_incomplete_checkpoints_are_neither_counted_nor_removed(tmp_path: Path) -> None:
    checkpoints(tmp_path, [1, 2, 3], incomplete=(3,))  # a save killed mid-way
    prune_checkpoints(tmp_path, TrainerSpec(save_every=1, keep_checkpoints=1), ROWS)
    assert kept(tmp_path) == [2, 3]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"save_every": 1, "keep_best": "acc"}, "trainer.keep_best goes with trainer.keep_checkpoints > 0"),
        ({"keep_checkpoints": 2}, "trainer.keep_checkpoints needs trainer.save_every > 0"),
        ({"save_every": 1, "keep_checkpoints": 1, "best_mode": "best"}, "Input should be 'max' or 'min'"),
    ],
)
def test_retention_settings_that_cannot_work_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TrainerSpec(**fields)
