"""Frame sampling and sizing: hand-computed tables, and properties against qwen-vl-utils' own maths."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qwen_vl_utils import vision_process as qvu

from evr1.data.frame_sampling import (
    Geometry,
    MediaError,
    clip_range,
    count_frames,
    frame_pixel_limits,
    image_size,
    plan_frames,
    sample_indices,
    smart_resize,
)
from evr1.specs import ImageSpec, VideoSpec


@pytest.mark.parametrize(
    ("spec", "total", "fps", "expected"),
    [
        (VideoSpec(fps=2.0), 300, 30.0, 20),  # 10 s at 2 fps
        (VideoSpec(fps=2.0), 45, 30.0, 4),  # 1.5 s -> 3 frames, raised to min_frames 4
        (VideoSpec(fps=2.0, max_frames=9), 900, 30.0, 8),  # 60 frames capped at 9, floored to a pair
        (VideoSpec(fps=1.0, min_frames=5), 100, 10.0, 10),  # 10 s at 1 fps; min 5 -> 6 does not bind
        (VideoSpec(fps=2.0, min_frames=8), 6, 30.0, 6),  # cannot take more frames than the clip has
        (VideoSpec(fps=0.5), 25, 10.0, 4),  # 2.5 s -> 1.25, raised to min 4
        (VideoSpec(fps=None, nframes=7), 100, 25.0, 8),  # 7 rounds to 8
        (VideoSpec(fps=None, nframes=5), 100, 25.0, 4),  # round half to even: 2.5 -> 2 pairs
    ],
)
def test_count_frames(spec: VideoSpec, total: int, fps: float, expected: int) -> None:
    assert count_frames("v.mp4", spec, total, fps) == expected


def test_count_frames_rejects_impossible_counts() -> None:
    with pytest.raises(MediaError) as err:
        count_frames("v.mp4", VideoSpec(fps=None, nframes=40), 30, 30.0)
    assert err.value.reason == "too_few_frames" and "40" in str(err.value) and "v.mp4" in str(err.value)


@pytest.mark.parametrize(
    ("total", "fps", "start", "end", "expected"),
    [
        (100, 10.0, None, None, (0, 99)),
        (100, 10.0, 1.25, None, (13, 99)),  # ceil(12.5)
        (100, 10.0, None, 4.27, (0, 42)),  # floor(42.7)
        (100, 10.0, 2.0, 50.0, (20, 99)),  # end clamped to the video
        (90, 30.0, 0.5, 1.5, (15, 45)),
    ],
)
def test_clip_range(total: int, fps: float, start, end, expected) -> None:
    assert clip_range("v.mp4", total, fps, start, end) == expected


def test_clip_range_past_the_end_is_an_error() -> None:
    with pytest.raises(MediaError) as err:
        clip_range("v.mp4", 100, 10.0, 12.0, 15.0)
    assert err.value.reason == "bad_clip"


def test_sample_indices_table() -> None:
    assert sample_indices(0, 99, 4) == (0, 33, 66, 99)
    assert sample_indices(15, 45, 4) == (15, 25, 35, 45)
    assert sample_indices(0, 9, 10) == tuple(range(10))


@pytest.mark.parametrize(
    ("h", "w", "factor", "lo", "hi", "expected"),
    [
        (240, 320, 28, 3136, 200704, (252, 308)),  # rounded to multiples of 28
        (240, 320, 32, 4096, 200704, (256, 320)),
        (720, 1280, 28, 3136, 448 * 448, (336, 588)),  # beta = sqrt(720*1280/200704) = 2.143: 336, 597 -> 588
        (50, 50, 28, 100 * 28 * 28, 10**6, (280, 280)),  # grown over the minimum
    ],
)
def test_smart_resize_table(h: int, w: int, factor: int, lo: int, hi: int, expected) -> None:
    out = smart_resize(h, w, factor, lo, hi)
    assert out == expected and out[0] % factor == 0 and out[1] % factor == 0


def test_total_pixel_budget_lowers_the_frame_limit() -> None:
    spec = VideoSpec(min_pixels=1000, max_pixels=100_000, total_pixels=400_000)
    assert frame_pixel_limits(spec, 20, 28) == (1000, 40_000.0)  # 400000 / 20 * 2
    assert frame_pixel_limits(spec, 4, 28) == (1000, 100_000)  # the per-frame maximum binds
    assert frame_pixel_limits(VideoSpec(min_pixels=1000, max_pixels=100_000, total_pixels=2000), 40, 28) == (1000, 1050)


def test_plan_frames_combines_clip_count_and_size() -> None:
    plan = plan_frames("v.mp4", VideoSpec(fps=2.0, min_pixels=3136), Geometry(14, 2, 2), total_frames=300, video_fps=30.0,
                       height=240, width=320, start=2.0, end=6.0)
    # frames 60..180 (121 frames, 4.03 s) at 2 fps -> 8 frames
    assert plan.indices == (60, 77, 94, 111, 129, 146, 163, 180)
    assert (plan.height, plan.width) == (252, 308)
    assert plan.first == 60 and plan.timestamps[0] == 0.0 and plan.timestamps[-1] == 4.0  # the clip clock: 0 s at frame 60
    assert plan.timestamps[1] == pytest.approx(17 / 30) and (plan.source_height, plan.source_width) == (240, 320)
    assert plan.sample_fps == pytest.approx(8 / 121 * 30)


def test_one_frame_video_is_refused() -> None:
    with pytest.raises(MediaError) as err:
        plan_frames("one.mp4", VideoSpec(), Geometry(), total_frames=1, video_fps=10.0, height=48, width=64)
    assert err.value.reason == "too_few_frames"


def test_image_size_uses_the_image_budget() -> None:
    assert image_size("i.png", ImageSpec(min_pixels=3136, max_pixels=28 * 28 * 16), Geometry(), 300, 400) == (84, 112)
    with pytest.raises(MediaError) as err:
        image_size("i.png", ImageSpec(), Geometry(), 1, 400)  # aspect ratio over 200
    assert err.value.reason == "bad_size"


@settings(max_examples=60, deadline=None)
@given(
    total=st.integers(2, 3000), video_fps=st.sampled_from([10.0, 24.0, 25.0, 29.97, 30.0, 60.0]),
    fps=st.floats(0.1, 8.0), min_frames=st.integers(1, 16), max_frames=st.integers(16, 256),
)
def test_frame_count_matches_qwen_vl_utils(total, video_fps, fps, min_frames, max_frames) -> None:
    spec = VideoSpec(fps=fps, min_frames=min_frames, max_frames=max_frames)
    ele = {"fps": fps, "min_frames": min_frames, "max_frames": max_frames}
    try:
        expected = qvu.smart_nframes(ele, total_frames=total, video_fps=video_fps)
    except ValueError:
        with pytest.raises(MediaError):
            count_frames("v", spec, total, video_fps)
        return
    assert count_frames("v", spec, total, video_fps) == expected


@settings(max_examples=60, deadline=None)
@given(total=st.integers(2, 2000), video_fps=st.sampled_from([10.0, 24.0, 30.0]),
       start=st.none() | st.floats(0, 100), length=st.none() | st.floats(0.05, 100))
def test_clip_range_matches_qwen_vl_utils(total, video_fps, start, length) -> None:
    end = None if length is None else (start or 0.0) + length
    ele = {"video_start": start, "video_end": end}
    try:
        first, last, _ = qvu.calculate_video_frame_range(ele, total, video_fps)
    except ValueError:
        with pytest.raises(MediaError):
            clip_range("v", total, video_fps, start, end)
        return
    assert clip_range("v", total, video_fps, start, end) == (first, last)


@settings(max_examples=80, deadline=None)
@given(h=st.integers(1, 2000), w=st.integers(1, 2000), factor=st.sampled_from([28, 32]),
       lo=st.integers(1, 300), hi=st.integers(300, 3000))
def test_resize_matches_qwen_vl_utils(h, w, factor, lo, hi) -> None:
    """Any shape, extreme ones included: the same size as qwen-vl-utils, or a ValueError where it raises."""
    args = (h, w, factor, lo * factor * factor, hi * factor * factor)
    try:
        expected = qvu.smart_resize(*args)
    except ValueError:
        with pytest.raises(ValueError, match="aspect ratio"):
            smart_resize(*args)
        return
    assert smart_resize(*args) == expected
