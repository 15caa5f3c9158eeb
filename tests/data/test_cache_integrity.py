"""A cache never serves wrong bytes: damaged entries and headers, a truncated file, replaced sources.

Every case damages a real LMDB file built from generated media, then reads it as training does.
"""

from __future__ import annotations

import logging
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from cli_inproc import evr1

from evr1.data.cache import (
    _OLD_MAGIC,
    CacheError,
    CacheFileError,
    DamagedEntryError,
    TensorCache,
    canonical_json,
    fingerprint,
)
from evr1.data.cache_build import build_cache
from evr1.data.cache_verify import verify_cache
from evr1.data.loader import MediaLoader, family_processors
from evr1.data.records import MediaRef, Record
from evr1.specs import CacheSpec, ImageSpec, VideoSpec

EVR1 = str(Path(sys.executable).with_name("evr1"))
VIDEO = VideoSpec(fps=2.0, min_pixels=16 * 28 * 28, max_pixels=64 * 28 * 28)
IMAGE = ImageSpec(min_pixels=8 * 28 * 28, max_pixels=64 * 28 * 28)
REF = MediaRef(kind="video", path="small.mp4")
RECORDS = [Record(id="r", problem="q", problem_type="multiple_choice", answer="A", media=[REF])]


@pytest.fixture(scope="module")
def procs():
    return family_processors("qwen2.5-vl")


@pytest.fixture
def built(media_root, tmp_path, procs):
    """(media root, cache spec) of a fresh cache holding small.mp4 (a private copy: tests change it)."""
    root = tmp_path / "media"
    root.mkdir()
    shutil.copy2(media_root / "small.mp4", root / "small.mp4")
    cache = CacheSpec(path=str(tmp_path / "cache"))
    assert _build(root, cache, procs).built == 1
    return root, cache


def _build(root, cache, procs, **options):
    return build_cache(RECORDS, video=VIDEO, image=IMAGE, cache=cache, processor=procs, data_root=root, workers=0,
                       progress=False, **options)


def _damage(cache: CacheSpec, where) -> bytes:
    """Flip one byte of the only entry, at `where(value)`, through LMDB (the file stays a valid LMDB file)."""
    store = TensorCache(cache.path, write=True)
    [key] = store.keys()
    value = bytearray(store.raw(key))
    value[where(value)] ^= 0x01
    store.put(key, bytes(value))
    store.close()
    return key


def _header_byte(value: bytearray) -> int:
    return value.index(b'"shape":[') + len(b'"shape":[')  # a digit of the tensor shape


@pytest.mark.parametrize("where", [lambda v: len(v) - 1000, _header_byte], ids=["payload", "header"])
def test_a_damaged_entry_is_decoded_live_in_prefer_and_fails_in_only(built, procs, caplog, where) -> None:
    root, cache = built
    live = MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "bypass"}), procs, root).load_media(REF)
    key = _damage(cache, where)
    name = key.decode()[:16]

    with caplog.at_level(logging.WARNING, logger="evr1.data.loader"):
        media = MediaLoader(VIDEO, IMAGE, cache, procs, root).load_media(REF)
    assert not media.cache_hit and torch.equal(media.pixel_values, live.pixel_values)
    assert f"cache entry {name} in {Path(cache.path) / 'data.mdb'} is damaged" in caplog.text

    only = MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "only"}), procs, root)
    with pytest.raises(DamagedEntryError, match=f"cache entry {name} in .*data.mdb is damaged: its bytes do not match"):
        only.load_media(REF)

    again = _build(root, cache, procs)  # the next build finds it and builds it again
    assert (again.damaged, again.built, again.skipped) == (1, 1, 0)
    media = MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "only"}), procs, root).load_media(REF)
    assert media.cache_hit and torch.equal(media.pixel_values, live.pixel_values)


