"""The cache entry format, its keys, and `MediaLoader` in its three modes."""

from __future__ import annotations

import json
import multiprocessing
import os
import struct
import threading

import pytest
import torch

from evr1.data.cache import MAGIC, CacheError, TensorCache, decode_entry, encode_entry
from evr1.data.cache_build import build_cache
from evr1.data.loader import CacheMissError, MediaLoader, family_processors
from evr1.data.records import MediaRef, Record
from evr1.specs import CacheSpec, ImageSpec, VideoSpec

VIDEO = VideoSpec(fps=2.0, min_pixels=16 * 28 * 28, max_pixels=64 * 28 * 28)
IMAGE = ImageSpec(min_pixels=8 * 28 * 28, max_pixels=64 * 28 * 28)


def _record(rid: str, *media: MediaRef) -> Record:
    return Record(id=rid, problem="q", problem_type="multiple_choice", answer="A", media=list(media))


@pytest.fixture(scope="module")
def procs():
    return family_processors("qwen2.5-vl")


@pytest.fixture
def root(media_root, tmp_path):
    """A private copy of some media (tests here change files)."""
    for name in ("small.mp4", "tall.mp4", "photo.png"):
        (tmp_path / name).write_bytes((media_root / name).read_bytes())
    return tmp_path


def _build(root, cache_dir, procs, video=VIDEO, storage="uint8"):
    records = [_record("a", MediaRef(kind="video", path="small.mp4"), MediaRef(kind="image", path="photo.png")),
               _record("b", MediaRef(kind="video", path="tall.mp4", start=0.5, end=2.0))]
    cache = CacheSpec(path=str(cache_dir), storage=storage)
    report = build_cache(records, video=video, image=IMAGE, cache=cache, processor=procs, data_root=root, workers=0, progress=False)
    return records, cache, report


def test_entry_round_trip_is_zero_copy_and_checked() -> None:
    import xxhash

    payload = bytes(range(256)) * 3
    value = encode_entry({"dtype": "uint8", "shape": [3, 256]}, payload)
    assert value.startswith(MAGIC)
    header, view = decode_entry(memoryview(value))
    assert header["shape"] == [3, 256] and header["nbytes"] == 768 and bytes(view) == payload
    assert isinstance(view, memoryview) and view.obj is value  # a view, not a copy
    start = len(MAGIC) + 16  # the digest: XXH3-128 of everything after it
    assert value[len(MAGIC) : start] == xxhash.xxh3_128_digest(value[start:])
    (head_len,) = struct.unpack("<I", value[start : start + 4])
    assert (len(value) - len(payload)) % 64 == 0 and json.loads(value[start + 4 : start + 4 + head_len])["nbytes"] == 768
    with pytest.raises(CacheError, match="truncated|digest"):
        decode_entry(value[:-1])
    with pytest.raises(CacheError, match="bad magic"):
        decode_entry(b"PICKLE" + value[6:])


def test_cache_hits_equal_the_live_path(root, tmp_path, procs) -> None:
    records, cache, report = _build(root, tmp_path / "c", procs)
    assert (report.built, report.failed) == (3, 0)
    cached = MediaLoader(VIDEO, IMAGE, cache, procs, root)
    live = MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "bypass"}), procs, root)
    for record in records:
        for hit, fresh in zip(cached.load(record), live.load(record), strict=True):
            assert hit.cache_hit and not fresh.cache_hit
            assert torch.equal(hit.pixel_values, fresh.pixel_values)
            assert torch.equal(hit.grid_thw, fresh.grid_thw) and hit.info == fresh.info
    clip = cached.load(records[1])[0]
    # tall.mp4: 10 fps; clip 0.5-2.0 s = frames 5..20 (16 frames, 1.6 s) -> 4 frames at 2 fps
    assert clip.info.frame_indices == (5, 10, 15, 20) and clip.video_metadata()["fps"] == pytest.approx(10.0)
    # the clip clock: 0 s at frame 5; what a Qwen3-VL prompt is given counts frames from there too
    assert clip.timestamps == (0.0, 0.5, 1.0, 1.5) and clip.video_metadata()["frames_indices"] == [0, 5, 10, 15]
    assert (clip.info.source_width, clip.info.source_height) == (120, 200)
    assert clip.info.sample_fps == pytest.approx(2.5) and clip.second_per_grid_t == pytest.approx(0.8)
    assert cached.load(records[0])[1].second_per_grid_t is None  # an image


