"""Frame sampling and sizing: which frames of a video are kept and what size every frame becomes.

Pure arithmetic (no decoding), following the reference maths of qwen-vl-utils `fetch_video` so a
cached sample is what the Qwen-VL recipes feed their models:

- the clip `[start, end]` (seconds) becomes the frame range `ceil(start*fps) .. floor(end*fps)`;
- the frame count is `nframes` rounded to a multiple of 2, or `duration * spec.fps` clamped to
  `[min_frames, max_frames]` and to the clip's frames, floored to a multiple of 2;
- frames are taken at `linspace(first, last, n).round()` (float32, as torch computes it);
- frame times are on the clip clock: seconds since the clip's first frame `first` (a whole video's
  clock is the file's);
- every frame gets the same size: the HF `smart_resize` to a multiple of the family's alignment
  (28 for Qwen2/2.5-VL, 32 for Qwen3-VL) within `[min_pixels, max_pixels]`, where an optional
  `total_pixels` budget lowers `max_pixels` to `total_pixels / n * 2` (never below 1.05 x min).

Documented difference from qwen-vl-utils: it also caps a frame at 768 tokens whatever
`max_pixels` says; here `max_pixels` is taken as given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evr1.errors import Evr1Error
from evr1.specs import ImageSpec, VideoSpec

FRAME_FACTOR = 2  # frames come in pairs: the temporal patch of every Qwen-VL family


class MediaError(Evr1Error):
    """A video or image that cannot become model input; `reason` is a short stable code."""

    def __init__(self, path: str, reason: str, detail: str) -> None:
        self.path, self.reason, self.detail = str(path), reason, detail
        super().__init__(f"{path}: {detail}")


@dataclass(frozen=True)
class Geometry:
    """The patch layout of a model family's vision encoder."""

    patch_size: int = 14
    merge_size: int = 2
    temporal_patch_size: int = 2
    resample: str = "bicubic"  # torchvision interpolation of the resize

    @property
    def factor(self) -> int:
        """Frame sides are multiples of this: one merged patch (28 for Qwen2/2.5-VL, 32 for Qwen3-VL)."""
        return self.patch_size * self.merge_size

    @classmethod
    def of(cls, processor: object) -> Geometry:
        """The geometry of an HF Qwen-VL image or video processor."""
        from transformers.image_utils import pil_torch_interpolation_mapping

        resample = getattr(processor, "resample", None)
        mode = pil_torch_interpolation_mapping.get(resample, resample) if resample is not None else None
        return cls(
            int(processor.patch_size), int(processor.merge_size), int(processor.temporal_patch_size),
            getattr(mode, "value", "bicubic"),
        )


@dataclass(frozen=True)
class FramePlan:
    """The frames to take from a video and the size to give them."""

    indices: tuple[int, ...]
    height: int
    width: int
    video_fps: float
    total_frames: int  # frames of the (clipped) range the sample is taken from
    first: int  # index of the range's first frame: 0 s on the clip clock
    source_height: int  # the video's own frame size
    source_width: int

    @property
    def sample_fps(self) -> float:
        """Sampled frames per second of video (qwen-vl-utils' `sample_fps`)."""
        return len(self.indices) / max(self.total_frames, 1e-6) * self.video_fps

    @property
    def clip_indices(self) -> tuple[int, ...]:
        """The sampled frames counted from the clip's first frame."""
        return tuple(i - self.first for i in self.indices)

    @property
    def timestamps(self) -> tuple[float, ...]:
        """Seconds on the clip clock (since the clip's first frame) of every sampled frame."""
        return tuple(i / self.video_fps for i in self.clip_indices)


