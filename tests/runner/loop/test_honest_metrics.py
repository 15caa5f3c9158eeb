"""Headline training metrics describe the sampled responses; curated rows are named apart; report.md says
which records were dropped for unloadable media. Hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.data.prompting import MediaFailure
from evr1.rewards import RewardInput, RewardOutput, RewardRouter
from evr1.run_dir import METRICS_FILE, read_metrics
from evr1.runner.loop.data_failures import DataFailures, failure_limit
from evr1.runner.loop.metrics import reward_metrics, sampled_accuracy
from evr1.runner.loop.run_report import curve_keys, write_report


def _inp(ptype: str) -> RewardInput:
    return RewardInput(response="", answer="A", problem_type=ptype)


def _out(accuracy: float, fmt: float = 1.0, error: str | None = None) -> RewardOutput:
    return RewardOutput(0.9 * accuracy + 0.1 * fmt, {"accuracy": accuracy, "format": fmt}, error=error)


def test_k1_of_4_the_headline_is_the_sampled_rows() -> None:
    # one multiple-choice group: 3 sampled answers (all wrong, unformatted) and 1 curated (right, formatted)
    inputs = [_inp("multiple_choice")] * 4
    outputs = [_out(0.0, 0.0), _out(0.0, 0.0), _out(0.0, 0.0), _out(1.0)]
    m = reward_metrics(RewardRouter(), inputs, outputs, [False, False, False, True])
    assert m["reward/multiple_choice/accuracy"] == 0.0  # not 0.25: the curated row is left out
    assert m["reward/multiple_choice/count"] == 3.0
    assert m["reward/online_score"] == 0.0
    assert m["reward/score"] == pytest.approx(1.0 / 4)  # every row the advantages see
    assert m["reward/offline_score"] == pytest.approx(1.0) and m["reward/offline_accuracy"] == 1.0
    assert m["reward/offline_errors"] == 0.0
    assert sampled_accuracy(m) == 0.0


def test_a_threshold_mixers_dropped_samples_still_count_as_sampled() -> None:
    # two groups of 4 sampled answers: all wrong and all right (accuracy 0.5); the mixer replaced one wrong
    # answer of the low group by a curated right one: the kept online rows alone would read 3 of 7
    sampled = ([_inp("multiple_choice")] * 8, [_out(0.0)] * 4 + [_out(1.0)] * 4)
    kept_inputs = [_inp("multiple_choice")] * 8
    kept = [_out(0.0)] * 3 + [_out(1.0)] + [_out(1.0)] * 4
    m = reward_metrics(RewardRouter(), kept_inputs, kept, [False, False, False, True] + [False] * 4, sampled)
    assert m["reward/multiple_choice/accuracy"] == 0.5 and m["reward/multiple_choice/count"] == 8.0
    assert m["reward/score"] == pytest.approx((0.1 * 3 + 1.0 * 5) / 8)  # the rows the advantages see
    assert m["reward/offline_score"] == pytest.approx(1.0)


def test_without_curated_rows_online_score_equals_score_and_no_offline_keys() -> None:
    inputs = [_inp("multiple_choice"), _inp("multiple_choice"), _inp("numerical")]
    outputs = [_out(1.0), _out(0.0), _out(0.5, 0.0)]
    m = reward_metrics(RewardRouter(), inputs, outputs, [False] * 3)
    assert m["reward/online_score"] == m["reward/score"] == pytest.approx((1.0 + 0.1 + 0.45) / 3)
    assert not any(k.startswith("reward/offline") for k in m)
    assert sampled_accuracy(m) == pytest.approx((0.5 + 0.5) / 2)  # multiple_choice 0.5, numerical 0.5


def test_all_rows_curated_logs_no_online_score_and_counts_curated_errors() -> None:
    m = reward_metrics(RewardRouter(), [_inp("numerical")] * 2, [_out(1.0), _out(0.0, 0.0, error="bad")], [True, True])
    assert "reward/online_score" not in m and m["reward/errors"] == 0.0
    assert m["reward/offline_accuracy"] == 1.0  # the failed row is not an accuracy
    assert (m["reward/offline_score"], m["reward/offline_errors"]) == (pytest.approx(0.5), 1.0)
    assert sampled_accuracy({"reward/offline_accuracy": 1.0, "val/x/accuracy": 1.0}) == 0.0


def test_report_shows_sampled_figures_and_data_failures(tmp_path: Path) -> None:
    rows = [
        {"step": 1, "reward/score": 0.25, "reward/online_score": 0.0, "reward/offline_score": 1.0,
         "reward/multiple_choice/accuracy": 0.0, "reward/offline_accuracy": 1.0, "data/dropped_records": 1.0,
         "data/failed_records": 1.0, "timing/step": 1.0},
        {"step": 2, "reward/score": 0.5, "reward/online_score": 0.2, "reward/offline_score": 1.0,
         "reward/multiple_choice/accuracy": 0.4, "reward/offline_accuracy": 1.0, "data/dropped_records": 1.0,
         "data/failed_records": 1.0, "timing/step": 1.0},
    ]  # fmt: skip
    assert curve_keys(rows) == ["reward/online_score", "reward/multiple_choice/accuracy", "reward/offline_score"]
    assert curve_keys([{"step": 1, "reward/score": 0.3}]) == ["reward/score"]  # a run that logged no online score
    (tmp_path / METRICS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    failures = DataFailures(tmp_path, {})
    failures.add(1, "train", [MediaFailure("r1", "a.mp4", "video", "corrupt", "cannot open as a video")])
    failures.add(2, "train", [MediaFailure("r1", "a.mp4", "video", "corrupt", "cannot open as a video")])  # known: not again
    failures.add(2, "data/val", [MediaFailure("v1", "b.png", "image", "missing", "file not found"),
                                 MediaFailure("v2", "c.png", "image", "missing", "file not found")])
    text = write_report(tmp_path, read_metrics(tmp_path), "exp").read_text()
    assert ("**Data failures: the media of 1 training record (dropped 2 times from a step's batch), 2 records of data/val"
            " (counted as wrong) could not be loaded.**") in text
    assert "| reward/online_score | 0.000 | 0.200 | 0.200 |" in text and "| reward/multiple_choice/accuracy | 0.000 | 0.400 |" in text
    assert "| reward/score |" not in text and "reward/offline_accuracy" not in text


def test_failures_are_logged_once_with_their_line_and_limit_the_run(tmp_path: Path) -> None:
    records = tmp_path / "train.jsonl"
    records.write_text('{"id": "a"}\n\n{"id": 7}\n')
    failures = DataFailures(tmp_path, {"train": [str(records)]})
    failures.add(3, "train", [MediaFailure("7", "x.mp4", "video", "corrupt", "bad")])
    failures.add(4, "train", [MediaFailure("7", "x.mp4", "video", "corrupt", "bad")])
    lines = [json.loads(line) for line in (tmp_path / "data_failures.jsonl").read_text().splitlines()]
    assert lines == [{"step": 3, "split": "train", "record": "7", "file": "x.mp4", "kind": "video", "reason": "corrupt",
                      "detail": "bad", "where": f"{records}:3"}]
    assert [failure_limit(n) for n in (1, 99, 100, 250)] == [1, 1, 1, 2]
    assert [failure_limit(250, share) for share in (0.0, 0.001, 0.1, 1.0)] == [0, 1, 25, 250]
    assert [failure_limit(100, share) for share in (0.29, 0.57, 0.07)] == [29, 57, 7]  # not 28, 56, 7
    assert failures.too_many(4, kept=1, sampled=2, records=50) is None  # 1 failed, 1 allowed
    assert "none of the step's 2 records" in failures.too_many(4, kept=0, sampled=2, records=50)
    failures.add(5, "train", [MediaFailure("a", "y.mp4", "video", "missing", "file not found")])
    stop = failures.too_many(5, kept=1, sampled=2, records=50)
    assert "2 of the 50 training records have media that cannot be loaded (at most 1 may" in stop
    assert failures.too_many(5, kept=1, sampled=2, records=50, share=0.04) is None
    assert "at most 0 may: data.max_failed_records=0.0" in failures.too_many(5, kept=1, sampled=2, records=50, share=0.0)
    assert str(tmp_path / "data_failures.jsonl") in stop
    restored = DataFailures(tmp_path, {})
    restored.load_state_dict(json.loads(json.dumps(failures.state_dict())))
    assert restored.state_dict() == {"train": ["7", "a"]} and restored.skipped("train", "a") and not restored.skipped("val", "a")


def test_a_step_drawing_only_records_skipped_earlier_trains_nothing_and_goes_on(tmp_path: Path) -> None:
    """Two of 400 records failed at earlier steps (the limit is 4); a later step that draws exactly those two
    has nothing to roll out: it is logged as an empty step, and the run is not stopped (nothing new failed)."""
    from types import SimpleNamespace

    from evr1.runner.loop.pipeline import Pipeline
    from evr1.runner.loop.train import Trainer

    failures = DataFailures(tmp_path, {})
    failures.add(3, "train", [MediaFailure("r0", "v.mp4", "video", "corrupt", "x")])
    failures.add(9, "train", [MediaFailure("r2", "v.mp4", "video", "corrupt", "x")])
    trainer = SimpleNamespace(
        exp=SimpleNamespace(trainer=SimpleNamespace(prompts_per_step=2)),
        sampler=SimpleNamespace(sample=lambda count: [0, 2]),
        train=SimpleNamespace(records=[SimpleNamespace(id=f"r{i}") for i in range(400)]),
        failures=failures,
        pipeline=Pipeline(max_staleness=0, steps=400),
    )
    trainer.launch = lambda step: Trainer.launch(trainer, step)
    metrics = Trainer.step(trainer, 20)
    assert {k: metrics[k] for k in ("data/dropped_records", "data/failed_records", "data/empty_step")} == {
        "data/dropped_records": 2.0, "data/failed_records": 2.0, "data/empty_step": 1.0}
    assert "timing/step" in metrics  # the progress bar reads it
