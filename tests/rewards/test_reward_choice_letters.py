"""Multiple-choice letters: the pronoun "I" and the article "A" are not options, hedges and
out-of-range letters are unparseable (table with hand-read answers, and hypothesis properties)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reward_helpers import make

from evr1.rewards import multiple_choice
from evr1.rewards.multiple_choice import LETTERS, choice_letter
from evr1.specs import RewardSpec

WORDS = ["dog", "cat", "bird", "fish", "horse", "mouse", "snake", "tiger", "zebra", "whale", "otter", "camel", "eagle",
         "goose", "llama", "moose", "panda", "raven", "sheep", "squid", "trout", "viper", "wolf", "yak", "bison", "crab"]  # fmt: skip
FOUR, TEN = WORDS[:4], WORDS[:10]  # A. dog, B. cat, C. bird, D. fish; TEN runs to J. whale (as on Video-MMMU)

LETTER_TABLE = [
    # the pronoun "I" with 10 options (I is in range)
    ("I think B", TEN, "B"),
    ("B, I think", TEN, "B"),
    ("I'm sure it is C", TEN, "C"),
    ("I believe the answer is (D)", TEN, "D"),
    ("I", TEN, "I"),  # a bare I is the option
    ("I. whale", TEN, None),  # letter I contradicted by J's text
    ("I. zebra", TEN, "I"),  # letter I with its own text
    # the article "A"
    ("A dog", FOUR, "A"),  # no letter; the one option text mentioned
    ("A cat is shown, so B", FOUR, "B"),
    ("B. A bird sits nearby", FOUR, "B"),  # article at a sentence start
    # hedges: another in-range letter later in the answer
    ("A (or maybe B)", FOUR, None),
    ("A B", FOUR, None),
    ("A. dog B. cat C. bird D. fish", FOUR, None),
    ("A or B", FOUR, None),
    ("B, not A", FOUR, "B"),  # a negated letter is rejected, not a hedge
    ("A because it barks", FOUR, "A"),  # "because" is a connective: A is the letter
    ("The answer is A based on the barking", FOUR, "A"),  # mid-sentence A before a lowercase word
    # out-of-range letters make the answer ambiguous
    ("E, not A", FOUR, None),
    ("The answer is B (see part X)", FOUR, None),
    ("E", FOUR, None),
    # plain answers keep working
    ("B", FOUR, "B"),
    ("(B)", FOUR, "B"),
    ("B.", FOUR, "B"),
    ("B. cat", FOUR, "B"),
    ("B. dog", FOUR, None),
    ("The answer is B", FOUR, "B"),
    ("Answer: B) cat", FOUR, "B"),
    ("<answer>B</answer>", FOUR, "B"),
    ("cat", FOUR, "B"),
    ("B. The U-turn", FOUR, "B"),  # a letter inside a hyphenated word is no letter
    # capital letters inside option texts are blanked out
    ("B. Vitamin C", ["Vitamin A", "Vitamin C", "Vitamin D"], "B"),
    ("The answer is C (both A and B)", ["red", "blue", "both A and B"], "C"),
]


@pytest.mark.parametrize(("text", "options", "expected"), LETTER_TABLE)
def test_choice_letter_table(text: str, options: list[str], expected: str | None) -> None:
    assert choice_letter(text, options) == expected


SCORES = [
    ("<answer>I think B</answer>", "B", 1.0),
    ("<answer>B, I think</answer>", "B", 1.0),
    ("<answer>I think B</answer>", "I", 0.0),
    ("<answer>A (or maybe B)</answer>", "A", 0.0),
    ("<answer>E, not A</answer>", "A", 0.0),
]


@pytest.mark.parametrize(("response", "answer", "expected"), SCORES)
def test_ten_option_scores(response: str, answer: str, expected: float, spec: RewardSpec) -> None:
    assert multiple_choice.score(make(response, answer, "multiple_choice", options=TEN), spec) == expected


PLAIN = ["{L}", "({L})", "{L}.", "{L}. {t}", "The answer is {L}", "Answer: {L}) {t}", "<answer>{L}</answer>", "{t}", "Option {L}"]
HEDGES = ["{L} or {M}", "{L} (or maybe {M})", "{L} {M}", "{L}/{M}", "{L}, {M}", "either {L} or {M}", "{L}. {t} {M}. {u}"]


@st.composite
def two_letters(draw: st.DrawFn) -> tuple[int, int, int]:
    """(number of options, one in-range index, another in-range index)."""
    n = draw(st.integers(2, 26))
    i = draw(st.integers(0, n - 1))
    j = draw(st.integers(0, n - 2))
    return n, i, j + (j >= i)


@given(st.integers(1, 26).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))), st.sampled_from(PLAIN))
def test_plain_answers_give_their_letter(pick: tuple[int, int], template: str) -> None:
    n, i = pick
    assert choice_letter(template.format(L=LETTERS[i], t=WORDS[i]), WORDS[:n]) == LETTERS[i]


@given(st.integers(2, 26).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))),
       st.sampled_from(PLAIN[:7]), st.sampled_from(["I think {}", "{}, I think", "I guess {} but I am not sure"]))  # fmt: skip
def test_the_pronoun_i_never_counts(pick: tuple[int, int], template: str, wrapper: str) -> None:
    n, i = pick
    answer = template.format(L=LETTERS[i], t=WORDS[i])
    assert choice_letter(wrapper.format(answer), WORDS[:n]) == LETTERS[i]


@given(two_letters(), st.sampled_from(HEDGES))
def test_two_letters_are_a_hedge(pick: tuple[int, int, int], template: str) -> None:
    n, i, j = pick
    assert choice_letter(template.format(L=LETTERS[i], M=LETTERS[j], t=WORDS[i], u=WORDS[j]), WORDS[:n]) is None


@given(st.integers(1, 25).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1), st.integers(n, 25))),
       st.sampled_from(["{L}, not {X}", "{X}, not {L}", "{L} (or {X})"]))  # fmt: skip
def test_an_out_of_range_letter_is_ambiguous(pick: tuple[int, int, int], template: str) -> None:
    n, i, x = pick
    assert choice_letter(template.format(L=LETTERS[i], X=LETTERS[x]), WORDS[:n]) is None


@given(st.text(max_size=80) | st.lists(st.sampled_from(["A", "I", "B", " ", "(", ")", ".", ", ", "or", "think", "dog"]), max_size=12).map("".join),
       st.integers(1, 26))  # fmt: skip
def test_any_text_gives_none_or_an_in_range_letter(text: str, n: int) -> None:
    letter = choice_letter(text, WORDS[:n])
    assert letter is None or LETTERS.index(letter) < n
