"""Video and image decoding budgets and the tensor cache."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from evr1.specs.base import PositiveInt, Spec


class VideoSpec(Spec):
    """How a video becomes frames: sampling rate or count, frame limits and pixel budgets.

    `fps` samples `duration * fps` frames clamped to `[min_frames, max_frames]`; `nframes` takes a
    fixed count (both rounded to pairs of frames). `min_pixels`/`max_pixels` bound each frame (also
    capped at 768 tokens, as qwen-vl-utils caps it); `total_pixels` (qwen-vl-utils' meaning) lowers
    the per-frame bound to `total_pixels * 2 / frames`, and is never exceeded: frames that `min_pixels`
    would hold over it are refused (qwen-vl-utils goes over it). Unset pixel limits are qwen-vl-utils'
    defaults in the model family's own factor (28 px for Qwen2/2.5-VL, 32 px for Qwen3-VL): 128 to
    768 tokens a frame, 115,200 in all. `decoder`: "pyav" (default) or "torchcodec" (extra): the
    frames of qwen-vl-utils' torchcodec reader; "decord" (extra): those of its decord reader, which differ
    on 10-bit and odd-sided 4:2:0 video (see the README). `clock`: what a
    Qwen3-VL prompt's frame times count from: "source" (seconds of the source video, as
    qwen-vl-utils + the HF processor time a clip) or "clip" (seconds since the clip's first frame).
    """

    fps: Annotated[float, Field(gt=0)] | None = 2.0
    nframes: PositiveInt | None = None
    min_frames: PositiveInt = 4
    max_frames: PositiveInt = 768
    min_pixels: PositiveInt | None = None
    max_pixels: PositiveInt | None = None
    total_pixels: PositiveInt | None = None
    decoder: Literal["pyav", "torchcodec", "decord"] = "pyav"
    clock: Literal["source", "clip"] = "source"

    @model_validator(mode="after")
    def _consistent(self) -> VideoSpec:
        if (self.fps is None) == (self.nframes is None):
            raise ValueError("set exactly one of fps and nframes")
        if self.min_frames > self.max_frames:
            raise ValueError(f"min_frames ({self.min_frames}) > max_frames ({self.max_frames})")
        _check_pixel_range(self.min_pixels, self.max_pixels, 128)
        return self


def _check_pixel_range(min_pixels: int | None, max_pixels: int | None, default_min_tokens: int) -> None:
    """min <= max, an unset min being its family default (`default_min_tokens` of 28 or 32 px squares)."""
    if min_pixels is not None and max_pixels is not None and min_pixels > max_pixels:
        raise ValueError(f"min_pixels ({min_pixels}) > max_pixels ({max_pixels})")
    floor = default_min_tokens * 28 * 28
    if min_pixels is None and max_pixels is not None and max_pixels < floor:
        raise ValueError(
            f"max_pixels ({max_pixels}) < the default min_pixels ({floor} for Qwen2/2.5-VL,"
            f" {default_min_tokens * 32 * 32} for Qwen3-VL): set min_pixels too"
        )


class ImageSpec(Spec):
    """How an image is resized: its own pixel budget, independent of video.

    Unset limits are qwen-vl-utils' defaults in the family's factor: 4 to 16,384 tokens. `resize`:
    "pil" (default) resizes as qwen-vl-utils `fetch_image` does (Pillow's bicubic filter), so the
    pixels are the reference's; "torch" resizes as the HF image processor alone would (torchvision's
    antialiased bicubic on uint8): 1.2x faster on a 12 MP photo, 0.4% of its values 1 level off.
    """

    min_pixels: PositiveInt | None = None
    max_pixels: PositiveInt | None = None
    resize: Literal["pil", "torch"] = "pil"

    @model_validator(mode="after")
    def _consistent(self) -> ImageSpec:
        _check_pixel_range(self.min_pixels, self.max_pixels, 4)
        return self


class CacheSpec(Spec):
    """The LMDB tensor cache: where it is, how misses are handled and how pixels are stored.

    `storage="uint8"`: resized uint8 pixels in patch order, normalised on read, bitwise equal to
    the live path (1 byte per value). `"bfloat16"`: the normalised values rounded to bf16 (2 bytes,
    not bitwise equal), for processors whose arithmetic is not a per-channel normalisation.
    """

    path: str | None = None
    mode: Literal["prefer", "only", "bypass"] = "prefer"
    map_size_gb: PositiveInt = 256
    storage: Literal["uint8", "bfloat16"] = "uint8"
