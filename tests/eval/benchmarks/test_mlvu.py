"""MLVU: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from evr1.data.records import RecordError
from evr1.eval.benchmarks.mlvu import mlvu_item, mlvu_read
from evr1.registry import BENCHMARKS

from ..rows import both, sample_row, write_files, write_json


# check_ans of choice_bench.py at HEAD (fd060c1; since 41add89): with a ")" the one character before the first ")",
# else the whole response. The first upload (0b16f40) cut the response before the ")" instead: "(A)" and
# "The answer is (A)" were wrong there, "A) x" and "A" right in both.
@pytest.mark.parametrize(("response", "read"), [
    ("A", "A"), ("A) a cat", "A"), ("(A)", "A"), ("The answer is (C)", "C"), ("(A) or (B)", "A"), ("B) or A", "B"),
    ("Best Option: (D)", "D"), ("A.", "A."), ("a)", "a"), (")A", ""), ("", ""), ("The answer is A", "The answer is A"),
    ("AB)", "B"),
])
def test_mlvu_reads_the_character_before_the_first_parenthesis(response: str, read: str) -> None:
    assert mlvu_read(response) == read


@pytest.mark.parametrize(("response", "right"), [
    ("A", 1.0), ("A) a cat", 1.0), (" A ", 1.0), ("(A)", 1.0), ("The answer is (A).", 1.0), ("(A) or (B)", 1.0),
    ("A.", 0.0), ("The answer is A", 0.0), ("a", 0.0), ("A or B", 0.0), ("(B) or (A)", 0.0), ("", 0.0), (None, 0.0),
])
def test_mlvu_letter_before_the_parenthesis(response: str | None, right: float) -> None:
    assert mlvu_item(sample_row("A", response)) == right


def test_mlvu_m_avg_with_unequal_task_sizes() -> None:
    rows = [sample_row("A", "A", 1, task="count"), sample_row("B", "B.", 1, task="count"), sample_row("C", "C) x", 1, task="count"),
            sample_row("D", "(D)", 1, task="needle"), sample_row("E", "The answer is E", 1, task="needle")]
    official, strict = both("mlvu", rows)
    assert official["score"] == pytest.approx((200 / 3 + 50) / 2) and official["metrics"]["M-Avg"] == official["score"]
    assert strict["score"] == pytest.approx(100.0)  # the strict scores given (evr1 reads all five)


PLOT = {"video": "movie101_66.mp4", "duration": 246, "question": "What color is the main male character in the video?",
        "candidates": ["Yellow", "Red", "Green", "Blue"], "answer": "Yellow", "question_type": "plotQA"}


SUB_SCENE = {"video": "subPlot_new_all_126.mp4", "duration": 5632.8,
             "question": "Please describe the scene when the man in the green plaid shirt leads the players into the golf course.",
             "answer": "The man in the green plaid shirt leads the football players into the golf course with a swagger.",
             "question_type": "subPlot", "scoring_points": ["leads the players with a swagger"]}


def test_mlvu_official_json_folder_imports_and_skips_open_ended_files(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_json(tmp_path, "mlvu/json/1_plotQA.json", [PLOT])
    write_json(tmp_path, "mlvu/json/8_sub_scene.json", [SUB_SCENE, {**SUB_SCENE, "video": "subPlot_new_all_127.mp4"}])
    with caplog.at_level(logging.WARNING, logger="evr1.eval"):
        records = BENCHMARKS.get("mlvu").load(tmp_path)
    assert [(r.id, r.answer, r.options, r.media[0].path, r.meta["task"]) for r in records] == [
        ("mlvu/1_plotQA/1", "A", ["Yellow", "Red", "Green", "Blue"], "mlvu/video/1_plotQA/movie101_66.mp4", "plotQA")]
    skips = [m for m in caplog.messages if "8_sub_scene.json" in m]
    assert len(skips) == 1 and "skipping its open-ended sub-scene captioning rows" in skips[0]


def test_mlvu_lmms_eval_rows_still_import(tmp_path: Path) -> None:
    write_json(tmp_path, "mlvu/json/dev.json", [{"video_name": "movie101_66.mp4", "question": "Colour?",
                                             "candidates": ["Yellow", "Red"], "answer": "Red", "task_type": "plotQA"}])
    (record,) = BENCHMARKS.get("mlvu").load(tmp_path)
    assert (record.answer, record.media[0].path, record.meta["task"]) == ("B", "mlvu/video/movie101_66.mp4", "plotQA")


def test_mlvu_choice_row_without_candidates_is_an_error(tmp_path: Path) -> None:
    write_json(tmp_path, "mlvu/json/1_plotQA.json", [{k: v for k, v in PLOT.items() if k != "candidates"}])
    with pytest.raises(RecordError, match="1_plotQA.json:1: field 'candidates'"):
        BENCHMARKS.get("mlvu").load(tmp_path)


def test_mlvu_easyvideor1_rows_are_refused_with_the_way_out(tmp_path: Path) -> None:
    row = {"data_type": "video", "data_source": "MLVU", "problem_type": "multiple choice", "path": "./video/needle_32.mp4",
           "problem": "What does the hand do?", "problem_id": 1, "options": ["A. a", "B. b", "C. c", "D. d"],
           "solution": "<answer>A</answer>"}
    write_files(tmp_path, {"mlvu/json/mlvu-dev.json": [row]})
    with pytest.raises(RecordError, match="mlvu-dev.json:2: field 'task'") as caught:
        BENCHMARKS.get("mlvu").load(tmp_path)
    assert "cannot tell it" in str(caught.value) and "use the official json/<n>_<task>.json" in str(caught.value)

