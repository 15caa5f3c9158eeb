"""Drawing and encoding for the synthetic data: shapes with exact boxes, text, H.264 MP4 and PNG.

Box convention: a shape of `size` whose top-left pixel is (x, y) covers the pixels
x..x+size-1 and y..y+size-1; its box is `[x, y, x + size, y + size]` (pixel-edge coordinates).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image, ImageDraw, ImageFont

COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 190, 60),
    "blue": (50, 90, 230),
    "yellow": (235, 215, 40),
}
BACKGROUND = (20, 20, 20)
TEXT_COLOR = (245, 245, 245)
ShapeKind = Literal["square", "circle", "triangle"]
SHAPE_KINDS: tuple[ShapeKind, ...] = ("square", "circle", "triangle")


@dataclass(frozen=True)
class Canvas:
    """Size and timing of the synthetic media: videos have `frames` frames at `fps`."""

    width: int = 64
    height: int = 64
    fps: float = 4.0
    frames: int = 8

    def __post_init__(self) -> None:
        if self.width < 16 or self.height < 16 or self.width % 2 or self.height % 2:
            raise ValueError(f"canvas {self.width}x{self.height}: sides must be even and at least 16 px")
        if self.frames < 2 or self.fps <= 0:
            raise ValueError(f"canvas needs at least 2 frames and fps > 0 (got {self.frames}, {self.fps})")

    @property
    def duration(self) -> float:
        return self.frames / self.fps

    def time(self, frame: int) -> float:
        """The start time of a frame in seconds."""
        return round(frame / self.fps, 6)


@dataclass(frozen=True)
class Shape:
    """A filled shape moving at constant velocity, visible in frames `first..last`, maybe changing colour."""

    kind: ShapeKind
    color: str
    size: int
    x: int
    y: int
    vx: int = 0
    vy: int = 0
    first: int = 0
    last: int | None = None
    new_color: str | None = None
    change_at: int | None = None

    def box(self, frame: int = 0) -> list[int]:
        x, y = self.x + self.vx * frame, self.y + self.vy * frame
        return [x, y, x + self.size, y + self.size]

    def visible(self, frame: int) -> bool:
        return frame >= self.first and (self.last is None or frame <= self.last)

    def color_at(self, frame: int) -> str:
        changed = self.new_color is not None and self.change_at is not None and frame >= self.change_at
        return self.new_color if changed else self.color  # type: ignore[return-value]


def _draw_shape(draw: ImageDraw.ImageDraw, shape: Shape, frame: int) -> None:
    x1, y1, x2, y2 = shape.box(frame)
    corners = [x1, y1, x2 - 1, y2 - 1]
    fill = COLORS[shape.color_at(frame)]
    if shape.kind == "square":
        draw.rectangle(corners, fill=fill)
    elif shape.kind == "circle":
        draw.ellipse(corners, fill=fill)
    else:
        draw.polygon([(x1, y2 - 1), (x2 - 1, y2 - 1), ((x1 + x2 - 1) / 2, y1)], fill=fill)


@dataclass(frozen=True)
class Text:
    """Text drawn at a fixed place in every frame (the default font, at `size` px)."""

    text: str
    x: int
    y: int
    size: int = 14


def render(
    shapes: Sequence[Shape], width: int, height: int, frame: int = 0, texts: Sequence[Text] = ()
) -> np.ndarray:
    """One RGB frame (H, W, 3) uint8 with the shapes visible at `frame` and the texts."""
    image = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    for shape in shapes:
        if shape.visible(frame):
            _draw_shape(draw, shape, frame)
    for text in texts:
        draw.text((text.x, text.y), text.text, fill=TEXT_COLOR, font=ImageFont.load_default(size=text.size))
    return np.asarray(image)


def render_clip(shapes: Sequence[Shape], canvas: Canvas, texts: Sequence[Text] = ()) -> list[np.ndarray]:
    """All frames of a video on the canvas."""
    return [render(shapes, canvas.width, canvas.height, f, texts) for f in range(canvas.frames)]


def text_width(text: str, size: int) -> int:
    """The rendered width in pixels of `text` in the default font at `size` px."""
    left, _, right, _ = ImageFont.load_default(size=size).getbbox(text)
    return int(right - left)


def write_video(frames: Sequence[np.ndarray], path: Path, fps: float) -> None:
    """Encode RGB frames as lossless H.264 (qp 0, yuv420p) MP4, single-threaded.

    Lossy x264 settings (psy-rd, mb-tree) were seen to give different bytes and decoded pixels
    for the same input within one process; lossless single-threaded encoding is reproducible,
    and the decoded frames equal the input up to the yuv420p colour conversion.
    """
    import av  # imported only when media are written

    height, width = frames[0].shape[:2]
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"qp": "0", "threads": "1"}
        for array in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(array, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def write_png(array: np.ndarray, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path, format="PNG")
