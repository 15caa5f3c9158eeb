"""Numerical answers (exact after normalising representation) and regression (mean relative accuracy).

numerical: 1 when the answer's one number equals the reference after normalisation (units,
thousands separators, words, fractions, magnitude suffixes, percentages, scientific notation).
`RewardSpec.numeric_rel_tol` / `numeric_abs_tol` (in the reference's units) opt into a tolerance.

Both scores read a percent beside a plain number both ways (`number_parsing.readings`): a
reference 0.5 accepts `50%` and `0.5%` (a dropped sign), `50%` accepts 50 and 0.5; MRA takes the
better reading.

regression: VSI-Bench's mean relative accuracy, the fraction of thresholds θ ∈ {0.50, 0.55, …,
0.95} with |pred − gt| / |gt| <= 1 − θ (the official `<=`, with a 1e-9 tolerance so that float
rounding of 1 − θ cannot drop a threshold: gt 10, pred 9 scores 0.9). A zero reference counts only
an exact zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evr1.rewards.extract import answer_of
from evr1.rewards.number_parsing import Number, parse_number, readings, same_number

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput
    from evr1.specs import RewardSpec

THRESHOLDS = tuple(round(0.50 + 0.05 * i, 2) for i in range(10))
MRA_TOLERANCE = 1e-9


def _reference(inp: RewardInput) -> Number:
    number = parse_number(inp.answer)
    if number is None:
        raise ValueError(f"{inp.problem_type.value} answer {inp.answer!r} is not one number")
    return number


def suits(text: str, inp: RewardInput) -> bool:
    return parse_number(text) is not None


def score(inp: RewardInput, spec: RewardSpec) -> float:
    """Numerical: 1 when the one number of the answer equals the reference (tolerance opt-in)."""
    expected = _reference(inp)
    got = parse_number(answer_of(inp, spec))
    return 1.0 if got is not None and same_number(got, expected, spec.numeric_rel_tol, spec.numeric_abs_tol) else 0.0


def mean_relative_accuracy(pred: float, gt: float) -> float:
    """The VSI-Bench MRA of one prediction."""
    if gt == 0:
        return 1.0 if pred == 0 else 0.0
    error = abs(pred - gt) / abs(gt)
    return sum(error <= 1.0 - t + MRA_TOLERANCE for t in THRESHOLDS) / len(THRESHOLDS)


def score_regression(inp: RewardInput, spec: RewardSpec) -> float:
    """Regression: mean relative accuracy over thresholds 0.50…0.95 (VSI-Bench)."""
    expected = _reference(inp)
    got = parse_number(answer_of(inp, spec))
    if got is None:
        return 0.0
    return max(mean_relative_accuracy(value, expected.value) for value in readings(got, expected))
