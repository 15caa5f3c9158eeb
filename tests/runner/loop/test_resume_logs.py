"""A resumed run's logs equal an uninterrupted run's: metrics.jsonl cut, TensorBoard told to purge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics
from evr1.runner.loop.metrics import MetricsLogger, truncate_jsonl


def tensorboard_scalars(run_dir: Path, key: str) -> list[tuple[int, float]]:
    """(step, value) of `key` as TensorBoard shows it (restarts purged)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir / "tensorboard"), purge_orphaned_data=True)
    events.Reload()
    return [(e.step, e.value) for e in events.Scalars(key)]


def log_steps(run_dir: Path, steps: range, value: float, resume_step: int | None = None) -> None:
    logger = MetricsLogger(run_dir, resume_step=resume_step)
    for step in steps:
        logger.log(step, {"reward/score": value + step})
    logger.close()


@pytest.mark.parametrize(
    ("resume_step", "expected"),
    [  # first run: steps 0-4 with values 0-4; the resumed run logs from `resume_step` with values 10 + step
        (3, [(0, 0.0), (1, 1.0), (2, 2.0), (3, 13.0), (4, 14.0)]),
        (0, [(0, 10.0), (1, 11.0), (2, 12.0), (3, 13.0), (4, 14.0)]),  # no checkpoint: all again, step 0 once
    ],
)
def test_resumed_logs_replace_the_steps_run_again(tmp_path: Path, resume_step: int, expected: list) -> None:
    log_steps(tmp_path, range(5), 0.0)
    log_steps(tmp_path, range(resume_step, 5), 10.0, resume_step=resume_step)
    assert [(r["step"], r["reward/score"]) for r in read_metrics(tmp_path)] == expected
    assert tensorboard_scalars(tmp_path, "reward/score") == expected
    assert len(list((tmp_path / "tensorboard").iterdir())) == 2  # the old events stay on disk, hidden


def test_without_resume_step_nothing_is_dropped(tmp_path: Path) -> None:
    log_steps(tmp_path, range(2), 0.0)
    log_steps(tmp_path, range(2, 3), 0.0)
    assert [r["step"] for r in read_metrics(tmp_path)] == [0, 1, 2]


def test_truncate_jsonl_keeps_earlier_steps(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    rows = [{"step": s, "id": f"r{s}-{k}"} for s in (1, 1, 2, 3, 3) for k in (0,)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    truncate_jsonl(path, 3)
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 1, 2]
    truncate_jsonl(tmp_path / "absent.jsonl", 1)  # nothing logged yet: nothing to do
    assert not (tmp_path / "absent.jsonl").exists()


@pytest.mark.parametrize(
    ("first_step", "kept"),
    [
        (3, ["step_000001", "step_000002"]),  # resumed from the step-2 checkpoint: steps 3.. are trained again
        (1, []),  # no checkpoint: every evaluation is of weights trained again
        (9, ["step_000001", "step_000002", "step_000003", "step_000004"]),
    ],
)
def test_resume_discards_evaluations_of_steps_trained_again(tmp_path: Path, first_step: int, kept: list[str]) -> None:
    from evr1.runner.loop.resume import discard_evaluations

    for step in (1, 2, 3, 4):
        (tmp_path / "eval" / f"step_{step:06d}").mkdir(parents=True)
        (tmp_path / "eval" / f"step_{step:06d}" / "samples.jsonl").write_text("{}\n")
    (tmp_path / "eval" / "notes").mkdir()  # not a step folder: left alone
    removed = discard_evaluations(tmp_path, first_step)
    assert sorted(p.name for p in (tmp_path / "eval").iterdir()) == sorted([*kept, "notes"])
    assert removed == sorted({f"step_{s:06d}" for s in (1, 2, 3, 4)} - set(kept))
