"""Reading the sampled frames of a video: decord (seeks to the keyframe before each frame) vs PyAV
(decodes every frame up to the last one asked for, on all cores), with evr1's frame plan (2 fps,
at most 16 frames) on generated 30 fps H.264 clips (a keyframe every 250 frames). Idle 2-core
machine: 0.94x and 1.04x (pyav time / decord time) on the 20 s and 60 s clips: no gain here.

Run: `pytest benchmarks/bench_decode.py --benchmark-only` (prints the per-clip table and the ratio).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench_cache import _best

from evr1.data.decode import probe_video, read_frames
from evr1.data.media import Geometry, plan_frames
from evr1.data.testclips import write_clip
from evr1.specs import VideoSpec

CLIPS = {"320x240_20s": (320, 240, 20), "640x360_60s": (640, 360, 60)}  # name: (width, height, seconds)
SPEC = VideoSpec(fps=2.0, max_frames=16)
WORK = Path(tempfile.gettempdir()) / "evr1-bench-decode"


def _clip(name: str) -> Path:
    w, h, seconds = CLIPS[name]
    path = WORK / f"{name}.mp4"
    if not path.exists():  # generated once, kept for later runs
        tmp = path.with_suffix(".part.mp4")
        write_clip(tmp, w, h, 30, 30 * seconds, seed=7)
        tmp.rename(path)
    return path


def _indices(path: Path) -> list[int]:
    info = probe_video(path)
    plan = plan_frames(str(path), SPEC, Geometry(), total_frames=info.total_frames, video_fps=info.fps,
                       height=info.height, width=info.width)
    return list(plan.indices)


def test_decord_vs_pyav(benchmark, capsys) -> None:
    rows = []
    for name in CLIPS:
        path = _clip(name)
        indices = _indices(path)
        pyav = _best(lambda: read_frames(path, indices, "pyav"), 3)
        decord = _best(lambda: read_frames(path, indices, "decord"), 3)
        rows.append(f"{name:>12}: {len(indices)} frames  pyav {pyav * 1000:7.1f} ms  decord {decord * 1000:7.1f} ms"
                    f"  pyav/decord {pyav / decord:4.2f}x")
    path = _clip("640x360_60s")
    indices = _indices(path)
    benchmark(read_frames, path, indices, "decord")
    with capsys.disabled():
        print("\n" + "\n".join(rows))
