"""Open-ended (normalised exact match, ROUGE) and OCR (WER/CER) with hand-computed values."""

from __future__ import annotations

import pytest
from reward_helpers import make

from evr1.rewards import ocr, open_ended
from evr1.specs import RewardSpec

OPEN = [
    ("<answer>A man rides a horse.</answer>", "a man rides a horse", 1.0),  # equal after normalising
    ("<answer>The CAT, sat!</answer>", "the cat sat", 1.0),
    # R1: 2/3; R2: bigrams {the cat, cat sat} vs {the cat, cat ran}: 1/2; RL: LCS 2 -> 2/3
    ("<answer>the cat sat</answer>", "the cat ran", (2 / 3 + 1 / 2 + 2 / 3) / 3),
    # stemming: running -> run, dogs -> dog: identical token streams after stemming
    ("<answer>running dogs</answer>", "run dog", 1.0),
    ("<answer>completely different</answer>", "the cat ran", 0.0),
    ("<answer></answer>", "the cat ran", 0.0),
    # CJK characters are tokens: 2 of 3 unigrams, 1 of 2 bigrams, LCS 2
    ("<answer>东京塔</answer>", "东京站", (2 / 3 + 1 / 2 + 2 / 3) / 3),
]


@pytest.mark.parametrize(("response", "answer", "expected"), OPEN)
def test_open_ended_table(response: str, answer: str, expected: float, spec: RewardSpec) -> None:
    assert open_ended.score(make(response, answer, "open_ended"), spec) == pytest.approx(expected)


def test_open_ended_best_of_several_references(spec: RewardSpec) -> None:
    inp = make("<answer>a red car</answer>", ["blue truck", "A red car."], "open_ended")
    assert open_ended.score(inp, spec) == 1.0


OCR = [
    ("<answer>Hello world</answer>", "hello world!", 1.0, 1.0),
    # one substituted word of 2 (WER 0.5); one deleted char of 11 (CER 1/11)
    ("<answer>hello wrld</answer>", "Hello world", 0.5, 1 - 1 / 11),
    ("<answer></answer>", "hello", 0.0, 0.0),
    # 3 words inserted against 1 reference word: WER 3 -> capped to 0
    ("<answer>a b c hello</answer>", "hello", 0.0, 0.0),
    ("<answer>Straße</answer>", "STRASSE", 1.0, 1.0),  # case folding
]


@pytest.mark.parametrize(("response", "answer", "word", "char"), OCR)
def test_ocr_table(response: str, answer: str, word: float, char: float, spec: RewardSpec) -> None:
    out = ocr.score(make(response, answer, "ocr"), spec)
    assert out.components["word"] == pytest.approx(word)
    assert out.components["char"] == pytest.approx(char)
    assert out.score == pytest.approx((word + char) / 2)


def test_ocr_empty_reference_is_a_data_error(spec: RewardSpec) -> None:
    with pytest.raises(ValueError, match="ocr answer"):
        ocr.score(make("<answer>x</answer>", " ", "ocr"), spec)
