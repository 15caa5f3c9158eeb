"""Reading official annotation rows (`evr1.eval.annotation_rows`): option lists, answer letters, embedded options.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from evr1.eval.annotation_rows import letter_of, option_list, split_embedded
from evr1.eval.eval_prompt import LETTERS


@pytest.mark.parametrize(("answer", "options", "letter"), [
    ("A dog.", ["The cat", "A dog"], "B"),  # option text wins over a leading capital
    ("a DOG", ["The cat", "A dog"], "B"),
    ("B. right", ["left", "right", "up"], "B"),
    ("(C)", ["x", "y", "z"], "C"),
    ("(B) y", ["x", "y"], "B"),
    ("A:", ["x", "y"], "A"),
    ("B)", ["x", "y"], "B"),
    ("B", ["A", "B"], "B"),
    ("A", ["B", "A"], "B"),  # an option named "A" is that option
    (0, ["x", "y"], "A"),
])
def test_letter_of_table(answer: object, options: list[str], letter: str) -> None:
    assert letter_of(answer, options) == letter


@pytest.mark.parametrize(("answer", "options"), [
    ("A. y", ["x", "y"]),  # a letter with another option's text
    ("C", ["x", "y"]),
    ("A cat", ["The cat", "A dog"]),
    ("x.", ["x", "X!"]),  # loosely equal to two options
    (2, ["x", "y"]),
])
def test_letter_of_refuses(answer: object, options: list[str]) -> None:
    with pytest.raises(ValueError, match="not one of 2 options|out of range"):
        letter_of(answer, options)


_WORDS = st.text(alphabet="ABCdefg xyz.:()", min_size=1, max_size=10).filter(lambda t: t.strip(" .:"))


OPTIONS = st.lists(_WORDS, min_size=2, max_size=6).filter(
    lambda opts: len({" ".join(o.casefold().split()).rstrip(" .") for o in opts}) == len(opts))


def _loosely_an_option(text: str, options: list[str]) -> bool:
    def norm(t: str) -> str:
        return " ".join(t.casefold().split()).rstrip(" .。!?;")
    return any(norm(text) == norm(o) for o in options)


@given(OPTIONS, st.data())
def test_letter_of_finds_each_option_text(options: list[str], data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(options) - 1))
    assert letter_of(options[i], options) == LETTERS[i]
    try:
        loose = letter_of(f"  {options[i].upper()} ", options)
    except ValueError as exc:  # the upper-cased text is also a letter naming another option ("A" among "x", "a")
        assert "by its text but as the letter" in str(exc)
    else:
        assert loose == LETTERS[i]


def test_letter_of_refuses_text_and_letter_naming_two_options() -> None:
    with pytest.raises(ValueError, match="reads as option A by its text but as the letter B"):
        letter_of("B", ["b", "a", "c"])


@given(OPTIONS, st.data())
def test_letter_of_reads_letter_forms(options: list[str], data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(options) - 1))
    letter = LETTERS[i]
    form = data.draw(st.sampled_from([letter, f"({letter})", f"{letter}.", f"{letter}:", f"{letter})",
                                      f"{letter}. {options[i]}", f"({letter}) {options[i]}"]))
    assume(not _loosely_an_option(form, options))
    assert letter_of(form, options) == letter


@given(OPTIONS, st.data())
def test_letter_of_never_reads_a_capital_before_text_as_a_letter(options: list[str], data: st.DataObject) -> None:
    letter = LETTERS[data.draw(st.integers(0, len(options) - 1))]
    answer = f"{letter} {data.draw(_WORDS).strip()}"
    assume(not _loosely_an_option(answer, options))
    with pytest.raises(ValueError):
        letter_of(answer, options)


@given(OPTIONS)
def test_letter_of_refuses_a_letter_past_the_options(options: list[str]) -> None:
    letter = LETTERS[len(options)]
    assume(not _loosely_an_option(letter, options))
    with pytest.raises(ValueError):
        letter_of(letter, options)


@pytest.mark.parametrize(("value", "texts"), [
    (["A. x", "B. y"], ["x", "y"]),
    ({"B": "y", "A": "x"}, ["x", "y"]),
    ("A. x\nB. y\n", ["x", "y"]),
    (["x", "y"], ["x", "y"]),
])
def test_option_list(value: object, texts: list[str]) -> None:
    assert option_list(value) == texts


@pytest.mark.parametrize(("answer", "letter"), [("B", "B"), ("B. y", "B"), ("(C)", "C"), (1, "B"), ("z", "C")])
def test_letter_of(answer: object, letter: str) -> None:
    assert letter_of(answer, ["x", "y", "z"]) == letter


def test_letter_of_rejects_out_of_range() -> None:
    with pytest.raises(ValueError, match="not one of 3 options"):
        letter_of("D", ["x", "y", "z"])
    assert split_embedded("Q?\n(A) one\n(B) two") == ("Q?", ["one", "two"])

