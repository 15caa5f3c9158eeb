"""Video-Holmes: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import pytest

from evr1.eval.benchmarks.video_holmes import video_holmes_letter
from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS

from ..rows import sample_row


@pytest.mark.parametrize(("response", "letter"), [
    ("C", "C"), ("<think>maybe A or B</think><answer>D</answer>", "D"), ("<answer>[E]</answer>", "E"),
    ("C: the thief. B is wrong", "B"),  # "B " comes before "C:" alphabetically
    ("The answer is C", "C"),  # "C" alone, no form: the second pass; "T" is no letter A-F
    ("<think>A is tempting</think> so C", "A"),  # no <answer>: the whole response, thinking included
    ("none", None), ("", None), ("G", None),
])
def test_video_holmes_letter(response: str, letter: str | None) -> None:
    assert video_holmes_letter(response) == letter


def test_video_holmes_counts_failures() -> None:
    rows = [sample_row("C", "C", 1, category="SR"), sample_row("A", None, 0, error="generation failed", category="SR"),
            sample_row("B", "<answer>B</answer>", 1, category="TCI")]
    official = block(BENCHMARKS.get("video_holmes"), rows, "official")
    assert (official["score"], official["n"]) == (pytest.approx(200 / 3), 3)
    assert official["breakdowns"]["category"]["SR"] == {"score": 50.0, "n": 2}

