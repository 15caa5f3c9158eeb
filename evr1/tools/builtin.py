"""The built-in video tools: `seek` (the frames of a span) and `zoom` (a crop of one frame, enlarged).

Times are on the prompt's clock: what the model reads frame times on (seconds since the clip's start, or the
source video's seconds for a Qwen3-VL prompt with `VideoSpec.clock="source"`). A `zoom` box is in pixels of the
frame as the prompt showed it, `[x1, y1, x2, y2]`, Qwen2.5-VL's absolute convention.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, ClassVar

import torch

from evr1.data.cache import CacheError
from evr1.data.decode import read_frames
from evr1.data.frame_sampling import MediaError, smart_resize
from evr1.data.live import MediaInfo, resize_image
from evr1.data.loader import CacheMissError, ProcessedMedia
from evr1.data.patches import image_patches
from evr1.data.records import MediaRef
from evr1.registry import TOOLS
from evr1.tools.base import ToolContext, ToolReply

_SECONDS = {"type": "number"}


def _fmt(seconds: float) -> str:
    return f"{seconds:.2f}".rstrip("0").rstrip(".")


class Seek:
    """The frames of a time span of the video, at the data's frame rate, within a per-call pixel budget."""

    description = (
        "Watch a time span of the video more closely: returns its frames at a higher rate than the overview."
        " Times are in seconds, as the video's frame times are shown."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"start_s": _SECONDS, "end_s": _SECONDS},
        "required": ["start_s", "end_s"],
    }

    def __call__(self, arguments: dict[str, Any], context: ToolContext) -> ToolReply:
        start, end = float(arguments["start_s"]), float(arguments["end_s"])
        low, high = context.time_range()
        if not low <= start < end <= high:
            return ToolReply.failure(
                "out_of_range", f"the span {_fmt(start)}-{_fmt(end)} s must start before it ends and lie within the"
                f" video, {_fmt(low)}-{_fmt(high)} s"
            )
        ref = MediaRef(kind="video", path=context.video.path, start=context.source_seconds(start),
                       end=context.source_seconds(end))
        try:
            media = context.media.seek_loader.load_media(ref, context.record_id)
        except MediaError as exc:
            return ToolReply.failure(exc.reason, exc.detail)
        except (CacheMissError, CacheError) as exc:  # CacheSpec.mode "only" and no entry for this span
            return ToolReply.failure("cache_miss", str(exc))
        media = on_clip_clock(media, context)
        fps = media.info.video_fps or 1.0
        times = [context.prompt_seconds(i / fps) for i in media.info.frame_indices]
        text = f"{len(times)} frames of {_fmt(start)}-{_fmt(end)} s, at {', '.join(_fmt(t) for t in times)} s."
        return ToolReply(text, (media,))


class Zoom:
    """A crop of the frame nearest a time, from the source video, resized up into the tools' zoom budget."""

    description = (
        "Look closely at a region of one frame: returns that region of the frame nearest time_s at a higher"
        " resolution. box is [x1, y1, x2, y2] in pixels of the frame as you were shown it."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "time_s": _SECONDS,
            "box": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
        },
        "required": ["time_s", "box"],
    }

    def __call__(self, arguments: dict[str, Any], context: ToolContext) -> ToolReply:
        t = float(arguments["time_s"])
        x1, y1, x2, y2 = (float(v) for v in arguments["box"])
        low, high = context.time_range()
        if not low <= t <= high:
            return ToolReply.failure("out_of_range", f"time {_fmt(t)} s is outside the video, {_fmt(low)}-{_fmt(high)} s")
        info = context.shown.info
        if not (0 <= x1 < x2 <= info.width and 0 <= y1 < y2 <= info.height):
            return ToolReply.failure(
                "bad_box", f"box [{_fmt(x1)}, {_fmt(y1)}, {_fmt(x2)}, {_fmt(y2)}] must have x1 < x2, y1 < y2 and lie"
                f" within the {info.width}x{info.height} frame"
            )
        index = nearest_frame(context, t)
        crop = crop_box((x1, y1, x2, y2), (info.width, info.height), (info.source_width, info.source_height))
        try:
            frame = read_frames(context.media.seek_loader.source(context.video), [index], context.media.video.decoder)[0]
        except MediaError as exc:
            return ToolReply.failure(exc.reason, exc.detail)
        return self._reply(context, frame[crop[1] : crop[3], crop[0] : crop[2]], index, t)

    def _reply(self, context: ToolContext, region: Any, index: int, t: float) -> ToolReply:
        spec, image = context.spec, context.media.seek_loader.modalities["image"]
        height, width = region.shape[:2]
        try:
            h, w = smart_resize(height, width, image.geometry.factor, spec.zoom_min_pixels, spec.zoom_max_pixels)
        except ValueError as exc:
            return ToolReply.failure("bad_box", f"cannot enlarge a {width}x{height} px region: {exc}")
        pixels = resize_image(torch.from_numpy(region.copy()).permute(2, 0, 1), h, w, image.geometry)
        patches = image_patches(pixels, image.geometry)
        grid = torch.tensor([patches.grid_thw], dtype=torch.long)
        info = MediaInfo("image", patches.grid_thw, h, w, frame_indices=(index,), timestamps=(t,),
                         source_height=height, source_width=width)
        media = ProcessedMedia("image", context.video.path, image.normaliser.apply(patches), grid, info, cache_hit=False)
        return ToolReply(f"The region at {_fmt(t)} s, enlarged to {w}x{h} px.", (media,))


def on_clip_clock(media: ProcessedMedia, context: ToolContext) -> ProcessedMedia:
    """A span's frames timed on the clock of the sample's clip (not the span's own), so a Qwen3-VL reply labels its
    frames with the times the prompt's frames are labelled on."""
    first = context.shown.info.first_frame
    fps = media.info.video_fps or 1.0
    timestamps = tuple((i - first) / fps for i in media.info.frame_indices)
    return replace(media, info=replace(media.info, first_frame=first, timestamps=timestamps))


def nearest_frame(context: ToolContext, t: float) -> int:
    """The index in the source video of the clip's frame nearest time `t` (prompt clock)."""
    info = context.shown.info
    fps = info.video_fps or 1.0
    last = info.first_frame + (info.total_frames or 1) - 1
    return min(max(round(context.source_seconds(t) * fps), info.first_frame), last)


def crop_box(box: tuple[float, float, float, float], shown: tuple[int, int], source: tuple[int | None, int | None]
             ) -> tuple[int, int, int, int]:
    """`box` on a `shown` (width, height) frame as whole source pixels `(left, top, right, bottom)`, outward-rounded."""
    width, height = source[0] or shown[0], source[1] or shown[1]
    return (
        max(0, math.floor(box[0] * width / shown[0])), max(0, math.floor(box[1] * height / shown[1])),
        min(width, math.ceil(box[2] * width / shown[0])), min(height, math.ceil(box[3] * height / shown[1])),
    )


TOOLS.register("seek", Seek())
TOOLS.register("zoom", Zoom())
