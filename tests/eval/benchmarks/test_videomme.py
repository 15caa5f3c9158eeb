"""Video-MME: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import pytest

from evr1.eval.benchmarks.videomme import videomme_item

from ..rows import both, sample_row


@pytest.mark.parametrize(("response", "score"), [
    ("A", 1.0), ("The answer is A.", 1.0), ("(A) a cat", 1.0),
    ("Best option: A", 0.0),  # "Best option:" is no prefix of the official list (a missing comma): "B" of "Best" is read
    ("The best option is A", 1.0),  # not a prefix either, but it holds no capital A-D
    ("Because the cat left, A", 0.0),  # "B" of "Because" is the first capital A-D
    ("a", None), ("", None), (None, None),  # no capital letter A-D: dropped (not answered)
    ("I think it is the one on the left side of the room near the door", None),
    ("A or B", 1.0), ("E", None),
])
def test_videomme_official_reader(response: str | None, score: float | None) -> None:
    assert videomme_item(sample_row("A", response)) == score


def test_videomme_accuracy_over_answered_items() -> None:
    rows = [sample_row("A", "A", 1, duration="short", domain="Knowledge", category="Law", task="OCR Problems"),
            sample_row("B", "b", 1, duration="short", domain="Knowledge", category="Law", task="OCR Problems"),  # dropped
            sample_row("C", "D", 0, duration="long", domain="Sports Competition", category="Football", task="Counting Problem"),
            sample_row("D", None, 0, error="generation failed", duration="long", domain="Sports Competition", category="Football",
                task="Counting Problem")]  # dropped
    official, strict = both("videomme", rows)
    assert (official["score"], official["n"], official["dropped"]) == (50.0, 2, 2)
    assert strict["score"] == 50.0 and strict["n"] == 4
    assert official["breakdowns"]["duration"] == {"long": {"score": 0.0, "n": 1}, "short": {"score": 100.0, "n": 1}}
    assert set(official["breakdowns"]) == {"duration", "domain", "category", "task"}

