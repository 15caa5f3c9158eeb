"""The ablation command end to end on a 2-step tiny setting: runs, figure, summary, modality files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evr1.data.records import Record, read_records, write_records
from evr1.errors import ConfigError
from evr1.runner.ablations import summary, write_modality_files
from evr1.runner.metrics import read_metrics

ROOT = Path(__file__).resolve().parents[2]


def test_modality_files_hold_the_records_of_their_modality(tmp_path: Path) -> None:
    video = Record(id="v", problem="q", problem_type="free_form", answer="a", media=[{"kind": "video", "path": "v.mp4"}])
    image = Record(id="i", problem="q", problem_type="free_form", answer="a", media=[{"kind": "image", "path": "i.png"}])
    both = Record(id="b", problem="q", problem_type="free_form", answer="a",
                  media=[{"kind": "video", "path": "v.mp4"}, {"kind": "image", "path": "i.png"}])
    write_records([video, image, both], tmp_path / "val.jsonl")
    paths = [str(tmp_path / "val.jsonl"), str(tmp_path / "val_video.jsonl"), str(tmp_path / "val_image.jsonl")]
    assert write_modality_files(paths) == [tmp_path / "val_video.jsonl", tmp_path / "val_image.jsonl"]
    assert [r.id for r in read_records(tmp_path / "val_video.jsonl")] == ["v", "b"]  # video+image counts as video
    assert [r.id for r in read_records(tmp_path / "val_image.jsonl")] == ["i"]
    with pytest.raises(ConfigError, match="has no text records to write val_text.jsonl"):
        write_modality_files([str(tmp_path / "val_text.jsonl")])
    with pytest.raises(ConfigError, match="other_video.jsonl is made from .*other.jsonl, which does not exist"):
        write_modality_files([str(tmp_path / "other_video.jsonl")])


def test_summary_table() -> None:
    rows = [
        {"step": 0, "val/v/accuracy": 0.25},
        {"step": 1, "timing/step": 2.0, "val/v/accuracy": 0.95},
        {"step": 2, "timing/step": 4.0, "val/v/accuracy": 0.75},
    ]
    never = [{"step": 0, "val/v/accuracy": 0.5}]
    table = summary({"a": rows, "b": never}).splitlines()
    assert table[2:] == ["| a | v | 0.250 | 0.750 (step 2) | 0.950 | 1 | 3.00 |", "| b | v | 0.500 | 0.500 (step 0) | 0.500 | never | - |"]


@pytest.mark.slow
@pytest.mark.ray
def test_the_command_runs_variants_and_plots(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = {
        "model.cache_dir": f"'{tmp_path / 'models'}'",
        "data.synth.out": f"'{data}'",
        "data.synth.n_train": "16",
        "data.synth.n_val": "8",
        "data.synth.blank_control": "False",
        "data.train": f"('{data}/train.jsonl',)",
        "data.val": f"('{data}/val_video.jsonl', '{data}/val_image.jsonl')",
        "data.cache.path": f"'{tmp_path}/cache.lmdb'",
        "trainer.prompts_per_step": "2",
        "trainer.log_samples": "8",  # every response of a step
        "resources.num_cpus": "2",
    }
    sets = [item for k, v in settings.items() for item in ("--set", f"{k}={v}")]
    out = tmp_path / "out"
    command = [sys.executable, "-m", "evr1.runner.ablations", "--out", str(out), "--steps", "2", "--val-every", "2"]
    done = subprocess.run([*command, "--variants", "on_policy,video_only", *sets], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    for variant in ("on_policy", "video_only"):
        rows = read_metrics(out / variant)
        assert [r["step"] for r in rows] == [0, 1, 2]
        assert {"val/data/val_video/accuracy", "val/data/val_image/accuracy"} <= set(rows[-1])
    on_policy, video_only = read_metrics(out / "on_policy"), read_metrics(out / "video_only")
    assert not any(k.startswith("mixer/") for k in on_policy[1])  # no mixer: no offline rows
    assert video_only[1]["mixer/offline_share"] == pytest.approx(1 / 4)
    samples = (out / "video_only" / "samples.jsonl").read_text()
    assert "color_image" not in samples and "color" in samples  # the video-only sampler never drew an image
    assert (out / "ablations.png").stat().st_size > 10_000
    table = (out / "summary.md").read_text()
    assert "| on_policy | data/val_video |" in table and "| video_only | data/val_image |" in table
    again = subprocess.run([*command, "--variants", "on_policy,video_only", "--reuse", *sets], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "on_policy: reusing the finished run" in again.stdout and "video_only: reusing the finished run" in again.stdout
    assert (out / "summary.md").read_text() == table
    bad = subprocess.run([*command, "--variants", "nope"], capture_output=True, text=True, cwd=ROOT, timeout=60, check=False)
    assert bad.returncode == 1 and "unknown ablation variant(s) nope" in bad.stderr
