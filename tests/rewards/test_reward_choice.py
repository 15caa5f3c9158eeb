"""Multiple choice, boolean and preference: letters, polarity, labels, hedges."""

from __future__ import annotations

import pytest
from reward_helpers import make

from evr1.rewards import boolean, multiple_choice, preference
from evr1.specs import RewardSpec

OPTIONS = ["dog", "cat", "bird", "fish"]

MC = [
    ("<answer>B</answer>", "B", 1.0),
    ("<answer>(b)</answer>", "B", 1.0),
    ("<answer>Option B</answer>", "B", 1.0),
    ("<answer>B.</answer>", "B", 1.0),
    ("<answer>cat</answer>", "B", 1.0),  # option text -> letter
    ("<answer>The Cat!</answer>", "B", 1.0),
    ("<answer>B. cat</answer>", "B", 1.0),
    ("<answer>B. dog</answer>", "B", 0.0),  # letter contradicts its text
    ("<answer>A or B</answer>", "B", 0.0),  # hedge
    ("<answer>A/B</answer>", "B", 0.0),
    ("<answer>either A or B</answer>", "B", 0.0),
    ("<answer>E</answer>", "B", 0.0),  # out of range for 4 options
    ("<answer></answer>", "B", 0.0),
    ("I think the answer is C", "C", 1.0),
    ("<answer>C because the bird flies</answer>", "C", 1.0),
    ("It shows a cat.", "B", 1.0),  # the one option mentioned
    ("<think>A? no.</think><answer>D) fish</answer>", "D", 1.0),
    ("<answer>B</answer>", "B. cat", 1.0),  # reference given with its text
    ("<answer>B</answer>", "cat", 1.0),  # reference given as option text
]


@pytest.mark.parametrize(("response", "answer", "expected"), MC)
def test_multiple_choice_table(response: str, answer: str, expected: float, spec: RewardSpec) -> None:
    assert multiple_choice.score(make(response, answer, "multiple_choice", options=OPTIONS), spec) == expected


def test_option_count_limits_letters(spec: RewardSpec) -> None:
    two = ["yes", "no"]
    assert multiple_choice.score(make("<answer>C</answer>", "A", "multiple_choice", options=two), spec) == 0.0
    assert multiple_choice.choice_letter("Z", None) == "Z"  # without options: A-Z
    assert multiple_choice.choice_letter("F", ["a"] * 6) == "F"


def test_options_with_letter_prefixes(spec: RewardSpec) -> None:
    options = ["A. red car", "B. blue car", "(C) green car"]
    assert multiple_choice.score(make("<answer>green car</answer>", "C", "multiple_choice", options=options), spec) == 1.0


def test_bad_reference_letter_raises(spec: RewardSpec) -> None:
    with pytest.raises(ValueError, match="not one of 4 option letters"):
        multiple_choice.score(make("<answer>A</answer>", "Q", "multiple_choice", options=OPTIONS), spec)


BOOLEAN = [
    ("<answer>Yes</answer>", "yes", 1.0),
    ("<answer>yes.</answer>", True, 1.0),
    ("<answer>True</answer>", "yes", 1.0),
    ("<answer>correct</answer>", 1, 1.0),
    ("<answer>No</answer>", "no", 1.0),
    ("<answer>Yes, there is no dog</answer>", "yes", 1.0),  # leading word decides
    ("<answer>There is no dog</answer>", "no", 1.0),
    ("<answer>yes and no</answer>", "yes", 0.0),
    ("<answer>yes/no</answer>", "no", 0.0),
    ("<answer>true or false</answer>", "yes", 0.0),
    ("<answer>maybe</answer>", "yes", 0.0),
    ("<answer>n</answer>", "no", 1.0),
    ("<answer></answer>", "no", 0.0),
    ("<answer>No</answer>", "yes", 0.0),
]


@pytest.mark.parametrize(("response", "answer", "expected"), BOOLEAN)
def test_boolean_table(response: str, answer: object, expected: float, spec: RewardSpec) -> None:
    assert boolean.score(make(response, answer, "boolean"), spec) == expected


PREFERENCE = [
    ("<answer>A</answer>", "A", 1.0),
    ("<answer>Response B</answer>", "B", 1.0),
    ("<answer>the second one</answer>", "B", 1.0),
    ("<answer>It is a tie</answer>", "tie", 1.0),
    ("<answer>Answer 1</answer>", "A", 1.0),
    ("<answer>A or B</answer>", "A", 0.0),
    ("<answer>both A and B</answer>", "A", 0.0),
    ("<answer>B</answer>", "A", 0.0),
    ("<answer>B</answer>", 2, 1.0),
]


@pytest.mark.parametrize(("response", "answer", "expected"), PREFERENCE)
def test_preference_table(response: str, answer: object, expected: float, spec: RewardSpec) -> None:
    assert preference.score(make(response, answer, "preference"), spec) == expected
