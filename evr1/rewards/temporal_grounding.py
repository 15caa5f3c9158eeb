"""Temporal grounding: 1-D IoU of the answer's [start, end] (seconds) with the reference.

Time origin: seconds from the start of the media the model is shown, i.e. from the clip's `start`
when the record's video names one (`RewardInput.duration` = end - start), else from the start of
the video. An importer that clips a video must write its reference times on that clock. The
frames the model saw are timed on the same clock (`RewardInput.frame_timestamps`, and the
timestamps of a Qwen3-VL prompt on the clip clock): 0 s is the clip's first frame, less than one
frame after `start`. A response is read on the clock its prompt showed: a Qwen3-VL prompt on the
source clock (`VideoSpec.clock="source"`, the reference's) times frames from the source video's
start, so `RewardInput.clock_offset` (the clip's first frame on that clock) is subtracted first.

Deliberate cases: a reversed interval is swapped (lenient) or scores 0 (strict). Both intervals are
clipped to the window [0, duration] ([0, ∞) when the duration is unknown), but clipping never turns
an interval into a point: a reference that does not overlap the window (only touching it counts as
not overlapping) is a ValueError naming the record, and a prediction that becomes a point (e.g.
one wholly after the clip) scores 0. A point prediction scores 1 only when it is, unclipped, the
same point as a point reference inside the window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evr1.rewards.extract import answer_of
from evr1.rewards.geometry import Interval, interval_iou
from evr1.rewards.grounding_parse import parse_interval

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec


def window(duration: float | None) -> Interval:
    """The time window of the shown media: [0, duration], or [0, ∞) when the duration is unknown."""
    return (0.0, duration if duration is not None and duration > 0 else float("inf"))


def clip_interval(pair: tuple[float, float], duration: float | None, *, strict: bool) -> Interval | None:
    """Ordered (or None for a reversed pair when strict) and clipped to the window (may become a point)."""
    start, end = pair
    if start > end:
        if strict:
            return None
        start, end = end, start
    low, high = window(duration)
    return (min(max(start, low), high), min(max(end, low), high))


def reference_interval(inp: RewardInput) -> Interval:
    """The reference interval clipped to the window; ValueError (naming the record) when it has none
    or lies outside the window."""
    name = inp.sample_id or inp.group_id or "(unnamed)"
    pair = parse_interval(inp.answer)
    if pair is None:
        raise ValueError(f"record {name!r}: {inp.problem_type.value} answer {inp.answer!r} holds no [start, end] interval")
    start, end = sorted(pair)
    low, high = window(inp.duration)
    inside = low <= start <= high if start == end else min(end, high) > max(start, low)
    if not inside:
        raise ValueError(
            f"record {name!r}: {inp.problem_type.value} reference [{start:g}, {end:g}] s does not overlap the clip"
            f" [0, {high:g}] s (times count from the clip's start)"
        )
    return clip_interval((start, end), inp.duration, strict=False)  # type: ignore[return-value]


def interval_score(pair: tuple[float, float] | None, reference: Interval, duration: float | None, *, strict: bool) -> float:
    """IoU of a raw predicted pair with a reference from `reference_interval`, by the rules above."""
    got = clip_interval(pair, duration, strict=strict) if pair is not None else None
    if got is None:
        return 0.0
    if got[0] == got[1]:
        return 1.0 if (min(pair), max(pair)) == got == reference else 0.0  # type: ignore[arg-type]
    return interval_iou(got, reference)


def suits(text: str, inp: RewardInput) -> bool:
    return parse_interval(text) is not None


def score(inp: RewardInput, spec: RewardSpec) -> float:
    """Temporal grounding: 1-D IoU of the answer's start-end interval (seconds) with the reference."""
    expected = reference_interval(inp)
    text = answer_of(inp, spec)
    pair = on_clip_clock(parse_interval(text) if text else None, inp)
    return interval_score(pair, expected, inp.duration, strict=spec.strictness == "strict")


def on_clip_clock(pair: tuple[float, float] | None, inp: RewardInput) -> tuple[float, float] | None:
    """A response's (start, end) moved from the prompt's clock to the clip clock."""
    if pair is None or not inp.clock_offset:
        return pair
    return (pair[0] - inp.clock_offset, pair[1] - inp.clock_offset)
