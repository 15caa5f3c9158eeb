"""Textured, moving test clips written with PyAV (tests and benchmarks of the media pipeline).

Content is a drifting colour texture with a moving square, so every frame differs, resizing has
real detail to work on and the encoder produces realistic (not near-empty) streams.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

_PAD = 64  # the texture is larger than the frame by this much; frames are moving crops of it


@lru_cache(maxsize=4)
def _texture(width: int, height: int, seed: int) -> np.ndarray:
    y, x = np.ogrid[0 : height + _PAD, 0 : width + _PAD]
    r = 128 + 100 * np.sin(x * 0.07 + seed) * np.cos(y * 0.05 - seed)
    g = 128 + 100 * np.sin((x + y) * 0.03 + 2 * seed)
    b = (x * 3 + y * 5 + seed * 11) % 256
    return np.stack(np.broadcast_arrays(r, g, b), axis=-1).astype(np.uint8)


def clip_frame(i: int, width: int, height: int, seed: int = 0) -> np.ndarray:
    """Frame `i` of a clip: uint8 RGB `(height, width, 3)`: a drifting, slowly recoloured texture and a moving square."""
    dx, dy = (i * 3) % _PAD, (i * 2) % _PAD
    frame = _texture(width, height, seed)[dy : dy + height, dx : dx + width] + np.uint8(i % 256)
    side = max(4, min(width, height) // 5)
    cx = (i * 5 + seed * 13) % max(1, width - side)
    cy = (i * 3 + seed * 7) % max(1, height - side)
    frame[cy : cy + side, cx : cx + side] = (255 - 40 * (i % 4), 40 * (i % 6), 200)
    return frame


def write_clip(
    path: str | Path, width: int, height: int, fps: float, frames: int, *, codec: str = "libx264", seed: int = 0,
) -> Path:
    """Write a clip of `frames` frames at `fps` (H.264 by default; sides must be even for yuv420p)."""
    from fractions import Fraction

    import av

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=Fraction(fps).limit_denominator(1001))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if codec == "libx264":
            stream.options = {"preset": "ultrafast", "crf": "23"}
        for i in range(frames):
            for packet in stream.encode(av.VideoFrame.from_ndarray(clip_frame(i, width, height, seed), format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path
