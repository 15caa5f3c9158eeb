"""Temporal, spatial and spatial-temporal grounding, and tracking, with hand-computed IoUs."""

from __future__ import annotations

import pytest
from reward_helpers import make

from evr1.data.records import MediaRef, Record
from evr1.rewards import RewardInput, spatial_grounding, spatio_temporal, temporal_grounding
from evr1.rewards.geometry import box_iou, interval_iou, matched_iou
from evr1.rewards.grounding_parse import parse_boxes, parse_interval, parse_track
from evr1.specs import RewardSpec

GT_TIME = {"time": [4.0, 8.0]}
TEMPORAL = [
    ("<answer>[4, 8]</answer>", 1.0),
    ("<answer>[2, 6]</answer>", 2 / 6),  # inter 2, union 6
    ("<answer>from 3.5 s to 7 s</answer>", 3 / 4.5),  # inter [4,7]=3, union [3.5,8]=4.5
    ("<answer>00:05 - 00:08</answer>", 3 / 4),
    ('<answer>{"end": 8, "start": 6}</answer>', 2 / 4),
    ('<answer>{"start_time": "0:04", "end_time": "0:06"}</answer>', 2 / 4),
    ("<answer>[8, 4]</answer>", 1.0),  # reversed: swapped when lenient
    ("<answer>[5, 5]</answer>", 0.0),  # zero length
    ("<answer>[20, 30]</answer>", 0.0),  # wholly after the 10 s video: clipped to the point [10, 10] -> 0
    ("<answer>[10, 30]</answer>", 0.0),  # touches the end only: clipped to the point [10, 10] -> 0
    ("<answer>[6, 30]</answer>", 2 / 6),  # clipped to [6, 10]: inter 2, union [4,10]=6
    ("<answer>[-3, 6]</answer>", 2 / 8),  # clipped to [0, 6]: inter 2, union 8
    ("<answer>somewhere</answer>", 0.0),
    ("<answer></answer>", 0.0),
    ("<answer>0.1 minutes to 8 seconds</answer>", 2 / 4),  # 6 s .. 8 s
]


@pytest.mark.parametrize(("response", "expected"), TEMPORAL)
def test_temporal_table(response: str, expected: float, spec: RewardSpec) -> None:
    inp = make(response, GT_TIME, "temporal_grounding", duration=10.0)
    assert temporal_grounding.score(inp, spec) == pytest.approx(expected)


def test_reversed_interval_scores_zero_when_strict(strict: RewardSpec) -> None:
    inp = make("<answer>[8, 4]</answer>", GT_TIME, "temporal_grounding", duration=10.0)
    assert temporal_grounding.score(inp, strict) == 0.0


def _clipped(answer: object, response: str) -> RewardInput:
    """A response to a record whose video is clipped to 60-120 s of its file (duration 60 s)."""
    record = Record(id="clip-7", problem="When?", problem_type="temporal_grounding", answer=answer,
                    media=[MediaRef(kind="video", path="v.mp4", start=60.0, end=120.0)])  # fmt: skip
    return RewardInput.from_record(record, f"<answer>{response}</answer>")


def test_reference_outside_the_clip_is_an_error_naming_the_record(spec: RewardSpec) -> None:
    # The reviewer's example: times count from the clip start, so [70, 80] lies after the 60 s clip. Before
    # the fix it was clipped to the point (60, 60), and [100, 110] and [200, 300] (clipped to (60, 60)) scored 1.
    for response in ("[100, 110]", "[200, 300]", "[70, 80]"):
        with pytest.raises(ValueError, match=r"'clip-7'.*\[70, 80\] s does not overlap the clip \[0, 60\] s"):
            temporal_grounding.score(_clipped({"time": [70, 80]}, response), spec)
    for answer in ([60, 80], [-5, 0], [61, 61]):  # touching the window only, before it, a point after it
        with pytest.raises(ValueError, match="'clip-7'"):
            temporal_grounding.score(_clipped({"time": answer}, "[1, 2]"), spec)


CLIPPED = [
    # reference [5, 15] s from the clip start
    ({"time": [5, 15]}, "[5, 15]", 1.0),
    ({"time": [5, 15]}, "[10, 20]", 5 / 15),  # inter [10, 15], union [5, 20]
    ({"time": [5, 15]}, "[100, 110]", 0.0),  # after the clip: clipped to the point (60, 60)
    ({"time": [5, 15]}, "[200, 300]", 0.0),
    # reference [50, 80] runs past the clip: it becomes [50, 60], never a point
    ({"time": [50, 80]}, "[50, 80]", 1.0),  # clipped the same way
    ({"time": [50, 80]}, "[55, 90]", 0.5),  # [55, 60] of [50, 60]
    ({"time": [50, 80]}, "[100, 110]", 0.0),
    ({"time": [50, 80]}, "[200, 300]", 0.0),
    ({"time": [50, 80]}, "[60, 70]", 0.0),  # touches the end only: the point (60, 60)
    # a point reference at the clip's end, a point before clipping
    ({"time": [60, 60]}, "[60, 60]", 1.0),
    ({"time": [60, 60]}, "[200, 300]", 0.0),  # clipped to (60, 60), but not a point before
    ({"time": [60, 60]}, "[200, 200]", 0.0),  # a different point, moved onto the reference by clipping
    ({"time": [60, 60]}, "[59, 60]", 0.0),  # an interval against a point: no overlap of positive length
    ({"time": [3, 3]}, "[3, 3]", 1.0),
    ({"time": [3, 3]}, "[4, 4]", 0.0),
]


