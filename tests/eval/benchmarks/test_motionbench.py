"""MotionBench: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import pytest

from ..rows import both, sample_row


def test_motionbench_acc_over_all_and_answered() -> None:
    rows = [sample_row("A", "(A) walks", 1, category="MR"), sample_row("B", "The answer is B", 1, category="MR"),  # reads "T"
            sample_row("C", None, 0, error="generation failed", category="CM")]
    official, strict = both("motionbench", rows)
    assert official["score"] == pytest.approx(100 / 3) and official["metrics"]["answered_acc"] == 50.0
    assert official["breakdowns"]["category"]["CM"] == {"score": 0.0, "n": 1} and official["dropped"] == 0
    assert strict["score"] == pytest.approx(200 / 3)

