"""Charades-STA's official span reader (`evr1.eval.official_spans.charades_span`): a table worked by hand from the
rules of lmms-eval 0.7.3's `extract_time`, and equality with that function itself on strings built from the pieces
its rules react to; the answer form evr1's prompt asks for reads the same in both readers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.eval.eval_prompt import REASON_SUFFIX, eval_question_text
from evr1.eval.fixtures import write_fixtures
from evr1.eval.official_spans import charades_span
from evr1.registry import BENCHMARKS
from evr1.rewards.grounding_parse import parse_interval


@pytest.mark.parametrize(("text", "span"), [
    ("", None), ("no idea", None), ("somewhere in the middle", None),
    ("8", None),  # one number: no pair
    ("The event happens at 8 seconds.", None),
    ("[8, 11]", None),  # one sentence, so only its first number: 8
    ("starts at 8 s and ends at 11 s.", None),  # two numbers in one sentence: still only the first
    ("8 - 11", (8.0, 11.0)), ("8.5 – 11.25", (8.5, 11.25)),  # hyphen or en dash
    ("From 8 to 11 seconds.", (8.0, 11.0)),  # "to" -> "-"
    ("11 - 8", (8.0, 11.0)),  # reversed: swapped
    ("-2 - 4", (2.0, 4.0)),  # no sign
    ("8s - 11s", (8.0, 11.0)),  # the last reading: "s" before the dash
    ("0:08 - 0:11", (8.0, 11.0)), ("1:02:03-1:02:10", (3723.0, 3730.0)),  # clock ranges
    ("The event starts at 0:08 and ends at 0:11.", (8.0, 11.0)),  # two clock times
    ("It starts at 8.\nIt ends at 11.", (8.0, 11.0)),  # the first number of each sentence
    ("Maybe 3 - 4!\nThe event happens in 8 - 11 seconds.", (8.0, 11.0)),  # only sentences with a keyword are read
    ("Maybe 3 - 4?\nOr 5 - 6", (3.0, 4.0)),  # no keyword anywhere: every sentence, the first range
    ("The event happens in 8 - 11 seconds, or 0:05 - 0:07.", (5.0, 7.0)),  # a clock range before a number range
    ("The event happens in 8 - 11 seconds, at 0:20 or 0:30.", (8.0, 11.0)),  # a number range before clock times
    ("A specific example is : 20.8 - 30.0 seconds. The event happens in 8 - 11 seconds.", (8.0, 11.0)),  # cut out
    ("The event 'person opens a door' happens in the 8.0 - 11.0 seconds.", (8.0, 11.0)),
    ("<answer>8.0 - 11.0</answer>", (8.0, 11.0)),
])
def test_span_by_hand(text: str, span: tuple[float, float] | None) -> None:
    assert charades_span(text) == span


NUMBERS = st.one_of(st.integers(0, 200).map(str), st.decimals(0, 200, places=2).map(str))
CLOCKS = st.builds(lambda h, m, s: f"{h}{m}:{s:02d}", st.sampled_from(["", "1:", "01:"]),
                   st.integers(0, 99).map(str), st.integers(0, 59))
DASHES = st.sampled_from([" - ", "-", " – ", " to ", "s - ", " s-", ", "])
WORDS = st.sampled_from([
    "s", " s", "[", "]", ".", ". ", "!", "?", "\n", " ", "The event happens in ", "starts at ", "ends at ",
    "Start time: ", "weekend", " seconds", "tomato", "stops", "Toward ", "A specific example is : 20.8 - 30.0 seconds",
    "<answer>", "</answer>", "about", ":", "-", "0", "1.5"])
TIME = st.one_of(NUMBERS, CLOCKS)
PIECES = st.one_of(TIME, WORDS, DASHES, st.tuples(TIME, DASHES, TIME).map("".join))
@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=14).map("".join))
def test_equals_lmms_evals_extract_time(text: str) -> None:
    from lmms_eval.tasks.charades_sta import utils as reference

    theirs = reference.extract_time(text)
    assert charades_span(text) == (tuple(theirs[0]) if theirs else None)


@settings(max_examples=60, deadline=None)
@given(start=NUMBERS, end=NUMBERS)
def test_evr1s_answer_form_reads_the_same_in_both_readers(start: str, end: str) -> None:
    """evr1's Charades-STA instruction asks for "start - end" in seconds: the strict reader reads it as given, the
    official one ordered."""
    text = f"{start} - {end}"
    assert parse_interval(text) == (float(start), float(end))
    assert charades_span(text) == (min(float(start), float(end)), max(float(start), float(end)))


def test_evr1s_charades_prompt_asks_for_that_form(tmp_path: Path) -> None:
    write_fixtures(tmp_path, ["charades_sta"])
    record = BENCHMARKS.get("charades_sta").load(tmp_path)[0]
    assert eval_question_text(record) == ('Find the moment in the video that matches: "a person opens a door"\n'
                                     "Give the start and end time of the moment in seconds as: start - end.")
    assert eval_question_text(record, "reason").endswith(f"as: start - end.\n{REASON_SUFFIX}")
