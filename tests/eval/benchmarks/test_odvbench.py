"""ODV-Bench: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import pytest

from evr1.eval.benchmarks.odvbench import odvbench_letter

from ..rows import both, sample_row


@pytest.mark.parametrize(("response", "letter"), [
    ("B", "B"), ("b", "B"), ("B. a red car", "B"), ("b.car", "B"), ("(B)", "B"), ("'B'", "B"),
    ("The answer is D", "D"), ("I think a car", "A"),  # the article "a" is a lone letter a-e
    ("A or B", "A"), ("Option: C", "C"), ("B. red\nC. blue", "B"),  # "X. text" over lines: the first lone letter
    ("none", "none"), ("答案是B", "答案是b"),  # CJK characters are word characters: no lone letter
    ("F", "f"), ("", ""), ("x-B", "B"),  # "-" beside no space: a space
    ("x - B-C", "x  bc"),  # "-" beside a space somewhere: every "-" removed, so "B-C" becomes the word "bc"
])
def test_odvbench_letter(response: str, letter: str) -> None:
    assert odvbench_letter(response) == letter


def test_odvbench_drops_empty_predictions_by_task_and_subtask() -> None:
    rows = [sample_row("B", "B", 1, task="static", subtask="sign"), sample_row("B", "The answer is D", 0, task="static", subtask="sign"),
            sample_row("C", "", 0, task="dynamic", subtask="car"),  # empty: dropped
            sample_row("A", None, 0, task="dynamic", subtask="car", error="generation failed"),  # no text: dropped
            sample_row("A", "  ", 0, task="dynamic", subtask="car"),  # blank, not empty: counted, wrong
            sample_row("A", "I think a truck", 0, task="dynamic", subtask="truck")]  # reads A: right
    official, strict = both("odvbench", rows)
    assert (official["score"], official["n"], official["dropped"]) == (50.0, 4, 2)
    assert official["breakdowns"]["task"] == {"dynamic": {"score": 50.0, "n": 2}, "static": {"score": 50.0, "n": 2}}
    assert official["breakdowns"]["subtask"]["car"] == {"score": 0.0, "n": 1}
    assert strict["score"] == pytest.approx(100 / 6) and strict["n"] == 6

