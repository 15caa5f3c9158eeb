"""Reading intervals, boxes and box tracks out of answers (JSON, bare lists, Qwen formats, prose).

- intervals: `[3.5, 7]`, `{"start": 3.5, "end": 7}`, `{"time": [..]}`, "from 3.5 s to 7 s",
  "00:03 - 1:02:07" (mm:ss and hh:mm:ss), "2 minutes" (units: ms, s, min).
- boxes: `[x1, y1, x2, y2]`, lists of them, `{"bbox_2d": [..]}` (Qwen2.5-VL), `(x1,y1),(x2,y2)`
  (Qwen2-VL `<|box_start|>`), or any text with a multiple of four numbers.
- prose around boxes: `prose_interval` reads "from 8 to 11 seconds" in an answer that also holds
  boxes, as an interval is read, once the JSON, box lists and track lines are blanked out.
- tracks: `{"<t>": box}`, `{"boxes": {..}}`, `[{"time": t, "bbox_2d": box}, ...]` (or `"frame": i`
  with the input's frame timestamps), or lines like `3.0s: [x1, y1, x2, y2]`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from evr1.rewards.geometry import Box, ordered_box

MAX_BOXES = 64
MAX_CHARS = 50_000
_N = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)"
_TIME = re.compile(
    r"(?<![\w.:])(?:(?P<h>\d{1,3}):)?(?P<m>\d{1,4}):(?P<s>\d{1,2}(?:\.\d+)?)(?![\w:]|\.\d)"
    r"|(?<![\w.])(?P<num>\d+(?:\.\d+)?|\.\d+)(?:[ \t]*(?P<unit>milliseconds?|ms|seconds?|secs?|s|minutes?|mins?)\b)?(?!\w|\.\d)",
    re.IGNORECASE,
)
_BRACKET_BOX = re.compile(rf"[\[(]\s*({_N})\s*,\s*({_N})\s*,\s*({_N})\s*,\s*({_N})\s*[\])]")
_POINT_PAIR = re.compile(rf"\(\s*({_N})\s*,\s*({_N})\s*\)\s*(?:,\s*)?\(\s*({_N})\s*,\s*({_N})\s*\)")
_NUMBER = re.compile(rf"(?<![\w.]){_N}(?![\w.]|\.\d)")
_TRACK_LINE = re.compile(
    rf"(?<![\w.:])(?P<t>(?:\d{{1,3}}:)?\d{{1,4}}:\d{{1,2}}(?:\.\d+)?|\d+(?:\.\d+)?)[ \t]*(?:(?:s|sec|secs|seconds?)\b[ \t]*)?(?:[:：=>\-–]+[ \t]*)?"
    rf"[\[(]\s*({_N})\s*,\s*({_N})\s*,\s*({_N})\s*,\s*({_N})\s*[\])]",
    re.IGNORECASE,
)
_SPAN_KEYS = ("time", "span", "segment", "interval", "timestamps", "time_span")
_PAIR_KEYS = (("start", "end"), ("start_time", "end_time"), ("begin", "end"))
_BOX_KEYS = ("bbox_2d", "bbox", "box", "boxes")
_TIME_KEYS = ("time", "timestamp", "t", "second", "sec")
_UNIT_SECONDS = {"ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0}


def load_json(text: str) -> Any | None:
    """The JSON value between the first `[`/`{` and the last `]`/`}` (code fences ignored), or None."""
    text = text[:MAX_CHARS]
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    end = max(text.rfind("]"), text.rfind("}"))
    if not starts or end < min(starts):
        return None
    try:
        return json.loads(text[min(starts) : end + 1])
    except (ValueError, RecursionError):
        return None


def _finite(values: Sequence[Any]) -> list[float] | None:
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError, OverflowError):
        return None
    return out if all(math.isfinite(v) for v in out) else None


def time_tokens(text: str) -> list[float]:
    """Every time in the text, in seconds (mm:ss, hh:mm:ss, numbers with optional ms/s/min units)."""
    out: list[float] = []
    for m in _TIME.finditer(text[:MAX_CHARS]):
        if m.group("m") is not None:
            value = int(m.group("h") or 0) * 3600 + int(m.group("m")) * 60 + float(m.group("s"))
        else:
            value = float(m.group("num")) * _UNIT_SECONDS.get((m.group("unit") or "s").lower(), 1.0)
        if math.isfinite(value):
            out.append(value)
    return out


def seconds(value: Any) -> float | None:
    """A time value given as a number or as text ("00:03", "3.5 s")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        found = time_tokens(value)
        return found[0] if found else None
    return None


