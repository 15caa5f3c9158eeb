"""Spatial-temporal grounding and tracking: boxes at timestamps.

Timestamps match when within half a frame (0.5 / fps), else half the smallest gap between
reference timestamps, else 0.5 s; matching is one-to-one, nearest first.

- tracking: the mean IoU over the reference timestamps (a missing box counts 0; extra ones are
  ignored).
- spatial_temporal_grounding: 0.5 × temporal IoU + 0.5 × vIoU, where vIoU is the IoU sum over
  shared timestamps divided by the number of timestamps in either track. The answer's span is its
  `time`/`span` field, else a span in its prose ("from 8 to 11 seconds", read as temporal
  grounding reads an interval, box coordinates aside), else the first to last of its box
  timestamps. Its time origin, window and clipping rules are temporal grounding's (`temporal_grounding.interval_score`).

Times are on the clip clock (seconds since the first frame of the clip the model is shown); an
answer by frame index is read against `RewardInput.frame_timestamps`, on that clock too. A
response is read on the clock its prompt showed, then moved to the clip clock (temporal
grounding's `clock_offset` rule). Boxes
are converted to the reference's frame as spatial grounding converts them
(`spatial_grounding.in_reference_frame`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from evr1.rewards.contract import RewardOutput
from evr1.rewards.extract import answer_of
from evr1.rewards.geometry import Box, box_iou
from evr1.rewards.grounding_parse import load_json, parse_interval, parse_track, prose_interval
from evr1.rewards.spatial_grounding import in_reference_frame
from evr1.rewards.temporal_grounding import interval_score, on_clip_clock, reference_interval

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec


def _tolerance(inp: RewardInput, times: list[float]) -> float:
    if inp.fps:
        return 0.5 / inp.fps
    gaps = [b - a for a, b in itertools.pairwise(times) if b > a]
    return 0.5 * min(gaps) if gaps else 0.5


def match_times(predicted: list[float], reference: list[float], tolerance: float) -> list[tuple[float, float]]:
    """One-to-one (predicted, reference) timestamp pairs within `tolerance`, nearest first."""
    pairs = sorted((abs(p - r), p, r) for p in predicted for r in reference if abs(p - r) <= tolerance)
    used_p: set[float] = set()
    used_r: set[float] = set()
    out = []
    for _, p, r in pairs:
        if p not in used_p and r not in used_r:
            used_p.add(p)
            used_r.add(r)
            out.append((p, r))
    return out


def _tracks(
    inp: RewardInput, text: str | None, spec: RewardSpec
) -> tuple[dict[float, Box], dict[float, Box], list[tuple[float, float]]]:
    expected = parse_track(inp.answer, inp.frame_timestamps)
    if not expected:
        raise ValueError(f"{inp.problem_type.value} answer {inp.answer!r} holds no boxes by timestamp")
    got = _response_track(text, inp) if text else {}
    got = dict(zip(got, in_reference_frame(list(got.values()), list(expected.values()), inp, spec)))
    ref_times = sorted(expected)
    return got, expected, match_times(sorted(got), ref_times, _tolerance(inp, ref_times))


def _response_track(text: str, inp: RewardInput) -> dict[float, Box]:
    """The response's boxes by time, read on the prompt's clock and moved to the clip clock."""
    offset = inp.clock_offset
    if not offset:
        return parse_track(text, inp.frame_timestamps)
    shown = tuple(t + offset for t in inp.frame_timestamps) if inp.frame_timestamps is not None else None
    return {t - offset: box for t, box in parse_track(text, shown).items()}


def suits(text: str, inp: RewardInput) -> bool:
    return bool(parse_track(text, inp.frame_timestamps))


def score_tracking(inp: RewardInput, spec: RewardSpec) -> float:
    """Tracking: mean box IoU over the reference timestamps (missing boxes count 0)."""
    got, expected, pairs = _tracks(inp, answer_of(inp, spec), spec)
    return sum(box_iou(got[p], expected[r]) for p, r in pairs) / len(expected)


def _span(text: str, track: Mapping[float, Box], inp: RewardInput) -> tuple[float, float] | None:
    """The response's span on the clip clock (`track` is already on it)."""
    loaded = load_json(text)
    if isinstance(loaded, dict):
        pair = parse_interval({k: v for k, v in loaded.items() if k != "boxes"})
        if pair is not None:
            return on_clip_clock(pair, inp)
    prose = prose_interval(text)
    if prose is not None:
        return on_clip_clock(prose, inp)
    return (min(track), max(track)) if track else None


def score_spatial_temporal(inp: RewardInput, spec: RewardSpec) -> RewardOutput:
    """Spatial-temporal grounding: mean of temporal IoU and vIoU over shared timestamps."""
    text = answer_of(inp, spec)
    got, expected, pairs = _tracks(inp, text, spec)
    span = reference_interval(inp)
    pair = _span(text, got, inp) if text else None
    tiou = interval_score(pair, span, inp.duration, strict=spec.strictness == "strict")
    union = len(expected) + len(got) - len(pairs)
    viou = sum(box_iou(got[p], expected[r]) for p, r in pairs) / union
    return RewardOutput(score=0.5 * tiou + 0.5 * viou, components={"accuracy": 0.5 * tiou + 0.5 * viou, "tiou": tiou, "viou": viou})
