"""`evr1 cache verify` counts entries of an older schema apart (not damaged); `evr1 cache prune` removes them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cli_inproc import evr1

from evr1.data import cache as cache_module
from evr1.data.cache import TensorCache, entry_schema, file_digest
from evr1.data.cache_build import build_cache
from evr1.data.loader import family_processors
from evr1.data.records import MediaRef, Record
from evr1.specs import CacheSpec, ImageSpec, VideoSpec

VIDEO = VideoSpec(fps=2.0, min_pixels=16 * 28 * 28, max_pixels=64 * 28 * 28)
IMAGE = ImageSpec(min_pixels=8 * 28 * 28, max_pixels=64 * 28 * 28)


def cache_cli(*args: str) -> subprocess.CompletedProcess:
    return evr1("cache", *args)


def test_old_schema_entries_are_stale_not_bad_and_prune_removes_them(media_root: Path, tmp_path: Path, monkeypatch) -> None:
    procs, cache = family_processors("qwen2.5-vl"), CacheSpec(path=str(tmp_path / "c"))

    def build(*names: str) -> None:
        records = [Record(id=n, problem="q", problem_type="multiple_choice", answer="A", media=[MediaRef(kind="video", path=n)])
                   for n in names]
        build_cache(records, video=VIDEO, image=IMAGE, cache=cache, processor=procs, data_root=media_root, workers=0, progress=False)

    with monkeypatch.context() as patch:  # what the previous release wrote
        patch.setattr(cache_module, "SCHEMA_VERSION", cache_module.SCHEMA_VERSION - 1)
        build("small.mp4", "tall.mp4")
    build("small.mp4")  # the same file under this schema: a new entry beside the old one
    store = TensorCache(cache.path, write=True)
    schemas = sorted(store.schemas().values())
    old_key = next(k for k, v in store.schemas().items() if v == cache_module.SCHEMA_VERSION - 1)
    store.close()
    assert schemas == [cache_module.SCHEMA_VERSION - 1] * 2 + [cache_module.SCHEMA_VERSION]

    verify = cache_cli("verify", cache.path, "--sample", "0")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "checked 3 of 3 entries: 0 bad, 0 with a changed or missing source, 2 of an older schema" in verify.stdout
    assert f"remove them with `evr1 cache prune {cache.path}`" in " ".join(verify.stdout.split())

    store = TensorCache(cache.path)
    sources = _sources(store)
    store.close()
    assert sorted(sources.values()) == sorted({file_digest(media_root / n) for n in ("small.mp4", "tall.mp4")})
    pruned = cache_cli("prune", cache.path)
    assert pruned.returncode == 0, pruned.stderr
    assert ("removed 2 of 3 entries (older schema) and 1 of 2 source records (no entry refers to them)"
            in " ".join(pruned.stdout.split()))  # fmt: skip
    store = TensorCache(cache.path)
    assert list(store.schemas().values()) == [cache_module.SCHEMA_VERSION] and old_key not in store
    assert list(_sources(store).values()) == [file_digest(media_root / "small.mp4")]  # tall.mp4's went with its entry
    store.close()
    verify = cache_cli("verify", cache.path, "--sample", "0")
    assert verify.returncode == 0 and "checked 1 of 1 entries: 0 bad, 0 with a changed or missing source, 0 of an older" in verify.stdout


def _sources(store: TensorCache) -> dict[bytes, str]:
    """The `sources` table: stat fingerprint -> content digest."""
    with store._txn(cache_module._SOURCES) as txn:
        return {bytes(k): bytes(v).decode() for k, v in txn.cursor()}


def test_entry_schema_reads_only_the_header() -> None:
    value = cache_module.encode_entry({"dtype": "uint8", "shape": [2]}, b"ab")
    assert entry_schema(value) == cache_module.SCHEMA_VERSION
    assert entry_schema(b"not an entry") is None and entry_schema(value[:8]) is None


def test_entries_of_a_newer_evr1_are_kept_and_named(media_root: Path, tmp_path: Path, monkeypatch) -> None:
    """A cache shared with a newer evr1: its entries are neither damaged nor pruned by this one."""
    from evr1.data.cache_verify import prune_cache, verify_cache

    procs, cache = family_processors("qwen2.5-vl"), CacheSpec(path=str(tmp_path / "c"))
    record = Record(id="v", problem="q", problem_type="multiple_choice", answer="A",
                    media=[MediaRef(kind="video", path="small.mp4")])
    for schema in (cache_module.SCHEMA_VERSION - 1, cache_module.SCHEMA_VERSION + 1):
        with monkeypatch.context() as patch:
            patch.setattr(cache_module, "SCHEMA_VERSION", schema)
            build_cache([record], video=VIDEO, image=IMAGE, cache=cache, processor=procs, data_root=media_root, workers=0,
                        progress=False)
    build_cache([record], video=VIDEO, image=IMAGE, cache=cache, processor=procs, data_root=media_root, workers=0, progress=False)
    result = verify_cache(cache.path, sample=0)
    assert (len(result.problems), len(result.old_schema), len(result.newer_schema)) == (0, 1, 1)
    assert prune_cache(cache.path) == (1, 3, 0, 1)  # the one source row is still referred to
    store = TensorCache(cache.path)
    assert sorted(store.schemas().values()) == [cache_module.SCHEMA_VERSION, cache_module.SCHEMA_VERSION + 1]
    store.close()
