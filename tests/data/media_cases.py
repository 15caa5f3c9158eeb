"""The generated media of the data tests (see conftest.py) and what each bad file must be reported as."""

# name: (width, height, fps, frames, codec)
CLIPS = {
    "small.mp4": (160, 120, 30, 45, "libx264"),
    "wide.mp4": (256, 144, 24, 60, "mpeg4"),
    "tall.mp4": (120, 200, 10, 25, "libx264"),
    "long.mp4": (320, 240, 25, 150, "libx264"),
}
IMAGES = {"photo.png": (300, 200, "RGB"), "alpha.png": (64, 90, "RGBA"), "photo.jpg": (250, 180, "RGB")}
# Media as phones, HD cameras and image editors make them (tiny): name: (width, height, options of write_clip,
# display rotation clockwise). 8 frames at 10 fps.
REAL_CLIPS = {
    "bt709.mp4": (96, 64, {"colorspace": 1, "color_range": 1}, 0),
    "bt709_full.mp4": (96, 64, {"colorspace": 1, "color_range": 2}, 0),
    "bt2020.mp4": (96, 64, {"colorspace": 9, "color_range": 1}, 0),
    "bt2020_10bit.mp4": (96, 64, {"colorspace": 9, "color_range": 1, "pix_fmt": "yuv420p10le"}, 0),
    "untagged.mp4": (96, 64, {}, 0),
    "rot90.mp4": (96, 64, {"colorspace": 1, "color_range": 1}, 90),
    "rot180.mp4": (96, 64, {}, 180),
    "thin.mp4": (10, 600, {}, 0),
    "flat.mp4": (1200, 9, {"pix_fmt": "yuv444p"}, 0),  # 9 rows: 4:2:0 needs even sides
    # archive and camera formats: 10-bit untagged, 4:4:4 at odd sides, FFV1 (lossless) at odd sides
    "ten_bit.mp4": (96, 64, {"pix_fmt": "yuv420p10le"}, 0),
    "odd_444.mp4": (97, 63, {"pix_fmt": "yuv444p"}, 0),
    "ffv1_odd.mkv": (97, 63, {"codec": "ffv1"}, 0),
    "ffv1_odd_444.mkv": (97, 63, {"codec": "ffv1", "pix_fmt": "yuv444p"}, 0),
    "ffv1_odd_10bit.mkv": (97, 63, {"codec": "ffv1", "pix_fmt": "yuv420p10le"}, 0),
}
# Where decord's frames are not torchcodec's: swscale's general path (10-bit 4:2:0, 4:2:0 at odd sides) upsamples
# the chroma with the scaler's filter, bilinear in decord and bicubic in torchcodec (see the README).
DECORD_DIFFERS = {"bt2020_10bit.mp4", "ten_bit.mp4", "ffv1_odd.mkv", "ffv1_odd_10bit.mkv"}
# name: what it is (made by conftest's `_write_real_images`)
REAL_IMAGES = ["rgba.png", "la.png", "palette.png", "cmyk.jpg", "exif_rotated.jpg", "deep.png", "thin.png", "flat.png"]
# bad file: the reason code it must be reported with
BAD = {
    "missing.mp4": "missing",
    "empty.mp4": "empty",
    "corrupt.mp4": "corrupt",
    "truncated.mp4": "corrupt",
    "one_frame.mp4": "too_few_frames",
    "bad_codec.mp4": "unsupported_codec",
    "audio_only.mp4": "no_video_stream",
}
BAD_IMAGES = {"corrupt.png": "corrupt", "gone.png": "missing"}


def crash_on_boom(task):
    """A build worker function that dies like a crashing decoder on `boom.mp4` (imported by spawned workers)."""
    import os
    import signal

    from evr1.data.cache_build import _work

    if task.ref.path == "boom.mp4":
        os.kill(os.getpid(), signal.SIGKILL)
    return _work(task)
