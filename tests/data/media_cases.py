"""The generated media of the data tests (see conftest.py) and what each bad file must be reported as."""

# name: (width, height, fps, frames, codec)
CLIPS = {
    "small.mp4": (160, 120, 30, 45, "libx264"),
    "wide.mp4": (256, 144, 24, 60, "mpeg4"),
    "tall.mp4": (120, 200, 10, 25, "libx264"),
    "long.mp4": (320, 240, 25, 150, "libx264"),
}
IMAGES = {"photo.png": (300, 200, "RGB"), "alpha.png": (64, 90, "RGBA"), "photo.jpg": (250, 180, "RGB")}
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
