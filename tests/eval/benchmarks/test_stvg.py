"""STVG: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import json

import pytest

from evr1.eval.benchmarks.stvg import hcstvg_box_iou, hcstvg_tube, stvg_item
from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS

from ..rows import sample_row

BOX = [0, 0, 10, 10]


TUBE = {"time": [0.0, 3.0], "boxes": {str(s): BOX for s in range(4)}}


def test_stvg_viou_by_hand() -> None:
    partial = json.dumps({"time": [1, 4], "boxes": {"1": BOX, "2": [0, 0, 10, 6], "4": BOX}})
    exact = json.dumps(TUBE)
    got = stvg_item(sample_row(TUBE, partial, ptype="spatial_temporal_grounding"))
    # spans 1-4 and 0-3: 5 frames from the first to the last; reference frames holding a predicted box: 1 and 2
    # (none at 3); IoU 1 + 0.6 -> vIoU 1.6 / 5, tIoU 2 / 5
    assert got["score"] == pytest.approx(0.32) and got["components"]["tiou"] == pytest.approx(0.4)
    rows = [sample_row(TUBE, r, ptype="spatial_temporal_grounding") for r in (partial, exact, "")]
    official = block(BENCHMARKS.get("stvg"), rows, "official")
    assert official["metrics"] == pytest.approx({"m_vIoU": 100 * 1.32 / 3, "vIoU@0.3": 200 / 3, "vIoU@0.5": 100 / 3,
                                                 "m_tIoU": 100 * 1.4 / 3})
    assert official["score"] == official["metrics"]["m_vIoU"]
    half = json.dumps({"time": [0, 3], "boxes": {"0": BOX, "1": BOX}})  # 2 of 4 frames: vIoU exactly 0.5
    at_half = block(BENCHMARKS.get("stvg"), [sample_row(TUBE, half, ptype="spatial_temporal_grounding")], "official")
    assert at_half["metrics"]["m_vIoU"] == 50.0 and at_half["metrics"]["vIoU@0.5"] == 0.0  # above, not at, 0.5


# eval_hcvg.py (tzhhhh123/HC-STVG, commit 080b193): tIoU counts the reference frames that hold a predicted box, over
# the frames from the earlier first to the later last frame of the two spans; the reference here is frames 0-3.
@pytest.mark.parametrize(("prediction", "viou", "tiou"), [
    ({"time": [0, 3], "boxes": {"0": BOX}}, 0.25, 0.25),  # a span without boxes counts only where it has them
    ({"time": [2, 3], "boxes": {str(s): BOX for s in range(4)}}, 1.0, 1.0),  # boxes outside the span still count
    ({"time": [6, 9], "boxes": {"1": BOX}}, 0.1, 0.1),  # frames 0-9: the gap between the spans counts
    ({"time": [0.4, 2.6], "boxes": {"1": BOX, "2": BOX}}, 0.5, 0.5),  # the span is 1-2, within frames 0-3
    ({"time": [0, 0], "boxes": {"0": [10, 0, 20, 10]}}, 0.0, 0.25),  # touching boxes: IoU 0, but the frame counts
    ({"time": [0, 3], "boxes": {"0": [0, 0, 10, 5], "3": [5, 5, 15, 15]}}, (0.5 + 25 / 175) / 4, 0.5),
    ({"time": [0, 3]}, 0.0, 0.0),
])
def test_hcstvg_tube_by_hand(prediction: dict, viou: float, tiou: float) -> None:
    got = stvg_item(sample_row(TUBE, json.dumps(prediction), ptype="spatial_temporal_grounding"))
    assert got["score"] == pytest.approx(viou) and got["components"] == pytest.approx({"viou": viou, "tiou": tiou})


def test_hcstvg_box_iou_by_hand() -> None:
    assert hcstvg_box_iou([0, 0, 10, 10], [5, 0, 15, 10]) == pytest.approx(50 / 150)
    assert hcstvg_box_iou([0, 0, 10, 10], [0, 0, 10, 10]) == 1.0
    assert hcstvg_box_iou([0, 0, 10, 10], [10, 10, 20, 20]) == 0.0  # a corner in common
    assert hcstvg_box_iou([5, 5, 5, 5], [5, 5, 5, 5]) == 0.0  # a point: no width
    assert hcstvg_tube({0: BOX, 1: BOX}, (0, 1), {5: BOX}, (5, 5)) == (0.0, 0.0)


