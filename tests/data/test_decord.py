"""The decord decoder: the same frames, facts and patches as PyAV, and the same kind of errors."""

from __future__ import annotations

import pytest
import torch
from media_cases import BAD, CLIPS

from evr1.data.decode import probe_video, read_frames
from evr1.data.frame_sampling import Geometry, MediaError
from evr1.data.live import prepare_video
from evr1.specs import VideoSpec


@pytest.mark.parametrize("name", sorted(CLIPS))
def test_probe_agrees_with_pyav(media_root, name: str) -> None:
    ours, theirs = probe_video(media_root / name, "pyav"), probe_video(media_root / name, "decord")
    assert (theirs.total_frames, theirs.height, theirs.width) == (ours.total_frames, ours.height, ours.width)
    assert theirs.fps == pytest.approx(ours.fps)


@pytest.mark.parametrize("name", sorted(CLIPS))
def test_frames_are_bitwise_pyav_frames(media_root, name: str) -> None:
    last = CLIPS[name][3] - 1
    indices = [last, 0, last // 2, 0, 1]  # unsorted, repeated, the last frame (a seek past keyframes)
    pyav, decord = read_frames(media_root / name, indices, "pyav"), read_frames(media_root / name, indices, "decord")
    assert decord.shape == pyav.shape == (5, CLIPS[name][1], CLIPS[name][0], 3)
    assert (decord == pyav).all()


@pytest.mark.parametrize(("start", "end"), [(None, None), (1.0, 4.5)])
def test_prepared_patches_are_identical(media_root, start, end) -> None:
    spec = VideoSpec(fps=2.0, min_pixels=28 * 28, max_pixels=112 * 112)
    ours = prepare_video(media_root / "long.mp4", spec, Geometry(), start, end)
    theirs = prepare_video(media_root / "long.mp4", spec.model_copy(update={"decoder": "decord"}), Geometry(), start, end)
    assert theirs.info == ours.info  # the same frames sampled at the same times
    assert torch.equal(theirs.patches.data, ours.patches.data)


def test_a_frame_past_the_end_is_truncated(media_root) -> None:
    with pytest.raises(MediaError) as err:
        read_frames(media_root / "small.mp4", [0, 45], "decord")
    assert err.value.reason == "truncated" and "45 frames" in str(err.value) and "small.mp4" in str(err.value)


@pytest.mark.parametrize(("name", "reason"), [("missing.mp4", "missing"), ("empty.mp4", "empty"),
                                              ("corrupt.mp4", "corrupt"), ("one_frame.mp4", "too_few_frames")])
def test_bad_videos_have_the_same_reasons(media_root, name: str, reason: str) -> None:
    with pytest.raises(MediaError) as err:
        prepare_video(media_root / name, VideoSpec(decoder="decord"), Geometry())
    assert err.value.reason == reason and name in str(err.value)


@pytest.mark.parametrize("name", sorted(BAD))
def test_every_bad_video_is_a_media_error(media_root, name: str) -> None:
    with pytest.raises(MediaError) as err:
        prepare_video(media_root / name, VideoSpec(decoder="decord"), Geometry())
    assert name in str(err.value)
