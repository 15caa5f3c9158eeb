"""Spatial grounding: box IoU, one or several boxes, read in the reference's coordinate system.

Several boxes are matched one-to-one (greedy by IoU) and the IoU sum is divided by the larger
count. Coordinates: when the reference is normalised (`meta["box_format"]` is "normalized", or,
without that key, all its values are <= 1) and the answer is not,
the answer is divided by the image size (`meta` `width`/`height` or `image_size: [w, h]`) or, with
no size, read as Qwen2-VL's 0–1000 grid; when the reference is in pixels and the answer is
normalised, the answer is multiplied by the image size if known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.rewards.extract import answer_of
from evr1.rewards.geometry import Box, matched_iou
from evr1.rewards.grounding_parse import parse_boxes

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec


def image_size(meta: Mapping[str, Any]) -> tuple[float, float] | None:
    """(width, height) from `meta`, if given."""
    size = meta.get("image_size")
    if isinstance(size, (list, tuple)) and len(size) == 2:
        w, h = size
    else:
        w, h = meta.get("width"), meta.get("height")
    try:
        w, h = float(w), float(h)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return (w, h) if w > 0 and h > 0 else None


def _scaled(boxes: Sequence[Box], sx: float, sy: float) -> list[Box]:
    return [(b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy) for b in boxes]


def to_reference_frame(boxes: Sequence[Box], reference: Sequence[Box], meta: Mapping[str, Any]) -> list[Box]:
    """The predicted boxes in the reference's coordinate system (see the module doc)."""
    if not boxes or not reference:
        return list(boxes)
    declared = meta.get("box_format")
    ref_normalised = declared == "normalized" if declared in ("normalized", "absolute") else max(max(b) for b in reference) <= 1.0
    top = max(max(b) for b in boxes)
    size = image_size(meta)
    if ref_normalised and top > 1.0:
        if size is not None:
            return _scaled(boxes, 1 / size[0], 1 / size[1])
        if top <= 1000.0:
            return _scaled(boxes, 1 / 1000, 1 / 1000)
    elif not ref_normalised and top <= 1.0 and size is not None:
        return _scaled(boxes, size[0], size[1])
    return list(boxes)


def reference_boxes(inp: RewardInput) -> list[Box]:
    boxes = parse_boxes(inp.answer)
    if not boxes:
        raise ValueError(f"spatial_grounding answer {inp.answer!r} holds no [x1, y1, x2, y2] box")
    return boxes


def suits(text: str, inp: RewardInput) -> bool:
    return bool(parse_boxes(text))


def score(inp: RewardInput, spec: RewardSpec) -> float:
    """Spatial grounding: IoU of the answer's boxes with the reference boxes (one-to-one matched)."""
    expected = reference_boxes(inp)
    text = answer_of(inp, spec)
    got = parse_boxes(text) if text else []
    return matched_iou(to_reference_frame(got, expected, inp.meta), expected) if got else 0.0
