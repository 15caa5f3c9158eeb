"""VideoMathQA: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evr1.eval.benchmarks.videomathqa import videomath
from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS

from ..rows import check_same, easyvideor1_row, sample_row, score_strict, scored, write_files


def test_videomathqa_counts_unread_answers_and_mbin_needs_every_pair() -> None:
    rows = [sample_row("A", "Answer: A", 1, setting="mcq", question_id="1", category="geo"),  # "A" of "Answer" is read: right
            sample_row("B", "Answer: B", 1, setting="mcq", question_id="2", category="geo"),  # ... and here wrong
            sample_row("C", "c", 1, setting="mcq", question_id="3", category="geo"),  # no capital: wrong, counted
            sample_row("A", "A", 1, setting="mbin", question_id="4", category="geo"), sample_row("B", "B", 1, setting="mbin", question_id="4",
                                                                               category="geo"),
            sample_row("A", "A", 1, setting="mbin", question_id="5", category="geo"), sample_row("A", "", 0, setting="mbin", question_id="5",
                                                                               category="geo")]
    official = block(BENCHMARKS.get("videomathqa"), rows, "official")
    assert official["metrics"]["MCQ"] == pytest.approx(100 / 3) and official["n"] == 7
    assert official["metrics"]["MBin"] == 50.0 and official["score"] == 50.0


def test_videomath_breakdowns_report_mbin_and_mcq_apart() -> None:
    # MBin: q1 (Counting) both pairs right, q2 (Counting) one wrong, q3 (Geometry) right -> Counting 50 (2), Geometry 100 (1).
    # MCQ: m1 (Counting) wrong.
    rows = [scored(1, setting="mbin", question_id="q1", category="Counting"), scored(1, setting="mbin", question_id="q1", category="Counting"),
            scored(1, setting="mbin", question_id="q2", category="Counting"), scored(0, setting="mbin", question_id="q2", category="Counting"),
            scored(1, setting="mbin", question_id="q3", category="Geometry"), scored(0, setting="mcq", question_id="m1", category="Counting")]
    result = videomath("category")(rows)
    assert result.score == pytest.approx(200 / 3)
    assert result.breakdowns == {"category (MBin)": {"Counting": (50.0, 2), "Geometry": (100.0, 1)},
                                 "category (MCQ)": {"Counting": (0.0, 1)}}


def test_videomath_mbin_needs_every_pair() -> None:
    rows = [scored(1, setting="mbin", question_id="1"), scored(1, setting="mbin", question_id="1"),
            scored(1, setting="mbin", question_id="2"), scored(0, setting="mbin", question_id="2"),
            scored(0, setting="mcq", question_id="1")]
    result = videomath()(rows)
    assert (result.score, result.metrics["MBin"], result.metrics["MCQ"]) == (50.0, 50.0, 0.0)


VMQ = {"A": ("2584897a-267", "Counting", "long"), "B": ("f93445c3-75", "Chart", "short")}


FIVE = ["A. 24", "B. 28", "C. 30", "D. 12", "E. 18"]


def _vmq_official() -> dict[str, Any]:
    mcq = [{"question_id": qid, "videoID": qid[:8], "question": f"Q {key}?", "options": FIVE, "answer": "B",
            "category": cat, "duration": dur} for key, (qid, cat, dur) in VMQ.items()]
    mbin = [{"question_id": qid, "pair": p, "videoID": qid[:8], "question": f"Q {key}?", "options": ["A. 28", "B. 30"],
             "answer": "A", "category": cat, "duration": dur} for key, (qid, cat, dur) in VMQ.items() for p in range(4)]
    return {"videomathqa/mcq.json": mcq, "videomathqa/mbin.json": mbin}


def _vmq_easy() -> dict[str, Any]:
    rows = []
    for key, (qid, cat, dur) in VMQ.items():
        common = {"video_id": qid[:8], "data_source": "VideoMathQA", "category": cat, "length": dur, "steps": "{}"}
        rows.append(easyvideor1_row(qid, f"Q {key}?", FIVE, "B", f"./videos/{qid[:8]}.mp4", **common))
        n = qid.rsplit("-", 1)[1]
        rows += [easyvideor1_row(qid, f"Q {key}?", ["A. 28", "B. 30"], "A", f"./videos/{qid[:8]}.mp4", mbinary_id=int(f"{n}{p + 1}"), **common)
                 for p in range(4)]
    return {"videomathqa/videomathqa.jsonl": rows}


def test_videomathqa_easyvideor1_rows_score_as_the_official(tmp_path: Path) -> None:
    """A: MCQ right, 4/4 pairs right; B: MCQ wrong, 3/4 pairs right -> MBin 50 (B fails), MCQ 50."""
    (a, _, _), (b, _, _) = VMQ.values()
    official = {f"videomathqa/mcq/{a}": "B", f"videomathqa/mcq/{b}": "C",
                **{f"videomathqa/mbin/{a}/{p}": "A" for p in range(4)},
                **{f"videomathqa/mbin/{b}/{p}": "A" if p else "B" for p in range(4)}}
    easy = {f"videomathqa/videomathqa/{a}": "B", f"videomathqa/videomathqa/{b}": "C",
            **{f"videomathqa/videomathqa/{a}/267{p + 1}": "A" for p in range(4)},
            **{f"videomathqa/videomathqa/{b}/75{p + 1}": "A" if p else "B" for p in range(4)}}
    got_official = score_strict(write_files(tmp_path / "o", _vmq_official()), "videomathqa", official)
    got_easy = score_strict(write_files(tmp_path / "e", _vmq_easy()), "videomathqa", easy)
    check_same(got_official, got_easy, 50.0)
    assert got_easy["metrics"]["MCQ"] == 50.0 and got_easy["metrics"]["mbin_questions"] == 2.0
    assert {k: v["score"] for k, v in got_easy["breakdowns"]["category (MBin)"].items()} == {"Counting": 100.0, "Chart": 0.0}

