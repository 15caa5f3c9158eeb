"""Frame sampling and sizing: which frames of a video are kept and what size every frame becomes.

Pure arithmetic (no decoding), following the reference maths of qwen-vl-utils `fetch_video` so a
cached sample is what the Qwen-VL recipes feed their models:

- the clip `[start, end]` (seconds) becomes the frame range `ceil(start*fps) .. floor(end*fps)`;
- the frame count is `nframes` rounded to a multiple of 2, or `duration * spec.fps` clamped to
  `[min_frames, max_frames]` and to the clip's frames, floored to a multiple of 2;
- frames are taken at `linspace(first, last, n).round()` (float32, as torch computes it);
- frame times are on the clip clock: seconds since the clip's first frame `first` (a whole video's
  clock is the file's);
- every frame gets the same size: qwen-vl-utils' `smart_resize` to a multiple of the family's
  factor `f` (28 px for Qwen2/2.5-VL, 32 px for Qwen3-VL) within `[min_pixels, max_pixels]`, where
  a frame is capped at 768 tokens (`768 f^2` pixels) and the `total_pixels` budget lowers the cap to
  `total_pixels / n * 2` (never below 1.05 x min), as qwen-vl-utils computes it;
- unset pixel limits are the reference's defaults in the family's own factor: videos 128 to 768
  tokens a frame and 115,200 tokens in all (qwen-vl-utils' `0.9 * MODEL_SEQ_LEN`), images 4 to
  16,384 tokens.

Sizing follows qwen-vl-utils rather than transformers' `smart_resize`: a side shorter than half a
factor is clamped to one factor before the area is fitted (transformers rounds it to 0 and then
scales the whole frame up, past `max_pixels`). What the reference refuses (an aspect ratio over
200, a side that would round to 0) and what would exceed `max_pixels` or `total_pixels` is a
`MediaError` (`bad_size`) saying why. One departure: when the frame count times `min_pixels`
(x 1.05) is over `total_pixels`, qwen-vl-utils keeps every frame at its floor and goes over the
budget; evr1 refuses, since `total_pixels` bounds the sequence a batch must fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evr1.errors import Evr1Error
from evr1.specs import ImageSpec, VideoSpec

FRAME_FACTOR = 2  # frames come in pairs: the temporal patch of every Qwen-VL family
MAX_RATIO = 200  # the longest aspect ratio the reference accepts
# qwen-vl-utils' defaults, in tokens (one token = one factor x factor square)
VIDEO_MIN_TOKENS, VIDEO_MAX_TOKENS, VIDEO_TOTAL_TOKENS = 128, 768, 115_200
IMAGE_MIN_TOKENS, IMAGE_MAX_TOKENS = 4, 16_384


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
    """qwen-vl-utils' `smart_resize`: sides multiples of `factor` (each at least one factor before the area is
    fitted), area within `[min_pixels, max_pixels]` when it can be, aspect kept; ValueError past `MAX_RATIO`."""
    if min(height, width) <= 0:
        raise ValueError(f"a side of {min(height, width)} px")
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(f"aspect ratio {max(height, width) / min(height, width):.1f} is over {MAX_RATIO}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar, w_bar = (math.floor(side / beta / factor) * factor for side in (height, width))
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar, w_bar = (math.ceil(side * beta / factor) * factor for side in (height, width))
    return h_bar, w_bar


def video_pixel_limits(spec: VideoSpec, factor: int) -> tuple[int, int, int]:
    """`(min_pixels, max_pixels, total_pixels)` of a frame, unset ones the reference's defaults for `factor`."""
    tokens = factor * factor
    return (
        spec.min_pixels if spec.min_pixels is not None else VIDEO_MIN_TOKENS * tokens,
        spec.max_pixels if spec.max_pixels is not None else VIDEO_MAX_TOKENS * tokens,
        spec.total_pixels if spec.total_pixels is not None else VIDEO_TOTAL_TOKENS * tokens,
    )


def image_pixel_limits(spec: ImageSpec, factor: int) -> tuple[int, int]:
    """`(min_pixels, max_pixels)` of an image, unset ones the reference's defaults for `factor`."""
    tokens = factor * factor
    return (
        spec.min_pixels if spec.min_pixels is not None else IMAGE_MIN_TOKENS * tokens,
        spec.max_pixels if spec.max_pixels is not None else IMAGE_MAX_TOKENS * tokens,
    )


def frame_pixel_limits(spec: VideoSpec, nframes: int, factor: int) -> tuple[int, float]:
    """Per-frame `(min_pixels, max_pixels)`: the 768-token cap and the total budget shared over the frames
    (qwen-vl-utils' arithmetic), never above the spec's `max_pixels`."""
    min_pixels, max_pixels, total_pixels = video_pixel_limits(spec, factor)
    cap = min(VIDEO_MAX_TOKENS * factor * factor, total_pixels / nframes * FRAME_FACTOR)
    return min_pixels, min(max_pixels, max(cap, int(min_pixels * 1.05)))


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
    min_pixels, max_pixels = frame_pixel_limits(spec, n, geometry.factor)
    h, w = _checked_resize(path, height, width, geometry.factor, min_pixels, max_pixels)
    total_pixels = video_pixel_limits(spec, geometry.factor)[2]
    if h * w * n / FRAME_FACTOR > total_pixels:
        raise MediaError(
            path, "bad_size", f"{n} frames of {w}x{h} (at least min_pixels={min_pixels} a frame) need"
            f" {h * w * n // FRAME_FACTOR} pixels, over the video spec's total_pixels={total_pixels}; qwen-vl-utils would"
            " go over the budget, evr1 refuses: lower min_pixels, fps, nframes or max_frames, or raise total_pixels"
        )
    return FramePlan(sample_indices(first, last, n), h, w, video_fps, span, first, height, width)


def image_size(path: str, spec: ImageSpec, geometry: Geometry, height: int, width: int) -> tuple[int, int]:
    """The size an image is resized to."""
    return _checked_resize(path, height, width, geometry.factor, *image_pixel_limits(spec, geometry.factor))


def _checked_resize(path: str, height: int, width: int, factor: int, min_pixels: float, max_pixels: float) -> tuple[int, int]:
    if min_pixels > max_pixels:
        raise MediaError(path, "bad_size", f"min_pixels={min_pixels} is over max_pixels={max_pixels:g}")
    try:
        h, w = smart_resize(height, width, factor, min_pixels, max_pixels)
    except ValueError as exc:
        raise MediaError(path, "bad_size", f"cannot resize {width}x{height}: {exc}") from None
    if h == 0 or w == 0:
        raise MediaError(path, "bad_size", f"cannot resize {width}x{height}: a side rounds to 0 px within max_pixels={max_pixels:g}")
    if h * w > max_pixels:
        raise MediaError(
            path, "bad_size", f"cannot resize {width}x{height}: the nearest size, {w}x{h}, exceeds max_pixels={max_pixels:g}"
        )
    return h, w
