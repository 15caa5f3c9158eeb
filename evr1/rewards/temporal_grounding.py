"""Temporal grounding: 1-D IoU of the answer's [start, end] (seconds) with the reference.

Deliberate cases: a reversed interval is swapped (lenient) or scores 0 (strict); both intervals are
clipped to [0, duration] when the duration is known (to [0, ∞) otherwise), so a prediction wholly
outside the video becomes empty; an empty (zero-length) prediction scores 0 unless the reference is
the same single point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evr1.rewards.extract import answer_of
from evr1.rewards.geometry import Interval, interval_iou
from evr1.rewards.grounding_parse import parse_interval

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec


def clip_interval(pair: tuple[float, float], duration: float | None, *, strict: bool) -> Interval | None:
    """Ordered (or None for a reversed pair when strict) and clipped to the video."""
    start, end = pair
    if start > end:
        if strict:
            return None
        start, end = end, start
    upper = duration if duration is not None and duration > 0 else float("inf")
    return (min(max(start, 0.0), upper), min(max(end, 0.0), upper))


def reference_interval(answer: Any, duration: float | None) -> Interval:
    pair = parse_interval(answer)
    if pair is None:
        raise ValueError(f"temporal_grounding answer {answer!r} holds no [start, end] interval")
    return clip_interval(pair, duration, strict=False)  # type: ignore[return-value]


def suits(text: str, inp: RewardInput) -> bool:
    return parse_interval(text) is not None


def score(inp: RewardInput, spec: RewardSpec) -> float:
    """Temporal grounding: 1-D IoU of the answer's start-end interval (seconds) with the reference."""
    expected = reference_interval(inp.answer, inp.duration)
    text = answer_of(inp, spec)
    pair = parse_interval(text) if text else None
    got = clip_interval(pair, inp.duration, strict=spec.strictness == "strict") if pair else None
    if got is None or (got[1] <= got[0] and expected[1] > expected[0]):
        return 0.0
    return interval_iou(got, expected)
