"""LongVideo-Reason: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import pytest

from evr1.eval.benchmarks.longvideo_reason import longvideo_reason_item

from ..rows import both, sample_row


@pytest.mark.parametrize(("response", "score", "fmt"), [
    ("B", 1.0, 0.0), ("  B \n", 1.0, 0.0),  # no tag: the whole response, stripped
    ("<think>x</think> <answer>B</answer>", 1.0, 1.0), ("<think>a\nb</think>\n<answer> B </answer>", 1.0, 1.0),
    ("<answer>B</answer><answer>C</answer>", 1.0, 0.0),  # the first tag decides
    ("<answer>\nB\n</answer>", 0.0, 0.0),  # a tag over lines is not read: the whole response is compared
    ("<answer>Therefore the final answer is: B</answer>", 1.0, 0.0),
    ("Therefore the final answer is: B", 0.0, 0.0),  # the phrase without its tag: the whole response
    ("Therefore the final answer is: C <answer>B</answer>", 0.0, 0.0),  # the phrase present: only its tagged form
    ("b", 0.0, 0.0), ("B.", 0.0, 0.0), ("The answer is B", 0.0, 0.0), ("<answer>A or B</answer>", 0.0, 0.0),
    ("<answer>B. the goal</answer>", 0.0, 0.0), ("", 0.0, 0.0),
])
def test_longvideo_reason_reader(response: str, score: float, fmt: float) -> None:
    assert longvideo_reason_item(sample_row("B", response)) == {"score": score, "format": fmt}


def test_longvideo_reason_math_verify_never_decides_a_letter() -> None:
    """The official scorer's symbolic check parses the `<answer>X</answer>` reference to nothing, so it never
    scores a letter right (math_verify, the scorer's own library, run here)."""
    from math_verify import parse, verify
    gold = parse("<answer>B</answer>")
    assert gold == []
    assert not any(verify(gold, parse(text)) for text in ("B", "<answer>B</answer>", "\\boxed{B}", "2"))


def test_longvideo_reason_drops_failed_generations() -> None:
    rows = [sample_row("B", "<think>t</think><answer>B</answer>", 1, category="goal"), sample_row("A", "a", 0, category="goal"),
            sample_row("C", "C", 1, category="plot"), sample_row("D", None, 0, category="plot", error="generation failed")]
    official, strict = both("longvideo_reason", rows)
    assert official["score"] == pytest.approx(200 / 3) and official["n"] == 3 and official["dropped"] == 1
    assert official["metrics"] == pytest.approx({"accuracy": 200 / 3, "format_accuracy": 100 / 3})
    assert official["breakdowns"]["category"] == {"goal": {"score": 50.0, "n": 2}, "plot": {"score": 100.0, "n": 1}}
    assert strict["score"] == 50.0 and strict["n"] == 4 and strict["failed"] == 1

