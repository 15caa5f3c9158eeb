"""The percent rule (`number_parsing.readings`) as every numeric scorer applies it: hand-computed
tables, then properties (symmetry; a sign on one side only is read both ways; two percentages as written)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reward_helpers import make

from evr1.rewards import numerical
from evr1.specs import RewardSpec

# answer text, reference, exact-match score
EXACT = [
    ("50%", 0.5, 1.0),  # 50% is the quantity 0.5
    ("50%", "0.5", 1.0),
    ("50%", 50, 1.0),  # or the reference dropped its sign
    ("0.5%", 0.5, 1.0),  # the reference may be 0.5 percent with the sign dropped
    ("0.5%", 0.005, 1.0),
    ("50%", "50%", 1.0),
    ("50 percent", "50%", 1.0),
    ("0.5%", "50%", 0.0),  # two percentages compare as written
    ("50", "50%", 1.0),  # the answer dropped the sign
    ("0.5", "50%", 1.0),  # the answer as a fraction
    ("0.5", "0.5%", 1.0),
    ("1", "1%", 1.0),
    ("1%", 1, 1.0),
    ("0.005", "0.5%", 1.0),
    ("150%", 1.5, 1.0),
    ("150%", 150, 1.0),
    ("-20%", -0.2, 1.0),
    ("100%", 1, 1.0),
    ("0%", 0, 1.0),
    ("5", "50%", 0.0),  # 5 percent or 500 percent: neither is 50
    ("5%", 0.5, 0.0),  # 0.05 or 5: neither is 0.5
    ("0.05", "50%", 0.0),
]


@pytest.mark.parametrize(("answer", "reference", "expected"), EXACT)
def test_exact_percent_rule(answer: str, reference: object, expected: float, spec: RewardSpec) -> None:
    assert numerical.score(make(f"<answer>{answer}</answer>", reference, "numerical"), spec) == expected


# MRA of the better reading; relative error e scores the share of θ in 0.50..0.95 with e <= 1 - θ.
MRA = [
    ("45%", 0.5, 0.9),  # 0.45 vs 0.5: e = 0.1
    ("45%", 50, 0.9),  # 45 vs 50
    ("0.45", "50%", 0.9),  # 45 vs 50
    ("45", "50%", 0.9),
    ("0.5%", 0.5, 1.0),  # the dropped sign: 0.5 vs 0.5
    ("0.5%", "50%", 0.0),  # 0.5 vs 50
    ("0.5", "0.5%", 1.0),
    ("60%", "50%", 0.7),  # 60 vs 50: e = 0.2
    ("6", "50%", 0.0),  # 6 (e = 0.88) or 600 (e = 11)
]


@pytest.mark.parametrize(("answer", "reference", "expected"), MRA)
def test_mra_percent_rule(answer: str, reference: object, expected: float, spec: RewardSpec) -> None:
    got = numerical.score_regression(make(f"<answer>{answer}</answer>", reference, "regression"), spec)
    assert got == pytest.approx(expected)


def test_absolute_tolerance_is_in_the_reference_units() -> None:
    # reference 50%: 0.52 is 52 percent, 2 points away (the old rule compared 0.52 with 0.5 and passed at 1)
    inp = make("<answer>0.52</answer>", "50%", "numerical")
    assert numerical.score(inp, RewardSpec(numeric_abs_tol=1.0)) == 0.0
    assert numerical.score(inp, RewardSpec(numeric_abs_tol=2.5)) == 1.0
    # reference 0.5: 52% is 0.52
    inp = make("<answer>52%</answer>", 0.5, "numerical")
    assert numerical.score(inp, RewardSpec(numeric_abs_tol=0.01)) == 0.0
    assert numerical.score(inp, RewardSpec(numeric_abs_tol=0.03)) == 1.0


def _text(units: int, places: int, percent: bool) -> str:
    return f"{units / 10**places:.{places}f}" + ("%" if percent else "")


numbers = st.builds(_text, st.integers(-(10**6), 10**6), st.integers(0, 4), st.booleans())
fractions = st.integers(-1000, 1000).filter(bool).map(lambda i: i / 1000)  # nonzero, within [-1, 1]
SPEC = RewardSpec()


def _exact(answer: str, reference: str | float) -> float:
    return numerical.score(make(f"<answer>{answer}</answer>", reference, "numerical"), SPEC)


def _mra(answer: str, reference: str | float) -> float:
    return numerical.score_regression(make(f"<answer>{answer}</answer>", reference, "regression"), SPEC)


@given(numbers, numbers)
def test_exact_match_is_symmetric(a: str, b: str) -> None:
    assert _exact(a, b) == _exact(b, a)


@given(fractions)
def test_a_sign_on_one_side_is_read_both_ways(r: float) -> None:
    assert _exact(f"{100 * r!r}%", r) == 1.0  # the quantity
    assert _exact(f"{r!r}%", r) == 1.0  # the reference dropped its sign
    assert _exact(f"{10 * r!r}%", r) == 0.0  # r/10 or 10r: neither is r
    assert _mra(f"{r!r}%", r) == 1.0


@given(numbers.filter(lambda t: not t.endswith("%")), numbers.filter(lambda t: not t.endswith("%")))
def test_two_percentages_compare_as_written(a: str, b: str) -> None:
    assert _exact(f"{a}%", f"{b}%") == _exact(a, b)
    assert _mra(f"{a}%", f"{b}%") == _mra(a, b)
