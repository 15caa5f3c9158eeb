"""`build_cache` over generated data: every record reads back as the live path, bad files are reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from media_cases import BAD, BAD_IMAGES

from evr1.data.cache import TensorCache
from evr1.data.cache_build import build_cache
from evr1.data.loader import MediaLoader, family_processors
from evr1.data.records import read_records
from evr1.specs import CacheSpec, ImageSpec, VideoSpec

VIDEO = VideoSpec(fps=2.0, min_pixels=16 * 32 * 32, max_pixels=48 * 32 * 32)
IMAGE = ImageSpec(min_pixels=8 * 32 * 32, max_pixels=48 * 32 * 32)


@pytest.fixture(scope="module")
def procs():
    return family_processors("qwen3-vl")


def test_build_then_every_record_reads_back_as_live(media_root, tmp_path, procs, good_rows, bad_rows, write_jsonl) -> None:
    data = write_jsonl(tmp_path / "train.jsonl", good_rows + bad_rows)
    cache = CacheSpec(path=str(tmp_path / "cache"), mode="only")
    report = build_cache(read_records(data), video=VIDEO, image=IMAGE, cache=cache, processor=procs,
                         data_root=media_root, workers=0, progress=False)

    # 4 clips + 3 images + 1 clip of long.mp4 (photo.png and small.mp4 are shared) + 9 bad files
    assert (report.built, report.skipped, report.failed) == (8, 0, 9)
    assert TensorCache(cache.path).stats().entries == 8
    lines = [json.loads(line) for line in Path(report.failures_path).read_text().splitlines()]
    assert {(f["record"], f["file"], f["reason"]) for f in lines} == {
        (f"bad-{name}", name, reason) for name, reason in {**BAD, **BAD_IMAGES}.items()
    }
    assert all(f["detail"] for f in lines)

    cached = MediaLoader(VIDEO, IMAGE, cache, procs, media_root)
    live = MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "bypass"}), procs, media_root)
    n = 0
    for record in read_records(data):
        if record.id.startswith("bad-"):
            continue
        for hit, fresh in zip(cached.load(record), live.load(record), strict=True):
            assert hit.cache_hit and torch.equal(hit.pixel_values, fresh.pixel_values) and hit.info == fresh.info
            n += 1
    assert n == 10

    again = build_cache(read_records(data), video=VIDEO, image=IMAGE, cache=cache, processor=procs,
                        data_root=media_root, workers=0, progress=False)
    assert (again.built, again.skipped, again.failed) == (0, 8, 9)  # resumable: present entries are skipped

    changed = VIDEO.model_copy(update={"fps": 1.0})
    third = build_cache(read_records(data), video=changed, image=IMAGE, cache=cache, processor=procs,
                        data_root=media_root, workers=0, progress=False)
    assert (third.built, third.skipped) == (5, 3)  # new video entries next to the old ones; images unchanged
    builds = TensorCache(cache.path).builds()
    assert [b["built"] for b in builds] == [8, 0, 5] and builds[-1]["video"]["fps"] == 1.0


@pytest.mark.slow
def test_a_crashing_worker_is_pinned_on_its_file(media_root, tmp_path, procs) -> None:
    """A worker process that dies takes its pool down; the build goes on and reports the right file."""
    from media_cases import crash_on_boom

    from evr1.data.cache_build import _run, plan
    from evr1.data.records import MediaRef, Record

    (tmp_path / "boom.mp4").write_bytes((media_root / "small.mp4").read_bytes())
    (tmp_path / "tall.mp4").write_bytes((media_root / "tall.mp4").read_bytes())
    records = [Record(id=n, problem="q", problem_type="numerical", answer=1, media=[MediaRef(kind="video", path=n)])
               for n in ("boom.mp4", "tall.mp4")]
    cache = CacheSpec(path=str(tmp_path / "cache"))
    loader = MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "bypass"}), procs, tmp_path)
    tasks, _, _, _ = plan(records, loader, TensorCache(cache.path, write=True))
    results = {task.ref.path: result for task, result in _run(tasks, loader, 1, work=crash_on_boom)}
    assert results["boom.mp4"] == ("fail", ("worker_crashed", "the worker process died while preparing this file"))
    assert results["tall.mp4"][0] == "ok"
