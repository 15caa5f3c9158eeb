"""MVBench: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evr1.data.records import RecordError
from evr1.eval.benchmarks.mvbench import mvbench_item
from evr1.registry import BENCHMARKS

from ..rows import both, check_same, easyvideor1_row, sample_row, score_strict, write_files


@pytest.mark.parametrize(("response", "right"), [
    ("A", 1.0), ("a.", 1.0), ("A) the cat", 1.0), ("(A)", 1.0), ("A or B", 1.0),  # the first word decides
    ("The answer is A", 0.0), ("B", 0.0), ("Z", 0.0), ("AB", 0.0),
    ("", 1.0),  # the official check's quirk: "" lies inside "(a)"
    (None, 0.0),  # a failed generation: no response to check
])
def test_mvbench_first_word_check(response: str | None, right: float) -> None:
    assert mvbench_item(sample_row("A", response)) == right


def test_mvbench_avg_is_correct_over_total_with_unequal_task_sizes() -> None:
    rows = [sample_row("A", "A", 1, task="a"), sample_row("A", "A", 1, task="a"), sample_row("A", "B", 0, task="a"),
            sample_row("B", None, 0, task="b", error="generation failed")]
    official, strict = both("mvbench", rows)
    assert official["score"] == pytest.approx(50.0)  # 2 / 4
    assert official["metrics"] == pytest.approx({"Avg": 50.0})
    assert strict["score"] == pytest.approx((200 / 3 + 0) / 2)  # the task mean: 33.33
    assert official["breakdowns"]["task"] == {"a": {"score": pytest.approx(200 / 3), "n": 3}, "b": {"score": 0.0, "n": 1}}
    assert official["n"] == 4 and official["dropped"] == 0


THREE = ["A. Not sure", "B. Scattering something down", "C. Piling something up"]


def _mvbench_official() -> dict[str, Any]:
    row = {"question": "What is the action?", "candidates": [t[3:] for t in THREE]}
    return {"mvbench/json/action_antonym.json": [{**row, "video": "166583.webm", "answer": "Piling something up"},
                                                 {**row, "video": "166584.webm", "answer": "Not sure"}],
            "mvbench/json/action_sequence.json": [{"video": "AJTDO.mp4", "question": "What happened after?",
                                                   "candidates": ["sat", "ran"], "answer": "ran", "start": 0.0, "end": 11.375}]}


def _mvbench_easy(sequence_path: str = "./star/Charades_v1_480/AJTDO.mp4") -> dict[str, Any]:
    common = {"original_question_type": "", "subtitle": ""}
    return {"mvbench/json/mvbench.json": [
        {"video": "166583.webm", **easyvideor1_row(1, "What is the action?", THREE, "C", "./ssv2_video/166583.mp4", **common)},
        {"video": "166584.webm", **easyvideor1_row(2, "What is the action?", THREE, "A", "./ssv2_video/166584.mp4", **common)},
        {"video": "AJTDO.mp4", **easyvideor1_row(801, "What happened after?", ["A. sat", "B. ran"], "B", sequence_path, **common),
         "start": 0.0, "end": 11.375},
    ]}


def test_mvbench_easyvideor1_rows_score_the_official_task_mean(tmp_path: Path) -> None:
    """action_antonym 1/2 -> 50, action_sequence 1/1 -> 100: task mean 75 (strict); the leaderboard's Avg, correct /
    total, 2/3 (official)."""
    got_official = score_strict(write_files(tmp_path / "o", _mvbench_official()), "mvbench",
                          {"mvbench/action_antonym/1": "C", "mvbench/action_antonym/2": "B", "mvbench/action_sequence/1": "B"})
    easy_root = write_files(tmp_path / "e", _mvbench_easy())
    got_easy = score_strict(easy_root, "mvbench", {"mvbench/mvbench/1": "C", "mvbench/mvbench/2": "B", "mvbench/mvbench/801": "B"})
    check_same(got_official["protocols"]["strict"], got_easy["protocols"]["strict"], 75.0)
    check_same(got_official["protocols"]["official"], got_easy["protocols"]["official"], 200 / 3)
    clip = BENCHMARKS.get("mvbench").load(easy_root)[2].media[0]
    assert (clip.path, clip.start, clip.end) == ("mvbench/star/Charades_v1_480/AJTDO.mp4", 0.0, 11.375)


def test_mvbench_easyvideor1_row_whose_folder_contradicts_its_block_is_an_error(tmp_path: Path) -> None:
    write_files(tmp_path, _mvbench_easy(sequence_path="./ssv2_video/AJTDO.mp4"))
    with pytest.raises(RecordError, match=r"field 'task'.*'mvbench/mvbench/801'.*'action_sequence'.*under star/") as caught:
        BENCHMARKS.get("mvbench").load(tmp_path)
    assert "original_question_type" in str(caught.value) and "json/<task>.json" in str(caught.value)

