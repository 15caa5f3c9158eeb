"""The answer readers several official scorers share (`evr1.eval.readers`), checked against lmms-eval's own.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.eval.benchmarks.longvideobench import LONGVIDEOBENCH_PREFIXES
from evr1.eval.readers import VIDEOMME_PREFIXES, first_capital, lmms_choice

from .rows import PIECES


@settings(max_examples=150, deadline=None)
@given(text=st.lists(PIECES, max_size=12).map("".join))
def test_first_capital_equals_lmms_evals_readers(text: str) -> None:
    """VideoMathQA's extract_characters_regex ("" for none) and LongVideoBench's parser (random for none)."""
    from lmms_eval.tasks.longvideobench import utils as lvb
    from lmms_eval.tasks.videomathqa import utils as vmqa

    assert (first_capital(text, VIDEOMME_PREFIXES, "ABCDE") or "") == vmqa.extract_characters_regex(text)
    found = first_capital(text.strip(), LONGVIDEOBENCH_PREFIXES, "ABCDE")
    if found is not None:
        assert found == lvb.parse_multi_choice_response(text, list("ABCD"), {})


@pytest.mark.parametrize(("response", "letter"), [
    ("B", "B"), ("The answer is (C).", "C"), ("I think A. No wait, the answer is D", "I"),  # "I" stands alone at the start: letter I (rank 10)
    ("So A. No wait, the answer is D", "D"),  # the phrase (7) beats "A." (5) ("a", ""),
    ("Answer: B", "B"), ("(A) or (B)", "B"), ("", ""), ("It is J", "J"), ("none of them", ""),
])
def test_lmms_choice_table(response: str, letter: str) -> None:
    assert lmms_choice(response, list("ABCDEFGHIJ")) == letter


@settings(max_examples=150, deadline=None)
@given(text=st.lists(PIECES, max_size=12).map("".join), n=st.integers(2, 5))
def test_lmms_choice_equals_lmms_evals_extract_mcq_answer(text: str, n: int) -> None:
    from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer

    choices = list("ABCDE")[:n]
    assert lmms_choice(text, choices) == extract_mcq_answer(text, choices=choices)

