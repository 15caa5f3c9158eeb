"""A record whose video cannot be opened is dropped from its step, logged once and skipped after, through the
CLI with real Ray, 2 FSDP learner workers (gloo on CPU, as the GPU recipes run) and a real corrupt file; a run
killed after its first checkpoint and resumed repeats the uninterrupted one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evr1.data.records import read_records
from evr1.run_dir import read_metrics
from evr1.runner.loop.datasets import ensure_synthetic
from evr1.specs import SynthSpec

from .test_train import killed_after_first_checkpoint, run, settings, stable

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def test_a_corrupt_video_drops_its_record_and_the_run_goes_on(tmp_path: Path, model_cache: Path) -> None:
    data = tmp_path / "data"
    ensure_synthetic(SynthSpec(tasks=("quickstart",), out=str(data), n_train=6, n_val=4, blank_control=False))  # as the run
    lines = (data / "train.jsonl").read_text().splitlines()
    line, bad = next((n, r) for n, r in enumerate(read_records(data / "train.jsonl"), start=1) if r.modality == "video")
    assert json.loads(lines[line - 1])["id"] == bad.id
    (data / bad.media[0].path).write_bytes(np.random.default_rng(0).integers(0, 256, 300, dtype=np.uint8).tobytes())
    common = settings(tmp_path, model_cache, **{
        "data.synth.n_train": "6", "trainer.steps": "6", "trainer.save_every": "2", "trainer.val_every": "3",
        "resources.learner_workers": "2", "resources.learner_sharding": "'fsdp'",
    })  # fmt: skip
    whole = run("quickstart", "--run-dir", str(tmp_path / "whole"), *common)
    assert whole.returncode == 0, whole.stderr[-3000:]
    assert "cache train: 5 built, 0 already there, 1 failed" in whole.stdout  # the cache build saw it too

    failures = [json.loads(x) for x in (tmp_path / "whole" / "data_failures.jsonl").read_text().splitlines()]
    rows = [r for r in read_metrics(tmp_path / "whole") if r["step"] > 0]
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    dropped = [r["step"] for r in rows if r["data/dropped_records"] == 1.0]
    # 6 records, 2 per step: each epoch of 3 steps samples every record once, so the bad one twice in 6 steps;
    # it is logged once (the first time) and skipped the second
    assert len(dropped) == 2 and dropped[0] <= 3 < dropped[1]
    assert failures == [{"step": dropped[0], "split": "train", "record": bad.id, "file": bad.media[0].path, "kind": "video",
                         "reason": "corrupt", "detail": failures[0]["detail"], "where": f"{data / 'train.jsonl'}:{line}"}]
    assert failures[0]["detail"].startswith("cannot open as a video")
    for row in rows:
        lost = row["step"] in dropped
        assert row["data/failed_records"] == (1.0 if row["step"] >= dropped[0] else 0.0)
        assert row["learner/samples"] == (4.0 if lost else 8.0)  # one group of 4 left: a learner worker gets none
        assert row["reward/multiple_choice/count"] == (3.0 if lost else 6.0)  # k=1 of n=4: 3 sampled rows per group
        assert row["learner/optimizer_steps"] == 1.0 and row["learner/skipped_steps"] == 0.0
    report = (tmp_path / "whole" / "report.md").read_text()
    assert "**Data failures: the media of 1 training record (dropped 2 times from a step's batch) could not be loaded.**" in report

    killed_after_first_checkpoint(tmp_path / "killed", common)
    resumed = run("--resume", str(tmp_path / "killed"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert stable(read_metrics(tmp_path / "killed")) == stable(read_metrics(tmp_path / "whole"))
    assert (tmp_path / "killed" / "data_failures.jsonl").read_text() == (tmp_path / "whole" / "data_failures.jsonl").read_text()
