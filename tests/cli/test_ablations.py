"""The ablation command end to end on a 2-step tiny setting: runs, figure, summary, per-modality validation files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evr1.cli.ablations import split_by_modality, summary
from evr1.data.records import Record, read_records, resolve_media, write_records
from evr1.errors import ConfigError
from evr1.run_dir import read_metrics

ROOT = Path(__file__).resolve().parents[2]


def record(rid: str, *kinds: str) -> Record:
    media = [{"kind": k, "path": f"media/{rid}.{'mp4' if k == 'video' else 'png'}"} for k in kinds]
    return Record(id=rid, problem="q", problem_type="free_form", answer="a", media=media)


def test_a_mixed_validation_file_is_split_into_out_and_its_media_still_resolve(tmp_path: Path) -> None:
    data, out = tmp_path / "clips", tmp_path / "out" / "val_splits"
    mixed = [record("v", "video"), record("i", "image"), record("b", "video", "image")]
    write_records(mixed, data / "val.jsonl")
    got = split_by_modality([str(data / "val.jsonl")], out, None)
    assert got == (str(out / "clips" / "val_video.jsonl"), str(out / "clips" / "val_image.jsonl"))
    video, image = (list(read_records(p)) for p in got)
    assert [r.id for r in video] == ["v", "b"] and [r.id for r in image] == ["i"]  # video+image counts as video
    assert video[1].media[0].path == "../../../clips/media/b.mp4"
    for r, original in zip([*video, *image], [mixed[0], mixed[2], mixed[1]]):
        assert [p.resolve() for p in resolve_media(r, out / "clips")] == [p.resolve() for p in resolve_media(original, data)]
    # with data.data_root every file resolves against it: paths stay as they are
    again = split_by_modality([str(data / "val.jsonl")], tmp_path / "rooted", str(data))
    assert next(read_records(again[0])).media == mixed[0].media


def test_the_users_own_files_are_used_as_they_are_and_never_written(tmp_path: Path) -> None:
    write_records([record("v", "video"), record("i", "image")], tmp_path / "clips.jsonl")
    write_records([record("my_curated_video", "video")], tmp_path / "clips_video.jsonl")  # the user's, beside clips.jsonl
    write_records([record("w", "video")], tmp_path / "only_video.jsonl")  # no only.jsonl beside it
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    mine = [str(tmp_path / "clips_video.jsonl"), str(tmp_path / "only_video.jsonl")]
    assert split_by_modality(mine, tmp_path / "out", None) == tuple(mine)  # one modality each: kept
    assert split_by_modality([str(tmp_path / "clips.jsonl")], tmp_path / "out", None) == (
        str(tmp_path / "out" / tmp_path.name / "clips_video.jsonl"), str(tmp_path / "out" / tmp_path.name / "clips_image.jsonl"))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    # both at once would log two different files as val/<folder>/clips_video
    with pytest.raises(ConfigError, match="would both log as val/.*/clips_video: rename one"):
        split_by_modality([str(tmp_path / "clips.jsonl"), mine[0]], tmp_path / "out", None)


def test_summary_table() -> None:
    rows = [
        {"step": 0, "val/v/accuracy": 0.25},
        {"step": 1, "timing/step": 2.0, "val/v/accuracy": 0.95},
        {"step": 2, "timing/step": 4.0, "val/v/accuracy": 0.75},
    ]
    never = [{"step": 0, "val/v/accuracy": 0.5}]
    table = summary({"a": rows, "b": never}).splitlines()
    assert table[2:] == ["| a | v | 0.250 | 0.750 (step 2) | 0.950 | 1 | 3.00 |", "| b | v | 0.500 | 0.500 (step 0) | 0.500 | never | n/a |",
                         "", "s/step n/a: the variant's metrics hold no step time (no training step was logged)."]
    assert "n/a" not in summary({"a": rows})  # every variant timed: no note


@pytest.mark.slow
@pytest.mark.ray
def test_the_command_runs_variants_and_plots(tmp_path: Path, model_cache: Path) -> None:
    data = tmp_path / "data"
    settings = {
        "model.cache_dir": f"'{model_cache}'",
        "data.synth.out": f"'{data}'",
        "data.synth.n_train": "16",
        "data.synth.n_val": "8",
        "data.synth.blank_control": "False",
        "data.train": f"('{data}/train.jsonl',)",
        "data.val": f"('{data}/val.jsonl',)",
        "data.cache.path": f"'{tmp_path}/cache.lmdb'",
        "trainer.prompts_per_step": "2",
        "trainer.log_samples": "8",  # every response of a step
        "resources.num_cpus": "2",
    }
    sets = [item for k, v in settings.items() for item in ("--set", f"{k}={v}")]
    out = tmp_path / "out"
    command = [sys.executable, "-m", "evr1.cli.ablations", "--out", str(out), "--steps", "2", "--val-every", "2"]
    done = subprocess.run([*command, "--variants", "on_policy,video_only", *sets], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    for variant in ("on_policy", "video_only"):
        rows = read_metrics(out / variant)
        assert [r["step"] for r in rows] == [0, 1, 2]
        assert {"val/data/val_video/accuracy", "val/data/val_image/accuracy"} <= set(rows[-1])
    assert sorted(p.name for p in data.glob("*.jsonl")) == ["train.jsonl", "val.jsonl"]  # nothing written beside them
    split = f"data.val=('{out}/val_splits/data/val_video.jsonl', '{out}/val_splits/data/val_image.jsonl')"
    assert json.loads((out / "on_policy" / "run.json").read_text())["overrides"][-1] == split
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