def clip_range(path: str, total_frames: int, video_fps: float, start: float | None, end: float | None) -> tuple[int, int]:
    """First and last frame index of the clip `[start, end]` seconds (the whole video when unset)."""
    if start is None and end is None:
        return 0, total_frames - 1
    duration = total_frames / video_fps
    first = math.ceil(max(0.0, min(start, duration)) * video_fps) if start is not None else 0
    last = min(math.floor(max(0.0, min(end, duration)) * video_fps), total_frames - 1) if end is not None else total_frames - 1
    if first >= last:
        raise MediaError(
            path, "bad_clip", f"clip {start}-{end} s holds fewer than 2 frames of a {duration:.2f} s video ({total_frames} frames at {video_fps:g} fps)"
        )
    return first, last


def count_frames(path: str, spec: VideoSpec, total_frames: int, video_fps: float) -> int:
    """How many frames to sample from `total_frames` frames at `video_fps`."""
    if spec.nframes is not None:
        n = round(spec.nframes / FRAME_FACTOR) * FRAME_FACTOR
    else:
        low = math.ceil(spec.min_frames / FRAME_FACTOR) * FRAME_FACTOR
        high = math.floor(spec.max_frames / FRAME_FACTOR) * FRAME_FACTOR
        n = min(max(total_frames / video_fps * spec.fps, low), high, total_frames)
        n = math.floor(n / FRAME_FACTOR) * FRAME_FACTOR
    if not FRAME_FACTOR <= n <= total_frames:
        raise MediaError(path, "too_few_frames", f"cannot sample {n} frames from {total_frames} (at least {FRAME_FACTOR} are needed)")
    return n


def sample_indices(first: int, last: int, n: int) -> tuple[int, ...]:
    """`n` frame indices spread evenly over `first..last`, rounded as torch rounds them."""
    import torch

    return tuple(torch.linspace(first, last, n).round().long().tolist())


def smart_resize(height: int, width: int, factor: int, min_pixels: float, max_pixels: float) -> tuple[int, int]:
    """The HF Qwen-VL `smart_resize`: sides multiple of `factor`, area within the pixel range, aspect kept."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as hf_smart_resize

    return hf_smart_resize(height, width, factor=factor, min_pixels=min_pixels, max_pixels=max_pixels)


def frame_pixel_limits(spec: VideoSpec, nframes: int) -> tuple[int, float]:
    """Per-frame `(min_pixels, max_pixels)`, the total budget (if any) shared over the sampled frames."""
    max_pixels: float = spec.max_pixels
    if spec.total_pixels is not None:
        share = max(spec.total_pixels / nframes * FRAME_FACTOR, int(spec.min_pixels * 1.05))
        max_pixels = min(max_pixels, share)
    return spec.min_pixels, max_pixels


def plan_frames(
    path: str, spec: VideoSpec, geometry: Geometry, *, total_frames: int, video_fps: float, height: int, width: int,
    start: float | None = None, end: float | None = None,
) -> FramePlan:
    """Which frames of a video to take and the size to give them."""
    if total_frames < FRAME_FACTOR:
        raise MediaError(path, "too_few_frames", f"video has {total_frames} frame(s); at least {FRAME_FACTOR} are needed")
    if not video_fps > 0:
        raise MediaError(path, "corrupt", f"video reports a frame rate of {video_fps}")
    first, last = clip_range(path, total_frames, video_fps, start, end)
    span = last - first + 1
    n = count_frames(path, spec, span, video_fps)
    min_pixels, max_pixels = frame_pixel_limits(spec, n)
    h, w = _checked_resize(path, height, width, geometry.factor, min_pixels, max_pixels)
    return FramePlan(sample_indices(first, last, n), h, w, video_fps, span, first, height, width)


def image_size(path: str, spec: ImageSpec, geometry: Geometry, height: int, width: int) -> tuple[int, int]:
    """The size an image is resized to."""
    return _checked_resize(path, height, width, geometry.factor, spec.min_pixels, spec.max_pixels)


def _checked_resize(path: str, height: int, width: int, factor: int, min_pixels: float, max_pixels: float) -> tuple[int, int]:
    try:
        return smart_resize(height, width, factor, min_pixels, max_pixels)
    except (ValueError, ZeroDivisionError) as exc:
        raise MediaError(path, "bad_size", f"cannot resize {width}x{height}: {exc}") from None
