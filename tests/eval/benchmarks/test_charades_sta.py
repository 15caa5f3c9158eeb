"""Charades-STA.

Charades-STA's official numbers: the merge of repeated queries (`evr1.eval.benchmarks.charades_sta.one_per_query`: lmms-eval's
task keys each prediction by video, caption and reference span, so a repeated query counts once, with its last
prediction) and the spans its reader takes (`evr1.eval.benchmarks.charades_sta`); worked by hand, and against lmms-eval's own
aggregation on the same predictions.

Charades-STA's official span reader (`evr1.eval.benchmarks.charades_sta.charades_span`): a table worked by hand from the
rules of lmms-eval 0.7.3's `extract_time`, and equality with that function itself on strings built from the pieces
its rules react to; the answer form evr1's prompt asks for reads the same in both readers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.eval.benchmarks.charades_sta import charades_item, charades_span, span_iou
from evr1.eval.eval_prompt import REASON_SUFFIX, eval_question_text
from evr1.eval.fixtures import write_fixtures
from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS
from evr1.rewards.grounding_parse import parse_interval

from ..rows import check_same, sample_row, score_strict, write_files

# (video, caption, reference span, response); IoUs with the reference in the comments
ITEMS = [
    ("v1.mp4", "person opens a door", [2.0, 6.0], "The event happens in 2.0 - 6.0 seconds."),  # 1, replaced below
    ("v1.mp4", "person opens a door", [2.0, 6.0], "The event happens in 4.0 - 10.0 seconds."),  # the one kept: 2/8
    ("v1.mp4", "person opens a door", [7.0, 9.0], "The event happens in 7.0 - 9.0 seconds."),  # another span: 1
    ("v2.mp4", "person opens a door", [2.0, 6.0], "The event happens in 3.0 - 6.0 seconds."),  # another video: 3/4
    ("v1.mp4", "person sits down", [2.0, 6.0], "The event happens in 0.0 - 1.0 seconds."),  # another query: 0
]


# responses of all kinds to one reference span, [2, 6] (distinct queries); IoUs in the comments
READ = [("v3.mp4", f"query {i}", [2.0, 6.0], text) for i, text in enumerate([
    "", "no idea", "4",  # nothing, nothing, one number: 0
    "[2, 6]",  # one sentence: its first number only, no span: 0
    "From 2 to 6 seconds.",  # 1
    "0:03 - 0:06",  # 3/4
    "10 - 4",  # reversed, swapped: 2/8
    "It starts at 2.\nIt ends at 5.",  # the first number of each sentence, 2 - 5: 3/4
    "A specific example is : 20.8 - 30.0 seconds. The event happens in 3 - 7 seconds.",  # the example cut out: 3/5
    "The event happens in 2 - 4 seconds. It could also be 0:10 - 0:12.",  # one sentence, the clock range first: 0
])]


def _rows(items: list[tuple[str, str, list[float], str]] = ITEMS) -> list[dict[str, Any]]:
    return [{"id": f"charades_sta/{i}", "problem_type": "temporal_grounding", "response": text, "parsed": text,
             "answer": {"time": span}, "score": 0.0, "error": None, "meta": {"video": video, "caption": caption}}
            for i, (video, caption, span, text) in enumerate(items)]


def test_a_repeated_query_counts_once_with_its_last_prediction() -> None:
    got = block(BENCHMARKS.get("charades_sta"), _rows(), "official")
    assert (got["n"], got["dropped"]) == (4, 1)
    assert got["metrics"] == pytest.approx({"mIoU": 100 * (0.25 + 1 + 0.75 + 0) / 4, "R@0.3": 50.0, "R@0.5": 50.0,
                                            "R@0.7": 50.0})
    assert block(BENCHMARKS.get("charades_sta"), _rows(), "strict")["n"] == 5  # strict counts every item


def test_rows_without_the_query_meta_are_kept_apart() -> None:
    rows = [{**r, "meta": {}} for r in _rows()]
    assert block(BENCHMARKS.get("charades_sta"), rows, "official")["n"] == 5


def test_the_spans_the_task_reads() -> None:
    got = block(BENCHMARKS.get("charades_sta"), _rows(READ), "official")
    assert (got["n"], got["dropped"]) == (10, 0)
    assert got["metrics"] == pytest.approx({"mIoU": 100 * (1 + 0.75 + 0.25 + 0.75 + 0.6) / 10, "R@0.3": 40.0,
                                            "R@0.5": 40.0, "R@0.7": 30.0})


@pytest.mark.parametrize("items", [ITEMS, ITEMS + READ], ids=["repeated", "repeated+read"])
def test_equals_lmms_evals_charades_aggregation(items: list[tuple[str, str, list[float], str]]) -> None:
    from lmms_eval.tasks.charades_sta import utils as reference

    docs = [{"video": video, "caption": caption, "timestamp": span} for video, caption, span, _ in items]
    submitted = [reference.temporal_grounding_process_results_generation(doc, [text])["charades_sta_mIOU"]
                 for doc, (*_, text) in zip(docs, items)]
    theirs = reference._temporal_grounding_compute_metrics(submitted)
    ours = block(BENCHMARKS.get("charades_sta"), _rows(items), "official")["metrics"]
    assert ours == pytest.approx({"mIoU": theirs["mIOU"], "R@0.3": theirs["IOU@3"], "R@0.5": theirs["IOU@5"],
                                  "R@0.7": theirs["IOU@7"]})


def test_the_importers_keep_video_and_caption(tmp_path: Path) -> None:
    folder = tmp_path / "charades_sta"
    folder.mkdir()
    rows = [{"video": "AO8RW.mp4", "caption": "a person is putting a book on a shelf.", "timestamp": [0.0, 6.9],
             "duration": 33.67}] * 2
    (folder / "charades_test.json").write_text(json.dumps(rows))
    records = BENCHMARKS.get("charades_sta").load(tmp_path)
    assert [(r.meta["video"], r.meta["caption"]) for r in records] == [("AO8RW.mp4", rows[0]["caption"])] * 2


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


@pytest.mark.parametrize(("response", "iou"), [
    ("4 - 10", 0.25),  # past the clip's end: not trimmed (2 / 8)
    ("6 - 4", 0.5),  # reversed: swapped (2 / 4)
    ("-2 - 4", 0.5),  # the reader takes no sign: 2 - 4 (2 / 4)
    ("From 2 to 6 seconds.", 1.0), ("0:02 - 0:06", 1.0), ("<think>maybe 0 - 1</think>2 - 6", 1.0),
    ("[2, 6]", 0.0),  # one number read (2): no span
    ("", 0.0), (None, 0.0), ("somewhere", 0.0),
    ("2 - 2", 0.0),  # a point
])
def test_charades_iou_of_the_span_as_given(response: str | None, iou: float) -> None:
    assert charades_item(sample_row({"time": [2.0, 6.0]}, response, ptype="temporal_grounding")) == pytest.approx(iou)


def test_charades_reference_as_given() -> None:
    """The task's IoU takes the reference span as given: reversed, [6, 2] against 2 - 6 overlaps by
    max(0, min(6, 2) - max(2, 6)) = 0; a point reference against the same point has no extent: 0."""
    assert charades_item(sample_row({"time": [6.0, 2.0]}, "2 - 6", ptype="temporal_grounding")) == 0.0
    assert charades_item(sample_row({"time": [3.0, 3.0]}, "3 - 3", ptype="temporal_grounding")) == 0.0


SPAN_ENDS = st.one_of(st.floats(-50, 50), st.integers(-5, 5).map(float))  # small integers: shared ends, points


@settings(max_examples=80, deadline=None)
@given(a=SPAN_ENDS, b=SPAN_ENDS, c=SPAN_ENDS, d=SPAN_ENDS)
def test_span_iou_equals_lmms_evals_charades_iou(a: float, b: float, c: float, d: float) -> None:
    from lmms_eval.tasks.charades_sta import utils as reference

    pred = [a, b] if b > a else [b, a]  # the order its extract_time gives
    assert span_iou((a, b), (c, d)) == reference.iou((c, d), pred)


def test_charades_official_table() -> None:
    rows = [sample_row({"time": [2.0, 6.0]}, r, ptype="temporal_grounding") for r in ("2 - 6", "4 - 10", "3 - 6", "")]
    official = block(BENCHMARKS.get("charades_sta"), rows, "official")
    # IoUs 1, 0.25, 0.75, 0
    assert official["metrics"] == pytest.approx({"mIoU": 50.0, "R@0.3": 50.0, "R@0.5": 50.0, "R@0.7": 50.0})


def test_charades_easyvideor1_rows_score_as_the_official(tmp_path: Path) -> None:
    """IoU 0.5 ([24, 27] in [24, 30]) and 1.0: mIoU 75, R@0.3 100, R@0.5 100, R@0.7 50."""
    spans = [("3MSZA", "person turn a light on.", [24.0, 30.0]), ("AO8RW", "a person is putting a book on a shelf.", [0.0, 6.9])]
    official = [{"video": f"{v}.mp4", "caption": c, "timestamp": t, "duration": 30.0} for v, c, t in spans]
    placeholder = "<[PLHD21_never_used_51bce0c785ca2f68081bfa7d91973934]>"
    easy = [{"data_type": "video", "data_source": "charades_sta", "problem_type": "temporal grounding", "path": f"{v}.mp4",
             "problem": c, "problem_id": i, "options": [],
             "solution": f"<think>{json.dumps({'time': t, 'boxes': {}})}</think>{placeholder}"} for i, (v, c, t) in enumerate(spans)]
    responses = ["[24, 27]", "[0, 6.9]"]
    official_root = write_files(tmp_path / "o", {"charades_sta/charades_test.json": official})
    easy_root = write_files(tmp_path / "e", {"charades_sta/charades_test.json": easy})
    got_official = score_strict(official_root, "charades_sta", {f"charades_sta/{v}/{i + 1}": r for i, ((v, _, _), r) in enumerate(zip(spans, responses))})
    got_easy = score_strict(easy_root, "charades_sta", {f"charades_sta/charades_test/{i}": r for i, r in enumerate(responses)})
    check_same(got_official, got_easy, 75.0)
    assert got_easy["metrics"]["R@0.7"] == 50.0
    a, b = BENCHMARKS.get("charades_sta").load(official_root)[0], BENCHMARKS.get("charades_sta").load(easy_root)[0]
    assert (eval_question_text(b), b.answer) == (eval_question_text(a), a.answer)

