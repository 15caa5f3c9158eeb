"""Numerical and regression scoring, and the number reader, with hand-computed values."""

from __future__ import annotations

import pytest
from reward_helpers import make

from evr1.rewards import numerical
from evr1.rewards.number_parsing import parse_number
from evr1.specs import RewardSpec

PARSE = [
    ("42", 42.0, False),
    ("1,234.5 meters", 1234.5, False),
    ("3/4", 0.75, False),
    ("1 1/2 cups", 1.5, False),
    ("50%", 50.0, True),
    ("50 percent", 50.0, True),
    ("twenty-one", 21.0, False),
    ("one hundred and five", 105.0, False),
    ("two thousand three hundred", 2300.0, False),
    ("1.2e3", 1200.0, False),
    ("1.2 × 10^3", 1200.0, False),
    ("12.5 x 10^{2} kg", 1250.0, False),
    ("$\\frac{3}{4}$", 0.75, False),
    ("3.5 million", 3_500_000.0, False),
    ("-7", -7.0, False),
    ("−7.5", -7.5, False),  # unicode minus
    ("5 m^2", 5.0, False),
    ("2 km²", 2.0, False),
    ("10^3", 1000.0, False),
    ("There are 5 (five) people", 5.0, False),
    ("５", 5.0, False),  # full-width digit
]


@pytest.mark.parametrize(("text", "value", "percent"), PARSE)
def test_parse_number(text: str, value: float, percent: bool) -> None:
    got = parse_number(text)
    assert got is not None
    assert got.value == pytest.approx(value)
    assert got.percent is percent


@pytest.mark.parametrize("text", ["5 or 6", "between 3 and 4", "", "abc", "3,5", "1/0", "Q3 2024 and 7"])
def test_ambiguous_or_missing_numbers(text: str) -> None:
    assert parse_number(text) is None


NUMERICAL = [
    ("<answer>1,000</answer>", "1000", 1.0),
    ("<answer>1000.0 m</answer>", 1000, 1.0),
    ("<answer>one thousand</answer>", "1000", 1.0),
    ("<answer>0.5</answer>", "50%", 1.0),
    ("<answer>50</answer>", "50%", 1.0),
    ("<answer>1/2</answer>", "0.5", 1.0),
    ("<answer>5e-1</answer>", "0.5", 1.0),
    ("<answer>0.51</answer>", "0.5", 0.0),
    ("<answer>5 or 6</answer>", "5", 0.0),
    ("<answer></answer>", "5", 0.0),
    ("The answer is 7 apples", "7", 1.0),
    ("<think>maybe 7</think><answer>8</answer>", "7", 0.0),
    ("<answer>七</answer>", "7", 0.0),  # no number
]


@pytest.mark.parametrize(("response", "answer", "expected"), NUMERICAL)
def test_numerical_table(response: str, answer: object, expected: float, spec: RewardSpec) -> None:
    assert numerical.score(make(response, answer, "numerical"), spec) == expected


def test_numeric_tolerance_is_opt_in() -> None:
    inp = make("<answer>10.4</answer>", "10", "numerical")
    assert numerical.score(inp, RewardSpec()) == 0.0
    assert numerical.score(inp, RewardSpec(numeric_rel_tol=0.05)) == 1.0
    assert numerical.score(inp, RewardSpec(numeric_abs_tol=0.3)) == 0.0
    assert numerical.score(inp, RewardSpec(numeric_abs_tol=0.5)) == 1.0


def test_bad_reference_raises_naming_it(spec: RewardSpec) -> None:
    with pytest.raises(ValueError, match="'lots'"):
        numerical.score(make("<answer>3</answer>", "lots", "numerical"), spec)


# MRA: thresholds θ = 0.50..0.95, correct when relative error <= 1 - θ (the official VSI-Bench rule);
# the bounds 1 - θ are 0.50, 0.45, 0.40, 0.35, 0.30, 0.25, 0.20, 0.15, 0.10, 0.05.
REGRESSION = [
    ("10", 10, 1.0),  # error 0
    ("9", 10, 0.9),  # error 0.10 <= 0.50..0.10 (9 of 10); `<` would give 0.8
    ("11", 10, 0.9),  # error 0.10, from above
    ("3.6", 4, 0.9),  # error 0.4 / 4 = 0.1 <= 0.10 (9 of 10); in floats the two sides differ by ~1e-17
    ("12", 10, 0.7),  # error 0.20 <= 0.50..0.20 (7 of 10)
    ("2.5", 2, 0.6),  # error 0.25 <= 0.50..0.25 (6 of 10)
    ("5", 10, 0.1),  # error 0.5 <= 0.50 only; `<` would give 0.0
    ("5.5", 10, 0.2),  # error 0.45 <= 0.50 and 0.45 (2 of 10)
    ("4.9", 10, 0.0),  # error 0.51 > 0.50
    ("0", 0, 1.0),
    ("1", 0, 0.0),
    ("lots", 10, 0.0),
]


@pytest.mark.parametrize(("answer_text", "gt", "expected"), REGRESSION)
def test_regression_mra(answer_text: str, gt: float, expected: float, spec: RewardSpec) -> None:
    got = numerical.score_regression(make(f"<answer>{answer_text}</answer>", gt, "regression"), spec)
    assert got == pytest.approx(expected)