@pytest.mark.parametrize(("answer", "response", "expected"), CLIPPED)
def test_clipped_clip_table(answer: object, response: str, expected: float, spec: RewardSpec) -> None:
    assert temporal_grounding.score(_clipped(answer, response), spec) == pytest.approx(expected)


def test_unknown_duration_clips_only_at_zero(spec: RewardSpec) -> None:
    assert temporal_grounding.score(make("<answer>[0, 3]</answer>", {"time": [-1, 3]}, "tg"), spec) == 1.0
    assert temporal_grounding.score(make("<answer>[500, 600]</answer>", {"time": [500, 700]}, "tg"), spec) == 0.5
    with pytest.raises(ValueError, match="'s-1'.*\\[-3, -1\\] s does not overlap"):
        temporal_grounding.score(make("<answer>[0, 3]</answer>", {"time": [-3, -1]}, "tg", sample_id="s-1"), spec)


def test_spatial_temporal_span_follows_the_same_rules(spec: RewardSpec) -> None:
    answer = {"time": [1, 3], "boxes": {"1": [0, 0, 2, 2]}}
    beyond = '<answer>{"time": [20, 30], "boxes": {"1": [0, 0, 2, 2]}}</answer>'
    out = spatio_temporal.score_spatial_temporal(make(beyond, answer, "stvg", fps=1.0, duration=10.0), spec)
    assert (out.components["tiou"], out.components["viou"]) == (0.0, 1.0)  # span clipped to the point (10, 10)
    with pytest.raises(ValueError, match="'st-2'.*does not overlap"):
        spatio_temporal.score_spatial_temporal(make(beyond, {**answer, "time": [12, 15]}, "stvg", fps=1.0, duration=10.0,
                                                    sample_id="st-2"), spec)  # fmt: skip


def test_interval_iou_points() -> None:
    assert interval_iou((3.0, 3.0), (3.0, 3.0)) == 1.0
    assert interval_iou((3.0, 3.0), (4.0, 4.0)) == 0.0
    assert parse_interval("between 1:02:03 and 1:02:05") == (3723.0, 3725.0)
    assert parse_interval("500ms to 1.5s") == (0.5, 1.5)


def test_box_iou_values() -> None:
    assert box_iou((0, 0, 10, 10), (0, 0, 10, 5)) == 0.5
    assert box_iou((0, 0, 10, 10), (5, 5, 15, 15)) == pytest.approx(25 / 175)
    assert box_iou((0, 0, 0, 10), (0, 0, 0, 10)) == 1.0  # identical degenerate boxes
    assert box_iou((0, 0, 0, 10), (0, 0, 5, 10)) == 0.0
    # two references, one perfect prediction: (1 + 0) / max(1, 2)
    assert matched_iou([(0, 0, 1, 1)], [(0, 0, 1, 1), (5, 5, 6, 6)]) == 0.5


BOXES = [
    ("[10, 20, 30, 40]", [(10, 20, 30, 40)]),
    ('[{"bbox_2d": [1, 2, 3, 4], "label": "cat"}, {"bbox_2d": [5, 6, 7, 8]}]', [(1, 2, 3, 4), (5, 6, 7, 8)]),
    ("<|box_start|>(10,20),(30,40)<|box_end|>", [(10, 20, 30, 40)]),
    ('```json\n{"bbox": [40, 30, 20, 10]}\n```', [(20, 10, 40, 30)]),  # reordered corners
    ("the box is 1 2 3 4", [(1, 2, 3, 4)]),
    ("1 2 3", []),
    ("none", []),
]


@pytest.mark.parametrize(("text", "boxes"), BOXES)
def test_parse_boxes(text: str, boxes: list) -> None:
    assert parse_boxes(text) == [tuple(float(v) for v in b) for b in boxes]


