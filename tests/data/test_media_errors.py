"""Every kind of bad input becomes a `MediaError` with a stable reason and the file's name."""

from __future__ import annotations

import pytest
from media_cases import BAD, BAD_IMAGES, CLIPS

from evr1.data.decode import probe_video, read_frames
from evr1.data.frame_sampling import Geometry, MediaError
from evr1.data.live import prepare_image, prepare_video
from evr1.specs import ImageSpec, VideoSpec


@pytest.mark.parametrize(("name", "reason"), sorted(BAD.items()))
def test_bad_video(media_root, name: str, reason: str) -> None:
    with pytest.raises(MediaError) as err:
        prepare_video(media_root / name, VideoSpec(), Geometry())
    assert err.value.reason == reason
    assert name in str(err.value)


@pytest.mark.parametrize(("name", "reason"), sorted(BAD_IMAGES.items()))
def test_bad_image(media_root, name: str, reason: str) -> None:
    with pytest.raises(MediaError) as err:
        prepare_image(media_root / name, ImageSpec(), Geometry())
    assert err.value.reason == reason and name in str(err.value)


def test_a_video_is_not_an_image(media_root) -> None:
    with pytest.raises(MediaError) as err:
        prepare_image(media_root / "small.mp4", ImageSpec(), Geometry())
    assert err.value.reason == "corrupt"


def test_probe_reports_the_container_facts(media_root) -> None:
    for name, (w, h, fps, frames, codec) in CLIPS.items():
        info = probe_video(media_root / name)
        assert (info.width, info.height, info.total_frames) == (w, h, frames)
        assert info.fps == pytest.approx(fps)
        assert info.codec == ("h264" if codec == "libx264" else codec)


def test_asking_for_frames_past_the_end_names_the_missing_frame(media_root) -> None:
    with pytest.raises(MediaError) as err:
        read_frames(media_root / "small.mp4", [0, 44, 45])  # 45 frames: 0..44
    assert err.value.reason == "truncated" and "frame 45" in str(err.value)


def test_repeated_indices_are_served(media_root) -> None:
    frames = read_frames(media_root / "small.mp4", [3, 3, 1])
    assert frames.shape == (3, 120, 160, 3) and (frames[0] == frames[1]).all() and not (frames[0] == frames[2]).all()


def test_unknown_decoder_is_a_clear_error(media_root) -> None:
    from evr1.data.decode import check_decoder, read_frames

    with pytest.raises(MediaError) as err:
        read_frames(media_root / "small.mp4", [0, 1], "gstreamer")
    assert err.value.reason == "unsupported_decoder" and "pyav" in str(err.value)
    with pytest.raises(ValueError, match="use one of pyav, decord, torchcodec"):
        check_decoder("gstreamer")


def test_clip_outside_the_video(media_root) -> None:
    with pytest.raises(MediaError) as err:
        prepare_video(media_root / "small.mp4", VideoSpec(), Geometry(), start=5.0, end=9.0)  # the clip lasts 1.5 s
    assert err.value.reason == "bad_clip"


def test_an_image_over_pils_pixel_limit_is_a_media_error(tmp_path, monkeypatch) -> None:
    """PIL refuses images over twice `MAX_IMAGE_PIXELS` with an error that is no OSError: it must still
    become a record's media failure, not end a training run."""
    import numpy as np
    from PIL import Image

    from evr1.data.decode import read_image

    Image.fromarray(np.zeros((64, 64, 3), np.uint8)).save(tmp_path / "big.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # 4,096 px is over 2 x 100
    with pytest.raises(MediaError) as err:
        read_image(tmp_path / "big.png")
    assert err.value.reason == "too_large" and "big.png" in str(err.value)
