"""Validation figures per problem type beside the split's, and what report.md says "accuracy" means for the
types whose accuracy is a mean IoU (or MRA), not a share of right answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.data.records import Record
from evr1.rewards import RewardOutput
from evr1.run_dir import METRICS_FILE, read_metrics
from evr1.runner.loop.run_report import curve_keys, write_report
from evr1.runner.loop.validation import split_metrics


def _record(rid: str, kind: str, answer: object) -> Record:
    return Record.model_validate({"id": rid, "problem": "?", "problem_type": kind, "answer": answer})


RECORDS = [_record("m1", "boolean", True), _record("m2", "boolean", False), _record("m3", "boolean", True),
           _record("t1", "temporal_grounding", {"time": [0, 4]}), _record("t2", "temporal_grounding", {"time": [2, 6]})]
SCORED = [RECORDS[0], RECORDS[1], RECORDS[3], RECORDS[4]]  # m3's media failed: it counts 0
OUTPUTS = [RewardOutput(1.0, {"accuracy": 1.0, "format": 1.0}), RewardOutput(0.1, {"accuracy": 0.0, "format": 1.0}),
           RewardOutput(0.55, {"accuracy": 0.5, "format": 1.0}), RewardOutput(0.25, {"accuracy": 0.25, "format": 0.7})]


def test_a_split_is_reported_whole_and_per_problem_type() -> None:
    metrics = split_metrics("data/val", RECORDS, SCORED, OUTPUTS)
    assert metrics == pytest.approx({
        "val/data/val/accuracy": (1.0 + 0.0 + 0.5 + 0.25) / 5,  # every record of the split, m3 as 0
        "val/data/val/score": (1.0 + 0.1 + 0.55 + 0.25) / 5,
        "val/data/val/boolean/accuracy": 1 / 3, "val/data/val/boolean/score": 1.1 / 3, "val/data/val/boolean/count": 3,
        "val/data/val/temporal_grounding/accuracy": 0.375,  # a mean IoU: (0.5 + 0.25) / 2
        "val/data/val/temporal_grounding/score": 0.4, "val/data/val/temporal_grounding/count": 2,
    })


def _report(run_dir: Path, rows: list[dict[str, float]]) -> str:
    run_dir.mkdir()
    (run_dir / METRICS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return write_report(run_dir, read_metrics(run_dir), "exp").read_text()


def test_the_report_lists_each_type_and_says_what_grounding_accuracy_is(tmp_path: Path) -> None:
    rows = [{"step": 0, **split_metrics("data/val", RECORDS, SCORED, OUTPUTS)},
            {"step": 1, **split_metrics("data/val", RECORDS, SCORED[:2], OUTPUTS[:2])}]  # no grounding scored
    text = _report(tmp_path / "run", rows)
    assert "| val/data/val/boolean/accuracy | 0.333 | 0.333 | 0.333 |" in text
    assert "| val/data/val/temporal_grounding/accuracy | 0.375 | 0.000 | 0.375 |" in text
    assert ("For temporal_grounding, accuracy is a mean IoU (of the answer's time span with the reference's)."
            in text)
    assert "boolean, accuracy" not in text  # a share of right answers: nothing to say


def test_a_split_of_one_type_is_one_curve() -> None:
    only = split_metrics("quickstart/val", RECORDS[:3], SCORED[:2], OUTPUTS[:2])
    both = split_metrics("data/val", RECORDS, SCORED, OUTPUTS)
    assert curve_keys([{"step": 0, **only, **both}]) == [
        "val/data/val/accuracy", "val/data/val/boolean/accuracy", "val/data/val/temporal_grounding/accuracy",
        "val/quickstart/val/accuracy"]  # its one type's figure is the split's
