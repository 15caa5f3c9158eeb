"""The aggregations several benchmarks share (`evr1.eval.aggregate`), with hand-computed values.
"""

from __future__ import annotations

import pytest

from evr1.eval import aggregate as agg
from evr1.eval.benchmarks.charades_sta import grounding

from .rows import scored


def test_macro_counts_every_item_in_its_task() -> None:
    rows = [scored(1, task="a"), scored(0, task="a"), scored(0, task="a"), scored(1, task="b")]  # a: 1/3 (failures included)
    result = agg.macro("task")(rows)
    assert result.score == pytest.approx(100 * (1 / 3 + 1) / 2)
    assert result.metrics["accuracy"] == 50.0


def test_macro_within_levels_averages_a_task_over_its_levels() -> None:
    # VSI-Bench: object_rel_direction = mean(easy 1/1, hard 0/2) = 0.5, not 1/3; counting 1.
    rows = [scored(1, task="rel", difficulty="easy"), scored(0, task="rel", difficulty="hard"),
            scored(0, task="rel", difficulty="hard"), scored(1, task="count")]
    result = agg.macro("task", within="difficulty")(rows)
    assert result.score == pytest.approx(100 * (0.5 + 1) / 2)
    assert agg.macro("task")(rows).score == pytest.approx(100 * (1 / 3 + 1) / 2)


def test_nested_macro_and_grounding() -> None:
    rows = [scored(1, category="x", task="t1"), scored(0, category="x", task="t2"), scored(1, category="y", task="t3")]
    assert agg.nested_macro("category", "task")(rows).score == pytest.approx(75.0)
    ious = [scored(0.3), scored(0.69), scored(0.7), scored(0.0)]
    metrics = grounding()(ious).metrics
    assert metrics == pytest.approx({"mIoU": 42.25, "R@0.3": 75.0, "R@0.5": 50.0, "R@0.7": 25.0})

