"""Intervals and boxes: IoU in one and two dimensions, and one-to-one box matching."""

from __future__ import annotations

from collections.abc import Sequence

Interval = tuple[float, float]
Box = tuple[float, float, float, float]


def interval_iou(a: Interval, b: Interval) -> float:
    """1-D IoU of two [start, end] intervals (start <= end). Equal points score 1, other empty unions 0."""
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    if union <= 0:
        return 1.0 if a == b else 0.0
    return min(1.0, inter / union)


def ordered_box(box: Sequence[float]) -> Box:
    """A box with x1 <= x2 and y1 <= y2."""
    x1, y1, x2, y2 = (float(v) for v in box)
    return (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))


def box_iou(a: Box, b: Box) -> float:
    """IoU of two ordered boxes; degenerate (zero-area) boxes score 0 unless both are identical."""
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    if union <= 0:
        return 1.0 if a == b else 0.0
    return min(1.0, max(0.0, inter / union))


def matched_iou(predicted: Sequence[Box], reference: Sequence[Box]) -> float:
    """Greedy one-to-one matching by highest IoU; the IoU sum over max(#pred, #ref).

    Missing and extra boxes therefore both lower the score.
    """
    if not predicted or not reference:
        return 1.0 if not predicted and not reference else 0.0
    pairs = sorted(
        ((box_iou(p, r), i, j) for i, p in enumerate(predicted) for j, r in enumerate(reference)),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    used_p: set[int] = set()
    used_r: set[int] = set()
    total = 0.0
    for iou, i, j in pairs:
        if i not in used_p and j not in used_r:
            used_p.add(i)
            used_r.add(j)
            total += iou
    return total / max(len(predicted), len(reference))
