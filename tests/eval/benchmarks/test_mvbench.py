"""MVBench: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import pytest

from evr1.eval.benchmarks.mvbench import mvbench_item

from ..rows import both, sample_row


@pytest.mark.parametrize(("response", "right"), [
    ("A", 1.0), ("a.", 1.0), ("A) the cat", 1.0), ("(A)", 1.0), ("A or B", 1.0),  # the first word decides
    ("The answer is A", 0.0), ("B", 0.0), ("Z", 0.0), ("AB", 0.0),
    ("", 1.0),  # the official check's quirk: "" lies inside "(a)"
    (None, 0.0),  # a failed generation: no response to check
])
def test_mvbench_first_word_check(response: str | None, right: float) -> None:
    assert mvbench_item(sample_row("A", response)) == right


def test_mvbench_avg_is_correct_over_total_with_unequal_task_sizes() -> None:
    rows = [sample_row("A", "A", 1, task="a"), sample_row("A", "A", 1, task="a"), sample_row("A", "B", 0, task="a"),
            sample_row("B", None, 0, task="b", error="generation failed")]
    official, strict = both("mvbench", rows)
    assert official["score"] == pytest.approx(50.0)  # 2 / 4
    assert official["metrics"] == pytest.approx({"Avg": 50.0})
    assert strict["score"] == pytest.approx((200 / 3 + 0) / 2)  # the task mean: 33.33
    assert official["breakdowns"]["task"] == {"a": {"score": pytest.approx(200 / 3), "n": 3}, "b": {"score": 0.0, "n": 1}}
    assert official["n"] == 4 and official["dropped"] == 0

