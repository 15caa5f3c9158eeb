"""`evr1 cache build | info | verify` run as a user runs them, including a build killed half-way.

The commands run in this process (`cli_inproc`) except the build that is killed, a real `evr1` process."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_inproc import evr1
from runner.holding import held_build, wait_until_held

from evr1.data.cache import TensorCache, decode_entry

EVR1 = str(Path(sys.executable).with_name("evr1"))
SPEC_ARGS = ["--family", "qwen2.5-vl", "--fps", "2", "--min-pixels", str(16 * 28 * 28), "--max-pixels", str(48 * 28 * 28),
             "--image-min-pixels", str(8 * 28 * 28), "--image-max-pixels", str(48 * 28 * 28)]


def run(*args: str) -> subprocess.CompletedProcess:
    return evr1("cache", *args)


def test_build_info_verify(media_root, tmp_path, good_rows, bad_rows, write_jsonl) -> None:
    data = write_jsonl(tmp_path / "train.jsonl", good_rows + bad_rows)
    cache = tmp_path / "cache"
    build = run("build", "--data", str(data), "--data-root", str(media_root), "--cache", str(cache), "--workers", "2", "--strict", *SPEC_ARGS)
    assert build.returncode == 1, build.stderr  # --strict: failures make the exit status 1 (the build still completes)
    assert "17 media, 8 built, 0 already present, 9 failed" in build.stdout
    assert "failed: record 'bad-corrupt.mp4' corrupt.mp4: corrupt" in build.stdout
    assert "media/s" in build.stderr or "it/s" in build.stderr or "cache build" in build.stderr  # the progress bar
    report = [json.loads(line) for line in (cache / "failures.jsonl").read_text().splitlines()]
    assert len(report) == 9 and {"record", "file", "kind", "reason", "detail"} <= set(report[0])


    info = run("info", str(cache))
    assert info.returncode == 0 and "8 entries" in info.stdout and "Qwen2VLVideoProcessor" in info.stdout

    verify = run("verify", str(cache), "--sample", "0", "--decode")
    assert verify.returncode == 0, verify.stdout
    assert "checked 8 of 8 entries: 0 bad, 0 with a changed or missing source" in verify.stdout


def test_verify_finds_damaged_and_stale_entries(media_root, tmp_path, good_rows, write_jsonl) -> None:
    root = tmp_path / "media"
    shutil.copytree(media_root, root)
    data = write_jsonl(tmp_path / "train.jsonl", good_rows[:3])
    cache = tmp_path / "cache"
    assert run("build", "--data", str(data), "--data-root", str(root), "--cache", str(cache), "--workers", "0", *SPEC_ARGS).returncode == 0
    store = TensorCache(cache, write=True)
    first, second = store.keys()[:2]
    value = bytearray(store.raw(first))
    value[-1] ^= 0xFF  # one flipped payload byte
    store.put(first, bytes(value))
    stale_file = decode_entry(store.raw(second))[0]["source"]["path"]
    store.close()
    stat = os.stat(root / stale_file)
    content = bytearray((root / stale_file).read_bytes())
    content[len(content) // 2] ^= 0x01  # rewritten in place, same size, mtime restored (as `cp -p` does)
    (root / stale_file).write_bytes(bytes(content))
    os.utime(root / stale_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    verify = run("verify", str(cache))  # every entry by default
    assert verify.returncode == 1
    assert f"bad cache entry {first.decode()[:16]} in {cache / 'data.mdb'} is damaged: its bytes do not match their digest" \
        in verify.stdout
    assert f"({stale_file}): source file changed" in verify.stdout
    assert "checked 3 of 3 entries: 1 bad, 1 with a changed or missing source" in verify.stdout
    sampled = run("verify", str(cache), "--sample", "2")
    assert "sampled 2 of 3 entries" in sampled.stdout


def test_user_errors_are_short_messages(tmp_path) -> None:
    missing = run("build", "--data", str(tmp_path / "none.jsonl"), "--cache", str(tmp_path / "c"))
    assert missing.returncode == 2 and "none.jsonl" in missing.stderr and "Traceback" not in missing.stderr
    no_cache = run("info", str(tmp_path / "nothing"))
    assert no_cache.returncode == 2 and "no cache at" in no_cache.stderr
    (tmp_path / "d.jsonl").write_text("")
    no_path = run("build", "--data", str(tmp_path / "d.jsonl"))
    assert no_path.returncode == 2 and "--cache" in no_path.stderr
    bad_spec = run("build", "--data", str(tmp_path / "d.jsonl"), "--cache", str(tmp_path / "c"), "--min-frames", "50", "--max-frames", "10")
    assert bad_spec.returncode == 2 and "min_frames" in bad_spec.stderr


def _children(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


@pytest.mark.slow
def test_a_killed_build_leaves_no_worker_and_resumes_to_a_consistent_cache(media_root, tmp_path, write_jsonl) -> None:
    """The build is held (`holding.HOLD_BUILD`) after storing 3 of 10 entries, its worker running, and killed there."""
    windows = [(round(0.1 * i, 1), round(0.1 * i + 1.5, 1)) for i in range(10)]  # 10 distinct entries of one clip
    rows = [{"id": f"w{i}", "problem": "q", "problem_type": "numerical", "answer": 1,
             "media": [{"kind": "video", "path": "long.mp4", "start": s, "end": e}]} for i, (s, e) in enumerate(windows)]
    data = write_jsonl(tmp_path / "windows.jsonl", rows)
    cache = tmp_path / "cache"
    args = ["build", "--data", str(data), "--data-root", str(media_root), "--cache", str(cache), *SPEC_ARGS]
    held = held_build(tmp_path / "held_build.py", cache, entries=3)
    proc = subprocess.Popen([EVR1, "cache", args[0], str(held), *args[1:], "--workers", "1"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until_held(proc, cache)
        workers = _children(proc.pid)
        assert workers, "the build has no worker process"
        os.kill(proc.pid, signal.SIGKILL)  # the build only: its workers must end with it
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30  # the kernel ends them (PR_SET_PDEATHSIG): at once, but not synchronously
        while time.monotonic() < deadline and [w for w in workers if Path(f"/proc/{w}").exists()]:
            time.sleep(0.05)
        assert not [w for w in workers if Path(f"/proc/{w}").exists()], "a worker outlived the killed build"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group, if the test failed
        proc.wait(timeout=30)
    assert TensorCache(cache).stats().entries == 3

    resume = run(*args, "--no-progress", "--workers", "0")
    assert resume.returncode == 0, resume.stderr
    assert "10 media, 7 built, 3 already present, 0 failed" in resume.stdout
    final = run("verify", str(cache), "--decode")  # every entry whole and equal to a fresh decode
    assert final.returncode == 0 and "checked 10 of 10 entries: 0 bad, 0 with a changed" in final.stdout


EXPERIMENT = """
import fiddle as fdl
from evr1.experiment import Experiment
from evr1.specs import CacheSpec, DataSpec, ImageSpec, ModelSpec, VideoSpec

