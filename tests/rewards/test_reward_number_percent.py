"""The percent rule (`number_parsing.on_reference_scale`) as every numeric scorer applies it:
hand-computed tables, then properties (symmetry, one scale per reference, no gain by the scale)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reward_helpers import make

from evr1.rewards import numerical
from evr1.specs import RewardSpec

# answer text, reference, exact-match score
EXACT = [
    ("50%", 0.5, 1.0),  # a plain reference within [-1, 1] is a fraction: 50% = 0.5
    ("50%", "0.5", 1.0),
    ("50%", 50, 1.0),  # beyond 1 it is a number of percent
    ("0.5%", 0.5, 0.0),  # 0.005 is not 0.5 (the old rule took either scale and scored 1)
    ("0.5%", 0.005, 1.0),
    ("50%", "50%", 1.0),
    ("50 percent", "50%", 1.0),
    ("0.5%", "50%", 0.0),  # two percentages compare as written (the old rule scored 1)
    ("50", "50%", 1.0),  # a plain answer beyond 1 is a number of percent
    ("0.5", "50%", 1.0),  # within [-1, 1] a fraction
    ("0.5", "0.5%", 0.0),  # the mirror of ("0.5%", 0.5)
    ("0.005", "0.5%", 1.0),
    ("150%", 1.5, 0.0),  # documented limit: a ratio above 1 is read as a number of percent
    ("150%", 150, 1.0),
    ("-20%", -0.2, 1.0),
    ("100%", 1, 1.0),
    ("1%", 1, 0.0),  # 1 is a fraction: 1% = 0.01
    ("0%", 0, 1.0),
]


@pytest.mark.parametrize(("answer", "reference", "expected"), EXACT)
def test_exact_percent_rule(answer: str, reference: object, expected: float, spec: RewardSpec) -> None:
    assert numerical.score(make(f"<answer>{answer}</answer>", reference, "numerical"), spec) == expected


# MRA on the reference's scale; relative error e scores the share of θ in 0.50..0.95 with e <= 1 - θ.
MRA = [
    ("45%", 0.5, 0.9),  # 0.45 vs 0.5: e = 0.1
    ("45%", 50, 0.9),  # 45 vs 50
    ("0.45", "50%", 0.9),  # 45 vs 50
    ("45", "50%", 0.9),
    ("0.5%", 0.5, 0.0),  # 0.005 vs 0.5: e = 0.99 (the old rule scored 1)
    ("0.5%", "50%", 0.0),  # 0.5 vs 50
    ("0.5", "0.5%", 0.0),  # 50 vs 0.5
    ("60%", "50%", 0.7),  # 60 vs 50: e = 0.2
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
def test_one_percent_reading_of_a_fraction_reference(r: float) -> None:
    # `{100r}%` is right and `{r}%` is wrong: the answer cannot pick the scale that fits
    assert _exact(f"{100 * r!r}%", r) == 1.0
    assert _exact(f"{r!r}%", r) == 0.0
    assert _mra(f"{r!r}%", r) == 0.0


@given(fractions, st.integers(-(10**5), 10**5).map(lambda i: i / 1000))
def test_fraction_reference_written_as_percent_scores_the_same(r: float, x: float) -> None:
    # a percent answer scores the same against 0.25 and against 25%
    for score in (_exact, _mra):
        assert score(f"{x!r}%", r) == score(f"{x!r}%", f"{100 * r!r}%")
