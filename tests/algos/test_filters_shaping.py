"""Dynamic sampling by a metric key and overlong shaping."""

from __future__ import annotations

import pytest
import torch

from evr1.algos.filters import keep_groups
from evr1.algos.shaping import overlong_penalty
from evr1.specs import DynamicSamplingSpec, OverlongSpec

NAN = float("nan")


def test_keeps_groups_strictly_inside_by_accuracy_not_score():
    metrics = {
        "accuracy": torch.tensor([1.0, 1.0, 0.0, 0.0, 1.0, 0.0]),
        "score": torch.tensor([1.0, 0.9, 0.1, 0.0, 1.0, 0.1]),  # would keep groups a and b
    }
    keep = keep_groups(metrics, ["a", "a", "b", "b", "c", "c"], DynamicSamplingSpec())
    assert keep.tolist() == [False, False, False, False, True, True]


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [(0.5, 1.0, [False, False, True, True]), (0.0, 0.75, [True, True, False, False]), (0.25, 0.75, [True, True, False, False])],
)
def test_bounds_are_exclusive(low, high, expected):
    metrics = {"accuracy": torch.tensor([1.0, 0.0, 1.0, 0.5])}  # group means 0.5 and 0.75
    ids = torch.tensor([4, 4, 9, 9])
    assert keep_groups(metrics, ids, DynamicSamplingSpec(low=low, high=high)).tolist() == expected


def test_not_applicable_values_are_ignored():
    metrics = {"acc": torch.tensor([1.0, NAN, 0.0, NAN, NAN])}
    keep = keep_groups(metrics, [0, 0, 0, 1, 1], DynamicSamplingSpec(metric="acc"))
    assert keep.tolist() == [True, True, True, False, False]


def test_missing_metric_and_bad_range():
    with pytest.raises(KeyError, match="'accuracy' is not among the reward metrics \\['score'\\]"):
        keep_groups({"score": torch.ones(2)}, [0, 0], DynamicSamplingSpec())
    with pytest.raises(ValueError, match="must be smaller"):
        DynamicSamplingSpec(low=0.5, high=0.5)


def test_overlong_penalty_by_hand():
    lengths = torch.tensor([5, 6, 7, 9, 10, 12])
    penalty = overlong_penalty(lengths, max_length=10, spec=OverlongSpec(buffer=4, penalty=1.0))
    assert penalty.tolist() == pytest.approx([0.0, 0.0, -0.25, -0.75, -1.0, -1.0])
    with pytest.raises(ValueError, match="buffer"):
        overlong_penalty(lengths, max_length=4, spec=OverlongSpec(buffer=4))
