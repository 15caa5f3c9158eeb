"""`evr1 cache build EXPERIMENT` builds every split against its own media root, as training reads
them; the failure report keeps every split's failures; a cache build that fails still closes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from cli_inproc import evr1

from evr1.data.cache_build import build_cache
from evr1.data.loader import MediaLoader, family_processors
from evr1.data.records import MediaRef, Record
from evr1.specs import CacheSpec, ImageSpec, VideoSpec

ROOT = Path(__file__).resolve().parents[2]
VIDEO = VideoSpec(fps=2.0, min_pixels=16 * 28 * 28, max_pixels=48 * 28 * 28)
IMAGE = ImageSpec(min_pixels=8 * 28 * 28, max_pixels=48 * 28 * 28)


def test_quickstart_cache_build_fills_every_split(tmp_path: Path) -> None:
    """The shipped quickstart: its two validation files share record ids and live in different folders."""
    from evr1.experiment import apply_overrides, build_experiment
    from evr1.experiment_files import load_config
    from evr1.models import load_processor
    from evr1.runner.loop.datasets import train_split, val_splits

    data = tmp_path / "data"
    sets = [
        f"data.synth.out='{data}'", "data.synth.n_train=8", "data.synth.n_val=4", f"data.train=('{data}/train.jsonl',)",
        f"data.val=('{data}/val.jsonl', '{data}-blank/val.jsonl')", f"data.cache.path='{tmp_path}/cache'",
        f"model.cache_dir='{tmp_path}/models'",
    ]
    args = [item for s in sets for item in ("--set", s)]
    out = evr1("cache", "build", "quickstart", *args, "--workers", "0", "--no-progress", cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    for name, media in (("train", 8), ("data/val", 4), ("data-blank/val", 4)):
        assert f"({name}): {media} media, {media} built, 0 already present, 0 failed" in out.stdout, out.stdout

    cfg, _ = load_config("quickstart")
    apply_overrides(cfg, sets)
    exp = build_experiment(cfg)
    d, processor = exp.data, load_processor(exp.model)
    only = d.cache.model_copy(update={"mode": "only"})
    read = {}
    for split in (train_split(d), *val_splits(d)):
        loader = MediaLoader(d.video, d.image, only, processor, split.root)  # raises on any miss
        read[split.name] = {r.id: loader.load(r)[0].pixel_values for r in split.records}
    assert read["data/val"].keys() == read["data-blank/val"].keys()  # the same ids ...
    assert not any(torch.equal(read["data/val"][i], read["data-blank/val"][i]) for i in read["data/val"])  # ... own media


def _record(rid: str, path: str) -> Record:
    return Record(id=rid, problem="q", problem_type="multiple_choice", answer="A", media=[MediaRef(kind="video", path=path)])


def test_failure_report_keeps_every_split(media_root: Path, tmp_path: Path) -> None:
    cache, procs = CacheSpec(path=str(tmp_path / "cache")), family_processors("qwen2.5-vl")

    def build(split: str, *records: Record):
        return build_cache(records, video=VIDEO, image=IMAGE, cache=cache, processor=procs, data_root=media_root,
                           workers=0, progress=False, split=split)

    build("train", _record("t1", "small.mp4"), _record("t2", "gone.mp4"))
    report = build("val", _record("v1", "small.mp4"), _record("v2", "corrupt.mp4"), _record("v3", "also-gone.mp4"))
    assert sorted((f["split"], f["record"]) for f in report.failures) == [("val", "v2"), ("val", "v3")]

    def lines() -> list[tuple[str, str, str]]:
        rows = [json.loads(line) for line in Path(report.failures_path).read_text().splitlines()]
        return sorted((r["split"], r["record"], r["reason"]) for r in rows)

    assert report.failures_path == str(tmp_path / "cache" / "failures.jsonl")
    assert lines() == [("train", "t2", "missing"), ("val", "v2", "corrupt"), ("val", "v3", "missing")]
    build("train", _record("t1", "small.mp4"))  # train fixed: its old lines go, val's stay
    assert lines() == [("val", "v2", "corrupt"), ("val", "v3", "missing")]


def test_an_interrupted_build_closes_its_store(media_root: Path, tmp_path: Path) -> None:
    from evr1.data import cache as cache_module

    cache, procs = CacheSpec(path=str(tmp_path / "cache")), family_processors("qwen2.5-vl")
    kwargs = {"video": VIDEO, "image": IMAGE, "cache": cache, "processor": procs, "data_root": media_root, "workers": 0,
              "progress": False}
    build_cache([_record("a", "small.mp4")], **kwargs)

    def interrupted():
        yield _record("a", "small.mp4")  # looked up in the open store ...
        raise KeyboardInterrupt  # ... then the user presses Ctrl-C

    with pytest.raises(KeyboardInterrupt):
        build_cache(interrupted(), **kwargs)
    assert [slot for slot in cache_module._OPEN if slot[1] == str((tmp_path / "cache").resolve())] == []
