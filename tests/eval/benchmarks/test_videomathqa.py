"""VideoMathQA: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import pytest

from evr1.eval.benchmarks.videomathqa import videomath
from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS

from ..rows import sample_row, scored


def test_videomathqa_counts_unread_answers_and_mbin_needs_every_pair() -> None:
    rows = [sample_row("A", "Answer: A", 1, setting="mcq", question_id="1", category="geo"),  # "A" of "Answer" is read: right
            sample_row("B", "Answer: B", 1, setting="mcq", question_id="2", category="geo"),  # ... and here wrong
            sample_row("C", "c", 1, setting="mcq", question_id="3", category="geo"),  # no capital: wrong, counted
            sample_row("A", "A", 1, setting="mbin", question_id="4", category="geo"), sample_row("B", "B", 1, setting="mbin", question_id="4",
                                                                               category="geo"),
            sample_row("A", "A", 1, setting="mbin", question_id="5", category="geo"), sample_row("A", "", 0, setting="mbin", question_id="5",
                                                                               category="geo")]
    official = block(BENCHMARKS.get("videomathqa"), rows, "official")
    assert official["metrics"]["MCQ"] == pytest.approx(100 / 3) and official["n"] == 7
    assert official["metrics"]["MBin"] == 50.0 and official["score"] == 50.0


def test_videomath_breakdowns_report_mbin_and_mcq_apart() -> None:
    # MBin: q1 (Counting) both pairs right, q2 (Counting) one wrong, q3 (Geometry) right -> Counting 50 (2), Geometry 100 (1).
    # MCQ: m1 (Counting) wrong.
    rows = [scored(1, setting="mbin", question_id="q1", category="Counting"), scored(1, setting="mbin", question_id="q1", category="Counting"),
            scored(1, setting="mbin", question_id="q2", category="Counting"), scored(0, setting="mbin", question_id="q2", category="Counting"),
            scored(1, setting="mbin", question_id="q3", category="Geometry"), scored(0, setting="mcq", question_id="m1", category="Counting")]
    result = videomath("category")(rows)
    assert result.score == pytest.approx(200 / 3)
    assert result.breakdowns == {"category (MBin)": {"Counting": (50.0, 2), "Geometry": (100.0, 1)},
                                 "category (MCQ)": {"Counting": (0.0, 1)}}


def test_videomath_mbin_needs_every_pair() -> None:
    rows = [scored(1, setting="mbin", question_id="1"), scored(1, setting="mbin", question_id="1"),
            scored(1, setting="mbin", question_id="2"), scored(0, setting="mbin", question_id="2"),
            scored(0, setting="mcq", question_id="1")]
    result = videomath()(rows)
    assert (result.score, result.metrics["MBin"], result.metrics["MCQ"]) == (50.0, 50.0, 0.0)

