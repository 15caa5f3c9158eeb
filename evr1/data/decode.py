"""Decoding with PyAV (the default decoder), decord or torchcodec (extras `decord`, `torchcodec`; PyAV and
torchcodec give the same frames bit for bit, decord other chroma on 10-bit and odd-sided 4:2:0 video) and
Pillow; every failure becomes a `MediaError`.

Frames come out as torchcodec gives them (and so qwen-vl-utils, which prefers it): YUV converted to RGB by
FFmpeg's scaler with the stream's own matrix and range (BT.601, BT.709, BT.2020; limited or full;
an untagged stream is BT.601, limited range unless its pixel format is a full-range one), then
turned upright by the display matrix (0/90/180/270 degrees, as phones write it). Sizes are the
upright frame's. PyAV's plain `to_ndarray("rgb24")` would use BT.601 for every stream and ignore
the rotation.

Images are read as qwen-vl-utils `fetch_image` reads them: RGBA composited on white, every other
mode (LA, palette with transparency, CMYK, 16-bit) through Pillow's `convert("RGB")`, EXIF
orientation not applied.

Reasons (stable codes, used in the cache build's failure report): `missing`, `empty`, `corrupt`,
`no_video_stream`, `unsupported_codec`, `unsupported_decoder`, `too_few_frames`, `truncated`,
`bad_clip`, `bad_size`, `unsupported_rotation` (the build adds `changed`, `worker_crashed` and `error`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evr1.data.frame_sampling import MediaError


@dataclass(frozen=True)
class VideoInfo:
    """What the container says about a video stream."""

    total_frames: int
    fps: float
    height: int  # of the upright frame
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


DECODERS = ("pyav", "decord", "torchcodec")


def check_decoder(decoder: str) -> None:
    """A `MediaError`-free check that `decoder` can run here (for configuration errors)."""
    if decoder not in DECODERS:
        raise ValueError(f"decoder {decoder!r} is not available in this build; use one of {', '.join(DECODERS)}")
    if decoder == "pyav":
        return
    import importlib.util

    if importlib.util.find_spec(decoder) is None:
        raise ValueError(f"decoder {decoder!r} is not installed: pip install -e '.[{decoder}]'")
    if decoder == "torchcodec":
        try:
            import torchcodec.decoders  # noqa: F401 - loads the system FFmpeg libraries
        except (ImportError, RuntimeError, OSError) as exc:
            raise ValueError(
                f"decoder 'torchcodec' cannot load FFmpeg ({str(exc).splitlines()[0]}); it needs the FFmpeg shared"
                " libraries of the system (Debian: apt-get install libavfilter8 libavdevice59, see the Makefile)"
            ) from None


def _quarter_turns(rotation: float, path: str | Path) -> int:
    """Counterclockwise quarter turns (0-3) that make a frame upright, from its display matrix's rotation."""
    quarter = round(rotation / 90)
    if abs(rotation - 90 * quarter) > 1e-3:
        raise MediaError(str(path), "unsupported_rotation", f"display matrix rotates by {rotation:g} degrees; only multiples of 90 are supported")
    return quarter % 4


def _upright(frame: np.ndarray, rotation: float, path: str | Path) -> np.ndarray:
    """`frame` (H, W, 3) turned by its display matrix's `rotation` (degrees counterclockwise, FFmpeg's sign)."""
    turns = _quarter_turns(rotation, path)
    return np.rot90(frame, turns) if turns else frame


def _to_rgb(frame, path: str | Path) -> np.ndarray:
    """A decoded PyAV frame as uint8 RGB (H, W, 3), converted and turned as torchcodec does: the frame's
    matrix and range, with FFmpeg's bicubic scaler flags (decord's bilinear ones give other chroma on 10-bit
    4:2:0 and odd-sided 4:2:0, where swscale upsamples chroma through its filter).

    PyAV only applies a colour matrix and range when they differ from the destination's, so the
    destination is given the same matrix and the other range (a range that RGB output ignores)."""
    import av

    full = av.video.reformatter.ColorRange.JPEG
    space, scale = frame.colorspace, frame.color_range
    rgb = frame.to_ndarray(
        format="rgb24", interpolation="BICUBIC", src_colorspace=space, dst_colorspace=space, src_color_range=scale,
        dst_color_range=av.video.reformatter.ColorRange.MPEG if scale == full else full,
    )
    return _upright(rgb, frame.rotation, path)


def _decord_reader(path: str | Path):
    import decord

    check_file(path)
    try:
        return decord.VideoReader(str(path), num_threads=0)
    except (decord.DECORDError, RuntimeError) as exc:  # decord raises RuntimeError when it cannot open a file
        raise MediaError(str(path), "corrupt", f"cannot open as a video: {str(exc).splitlines()[0]}") from None