def test_a_damaged_entry_fails_its_record_in_only_mode(built, procs, processor) -> None:
    from evr1.data.prompting import RecordPrompter
    from evr1.specs import PromptSpec

    root, cache = built
    _damage(cache, lambda v: len(v) - 1)
    loader = MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "only"}), procs, root)
    failure = RecordPrompter(processor, loader, PromptSpec()).attempt(RECORDS[0])
    assert (failure.record, failure.file, failure.reason) == ("r", "small.mp4", "cache_error")
    assert "data.mdb is damaged" in failure.detail


def _truncate(cache: CacheSpec) -> Path:
    file = Path(cache.path) / "data.mdb"
    with open(file, "r+b") as f:
        f.truncate(file.stat().st_size // 2)
    return file


def test_a_truncated_file_is_refused_before_any_read(built, procs) -> None:
    root, cache = built
    file = _truncate(cache)
    for mode in ("prefer", "only"):
        with pytest.raises(CacheFileError, match=f"the cache file {file} is damaged \\(truncated: .* its pages need"):
            MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": mode}), procs, root)
    with pytest.raises(CacheFileError):
        TensorCache(cache.path).keys()
    with pytest.raises(CacheFileError, match="--replace-damaged"):
        _build(root, cache, procs)
    report = _build(root, cache, procs, replace_damaged=True)
    assert report.built == 1
    assert MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "only"}), procs, root).load_media(REF).cache_hit


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([EVR1, *args], capture_output=True, text=True, timeout=600, check=False, cwd=cwd)


@pytest.mark.slow
def test_every_command_says_a_damaged_file_in_one_line_and_exits_2(built, tmp_path) -> None:
    root, cache = built
    data = tmp_path / "data.jsonl"
    data.write_text(RECORDS[0].model_dump_json() + "\n")
    file = _truncate(cache)
    build = ["cache", "build", "--data", str(data), "--data-root", str(root), "--cache", cache.path, "--no-progress",
             "--fps", "2", "--min-pixels", str(16 * 28 * 28), "--max-pixels", str(64 * 28 * 28)]
    said = f"error: the cache file {file} is damaged (truncated: "
    info = _cli("cache", "info", cache.path)  # a process: `cache verify` and `cache build` open it as `info` does
    assert info.returncode == 2, (info.returncode, info.stderr)  # not -7 (SIGBUS)
    [line] = info.stderr.strip().splitlines()
    assert line.startswith(said), line
    exp = tmp_path / "exp_damaged.py"
    exp.write_text(EXPERIMENT.format(models=str(tmp_path / "models"), train=str(data), root=str(root),
                                     cache=cache.path))
    run = _cli("run", str(exp), "--run-dir", str(tmp_path / "run"))
    assert run.returncode == 2 and any(line.startswith(said) for line in run.stderr.splitlines()), run.stderr
    rebuilt = evr1(*build, "--replace-damaged")  # in this process: what it prints, not how it ends, is checked
    assert rebuilt.returncode == 0 and "1 media, 1 built" in rebuilt.stdout, rebuilt.stderr


EXPERIMENT = """
import fiddle as fdl
from evr1.experiment import Experiment
from evr1.specs import CacheSpec, DataSpec, ImageSpec, ModelSpec, VideoSpec

def experiment():
    return fdl.Config(
        Experiment,
        model=fdl.Config(ModelSpec, name="tiny-qwen2.5-vl", cache_dir={models!r}),
        data=fdl.Config(
            DataSpec, train=({train!r},), data_root={root!r},
            video=fdl.Config(VideoSpec, fps=2.0, min_pixels=16 * 28 * 28, max_pixels=64 * 28 * 28),
            image=fdl.Config(ImageSpec, min_pixels=8 * 28 * 28, max_pixels=64 * 28 * 28),
            cache=fdl.Config(CacheSpec, path={cache!r}),
        ),
    )
"""


@pytest.mark.parametrize("size", [0, 100])
def test_a_file_cut_to_less_than_its_meta_pages_is_damaged(built, procs, size) -> None:
    root, cache = built
    os.truncate(Path(cache.path) / "data.mdb", size)
    with pytest.raises(CacheFileError, match=f"truncated to {size} bytes"):
        MediaLoader(VIDEO, IMAGE, cache, procs, root)