@pytest.mark.parametrize(
    "change",
    [
        {"fps": 1.0}, {"max_pixels": 48 * 28 * 28}, {"min_pixels": 12 * 28 * 28}, {"max_frames": 6},
        {"total_pixels": 200 * 28 * 28}, {"fps": None, "nframes": 4},
    ],
)
def test_a_changed_video_setting_misses(root, tmp_path, procs, change) -> None:
    records, cache, _ = _build(root, tmp_path / "c", procs)
    changed = VideoSpec(**{**VIDEO.model_dump(), **change})
    loader = MediaLoader(changed, IMAGE, cache, procs, root)
    media = loader.load(records[0])
    assert not media[0].cache_hit and media[1].cache_hit  # the image spec did not change
    with pytest.raises(CacheMissError, match="record 'a'.*small.mp4"):
        MediaLoader(changed, IMAGE, cache.model_copy(update={"mode": "only"}), procs, root).load(records[0])


def test_a_changed_clip_processor_or_file_misses(root, tmp_path, procs) -> None:
    records, cache, _ = _build(root, tmp_path / "c", procs)
    loader = MediaLoader(VIDEO, IMAGE, cache, procs, root)
    assert loader.load_media(MediaRef(kind="video", path="tall.mp4", start=0.5, end=2.0)).cache_hit
    assert not loader.load_media(MediaRef(kind="video", path="tall.mp4", start=0.5, end=2.1)).cache_hit
    other = family_processors("qwen3-vl")
    assert not MediaLoader(VIDEO, IMAGE, cache, other, root).load(records[0])[0].cache_hit
    tweaked = family_processors("qwen2.5-vl")
    tweaked.video_processor.image_std = [0.3, 0.3, 0.3]
    assert not MediaLoader(VIDEO, IMAGE, cache, tweaked, root).load(records[0])[0].cache_hit
    # the identity is the content: same bytes with a new mtime still hit, a new content with the old size and
    # mtime never does
    stat = os.stat(root / "small.mp4")
    os.utime(root / "small.mp4", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert MediaLoader(VIDEO, IMAGE, cache, procs, root).load(records[0])[0].cache_hit
    data = bytearray((root / "small.mp4").read_bytes())
    data[len(data) // 2] ^= 0x01  # a bit of picture data (the file stays decodable)
    (root / "small.mp4").write_bytes(bytes(data))
    os.utime(root / "small.mp4", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert not MediaLoader(VIDEO, IMAGE, cache, procs, root).load(records[0])[0].cache_hit


def test_modes(root, tmp_path, procs) -> None:
    records, cache, _ = _build(root, tmp_path / "c", procs)
    bypass = MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "bypass"}), procs, root)
    assert not any(m.cache_hit for m in bypass.load(records[0]))
    empty = CacheSpec(path=str(tmp_path / "never-built"))
    assert not MediaLoader(VIDEO, IMAGE, empty, procs, root).load(records[0])[0].cache_hit  # prefer: live
    with pytest.raises(CacheError, match="no cache at"):
        MediaLoader(VIDEO, IMAGE, empty.model_copy(update={"mode": "only"}), procs, root).load(records[0])
    from evr1.errors import ConfigError

    with pytest.raises(ConfigError, match="cache.path"):
        MediaLoader(VIDEO, IMAGE, CacheSpec(mode="only"), procs, root)
    import importlib.util

    find_spec = importlib.util.find_spec
    with pytest.MonkeyPatch.context() as patch:  # as on a machine without the extra
        patch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torchcodec" else find_spec(name, *a))
        with pytest.raises(ConfigError, match=r"decoder 'torchcodec' is not installed: pip install -e '.\[torchcodec\]'"):
            MediaLoader(VIDEO.model_copy(update={"decoder": "torchcodec"}), IMAGE, cache, procs, root)


def test_bfloat16_storage_is_the_rounded_live_tensor(root, tmp_path, procs) -> None:
    records, cache, report = _build(root, tmp_path / "c", procs, storage="bfloat16")
    assert report.built == 3
    hit = MediaLoader(VIDEO, IMAGE, cache, procs, root).load(records[0])
    live = MediaLoader(VIDEO, IMAGE, cache.model_copy(update={"mode": "bypass"}), procs, root).load(records[0])
    for a, b in zip(hit, live):
        assert a.cache_hit and a.pixel_values.dtype == torch.float32
        assert torch.equal(a.pixel_values, b.pixel_values.to(torch.bfloat16).to(torch.float32))
    uint8 = _build(root, tmp_path / "u", procs)[1]
    assert TensorCache(cache.path).stats().payload_bytes > 1.8 * TensorCache(uint8.path).stats().payload_bytes