def _torchcodec_decoder(path: str | Path):
    from torchcodec.decoders import VideoDecoder

    check_file(path)
    try:
        return VideoDecoder(str(path), num_ffmpeg_threads=0)
    except (RuntimeError, ValueError) as exc:
        message = re.sub(r"^\w+, \S+:\d+, ", "", str(exc).splitlines()[0]).strip()  # drop the C++ source location
        if "best video stream is unknown" in message:
            raise MediaError(str(path), "no_video_stream", "file holds no video stream torchcodec can decode") from None
        raise MediaError(str(path), "corrupt", f"cannot open as a video: {message}") from None


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


def _first_frame_turned(path: str | Path) -> bool:
    """Whether the first frame's display matrix turns it a quarter (its upright sides are swapped)."""
    import av

    with _opened(path, "pyav") as (container, stream):
        try:
            frame = next(container.decode(stream), None)
        except av.FFmpegError as exc:
            raise MediaError(str(path), "corrupt", f"cannot decode the video: {exc}") from None
    if frame is None:
        raise MediaError(str(path), "too_few_frames", "video has 0 frame(s); at least 2 are needed")
    return _quarter_turns(frame.rotation, path) % 2 == 1


def probe_video(path: str | Path, decoder: str = "pyav") -> VideoInfo:
    """Frame count, frame rate, upright frame size and codec of the first video stream."""
    if decoder == "decord":
        reader = _decord_reader(path)
        height, width, _ = reader[0].shape  # decord turns frames upright
        return VideoInfo(len(reader), float(reader.get_avg_fps()), height, width, "decord")
    if decoder == "torchcodec":
        meta = _torchcodec_decoder(path).metadata  # sizes of the upright frame
        return VideoInfo(int(meta.num_frames or 0), float(meta.average_fps or 0.0), meta.height, meta.width, "torchcodec")
    import av

    with _opened(path, decoder) as (container, stream):
        try:
            rate = stream.average_rate or stream.guessed_rate
            count = _frame_count(container, stream)
        except av.FFmpegError as exc:
            raise MediaError(str(path), "corrupt", f"cannot read the video stream: {exc}") from None
        height, width, codec = stream.height, stream.width, stream.codec_context.name
    if count and _first_frame_turned(path):
        height, width = width, height
    return VideoInfo(count, float(rate) if rate else 0.0, height, width, codec)


def read_frames(path: str | Path, indices: Sequence[int], decoder: str = "pyav") -> np.ndarray:
    """The frames at `indices` (presentation order, repeats allowed) as upright uint8 RGB, shape (T, H, W, 3)."""
    if decoder == "decord":
        return _decord_frames(path, indices)
    if decoder == "torchcodec":
        return _torchcodec_frames(path, indices)
    import av

    wanted = frozenset(indices)
    last = max(wanted)
    got: dict[int, np.ndarray] = {}
    with _opened(path, decoder) as (container, stream):
        try:
            for i, frame in enumerate(container.decode(stream)):
                if i in wanted:
                    got[i] = _to_rgb(frame, path)
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


def _torchcodec_frames(path: str | Path, indices: Sequence[int]) -> np.ndarray:
    decoder = _torchcodec_decoder(path)
    count = decoder.metadata.num_frames or 0
    if max(indices) >= count:
        raise MediaError(str(path), "truncated", f"the video has {count} frames; frame {max(indices)} is missing")
    try:
        batch = decoder.get_frames_at(indices=list(indices)).data
    except (RuntimeError, IndexError) as exc:
        raise MediaError(str(path), "corrupt", f"cannot decode the video: {str(exc).splitlines()[0]}") from None
    return batch.permute(0, 2, 3, 1).numpy()


def read_image(path: str | Path):
    """An image as an RGB `PIL.Image`, converted as qwen-vl-utils `fetch_image` converts it: RGBA composited
    on white, any other mode through `convert("RGB")` (so LA and a palette lose their transparency)."""
    from PIL import Image, UnidentifiedImageError

    check_file(path)
    try:
        with Image.open(path) as image:
            if image.mode == "RGBA":
                rgb = Image.new("RGB", image.size, (255, 255, 255))
                rgb.paste(image, mask=image.getchannel("A"))
                return rgb
            return image.convert("RGB")
    except Image.DecompressionBombError as exc:  # over PIL's pixel limit: not an OSError
        raise MediaError(str(path), "too_large", f"too large to decode: {exc}") from None
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise MediaError(str(path), "corrupt", f"cannot read as an image: {exc}") from None