def parse_interval(value: Any) -> tuple[float, float] | None:
    """A raw (start, end) pair, not yet ordered or clipped; None when there is none."""
    if isinstance(value, dict):
        for key in _SPAN_KEYS:
            if key in value:
                return parse_interval(value[key])
        for a, b in _PAIR_KEYS:
            if a in value and b in value:
                start, end = seconds(value[a]), seconds(value[b])
                return (start, end) if start is not None and end is not None else None
        return None
    if isinstance(value, (list, tuple)):
        if value and isinstance(value[0], (list, tuple, dict)):
            return parse_interval(value[0])
        pair = [seconds(v) for v in value[:2]]
        return (pair[0], pair[1]) if len(pair) == 2 and None not in pair else None  # type: ignore[return-value]
    if isinstance(value, str):
        loaded = load_json(value)
        if isinstance(loaded, (dict, list)):
            found = parse_interval(loaded)
            if found is not None:
                return found
        tokens = time_tokens(value)
        return (tokens[0], tokens[1]) if len(tokens) >= 2 else None
    return None


def prose_interval(text: str) -> tuple[float, float] | None:
    """The interval of the prose of an answer: `parse_interval` of the text with its JSON value, box
    lists and track lines blanked out (so box coordinates are never read as times)."""
    text = _TRACK_LINE.sub(" ; ", text[:MAX_CHARS])
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    end = max(text.rfind("]"), text.rfind("}"))
    if starts and end > min(starts) and load_json(text) is not None:
        text = text[: min(starts)] + " ; " + text[end + 1 :]
    for pattern in (_BRACKET_BOX, _POINT_PAIR):
        text = pattern.sub(" ; ", text)
    tokens = time_tokens(text)
    return (tokens[0], tokens[1]) if len(tokens) >= 2 else None


def _box(values: Sequence[Any]) -> Box | None:
    numbers = _finite(values)
    return ordered_box(numbers) if numbers is not None and len(numbers) == 4 else None


def parse_boxes(value: Any) -> list[Box]:
    """Every box of an answer (at most MAX_BOXES)."""
    boxes: list[Box] = []
    if isinstance(value, dict):
        for key in _BOX_KEYS:
            if key in value:
                return parse_boxes(value[key])
    elif isinstance(value, (list, tuple)):
        if len(value) == 4 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            box = _box(value)
            return [box] if box else []
        for item in value[:MAX_BOXES]:
            boxes.extend(parse_boxes(item))
    elif isinstance(value, str):
        loaded = load_json(value)
        if isinstance(loaded, (dict, list)):
            boxes = parse_boxes(loaded)
        text = value[:MAX_CHARS]
        for pattern in (_BRACKET_BOX, _POINT_PAIR):
            if not boxes:
                boxes = [b for m in pattern.finditer(text) if (b := _box(m.groups())) is not None]
        if not boxes:
            numbers = _NUMBER.findall(text)
            if numbers and len(numbers) % 4 == 0:
                boxes = [b for i in range(0, len(numbers), 4) if (b := _box(numbers[i : i + 4])) is not None]
    return boxes[:MAX_BOXES]


def _entry_time(item: dict[str, Any], frame_timestamps: Sequence[float] | None) -> float | None:
    for key in _TIME_KEYS:
        if key in item:
            return seconds(item[key])
    frame = item.get("frame")
    if frame_timestamps and isinstance(frame, int) and not isinstance(frame, bool) and 0 <= frame < len(frame_timestamps):
        return float(frame_timestamps[frame])
    return None


def parse_track(value: Any, frame_timestamps: Sequence[float] | None = None) -> dict[float, Box]:
    """Boxes by time in seconds (at most MAX_BOXES entries)."""
    track: dict[float, Box] = {}
    if isinstance(value, dict):
        if "boxes" in value and isinstance(value["boxes"], (dict, list)):
            return parse_track(value["boxes"], frame_timestamps)
        for key, box in list(value.items())[: MAX_BOXES * 2]:
            t, found = seconds(key), parse_boxes(box)
            if t is not None and found:
                track[t] = found[0]
    elif isinstance(value, (list, tuple)):
        for item in value[: MAX_BOXES * 2]:
            if isinstance(item, dict):
                t, found = _entry_time(item, frame_timestamps), parse_boxes(item)
                if t is not None and found:
                    track[t] = found[0]
    elif isinstance(value, str):
        loaded = load_json(value)
        if isinstance(loaded, (dict, list)):
            track = parse_track(loaded, frame_timestamps)
        if not track:
            for m in _TRACK_LINE.finditer(value[:MAX_CHARS]):
                t, box = seconds(m.group("t")), _box(m.groups()[1:])
                if t is not None and box is not None:
                    track[t] = box
    return dict(list(track.items())[:MAX_BOXES])
