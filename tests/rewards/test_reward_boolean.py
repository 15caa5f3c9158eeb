"""Boolean negation: a negation directly before a polarity adjective flips it; anything unclear is ambiguous."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reward_helpers import make

from evr1.rewards import boolean
from evr1.rewards.boolean import read_bool
from evr1.specs import RewardSpec

NEGATION = [
    ("That is not true", False),  # read as yes before the fix
    ("Not correct.", False),  # read as yes before the fix
    ("It isn't correct", False),
    ("It isn’t correct", False),  # typographic apostrophe
    ("That's never true", False),
    ("This statement doesn't seem true", None),  # one word between negation and adjective: unclear
    ("not incorrect", True),
    ("Not false", True),
    ("No, that is not correct", False),  # the leading word and the negated one agree
    ("Definitely not, no.", False),  # a comma: "not" does not govern "no"
    ("Yes, that isn't correct", None),  # the negation contradicts the leading word
    ("not entirely correct", None),  # the negation one word further: unclear
    ("It is not true that it is false", None),  # a negated word next to another polarity word
    ("not yes", None),  # a negated interjection
    ("never no", None),
    ("Yes, there is no dog", True),  # unchanged: no negation word
    ("true", True),
    ("incorrect", False),
]


@pytest.mark.parametrize(("text", "expected"), NEGATION)
def test_negation_table(text: str, expected: bool | None) -> None:
    assert read_bool(text) is expected


def test_negated_and_ambiguous_answers_score_through_the_scorer(spec: RewardSpec) -> None:
    assert boolean.score(make("<answer>That is not true</answer>", "no", "boolean"), spec) == 1.0
    assert boolean.score(make("<answer>That is not true</answer>", "yes", "boolean"), spec) == 0.0
    assert boolean.score(make("<answer>not entirely correct</answer>", "no", "boolean"), spec) == 0.0
    assert boolean.score(make("<answer>not entirely correct</answer>", "yes", "boolean"), spec) == 0.0


ADJECTIVES = {"true": True, "correct": True, "affirmative": True, "false": False, "incorrect": False, "negative": False}
NEGATIONS = ["not", "never", "isn't", "wasn't", "doesn't", "ain't", "NOT", "Isn't"]
NEUTRAL = ["it", "is", "this", "the", "answer", "statement", "that", "claim", "be", "would"]
subjects = st.lists(st.sampled_from(NEUTRAL), max_size=5).map(" ".join)


@given(subjects, st.sampled_from(NEGATIONS), st.sampled_from(sorted(ADJECTIVES)), st.sampled_from(["", ".", "!", " "]))
def test_a_directly_negated_adjective_flips(subject: str, negation: str, adjective: str, end: str) -> None:
    assert read_bool(f"{subject} {negation} {adjective.upper() if end == '!' else adjective}{end}") is (not ADJECTIVES[adjective])


@given(subjects, st.sampled_from(NEGATIONS), st.sampled_from(["entirely", "really", "quite", "so"]), st.sampled_from(sorted(ADJECTIVES)))
def test_a_negation_one_word_away_is_ambiguous(subject: str, negation: str, adverb: str, adjective: str) -> None:
    assert read_bool(f"{subject} {negation} {adverb} {adjective}") is None


@given(st.sampled_from(["yes", "yeah", "no", "nope"]), st.sampled_from(NEGATIONS), st.sampled_from(sorted(ADJECTIVES)))
def test_a_leading_word_decides_only_when_the_negation_agrees(lead: str, negation: str, adjective: str) -> None:
    first = lead in ("yes", "yeah")
    expected = first if (not ADJECTIVES[adjective]) is first else None
    assert read_bool(f"{lead}, it {negation} {adjective}") is expected


@given(st.text(max_size=200))
def test_any_text_reads_as_a_polarity_or_none(text: str) -> None:
    assert read_bool(text) in (True, False, None)
