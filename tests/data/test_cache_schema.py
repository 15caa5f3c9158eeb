"""Entries written under an older cache schema (source-video timestamps, no source size) are never served."""

from __future__ import annotations

import pytest

from evr1.data import cache as cache_module
from evr1.data.cache import CacheError, TensorCache, decode_entry
from evr1.data.cache_build import build_cache
from evr1.data.loader import CacheMissError, MediaLoader, family_processors
from evr1.data.records import MediaRef, Record
from evr1.specs import CacheSpec, ImageSpec, VideoSpec

VIDEO = VideoSpec(fps=2.0, min_pixels=16 * 28 * 28, max_pixels=64 * 28 * 28)
IMAGE = ImageSpec(min_pixels=8 * 28 * 28, max_pixels=64 * 28 * 28)


def test_entries_of_the_previous_schema_are_misses(media_root, tmp_path, monkeypatch) -> None:
    (tmp_path / "tall.mp4").write_bytes((media_root / "tall.mp4").read_bytes())
    procs = family_processors("qwen2.5-vl")
    record = Record(id="clip-1", problem="q", problem_type="multiple_choice", answer="A",
                    media=[MediaRef(kind="video", path="tall.mp4", start=0.5, end=2.0)])
    cache = CacheSpec(path=str(tmp_path / "c"))
    with monkeypatch.context() as patch:  # what the previous release wrote: schema 2
        patch.setattr(cache_module, "SCHEMA_VERSION", 2)
        report = build_cache([record], video=VIDEO, image=IMAGE, cache=cache, processor=procs, data_root=tmp_path,
                             workers=0, progress=False)
        assert report.built == 1
    [old_key] = TensorCache(cache.path).keys()
    with pytest.raises(CacheError, match="cache entry has schema 2, this evr1 reads schema 4: rebuild"):
        decode_entry(TensorCache(cache.path).raw(old_key))

    with pytest.raises(CacheMissError, match=r"'clip-1'.*cache schema 4.*older schema are never read.*evr1 cache build"):
        MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "only"}), procs, tmp_path).load(record)
    [media] = MediaLoader(VIDEO, IMAGE, cache, procs, tmp_path).load(record)  # prefer: decoded live
    assert not media.cache_hit and media.timestamps == (0.0, 0.5, 1.0, 1.5)  # frames 5, 10, 15, 20 at 10 fps

    build_cache([record], video=VIDEO, image=IMAGE, cache=cache, processor=procs, data_root=tmp_path, workers=0, progress=False)
    [media] = MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "only"}), procs, tmp_path).load(record)
    assert media.cache_hit and media.timestamps == (0.0, 0.5, 1.0, 1.5)
