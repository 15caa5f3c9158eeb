"""STVG: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import json

import pytest

from evr1.eval.benchmarks.stvg import stvg_item
from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS

from ..rows import sample_row

BOX = [0, 0, 10, 10]


TUBE = {"time": [0.0, 3.0], "boxes": {str(s): BOX for s in range(4)}}


def test_stvg_viou_by_hand() -> None:
    partial = json.dumps({"time": [1, 4], "boxes": {"1": BOX, "2": [0, 0, 10, 6], "4": BOX}})
    exact = json.dumps(TUBE)
    got = stvg_item(sample_row(TUBE, partial, ptype="spatial_temporal_grounding"))
    # frames 1-4 vs 0-3: union 5, shared {1, 2, 3}; IoU 1 + 0.6 + 0 (no box at 3) -> vIoU 1.6 / 5, tIoU 3 / 5
    assert got["score"] == pytest.approx(0.32) and got["components"]["tiou"] == pytest.approx(0.6)
    rows = [sample_row(TUBE, r, ptype="spatial_temporal_grounding") for r in (partial, exact, "")]
    official = block(BENCHMARKS.get("stvg"), rows, "official")
    assert official["metrics"] == pytest.approx({"m_vIoU": 100 * 1.32 / 3, "vIoU@0.3": 200 / 3, "vIoU@0.5": 100 / 3,
                                                 "m_tIoU": 100 * 1.6 / 3})
    assert official["score"] == official["metrics"]["m_vIoU"]
    half = json.dumps({"time": [0, 3], "boxes": {"0": BOX, "1": BOX}})  # 2 of 4 frames: vIoU exactly 0.5
    at_half = block(BENCHMARKS.get("stvg"), [sample_row(TUBE, half, ptype="spatial_temporal_grounding")], "official")
    assert at_half["metrics"]["m_vIoU"] == 50.0 and at_half["metrics"]["vIoU@0.5"] == 0.0  # above, not at, 0.5

