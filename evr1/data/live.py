"""The live path: decode, sample, resize and lay out one video or image as uint8 patches.

Videos are resized as qwen-vl-utils `fetch_video` resizes them (torchvision's tensor `resize`,
float interpolation then clamp and round to uint8, with the processor's interpolation: bicubic,
antialiased, for every Qwen-VL family). Images are resized as `fetch_image` resizes them (Pillow's
bicubic filter; the HF processor then finds them at its size and leaves them), or with
`ImageSpec.resize="torch"` as the HF image processor alone would (torchvision v2 `resize` on uint8).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from evr1.data.decode import probe_video, read_frames, read_image
from evr1.data.frame_sampling import FramePlan, Geometry, image_size, plan_frames
from evr1.data.patches import Patches, image_patches, video_patches
from evr1.specs import ImageSpec, VideoSpec

_RESIZE_BATCH = 8  # frames resized at once (bounds the float copy of full-size frames)
# Part of every cache key: raised whenever the pixels made for the same settings change, so older
# entries become misses. 2: the stream's colour matrix and range, display rotation, qwen-vl-utils
# sizing and per-frame cap, `fetch_image` conversion and resize.
PIXELS_VERSION = 2


@dataclass(frozen=True)
class MediaInfo:
    """Everything about a prepared video or image except its pixels (stored in a cache entry's header)."""

    kind: Literal["video", "image"]
    grid_thw: tuple[int, int, int]
    height: int  # as shown to the model (resized)
    width: int
    frame_indices: tuple[int, ...] = ()  # indices into the source video
    timestamps: tuple[float, ...] = ()  # per sampled frame: seconds since the clip's first frame (the clip clock)
    video_fps: float | None = None
    sample_fps: float | None = None
    total_frames: int | None = None  # frames of the clip the sample was taken from
    first_frame: int = 0  # index of the clip's first frame in the source video (0 s on the clip clock)
    source_height: int | None = None  # the original image or video frame
    source_width: int | None = None

    @property
    def clip_indices(self) -> tuple[int, ...]:
        """The sampled frames counted from the clip's first frame."""
        return tuple(i - self.first_frame for i in self.frame_indices)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MediaInfo:
        tuples = {k: tuple(data[k]) for k in ("grid_thw", "frame_indices", "timestamps")}
        return cls(**{**data, **tuples})


@dataclass(frozen=True)
class Prepared:
    patches: Patches
    info: MediaInfo


def _interpolation(geometry: Geometry):
    from torchvision.transforms import InterpolationMode

    return InterpolationMode(geometry.resample)


def resize_frames(frames: torch.Tensor, height: int, width: int, geometry: Geometry) -> torch.Tensor:
    """uint8 `(T, C, H, W)` frames resized as qwen-vl-utils resizes them."""
    from torchvision.transforms import functional as F

    mode = _interpolation(geometry)
    return torch.cat([
        F.resize(frames[i : i + _RESIZE_BATCH], [height, width], interpolation=mode, antialias=True)
        for i in range(0, frames.shape[0], _RESIZE_BATCH)
    ])


def resize_image(image: torch.Tensor, height: int, width: int, geometry: Geometry) -> torch.Tensor:
    """A uint8 `(C, H, W)` image resized as the HF image processor resizes it."""
    from torchvision.transforms.v2 import functional as F2

    return F2.resize(image, [height, width], interpolation=_interpolation(geometry), antialias=True)


def video_frames(
    path: str | Path, spec: VideoSpec, geometry: Geometry, start: float | None = None, end: float | None = None
) -> tuple[torch.Tensor, FramePlan]:
    """The sampled frames of a video (or of the clip `[start, end]` seconds), resized: uint8 `(T, C, H, W)`."""
    info = probe_video(path, spec.decoder)
    plan = plan_frames(
        str(path), spec, geometry, total_frames=info.total_frames, video_fps=info.fps,
        height=info.height, width=info.width, start=start, end=end,
    )
    frames = torch.from_numpy(read_frames(path, plan.indices, spec.decoder)).permute(0, 3, 1, 2)
    return resize_frames(frames, plan.height, plan.width, geometry), plan


def prepare_video(
    path: str | Path, spec: VideoSpec, geometry: Geometry, start: float | None = None, end: float | None = None
) -> Prepared:
    """Decode, sample and resize a video (optionally the clip `[start, end]` seconds) into uint8 patches."""
    frames, plan = video_frames(path, spec, geometry, start, end)
    patches = video_patches(frames, geometry)
    return Prepared(patches, MediaInfo(
        "video", patches.grid_thw, plan.height, plan.width, plan.indices, plan.timestamps,
        plan.video_fps, plan.sample_fps, plan.total_frames, plan.first, plan.source_height, plan.source_width,
    ))


def prepare_image(path: str | Path, spec: ImageSpec, geometry: Geometry) -> Prepared:
    """Read and resize an image into uint8 patches."""
    image = read_image(path)
    height, width = image_size(str(path), spec, geometry, image.height, image.width)
    if spec.resize == "pil":
        from PIL import Image

        pixels = _chw(image.resize((width, height), Image.Resampling.BICUBIC))  # fetch_image's default filter
    else:
        pixels = resize_image(_chw(image), height, width, geometry)
    patches = image_patches(pixels, geometry)
    return Prepared(patches, MediaInfo(
        "image", patches.grid_thw, height, width, source_height=image.height, source_width=image.width,
    ))


def _chw(image) -> torch.Tensor:
    """An RGB `PIL.Image` as a uint8 `(C, H, W)` tensor."""
    return torch.from_numpy(np.array(image)).permute(2, 0, 1)