def experiment():
    return fdl.Config(
        Experiment,
        model=fdl.Config(ModelSpec, name="tiny-qwen2.5-vl", cache_dir={models!r}),
        data=fdl.Config(
            DataSpec, train=({train!r},), val=({val!r},), data_root={root!r},
            video=fdl.Config(VideoSpec, fps=2.0, min_pixels=16 * 28 * 28, max_pixels=48 * 28 * 28),
            image=fdl.Config(ImageSpec, min_pixels=8 * 28 * 28, max_pixels=48 * 28 * 28),
            cache=fdl.Config(CacheSpec, path={cache!r}),
        ),
    )
"""


def test_synth_data_cache_build_then_every_record_reads_back_as_live(tmp_path) -> None:
    """Acceptance: `evr1 data synth`, `evr1 cache build EXPERIMENT` on it (the experiment's specs and
    model processor), then every record read back in `only` mode equals the live path."""
    import torch

    from evr1.data.loader import MediaLoader, family_processors
    from evr1.data.records import read_records
    from evr1.specs import CacheSpec, ImageSpec, VideoSpec

    out = tmp_path / "synth"
    synth = evr1("data", "synth", "--out", out, "--count", "24", "--val-count", "6")
    assert synth.returncode == 0, synth.stderr
    files = [out / "train.jsonl", out / "val.jsonl"]
    cache = tmp_path / "cache"
    exp = tmp_path / "exp_cache.py"
    exp.write_text(EXPERIMENT.format(models=str(tmp_path / "models"), train=str(files[0]), val=str(files[1]),
                                     root=str(out), cache=str(cache)))
    build = run("build", str(exp), "--workers", "0", "--no-progress")
    assert build.returncode == 0 and " 0 failed" in build.stdout, build.stdout + build.stderr

    video = VideoSpec(fps=2.0, min_pixels=16 * 28 * 28, max_pixels=48 * 28 * 28)
    image = ImageSpec(min_pixels=8 * 28 * 28, max_pixels=48 * 28 * 28)
    procs = family_processors("qwen2.5-vl")  # same identity as the tiny model's processor: entries are shared
    cached = MediaLoader(video, image, CacheSpec(path=str(cache), mode="only"), procs, out)
    live = MediaLoader(video, image, CacheSpec(mode="bypass"), procs, out)
    kinds = set()
    for record in read_records(files):
        for hit, fresh in zip(cached.load(record), live.load(record), strict=True):
            assert hit.cache_hit and torch.equal(hit.pixel_values, fresh.pixel_values) and hit.info == fresh.info
            kinds.add(hit.kind)
    assert kinds == {"video", "image"}
