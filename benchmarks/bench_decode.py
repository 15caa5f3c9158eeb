"""Reading the sampled frames of a video with each decoder, and resizing an image both ways.

Videos: PyAV (evr1's default: decodes every frame up to the last one asked for, on all cores),
decord and torchcodec (both seek), with evr1's frame plan (2 fps, at most 16 frames) on generated
30 fps H.264 clips tagged BT.709 (a keyframe every 250 frames). All three give the same frames.
Busy 2-core machine: pyav/decord 0.25x and 0.53x, pyav/torchcodec 1.33x and 1.41x (20 s, 60 s).

Images: `ImageSpec.resize="pil"` (the default: qwen-vl-utils' `fetch_image` resize) vs `"torch"`
(the HF image processor's own resize) on a 4032x3024 phone-sized photo to at most 1280 tokens;
prints both times and how far apart the pixels are (busy machine: pil/torch 1.21x, 0.4% of the
values apart, by at most 1 level).

Run: `pytest benchmarks/bench_decode.py --benchmark-only` (prints the tables and the ratios).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from bench_cache import _best

from evr1.data.decode import probe_video, read_frames
from evr1.data.frame_sampling import Geometry, plan_frames
from evr1.data.live import prepare_image
from evr1.data.testclips import clip_frame, write_clip
from evr1.specs import ImageSpec, VideoSpec

CLIPS = {"320x240_20s": (320, 240, 20), "640x360_60s": (640, 360, 60)}  # name: (width, height, seconds)
DECODERS = ("pyav", "decord", "torchcodec")
SPEC = VideoSpec(fps=2.0, max_frames=16)
WORK = Path(tempfile.gettempdir()) / "evr1-bench-decode"


def _clip(name: str) -> Path:
    w, h, seconds = CLIPS[name]
    path = WORK / f"{name}-bt709.mp4"
    if not path.exists():  # generated once, kept for later runs
        tmp = path.with_suffix(".part.mp4")
        write_clip(tmp, w, h, 30, 30 * seconds, seed=7, colorspace=1, color_range=1)
        tmp.rename(path)
    return path


def _indices(path: Path) -> list[int]:
    info = probe_video(path)
    plan = plan_frames(str(path), SPEC, Geometry(), total_frames=info.total_frames, video_fps=info.fps,
                       height=info.height, width=info.width)
    return list(plan.indices)


def test_decoders(benchmark, capsys) -> None:
    rows = []
    for name in CLIPS:
        path = _clip(name)
        indices = _indices(path)
        times = {d: _best(lambda d=d, p=path, i=indices: read_frames(p, i, d), 3) for d in DECODERS}
        frames = [read_frames(path, indices, d) for d in DECODERS]
        same = all(np.array_equal(frames[0], f) for f in frames[1:])
        rows.append(f"{name:>12}: {len(indices)} frames  " + "  ".join(f"{d} {t * 1000:7.1f} ms" for d, t in times.items())
                    + f"  pyav/decord {times['pyav'] / times['decord']:4.2f}x  pyav/torchcodec"
                    f" {times['pyav'] / times['torchcodec']:4.2f}x  same frames: {same}")
    path = _clip("640x360_60s")
    indices = _indices(path)
    benchmark(read_frames, path, indices, "pyav")
    with capsys.disabled():
        print("\n" + "\n".join(rows))


def test_image_resize(benchmark, capsys) -> None:
    from PIL import Image

    path = WORK / "photo-4032x3024.jpg"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        Image.fromarray(clip_frame(3, 4032, 3024, 5)).save(path, quality=92)
    specs = {mode: ImageSpec(max_pixels=1280 * 28 * 28, resize=mode) for mode in ("pil", "torch")}
    times = {mode: _best(lambda s=s: prepare_image(path, s, Geometry()), 3) for mode, s in specs.items()}
    pixels = {mode: prepare_image(path, s, Geometry()).patches.data.to(int) for mode, s in specs.items()}
    gap = (pixels["pil"] - pixels["torch"]).abs()
    benchmark(prepare_image, path, specs["pil"], Geometry())
    with capsys.disabled():
        print(f"\nimage 4032x3024 -> 1280 tokens: pil {times['pil'] * 1000:.1f} ms  torch {times['torch'] * 1000:.1f} ms"
              f"  pil/torch {times['pil'] / times['torch']:.2f}x  values apart: {(gap > 0).float().mean():.1%},"
              f" at most {int(gap.max())} levels")
