"""The torchcodec decoder: the same facts and frames as PyAV, and the same kind of errors."""

from __future__ import annotations

import pytest
from media_cases import BAD, CLIPS

from evr1.data.decode import probe_video, read_frames
from evr1.data.frame_sampling import Geometry, MediaError
from evr1.data.live import prepare_video
from evr1.specs import VideoSpec

# torchcodec cannot tell an unknown codec from no video stream: both are "no video stream it can decode"
REASONS = {**BAD, "bad_codec.mp4": "no_video_stream"}


@pytest.mark.parametrize("name", sorted(CLIPS))
def test_facts_and_frames_are_pyavs(media_root, name: str) -> None:
    ours, theirs = probe_video(media_root / name, "pyav"), probe_video(media_root / name, "torchcodec")
    assert (theirs.total_frames, theirs.height, theirs.width) == (ours.total_frames, ours.height, ours.width)
    assert theirs.fps == pytest.approx(ours.fps)
    last = CLIPS[name][3] - 1
    indices = [last, 0, last // 2, 0, 1]  # unsorted, repeated, the last frame
    pyav, codec = read_frames(media_root / name, indices, "pyav"), read_frames(media_root / name, indices, "torchcodec")
    assert codec.shape == pyav.shape == (5, CLIPS[name][1], CLIPS[name][0], 3) and (codec == pyav).all()


def test_a_frame_past_the_end_is_truncated(media_root) -> None:
    with pytest.raises(MediaError) as err:
        read_frames(media_root / "small.mp4", [0, 45], "torchcodec")
    assert err.value.reason == "truncated" and "45 frames" in str(err.value) and "small.mp4" in str(err.value)


@pytest.mark.parametrize("name", sorted(REASONS))
def test_every_bad_video_is_a_media_error_with_its_reason(media_root, name: str) -> None:
    with pytest.raises(MediaError) as err:
        prepare_video(media_root / name, VideoSpec(decoder="torchcodec"), Geometry())
    assert err.value.reason == REASONS[name] and name in str(err.value) and ".cpp" not in str(err.value)