def test_a_file_that_is_not_lmdb_is_damaged(built, procs) -> None:
    root, cache = built
    (Path(cache.path) / "data.mdb").write_bytes(b"\x00" * 65536)
    with pytest.raises(CacheFileError, match="is damaged"):
        MediaLoader(VIDEO, IMAGE, cache, procs, root)


def _rewrite_in_place(path: Path) -> None:
    """New content, same size, mtime restored: what `cp -p`, `rsync -t`, `tar x` and `touch -r` leave."""
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # picture data: still decodable
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)


def _replace_by_rename(path: Path, same_content: bool) -> None:
    stat = path.stat()
    tmp = path.with_suffix(".tmp")
    shutil.copy2(path, tmp)  # a new inode, as rsync and tar make
    if not same_content:
        _rewrite_in_place(tmp)
    os.utime(tmp, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    tmp.replace(path)


@pytest.mark.parametrize(("change", "hit"), [
    (lambda p: _rewrite_in_place(p), False),
    (lambda p: _replace_by_rename(p, same_content=False), False),
    (lambda p: _replace_by_rename(p, same_content=True), True),
    (lambda p: os.utime(p, ns=(0, 10**18)), True),  # a new mtime on the same bytes
], ids=["cp-p in place", "rsync-t new inode", "same bytes new inode", "touch"])
def test_the_source_identity_is_its_content(built, procs, change, hit) -> None:
    root, cache = built
    change(root / "small.mp4")
    loader = MediaLoader(VIDEO, IMAGE, cache, procs, root)
    assert loader.load_media(REF).cache_hit is hit
    assert list(loader.digests.hashed) == [fingerprint((root / "small.mp4").stat())]  # the cheap check could not decide
    [key] = TensorCache(cache.path).keys()
    stale = f"{key.decode()[:16]} (small.mp4): source file changed since the entry was built"
    assert verify_cache(cache.path).stale == ([] if hit else [stale])


def test_a_copy_on_another_machine_hits_and_its_build_records_the_fingerprints(built, tmp_path, procs) -> None:
    root, cache = built
    here = MediaLoader(VIDEO, IMAGE, cache, procs, root)
    assert here.load_media(REF).cache_hit and here.digests.hashed == {}  # the build's fingerprint: no hashing
    other = tmp_path / "elsewhere"
    shutil.copytree(root, other)  # `rsync -a`: same bytes and mtime, new inode and ctime
    there = MediaLoader(VIDEO, IMAGE, cache, procs, other)
    assert there.load_media(REF).cache_hit and there.load_media(REF).cache_hit
    assert len(there.digests.hashed) == 1  # hashed once in this process
    report = _build(other, cache, procs)
    assert (report.built, report.skipped) == (0, 1)
    fresh = MediaLoader(VIDEO, IMAGE, cache, procs, other)
    assert fresh.load_media(REF).cache_hit and fresh.digests.hashed == {}  # the build recorded its fingerprint


def test_entries_of_the_old_layout_are_old_schema_not_damaged(built) -> None:
    _, cache = built
    head = canonical_json({"schema": 3, "dtype": "uint8", "shape": [4], "nbytes": 4, "digest": "x"})
    start = len(_OLD_MAGIC) + 4 + len(head)
    value = _OLD_MAGIC + struct.pack("<I", len(head)) + head + b"\0" * (-start % 64) + b"\1\2\3\4"
    store = TensorCache(cache.path, write=True)
    store.put(b"old", value)
    store.close()
    with pytest.raises(CacheError, match="schema 3, this evr1 reads schema 4"), TensorCache(cache.path).read(b"old"):
        pass
    result = verify_cache(cache.path)
    assert (result.checked, result.old_schema, result.problems) == (2, ["old: schema 3"], [])


def test_a_small_build_runs_in_this_process(built, procs) -> None:
    root, cache = built
    os.unlink(Path(cache.path) / "data.mdb")
    report = build_cache(RECORDS, video=VIDEO, image=IMAGE, cache=cache, processor=procs, data_root=root,
                         progress=False)  # workers not given: chosen by the size of the work
    assert (report.built, report.workers) == (1, 0)
