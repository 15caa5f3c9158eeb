"""Properties of the number reader: formatted numbers round-trip, text around a number does not
change it, units are never magnitudes, and two different numbers make an answer ambiguous."""

from __future__ import annotations

import math

from hypothesis import assume, given
from hypothesis import strategies as st

from evr1.rewards.number_parsing import parse_number


def _decimal(units: int, places: int) -> str:
    text = f"{abs(units) // 10**places:,}" + (f".{abs(units) % 10**places:0{places}d}" if places else "")
    return ("-" if units < 0 else "") + text


integers = st.integers(-(10**12), 10**12)
floats = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)
# (text, value): plain, thousands separators, decimals, scientific, magnitude suffixes
numbers = st.one_of(
    integers.map(lambda i: (str(i), float(i))),
    st.builds(_decimal, integers, st.integers(0, 6)).map(lambda t: (t, float(t.replace(",", "")))),
    floats.map(lambda x: (repr(x), x)),
    floats.map(lambda x: (f"{x:.6e}", float(f"{x:.6e}"))),
    st.tuples(st.integers(0, 10**6), st.sampled_from([("k", 3), ("K", 3), ("M", 6), ("B", 9), (" bn", 9)])).map(
        lambda t: (f"{t[0] / 10:.1f}{t[1][0]}", float(f"{t[0] / 10:.1f}e{t[1][1]}"))
    ),
)
PREFIXES = ["", "The answer is ", "Answer: ", "about ", "~", "≈ ", "**", "(", "$", "There are ", "\n"]
SUFFIXES = ["", ".", "!", " people", " m", " meters.", " km", "**", ")", " in total", "\n", " (approx.)"]
UNITS = ["km", "kg", "ms", "mm", "kB", "kHz", "m", "s", "cm", "px", "Mb", "MHz", "fps", "th"]


@given(numbers)
def test_formatted_numbers_round_trip(pair: tuple[str, float]) -> None:
    text, value = pair
    got = parse_number(text)
    assert got is not None and not got.percent
    assert got.value == value


@given(numbers, st.sampled_from(PREFIXES), st.sampled_from(SUFFIXES))
def test_surrounding_text_keeps_the_value(pair: tuple[str, float], prefix: str, suffix: str) -> None:
    text, value = pair
    got = parse_number(f"{prefix}{text}{suffix}")
    assert got is not None and got.value == value


@given(st.integers(0, 10**6), st.integers(0, 3), st.sampled_from(UNITS), st.sampled_from(["", " "]))
def test_units_are_never_magnitudes(units: int, places: int, unit: str, space: str) -> None:
    text = _decimal(units, places)
    got = parse_number(f"{text}{space}{unit}")
    assert got is not None and got.value == float(text.replace(",", ""))


@given(numbers, st.from_regex(r"[A-Za-z]{1,4}", fullmatch=True))
def test_a_number_glued_after_a_word_is_not_read(pair: tuple[str, float], word: str) -> None:
    text, _ = pair
    assume(text[0].isdigit())
    assert parse_number(f"{word}{text}") is None  # `v2`, `abc1.2k`, `Qwen2`


@given(numbers, numbers, st.sampled_from([" or ", " and ", ", ", " to ", " vs ", "; ", " or maybe ", "\n"]))
def test_two_different_numbers_are_ambiguous(a: tuple[str, float], b: tuple[str, float], joiner: str) -> None:
    assume(not math.isclose(a[1], b[1], rel_tol=1e-9, abs_tol=1e-12))
    assert parse_number(f"{a[0]}{joiner}{b[0]}") is None
