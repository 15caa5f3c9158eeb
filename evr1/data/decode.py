"""Decoding with PyAV (the default decoder), decord (extra `decord`: the same frames bit for bit)
and Pillow; every failure becomes a `MediaError`.

Reasons (stable codes, used in the cache build's failure report): `missing`, `empty`, `corrupt`,
`no_video_stream`, `unsupported_codec`, `unsupported_decoder`, `too_few_frames`, `truncated`,
`bad_clip`, `bad_size` (the build adds `changed`, `worker_crashed` and `error`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evr1.data.media import MediaError


@dataclass(frozen=True)
class VideoInfo:
    """What the container says about a video stream."""

    total_frames: int
    fps: float
    height: int
    width: int
    codec: str


def check_file(path: str | Path) -> os.stat_result:
    """The file's stat, or a `MediaError` for a missing or zero-length file."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        raise MediaError(str(path), "missing", "file not found") from None
    except OSError as exc:
        raise MediaError(str(path), "missing", f"cannot read file: {exc.strerror}") from None
    if stat.st_size == 0:
        raise MediaError(str(path), "empty", "file is empty (0 bytes)")
    return stat


DECODERS = ("pyav", "decord")


def check_decoder(decoder: str) -> None:
    """A `MediaError`-free check that `decoder` can run here (for configuration errors)."""
    if decoder not in DECODERS:
        raise ValueError(f"decoder {decoder!r} is not available in this build; use one of {', '.join(DECODERS)}")
    if decoder == "decord":
        import importlib.util

        if importlib.util.find_spec("decord") is None:
            raise ValueError("decoder 'decord' is not installed: pip install -e '.[decord]'")


def _decord_reader(path: str | Path):
    import decord

    check_file(path)
    try:
        return decord.VideoReader(str(path), num_threads=0)
    except (decord.DECORDError, RuntimeError) as exc:  # decord raises RuntimeError when it cannot open a file
        raise MediaError(str(path), "corrupt", f"cannot open as a video: {str(exc).splitlines()[0]}") from None


@contextmanager
def _opened(path: str | Path, decoder: str):
    if decoder != "pyav":
        raise MediaError(str(path), "unsupported_decoder", f"decoder {decoder!r} is not available here; use 'pyav'")
    import av

    check_file(path)
    try:
        container = av.open(str(path))
    except av.FFmpegError as exc:
        raise MediaError(str(path), "corrupt", f"cannot open as a video: {exc}") from None
    try:
        if not container.streams.video:
            raise MediaError(str(path), "no_video_stream", "file holds no video stream")
        stream = container.streams.video[0]
        if stream.codec_context is None or stream.codec_context.name in (None, "", "none"):
            raise MediaError(str(path), "unsupported_codec", "no decoder for the video codec")
        stream.thread_type = "AUTO"
        yield container, stream
    finally:
        container.close()


def _frame_count(container, stream) -> int:
    if stream.frames:
        return int(stream.frames)
    return sum(1 for packet in container.demux(stream) if packet.size)  # containers without a frame count


def probe_video(path: str | Path, decoder: str = "pyav") -> VideoInfo:
    """Frame count, frame rate, size and codec of the first video stream."""
    if decoder == "decord":
        reader = _decord_reader(path)
        height, width, _ = reader[0].shape
        return VideoInfo(len(reader), float(reader.get_avg_fps()), height, width, "decord")
    import av

    with _opened(path, decoder) as (container, stream):
        try:
            rate = stream.average_rate or stream.guessed_rate
            count = _frame_count(container, stream)
        except av.FFmpegError as exc:
            raise MediaError(str(path), "corrupt", f"cannot read the video stream: {exc}") from None
        return VideoInfo(count, float(rate) if rate else 0.0, stream.height, stream.width, stream.codec_context.name)


def read_frames(path: str | Path, indices: Sequence[int], decoder: str = "pyav") -> np.ndarray:
    """The frames at `indices` (presentation order, repeats allowed) as uint8 RGB, shape (T, H, W, 3)."""
    if decoder == "decord":
        return _decord_frames(path, indices)
    import av

    wanted = frozenset(indices)
    last = max(wanted)
    got: dict[int, np.ndarray] = {}
    with _opened(path, decoder) as (container, stream):
        try:
            for i, frame in enumerate(container.decode(stream)):
                if i in wanted:
                    got[i] = frame.to_ndarray(format="rgb24")
                if i >= last:
                    break
        except av.FFmpegError as exc:
            if not got:
                raise MediaError(str(path), "corrupt", f"cannot decode the video: {exc}") from None
        except ValueError as exc:  # e.g. an unsupported pixel format
            raise MediaError(str(path), "unsupported_codec", f"cannot convert frames: {exc}") from None
    missing = sorted(wanted - got.keys())
    if missing:
        raise MediaError(str(path), "truncated", f"decoded {len(got)} of the {len(wanted)} frames asked for; frame {missing[0]} is missing")
    return np.stack([got[i] for i in indices])


def _decord_frames(path: str | Path, indices: Sequence[int]) -> np.ndarray:
    import decord

    reader = _decord_reader(path)
    wanted = sorted(set(indices))
    if wanted[-1] >= len(reader):
        raise MediaError(str(path), "truncated", f"the video has {len(reader)} frames; frame {wanted[-1]} is missing")
    try:
        batch = reader.get_batch(wanted).asnumpy()
    except (decord.DECORDError, RuntimeError) as exc:
        raise MediaError(str(path), "corrupt", f"cannot decode the video: {str(exc).splitlines()[0]}") from None
    where = {i: k for k, i in enumerate(wanted)}
    return batch[[where[i] for i in indices]]


def read_image(path: str | Path) -> np.ndarray:
    """An image as uint8 RGB, shape (H, W, 3) (any mode converted as the HF processors convert it)."""
    from PIL import Image, UnidentifiedImageError

    check_file(path)
    try:
        with Image.open(path) as image:
            return np.array(image.convert("RGB"))
    except Image.DecompressionBombError as exc:  # over PIL's pixel limit: not an OSError
        raise MediaError(str(path), "too_large", f"too large to decode: {exc}") from None
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise MediaError(str(path), "corrupt", f"cannot read as an image: {exc}") from None
