"""Spatial grounding: box IoU, one or several boxes, read in the reference's coordinate system.

Several boxes are matched one-to-one (greedy by IoU) and the IoU sum is divided by the larger
count. The reference is normalised when `meta["box_format"]` is "normalized" (or, without that
key, when all its values are <= 1), else in pixels of the original image or video frame (`meta`
`width`/`height` or `image_size: [w, h]`, else `RewardInput.source_size`).

Exact conversion, when the answer's units are known (`RewardSpec.box_units`, by default the
answering model's convention in `RewardInput.box_units`): model units -> fractions of the image
(pixels over `RewardInput.shown_size`, original pixels over the original size, 0-1000 over 1000,
0-1 as is) -> the reference's frame. A size that this needs and nobody knows is a ValueError naming
the record. Under "auto", an answer whose values are all <= 1 is read as fractions whatever the
model's convention (a prompt asked for them: no real box spans under one pixel or one thousandth).

Fallback (units unknown, `box_units="auto"`): guessed from magnitudes. When the reference is
normalised and the answer is not, the answer is divided by the `meta` image size or, with no
size, read as a 0–1000 grid; when the reference is in pixels and the answer is normalised, the
answer is multiplied by the `meta` image size if known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.rewards.extract import answer_of
from evr1.rewards.geometry import Box, matched_iou
from evr1.rewards.grounding_parse import parse_boxes

if TYPE_CHECKING:
    from evr1.rewards.contract import BoxUnits, RewardInput
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


def is_normalised(reference: Sequence[Box], meta: Mapping[str, Any]) -> bool:
    """Whether reference boxes are fractions of the image (`meta["box_format"]`, else all values <= 1)."""
    declared = meta.get("box_format")
    return declared == "normalized" if declared in ("normalized", "absolute") else max(max(b) for b in reference) <= 1.0


def to_reference_frame(boxes: Sequence[Box], reference: Sequence[Box], meta: Mapping[str, Any]) -> list[Box]:
    """The predicted boxes in the reference's coordinate system, guessed from magnitudes (see the module doc)."""
    if not boxes or not reference:
        return list(boxes)
    ref_normalised = is_normalised(reference, meta)
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


def _name(inp: RewardInput) -> str:
    return inp.sample_id or inp.group_id or "(unnamed)"


def answer_units(inp: RewardInput, spec: RewardSpec) -> BoxUnits | None:
    """The units of the answer's boxes: the spec's, else the model's; None when unknown under "auto"."""
    if spec.box_units not in ("auto", "model"):
        return spec.box_units
    if inp.box_units is None and spec.box_units == "model":
        raise ValueError(
            f"record {_name(inp)!r}: box_units='model' but the reward input does not say which units the model"
            " answers boxes in (RewardInput.box_units)"
        )
    return inp.box_units


def original_size(inp: RewardInput) -> tuple[float, float]:
    """(width, height) of the original image: `meta`, else the source size; a ValueError naming the record."""
    size = image_size(inp.meta) or inp.source_size
    if size is None:
        raise ValueError(
            f"record {_name(inp)!r}: boxes in pixels of the original image, whose size is unknown"
            " (give meta width/height or image_size, or the source size)"
        )
    return size


def as_fractions(boxes: Sequence[Box], units: BoxUnits, inp: RewardInput) -> list[Box]:
    """Boxes in `units` as fractions of the image (the shown and the original image have one aspect)."""
    if units == "normalized":
        return list(boxes)
    if units == "relative_1000":
        return _scaled(boxes, 1 / 1000, 1 / 1000)
    if units == "source_pixels":
        width, height = original_size(inp)
        return _scaled(boxes, 1 / width, 1 / height)
    if inp.shown_size is None:
        raise ValueError(
            f"record {_name(inp)!r}: boxes are in pixels of the shown image, whose size is unknown (RewardInput.shown_size)"
        )
    width, height = inp.shown_size
    return _scaled(boxes, 1 / width, 1 / height)


def in_reference_frame(boxes: Sequence[Box], reference: Sequence[Box], inp: RewardInput, spec: RewardSpec) -> list[Box]:
    """The predicted boxes in the reference's coordinate system: exact when the answer's units are known
    (a needed size nobody knows is a ValueError naming the record), else guessed (see the module doc)."""
    if not boxes:
        return []
    units = answer_units(inp, spec)
    if units is None:
        return to_reference_frame(boxes, reference, inp.meta)
    if spec.box_units == "auto" and units != "normalized" and max(max(b) for b in boxes) <= 1.0:
        units = "normalized"
    if is_normalised(reference, inp.meta):
        return as_fractions(boxes, units, inp)
    width, height = original_size(inp)
    return _scaled(as_fractions(boxes, units, inp), width, height)


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
    got = in_reference_frame(parse_boxes(text) if text else [], expected, inp, spec)
    return matched_iou(got, expected) if got else 0.0
