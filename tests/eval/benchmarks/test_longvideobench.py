"""LongVideoBench: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import pytest

from evr1.eval.benchmarks.longvideobench import longvideobench_item

from ..rows import sample_row


@pytest.mark.parametrize(("response", "options", "score"), [
    ("B", 4, 1.0), ("The answer is B.", 4, 1.0), ("D. A book", 4, 0.0),  # the first capital: D
    ("none", 4, 0.25), ("", 5, 0.2),  # no letter: the random guess's expected score
    (None, 4, 0.0),  # a failed generation: no response to guess for
])
def test_longvideobench_reader_and_its_random_guess(response: str | None, options: int, score: float) -> None:
    got = longvideobench_item({**sample_row("B", response), "options": [str(i) for i in range(options)]})
    assert got == pytest.approx(score)

