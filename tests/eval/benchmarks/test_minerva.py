"""MINERVA: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.eval.benchmarks.minerva import minerva_item, minerva_letter

from ..rows import PIECES, sample_row


@settings(max_examples=150, deadline=None)
@given(text=st.lists(PIECES, max_size=12).map("".join))
def test_minerva_letter_equals_lmms_evals_reader(text: str) -> None:
    from lmms_eval.tasks.minerva import utils as reference

    assert minerva_letter(text) == reference._extract_choice_letter(text)


@pytest.mark.parametrize(("response", "score"), [
    ("B", 1.0), ("the answer is b", 1.0), ("A, no: B", 1.0), ("B, not A", 0.0),  # the last capital
    ("none", 0.2), ("", 0.2),  # lmms-eval's random letter: its expected score
    (None, 0.0),  # a failed generation
])
def test_minerva_item(response: str | None, score: float) -> None:
    assert minerva_item(sample_row("B", response)) == pytest.approx(score)