SPATIAL = [
    # (response, reference, meta, expected)
    ("<answer>[0, 0, 10, 10]</answer>", {"boxes": [0, 0, 10, 5]}, {}, 0.5),
    ('<answer>{"bbox_2d": [0, 0, 10, 5]}</answer>', {"boxes": [0, 0, 10, 5]}, {}, 1.0),
    # normalised reference, pixel answer with a known image size: 50/100 -> 0.5
    ("<answer>[0, 0, 50, 50]</answer>", [0, 0, 0.5, 0.5], {"width": 100, "height": 100}, 1.0),
    # normalised reference, no size: read as Qwen2-VL's 0-1000 grid
    ("<answer>[0, 0, 500, 500]</answer>", [0, 0, 0.5, 0.5], {}, 1.0),
    # pixel reference, normalised answer with image_size
    ("<answer>[0, 0, 0.5, 1]</answer>", [0, 0, 100, 100], {"image_size": [200, 100]}, 1.0),
    # two references, both found in another order
    ("<answer>[[5, 5, 6, 6], [0, 0, 1, 1]]</answer>", {"boxes": [[0, 0, 1, 1], [5, 5, 6, 6]]}, {}, 1.0),
    # one extra wrong box halves the score
    ("<answer>[[0, 0, 10, 10], [80, 80, 90, 90]]</answer>", {"boxes": [0, 0, 10, 10]}, {}, 0.5),
    # tiny pixel boxes: `box_format` says the reference is absolute, so no rescaling
    ("<answer>[[0, 0, 1, 1], [8, 8, 9, 9]]</answer>", {"boxes": [0, 0, 1, 1]}, {"box_format": "absolute"}, 0.5),
    ("<answer>no box</answer>", [0, 0, 1, 1], {}, 0.0),
]


@pytest.mark.parametrize(("response", "reference", "meta", "expected"), SPATIAL)
def test_spatial_table(response: str, reference: object, meta: dict, expected: float, spec: RewardSpec) -> None:
    inp = make(response, reference, "spatial_grounding", meta=meta)
    assert spatial_grounding.score(inp, spec) == pytest.approx(expected)


TRACK_GT = {"boxes": {"1.0": [0, 0, 2, 2], "2.0": [0, 0, 2, 2]}}
TRACKING = [
    ('<answer>{"1.0": [0, 0, 2, 2], "2.0": [0, 0, 2, 2]}</answer>', 1.0),
    ('<answer>{"1.0": [0, 0, 2, 2]}</answer>', 0.5),  # missing timestamp counts 0
    ('<answer>{"1.0": [0, 0, 2, 1], "2.0": [0, 0, 2, 2], "3.0": [0, 0, 1, 1]}</answer>', 0.75),  # extra ignored
    ('<answer>[{"time": "00:01", "bbox_2d": [0, 0, 2, 2]}, {"time": 2.2, "bbox_2d": [0, 0, 2, 2]}]</answer>', 1.0),
    ("<answer>1.0s: [0, 0, 2, 2]\n2.0 s -> (0, 0, 1, 2)</answer>", 0.75),
    ('<answer>{"1.0": [0, 0, 2, 2], "2.6": [0, 0, 2, 2]}</answer>', 0.5),  # 2.6 is beyond half a frame at 1 fps
    ("<answer>nothing</answer>", 0.0),
]


@pytest.mark.parametrize(("response", "expected"), TRACKING)
def test_tracking_table(response: str, expected: float, spec: RewardSpec) -> None:
    inp = make(response, TRACK_GT, "tracking", fps=1.0)
    assert spatio_temporal.score_tracking(inp, spec) == pytest.approx(expected)


def test_tracking_by_frame_index(spec: RewardSpec) -> None:
    inp = make('<answer>[{"frame": 0, "box": [0, 0, 2, 2]}, {"frame": 1, "box": [0, 0, 2, 2]}]</answer>', TRACK_GT,
               "tracking", frame_timestamps=[1.0, 2.0])  # fmt: skip
    assert spatio_temporal.score_tracking(inp, spec) == 1.0
    assert parse_track("1.0: [0,0,1,1]") == {1.0: (0.0, 0.0, 1.0, 1.0)}


ST_GT = {"time": [1, 3], "boxes": {"1": [0, 0, 2, 2], "2": [0, 0, 1, 2]}}
ST = [
    # perfect span (tIoU 1); boxes IoU 1 and 0.5 over 2 timestamps: vIoU 0.75 -> 0.875
    ('<answer>{"time": [1, 3], "boxes": {"1": [0, 0, 2, 2], "2": [0, 0, 2, 2]}}</answer>', 1.0, 0.75),
    # span from box timestamps [1, 2] -> tIoU 1/2; one box IoU 1 of union 2 -> vIoU 0.5
    ('<answer>{"boxes": {"1": [0, 0, 2, 2]}, "span": [1, 2]}</answer>', 0.5, 0.5),
    # no explicit span: first..last box time [1, 5] -> tIoU 2/4; timestamps {1, 2, 5} -> vIoU (1 + 1) / 3
    ('<answer>{"1": [0, 0, 2, 2], "2": [0, 0, 1, 2], "5": [0, 0, 1, 1]}</answer>', 0.5, 2 / 3),
    ("<answer>nothing</answer>", 0.0, 0.0),
]


@pytest.mark.parametrize(("response", "tiou", "viou"), ST)
def test_spatial_temporal_table(response: str, tiou: float, viou: float, spec: RewardSpec) -> None:
    out = spatio_temporal.score_spatial_temporal(make(response, ST_GT, "stvg", fps=1.0, duration=10.0), spec)
    assert out.components["tiou"] == pytest.approx(tiou)
    assert out.components["viou"] == pytest.approx(viou)
    assert out.score == pytest.approx(0.5 * tiou + 0.5 * viou)