def test_reading_into_a_caller_buffer(root, tmp_path, procs) -> None:
    records, cache, _ = _build(root, tmp_path / "c", procs)
    loader = MediaLoader(VIDEO, IMAGE, cache, procs, root)
    first = loader.load(records[0])[0]
    buffer = torch.empty_like(first.pixel_values)
    again = loader.load_media(records[0].media[0], out=buffer)
    assert again.pixel_values is buffer and torch.equal(buffer, first.pixel_values)


def _read_all(root, cache_path, rounds, queue) -> None:
    procs = family_processors("qwen2.5-vl")
    loader = MediaLoader(VIDEO, IMAGE, CacheSpec(path=cache_path), procs, root)
    ref = MediaRef(kind="video", path="small.mp4")
    sums = {float(loader.load_media(ref).pixel_values.sum()) for _ in range(rounds)}
    queue.put(sorted(sums))


def test_many_readers_while_one_writer_writes(root, tmp_path, procs) -> None:
    """Reader processes and threads see whole entries only, while the builder adds more."""
    records, cache, _ = _build(root, tmp_path / "c", procs)
    expected = float(MediaLoader(VIDEO, IMAGE, cache, procs, root).load(records[0])[0].pixel_values.sum())
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    readers = [ctx.Process(target=_read_all, args=(root, cache.path, 5, queue))]
    for p in readers:
        p.start()
    thread_sums: list[float] = []
    threads = [threading.Thread(target=lambda: thread_sums.append(float(
        MediaLoader(VIDEO, IMAGE, cache, procs, root).load(records[0])[0].pixel_values.sum()))) for _ in range(3)]
    for t in threads:
        t.start()
    writer = TensorCache(cache.path, write=True)
    for i in range(40):  # the one writer keeps committing while the others read
        writer.put(f"extra-{i}".encode(), encode_entry({"dtype": "uint8", "shape": [1 << 16]}, os.urandom(1 << 16)))
    writer.close()
    for t in threads:
        t.join()
    results = [queue.get(timeout=120) for _ in readers]
    for p in readers:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert results == [[expected]] and thread_sums == [expected] * 3
    assert TensorCache(cache.path).stats().entries == 43


def test_a_forked_child_opens_its_own_environment(tmp_path) -> None:
    store = TensorCache(tmp_path / "c", write=True)
    store.put(b"k", encode_entry({"dtype": "uint8", "shape": [4]}, b"\x01\x02\x03\x04"))
    reader = TensorCache(tmp_path / "c")
    with reader.read(b"k") as entry:
        assert bytes(entry[1]) == b"\x01\x02\x03\x04"
    pid = os.fork()
    if pid == 0:  # child: the inherited handle must reopen, not reuse the parent's environment
        try:
            with reader.read(b"k") as entry:
                ok = bytes(entry[1]) == b"\x01\x02\x03\x04" and reader._slot[0] == os.getpid()
            os._exit(0 if ok else 1)
        except BaseException:  # noqa: BLE001 - any failure in the child is a failed test
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    store.put(b"k2", encode_entry({"dtype": "uint8", "shape": [1]}, b"\x05"))  # the parent's handles still work
    with reader.read(b"k2") as entry:
        assert bytes(entry[1]) == b"\x05"
    store.close()
    reader.close()


def test_output_pool_reuses_only_memory_no_tensor_uses() -> None:
    from evr1.data.patches import OutputPool

    pool = OutputPool(max_buffers=2)
    shape = (1024, 1025)  # just over 4 MB
    a = pool.empty(shape)
    a_ptr = a.data_ptr()
    b = pool.empty(shape)
    view = a[3:5]
    del a
    c = pool.empty(shape)  # a's memory is still used by a view, b is alive: new memory
    assert len({a_ptr, b.data_ptr(), c.data_ptr()}) == 3
    del view
    d = pool.empty(shape)
    assert d.data_ptr() == a_ptr and d.shape == shape and d.dtype == torch.float32
    del b
    assert pool.empty((100, 100)).data_ptr() not in (a_ptr,)  # small outputs are plain tensors
    assert pool.empty((2048, 1025)).numel() == 2048 * 1025  # larger than any free buffer: new memory
