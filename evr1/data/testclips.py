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
    pix_fmt: str = "yuv420p", colorspace: int | None = None, color_range: int | None = None,
) -> Path:
    """Write a clip of `frames` frames at `fps` (H.264 by default; sides must be even for yuv420p).

    `colorspace` / `color_range` (FFmpeg's codes: 1 BT.709, 9 BT.2020; range 1 limited, 2 full) convert
    the frames with that matrix and range and tag the stream with them (untagged when None)."""
    from fractions import Fraction

    import av

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=Fraction(fps).limit_denominator(1001))
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        if codec == "libx264":
            stream.options = {"preset": "ultrafast", "crf": "23"}
        if colorspace is not None:
            stream.codec_context.colorspace = stream.codec_context.color_primaries = colorspace
        if color_range is not None:
            stream.codec_context.color_range = color_range
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(clip_frame(i, width, height, seed), format="rgb24")
            if colorspace is not None or color_range is not None:
                frame = frame.reformat(format=pix_fmt, dst_colorspace=colorspace, dst_color_range=color_range)
                frame.colorspace, frame.color_range = colorspace or frame.colorspace, color_range or frame.color_range
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def set_rotation(path: str | Path, degrees: int) -> Path:
    """Give an MP4's video track a display matrix that turns it `degrees` clockwise on display (as phones
    write it), in place: the `tkhd` box's matrix is rewritten (PyAV writes no display matrix itself)."""
    import struct

    path = Path(path)
    data = bytearray(path.read_bytes())
    at = data.find(b"tkhd")
    if at < 0 or data.find(b"tkhd", at + 4) >= 0:
        raise ValueError(f"{path}: expected one track header (tkhd)")
    version = data[at + 4]
    matrix = at + 8 + (32 if version == 1 else 20) + 16  # after times, ids, duration, reserved, layer, volume
    cos, sin = {0: (1, 0), 90: (0, 1), 180: (-1, 0), 270: (0, -1)}[degrees % 360]
    one = 1 << 16
    data[matrix : matrix + 36] = struct.pack(">9i", cos * one, sin * one, 0, -sin * one, cos * one, 0, 0, 0, 1 << 30)
    path.write_bytes(bytes(data))
    return path
