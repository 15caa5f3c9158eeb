"""Answers that used to be mis-scored: negated options, comparatives in preference, option texts
without their article, a bare negation in boolean, prose spans in spatial-temporal grounding
(tables with hand-read answers, and hypothesis properties of the same rules)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reward_helpers import make

from evr1.rewards import spatio_temporal
from evr1.rewards.boolean import read_bool
from evr1.rewards.grounding_parse import prose_interval
from evr1.rewards.multiple_choice import LETTERS, choice_letter
from evr1.rewards.preference import read_label
from evr1.specs import RewardSpec

FOUR = ["dog", "cat", "bird", "fish"]
ARTICLES = ["A cat", "The dog", "An owl", "a fish"]

CHOICES = [
    ("Definitely not B, the answer is A", FOUR, "A"),
    ("the answer is C, not A", FOUR, "C"),
    ("It isn't B, it is D", FOUR, "D"),
    ("Not (A); (C)", FOUR, "C"),
    ("not A or B", FOUR, None),  # both rejected: no letter left
    ("not A", FOUR, None),
    ("B, not B", FOUR, None),  # the same letter chosen and rejected
    ("not A, but B or C", FOUR, None),  # still a hedge between B and C
    ("E, not A", FOUR, None),  # an out-of-range letter stays ambiguous
    ("Cat", ARTICLES, "A"),
    ("owl", ARTICLES, "C"),
    ("the answer is dog", ARTICLES, "B"),
    ("It shows a fish.", ARTICLES, "D"),
    ("Cat", ["A cat", "The cat"], None),  # two options without their article are the same
]


@pytest.mark.parametrize(("text", "options", "expected"), CHOICES)
def test_choice_table(text: str, options: list[str], expected: str | None) -> None:
    assert choice_letter(text, options) == expected


LABELS = [
    ("Response 1 is worse than Response 2", "B"),
    ("Response 2 is better than Response 1", "B"),
    ("A is better than B", "A"),
    ("B is far inferior to A", "A"),
    ("The first response is much better than the second", "A"),
    ("Response 1 is not better than Response 2", None),  # a negated comparison names both
    ("A is better than B, and B is better than A", None),  # comparisons disagree
    ("Response B", "B"),
    ("tie", "tie"),
]


@pytest.mark.parametrize(("text", "expected"), LABELS)
def test_preference_table(text: str, expected: str | None) -> None:
    assert read_label(text) == expected


BOOLS = [
    ("Absolutely not.", False),
    ("Not.", False),
    ("Certainly not!", False),
    ("not at all", False),
    ("Of course not", False),
    ("**Definitely not**", False),
    ("Never.", False),
    ("Why not?", None),  # not a bare negation
    ("not sure", None),
    ("Absolutely", None),
]


@pytest.mark.parametrize(("text", "expected"), BOOLS)
def test_boolean_table(text: str, expected: bool | None) -> None:
    assert read_bool(text) is expected


ST_GT = {"time": [8, 11], "boxes": {"8": [0, 0, 2, 2], "9": [0, 0, 2, 2]}}
SPANS = [
    # the prose span [8, 11] is the reference span (tIoU 1); boxes at 8 and 9 match (vIoU 1)
    ("<answer>The man is seen from 8 to 11 seconds. 8s: [0, 0, 2, 2]\n9s: [0, 0, 2, 2]</answer>", 1.0, 1.0),
    # box timestamps alone give [8, 9] -> tIoU 1/3
    ("<answer>8s: [0, 0, 2, 2]\n9s: [0, 0, 2, 2]</answer>", 1 / 3, 1.0),
    # prose after JSON boxes: [9, 11] -> tIoU 2/3; box coordinates are never read as times
    ('<answer>{"8": [0, 0, 2, 2], "9": [0, 0, 2, 2]} between 0:09 and 0:11</answer>', 2 / 3, 1.0),
    # one number in the prose is no span: [8, 9] from the boxes
    ("<answer>There are 2 people. 8 s: [0, 0, 2, 2] 9 s: [0, 0, 2, 2]</answer>", 1 / 3, 1.0),
]


@pytest.mark.parametrize(("response", "tiou", "viou"), SPANS)
def test_spatial_temporal_prose_span_table(response: str, tiou: float, viou: float, spec: RewardSpec) -> None:
    out = spatio_temporal.score_spatial_temporal(make(response, ST_GT, "stvg", fps=1.0, duration=20.0), spec)
    assert (out.components["tiou"], out.components["viou"]) == (pytest.approx(tiou), pytest.approx(viou))


@st.composite
def two_letters(draw: st.DrawFn) -> tuple[int, str, str]:
    """(number of options, a chosen letter, another in-range letter)."""
    n = draw(st.integers(2, 26))
    i, j = draw(st.permutations(range(n)).map(lambda p: p[:2]))
    return n, LETTERS[i], LETTERS[j]


NEGATIONS = ["{L}, not {M}", "Definitely not {M}, the answer is {L}", "not {M} but {L}", "It isn't {M}; {L}",
             "The answer is {L}, not {M}", "Not ({M}). ({L})"]  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(two_letters(), st.sampled_from(NEGATIONS))
def test_a_negated_letter_is_rejected(pick: tuple[int, str, str], template: str) -> None:
    n, chosen, other = pick
    options = [f"thing {k}" for k in range(n)]
    assert choice_letter(template.format(L=chosen, M=other), options) == chosen


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["cat", "dog", "owl", "fish", "bird", "red car", "old man"]), min_size=2, max_size=6,
                unique=True), st.data())  # fmt: skip
def test_an_option_text_without_its_article_names_it(nouns: list[str], data: st.DataObject) -> None:
    n = len(nouns)
    articles = data.draw(st.lists(st.sampled_from(["A", "An", "The", "a", "the"]), min_size=n, max_size=n))
    i = data.draw(st.integers(0, len(nouns) - 1))
    options = [f"{a} {noun}" for a, noun in zip(articles, nouns)]
    assert choice_letter(nouns[i].capitalize(), options) == LETTERS[i]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["Response ", "", "the "]),
       st.sampled_from([("1", "2"), ("2", "1"), ("A", "B"), ("B", "A")]),
       st.sampled_from(["better", "worse", "superior", "inferior"]),
       st.sampled_from(["", "much ", "slightly "]))  # fmt: skip
def test_a_comparison_names_its_winner(prefix: str, pair: tuple[str, str], word: str, adverb: str) -> None:
    first, second = pair
    to = "to" if word in ("superior", "inferior") else "than"
    winner = first if word in ("better", "superior") else second
    expected = {"1": "A", "2": "B"}.get(winner, winner)
    assert read_label(f"{prefix}{first} is {adverb}{word} {to} {prefix}{second}") == expected


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["absolutely", "certainly", "definitely", "of course", "surely"]), max_size=2),
       st.sampled_from(["not", "Not", "never"]), st.sampled_from(["", ".", "!", " at all"]))  # fmt: skip
def test_a_bare_negation_is_no(intensifiers: list[str], negation: str, end: str) -> None:
    if end == " at all" and negation == "never":
        end = ""
    assert read_bool(" ".join([*intensifiers, negation]) + end) is False


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 50), st.integers(1, 50),
       st.lists(st.lists(st.integers(0, 99), min_size=4, max_size=4), min_size=1, max_size=3),
       st.sampled_from(["from {a} to {b} seconds", "between {a}s and {b}s", "{a} - {b} s"]))  # fmt: skip
def test_a_prose_span_beside_boxes_is_read_as_an_interval(start: int, length: int, boxes: list[list[int]],
                                                          prose: str) -> None:  # fmt: skip
    lines = "\n".join(f"{start + k}s: {box}" for k, box in enumerate(boxes))
    text = f"The object appears {prose.format(a=start, b=start + length)}.\n{lines}"
    assert prose_interval(text) == (float(start), float(start + length))
