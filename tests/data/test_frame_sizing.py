"""Frame and image sizes at extreme aspect ratios, and each family's default pixel limits (hand-computed)."""

from __future__ import annotations

import pytest
from qwen_vl_utils import vision_process as qvu

from evr1.data.frame_sampling import (
    Geometry,
    MediaError,
    frame_pixel_limits,
    image_pixel_limits,
    image_size,
    plan_frames,
    smart_resize,
    video_pixel_limits,
)
from evr1.specs import ImageSpec, VideoSpec

TOKEN_28, TOKEN_32 = 28 * 28, 32 * 32


@pytest.mark.parametrize(
    ("h", "w", "lo", "hi", "expected"),
    [
        # 9 px rounds to 0 factors: clamped to one (28), then grown over min by beta = sqrt(100352 / 10800) = 3.048:
        # ceil(27.4 / 28) = 1 -> 28, ceil(3657.9 / 28) = 131 -> 3668
        (9, 1200, 128 * TOKEN_28, 768 * TOKEN_28, (28, 3668)),
        # 600x10 frame: 588 x 28 = 16464 < min; beta = sqrt(100352 / 6000) = 4.090: 2453.9 -> 2464, 40.9 -> 56
        (600, 10, 128 * TOKEN_28, 768 * TOKEN_28, (2464, 56)),
        (10, 600, 4 * TOKEN_28, 16384 * TOKEN_28, (28, 588)),  # the image defaults: one factor by 21
    ],
)
def test_a_short_side_is_clamped_to_one_factor(h, w, lo, hi, expected) -> None:
    assert smart_resize(h, w, 28, lo, hi) == expected == qvu.smart_resize(h, w, 28, lo, hi)
    assert expected[0] * expected[1] <= hi


def test_transformers_would_overshoot_max_pixels() -> None:
    """transformers rounds the 9 px side to 0, finds the area under min and grows the whole frame by
    sqrt(20000 / 10800) = 1.361: 28 x 1652 = 46256 px, 1.9x max; qwen-vl-utils (and evr1) clamp it to 28 first,
    find 28 x 1204 over max, shrink by 0.671 and get a 0 px side: refused."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as hf_smart_resize

    assert hf_smart_resize(9, 1200, factor=28, min_pixels=20_000, max_pixels=24_000) == (28, 1652)
    with pytest.raises(ValueError):
        qvu.fetch_image({"image": qvu.Image.new("RGB", (1200, 9)), "min_pixels": 20_000, "max_pixels": 24_000})
    with pytest.raises(MediaError) as err:
        image_size("thin.png", ImageSpec(min_pixels=20_000, max_pixels=24_000), Geometry(), 9, 1200)
    assert err.value.reason == "bad_size" and "rounds to 0" in str(err.value) and "thin.png" in str(err.value)


@pytest.mark.parametrize(
    ("h", "w", "lo", "hi", "match"),
    [
        (1, 201, 1, 10**6, "aspect ratio 201.0 is over 200"),  # qwen-vl-utils and transformers refuse it too
        (10, 600, 128 * TOKEN_28, 128 * TOKEN_28, r"the nearest size, 2464x56, exceeds max_pixels=100352"),
        (9, 1200, 1000, 20_000, "rounds to 0 px"),
        (100, 100, 2000, 1000, "min_pixels=2000 is over max_pixels=1000"),
    ],
)
def test_what_cannot_fit_is_a_clear_error(h, w, lo, hi, match) -> None:
    spec = ImageSpec.model_construct(min_pixels=lo, max_pixels=hi, resize="pil")
    with pytest.raises(MediaError, match=match) as err:
        image_size("x.png", spec, Geometry(), h, w)
    assert err.value.reason == "bad_size"


def test_default_limits_are_the_references_in_each_familys_factor() -> None:
    assert video_pixel_limits(VideoSpec(), 28) == (128 * TOKEN_28, 768 * TOKEN_28, 115_200 * TOKEN_28)
    assert video_pixel_limits(VideoSpec(), 32) == (128 * TOKEN_32, 768 * TOKEN_32, 115_200 * TOKEN_32)
    assert image_pixel_limits(ImageSpec(), 28) == (4 * TOKEN_28, 16_384 * TOKEN_28)
    assert image_pixel_limits(ImageSpec(), 32) == (4 * TOKEN_32, 16_384 * TOKEN_32)
    assert (VideoSpec().fps, VideoSpec().min_frames, VideoSpec().max_frames) == (qvu.FPS, qvu.FPS_MIN_FRAMES, qvu.FPS_MAX_FRAMES)
    assert 115_200 == int(qvu.MODEL_SEQ_LEN * 0.9) and (128, 768) == (qvu.VIDEO_MIN_TOKEN_NUM, qvu.VIDEO_MAX_TOKEN_NUM)


@pytest.mark.parametrize(("factor", "cap"), [(28, 768 * TOKEN_28), (32, 768 * TOKEN_32)])
def test_a_frame_is_capped_at_768_tokens_whatever_max_pixels_says(factor: int, cap: int) -> None:
    assert frame_pixel_limits(VideoSpec(max_pixels=10**8), 4, factor) == (128 * factor * factor, cap)
    # 600 frames share the default budget: 115200 tokens / 600 * 2 = 384 tokens a frame
    assert frame_pixel_limits(VideoSpec(), 600, factor) == (128 * factor * factor, 384 * factor * factor)


def test_total_pixels_is_never_exceeded() -> None:
    """min_pixels x 1.05 can outgrow a small budget (qwen-vl-utils then goes over it): refused, named."""
    spec = VideoSpec(fps=None, nframes=8, min_pixels=28 * 28 * 4, total_pixels=28 * 28 * 8)
    with pytest.raises(MediaError) as err:
        plan_frames("v.mp4", spec, Geometry(), total_frames=30, video_fps=10.0, height=56, width=56)
    assert err.value.reason == "bad_size" and str(err.value) == (
        "v.mp4: 8 frames of 56x56 (at least min_pixels=3136 a frame) need 12544 pixels, over the video spec's"
        " total_pixels=6272; qwen-vl-utils would go over the budget, evr1 refuses: lower min_pixels, fps, nframes or"
        " max_frames, or raise total_pixels")
    ok = plan_frames("v.mp4", spec.model_copy(update={"nframes": 2}), Geometry(), total_frames=30, video_fps=10.0,
                     height=56, width=56)
    assert ok.height * ok.width * 2 / 2 <= 28 * 28 * 8


@pytest.mark.parametrize(("spec", "kwargs", "match"), [
    (VideoSpec, {"max_pixels": 1000}, r"max_pixels \(1000\) < the default min_pixels \(100352 for Qwen2/2.5-VL, 131072"),
    (VideoSpec, {"min_pixels": 2000, "max_pixels": 1000}, r"min_pixels \(2000\) > max_pixels \(1000\)"),
    (ImageSpec, {"max_pixels": 3135}, r"max_pixels \(3135\) < the default min_pixels \(3136 for Qwen2/2.5-VL, 4096"),
])
def test_limits_that_cannot_hold_are_refused_when_the_spec_is_made(spec, kwargs, match) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=match):
        spec(**kwargs)
    assert spec(**{**kwargs, "min_pixels": 10}).min_pixels == 10
