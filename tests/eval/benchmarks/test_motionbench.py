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
    assert "CM" not in official["breakdowns"]["category"] and official["dropped"] == 0  # CM's one question unanswered
    assert official["breakdowns"]["category"]["MR"] == {"score": 50.0, "n": 2}
    assert strict["score"] == pytest.approx(200 / 3)



def test_motionbench_categories_count_answered_questions_only() -> None:
    """compute_accuracy.py (THUDM/MotionBench, HEAD dcc9b07, l. 20-46): a question enters its category's count only when
    the answers file holds it (here: a response, "" included); `acc` divides by every question, `answered_acc` by
    those answered. CM: right, wrong, "" (wrong), unanswered -> 1/3; MR: right, unanswered -> 1/1."""
    rows = [sample_row("A", "A", category="CM"), sample_row("B", "C", category="CM"), sample_row("C", "", category="CM"),
            sample_row("D", None, error="generation failed", category="CM"),
            sample_row("A", "(A)", category="MR"), sample_row("B", None, error="generation failed", category="MR")]
    official, _ = both("motionbench", rows)
    assert official["breakdowns"]["category"] == {"CM": {"score": pytest.approx(100 / 3), "n": 3},
                                                  "MR": {"score": 100.0, "n": 1}}
    assert official["score"] == pytest.approx(100 * 2 / 6) and official["metrics"]["answered_acc"] == 50.0
