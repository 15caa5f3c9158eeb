"""Tiny local copies of the 22 benchmarks: official-format annotations and generated videos.

    write_fixtures(out)  # out/<benchmark folder>/<annotations> and the media they name

The annotation rows are each benchmark's `fixtures` (set in its module, `evr1.eval.benchmarks.<name>`). Videos are
4-second 64x48 H.264 clips at 4 fps (`evr1.data.testclips`); images are 64x48 PNGs. The media files written are
exactly those the imported records refer to.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from pathlib import Path

CLIP_SECONDS, CLIP_FPS, CLIP_SIZE = 4, 4, (64, 48)


def write_fixtures(out: str | Path, benchmarks: Sequence[str] | None = None) -> dict[str, int]:
    """Write the fixtures of `benchmarks` (all by default) under `out`; returns records per benchmark."""
    from evr1.data.testclips import clip_frame, write_clip
    from evr1.registry import BENCHMARKS

    out = Path(out)
    names = list(benchmarks) if benchmarks else sorted(n for n in BENCHMARKS.names() if BENCHMARKS.get(n).fixtures)
    counts: dict[str, int] = {}
    for name in names:
        bench = BENCHMARKS.get(name)
        for relative, content in bench.fixtures.items():
            path = out / bench.folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(content, indent=1), encoding="utf-8")
        records = bench.load(out)
        for ref in {m for r in records for m in r.media}:
            target = out / ref.path
            if target.exists():
                continue
            seed = zlib.crc32(ref.path.encode()) % 1000
            width, height = CLIP_SIZE
            if ref.kind == "video":
                write_clip(target, width, height, CLIP_FPS, CLIP_SECONDS * CLIP_FPS, seed=seed)
            else:
                from PIL import Image

                target.parent.mkdir(parents=True, exist_ok=True)
                Image.fromarray(clip_frame(0, width, height, seed)).save(target)
        counts[bench.name] = len(records)
    return counts
