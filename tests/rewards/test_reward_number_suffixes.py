"""Magnitude suffixes and their look-alikes (units, names, mixed tokens): the decision table of
`evr1.rewards.number_parsing`, with hand-computed values."""

from __future__ import annotations

import pytest
from reward_helpers import make

from evr1.rewards import numerical
from evr1.rewards.number_parsing import parse_number
from evr1.specs import RewardSpec

SCALED = [
    ("1.2k", 1_200),
    ("3K", 3_000),
    ("-3k", -3_000),
    ("1,200k", 1_200_000),
    ("20k+", 20_000),
    ("about 1.2k people", 1_200),
    ("1.2k (1200)", 1_200),  # the same number twice: not ambiguous
    ("2.5M", 2_500_000),
    ("5M+", 5_000_000),
    ("$4.2B", 4_200_000_000),
    ("7B", 7_000_000_000),
    ("1.5 bn", 1_500_000_000),
    ("1.5bn", 1_500_000_000),
    ("1.5 BN", 1_500_000_000),
    ("4 bln", 4_000_000_000),
    ("3 mln", 3_000_000),
    ("300K", 300_000),  # never kelvin
    ("7 trillion", 7_000_000_000_000),
    ("COVID-19 cases: 3k", 3_000),  # the name is skipped, the count is read
]

UNSCALED = [
    ("2.5m", 2.5),  # metres or minutes
    ("10 M", 10.0),  # a single letter after a space is a unit or a label
    ("3 K", 3.0),
    ("2 B", 2.0),
    ("5 k", 5.0),
    ("12b", 12.0),
    ("3 mn", 3.0),
    ("5 km", 5.0),
    ("3kg", 3.0),
    ("10 ms", 10.0),
    ("2mm", 2.0),
    ("4kB", 4.0),
    ("7 kHz", 7.0),
    ("2.5Mb", 2.5),
    ("5k-run", 5.0),  # a compound word
    ("3M-rated", 3.0),
    ("1e3k", 1_000.0),  # suffixes follow plain decimals only
    ("10²", 100.0),  # a superscript power, not `102`
    ("10⁻³", 0.001),
    ("2km²", 2.0),  # a unit's power
    ("The room is 20m2.", 20.0),  # square metres written without the superscript
    ("12m2", 12.0),
    ("5 cm3", 5.0),
    ("GPT-4o counted 12", 12.0),
    ("Answer:-5", -5.0),  # a sign, not a name's hyphen
]

UNREADABLE = [
    "a 2x2 grid",  # a size, not a unit's power
    "3k-4k",  # a range
    "K-pop",
    "Qwen2.5-VL-7B",
    "GPT-4",
    "COVID-19",
    "x-5",
    "abc1.2kdef",
    "3m 20s",  # two numbers: durations are not converted
    "3m20s",
    "1h30m",
    "0x1F",
    "1920x1080",
    "1_000",
    "1.5.2",
    "192.168.0.1",
]


@pytest.mark.parametrize(("text", "value"), SCALED + UNSCALED)
def test_suffix_table(text: str, value: float) -> None:
    got = parse_number(text)
    assert got is not None
    assert got.value == value  # exact: `1.2k` is read as 1.2e3, not 1.2 * 1000
    assert not got.percent


@pytest.mark.parametrize("text", UNREADABLE)
def test_names_and_mixed_tokens_are_not_numbers(text: str) -> None:
    assert parse_number(text) is None


@pytest.mark.parametrize(
    ("response", "answer", "expected"),
    [
        ("<answer>1.2k</answer>", 1200, 1.0),
        ("<answer>about 3.5M viewers</answer>", "3,500,000", 1.0),
        ("<answer>3 kg</answer>", 3000, 0.0),
        ("<answer>Qwen2.5-VL-7B</answer>", 7, 0.0),
    ],
)
def test_numerical_reads_suffixes(response: str, answer: object, expected: float, spec: RewardSpec) -> None:
    assert numerical.score(make(response, answer, "numerical"), spec) == expected


def test_regression_reads_suffixes(spec: RewardSpec) -> None:
    # 1.1k against 1000: relative error 0.1 <= 1 - θ for θ = 0.50..0.90 (9 of 10)
    assert numerical.score_regression(make("<answer>1.1k</answer>", 1000, "regression"), spec) == pytest.approx(0.9)
    # 2.5m is 2.5 (metres), not 2.5 million
    assert numerical.score_regression(make("<answer>2.5m</answer>", 2.5, "regression"), spec) == 1.0
