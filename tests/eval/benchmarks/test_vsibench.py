"""VSI-Bench: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.eval.benchmarks.vsibench import LMMS_EVAL_READING, vsi_mra, vsi_number, vsibench_item
from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS

from ..rows import both, check_same, easyvideor1_row, sample_row, score_strict, write_files


@pytest.mark.parametrize(("response", "truth", "mra", "lmms_eval"), [
    ("12", 10.0, 0.6, 0.6),  # off by exactly 20%: 1 - 0.8 is 0.19999999999999996 in floats, so 6 of 10 thresholds
    ("11", 10.0, 0.9, 0.9),  # off by 10%: 1 - 0.9 (0.8999999999999999) is 0.10000000000000009: 9 of 10
    ("10", 10.0, 1.0, 1.0),
    ("15", 10.0, 0.1, 0.1),  # 50%: only t = 0.5
    ("3.5 meters", 3.5, 1.0, 1.0), ("3.", 3.0, 1.0, 1.0), ("3...", 3.0, 1.0, 1.0), ("1e1", 10.0, 1.0, 0.0),  # lmms-eval: 1
    # the authors read the first word only; lmms-eval 0.7.3 reads the first number anywhere, digits or words
    ("twenty-one chairs", 21.0, 0.0, 1.0),
    ("about 3, maybe 4", 3.0, 0.0, 1.0),
    ("two rooms and 5 doors", 2.0, 0.0, 1.0),
    ("The answer is 4", 4.0, 0.0, 1.0),
    ("4m", 4.0, 0.0, 1.0), ("4,", 4.0, 0.0, 1.0), ("3,000", 3000.0, 0.0, 0.0),  # lmms-eval: 3, then ",000"
    ("4\nchairs", 4.0, 0.0, 1.0),  # a newline does not split the first word
    ("\n4 chairs", 4.0, 1.0, 1.0),  # the first word "\n4", stripped
    ("no idea", 3.0, 0.0, 0.0), ("", 3.0, 0.0, 0.0), ("nan", 3.0, 0.0, 0.0), ("inf", 3.0, 0.0, 0.0),
    ("<think>maybe 9</think>4", 4.0, 1.0, 1.0),  # the think part is not read
])
def test_vsibench_mra_of_the_first_word(response: str, truth: float, mra: float, lmms_eval: float) -> None:
    got = vsibench_item(sample_row(truth, response, ptype="regression"))
    assert got["score"] == pytest.approx(mra) and got["components"][LMMS_EVAL_READING] == pytest.approx(lmms_eval)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["3", "4.5", ".", " ", "\n", "m", "three", "-", "e", "1", ",", "nan", "x", "_"]),
                max_size=8).map("".join))
def test_vsi_number_is_the_authors_fuzzy_matching_and_to_float(response: str) -> None:
    """The authors' `fuzzy_matching` and `to_float` are unchanged in lmms-eval 0.7.3: run them on the same text."""
    from lmms_eval.tasks.vsibench import utils as reference

    expected = reference.to_float(reference.fuzzy_matching(response))
    got = vsi_number(response)
    assert got == expected or (math.isnan(got) and math.isnan(expected))  # "nan" reads nan in both


@pytest.mark.parametrize(("response", "right"), [
    ("A", 1.0), ("a.", 1.0), ("A. the chair", 1.0),
    ("A or B", 1.0),  # the first word decides: a hedge that starts with the right letter scores
    ("The answer is A", 0.0), ("(A)", 0.0), ("B. left", 0.0), ("", 0.0), (None, 0.0),
])
def test_vsibench_multiple_choice_reads_the_first_word(response: str | None, right: float) -> None:
    assert vsibench_item(sample_row("A", response))["score"] == right


def _vsi_table() -> list[dict[str, Any]]:
    direction = [("A", "easy"), ("A", "easy"), ("B", "easy"), ("A", "medium"), ("C", "hard")]  # gt A each time
    return [
        sample_row(10.0, "12", 0.7, "regression", task="object_counting"),
        sample_row(10.0, "10", 1.0, "regression", task="object_counting"),
        sample_row(10.0, "about 10", 1.0, "regression", task="object_counting"),
        *(sample_row("A", r, float(r == "A"), task="object_rel_direction", difficulty=d) for r, d in direction),
        sample_row("A", "The answer is A", 1.0, task="route_planning"),
    ]


def test_vsibench_overall_and_by_task_table_by_hand() -> None:
    official, strict = both("vsibench", _vsi_table())
    counting, direction = (0.6 + 1.0 + 0.0) / 3, (2 / 3 + 1 + 0) / 3  # direction: the mean of its levels, not 3/5
    assert official["score"] == pytest.approx(100 * (counting + direction + 0) / 3)
    tasks = official["breakdowns"]["task"]
    assert tasks["object_rel_direction"] == {"score": pytest.approx(100 * direction), "n": 5}
    assert tasks["object_counting"]["score"] == pytest.approx(100 * 1.6 / 3) and tasks["route_planning"]["score"] == 0.0
    assert official["metrics"]["object_rel_direction"] == pytest.approx(100 * direction)
    # lmms-eval 0.7.3's reading reads "about 10" as 10
    assert official["metrics"]["overall_lmms_eval_0.7.3"] == pytest.approx(100 * (2.6 / 3 + direction + 0) / 3)
    # strict: evr1's MRA (0.7 at 20%), evr1's reader ("The answer is A" is A)
    assert strict["score"] == pytest.approx(100 * ((0.7 + 1 + 1) / 3 + direction + 1) / 3)


def test_vsibench_lmms_eval_reading_equals_lmms_evals_own_scorer() -> None:
    """lmms-eval 0.7.3's vsibench process_results and sub-score computation, run on the same predictions, give the
    `overall_lmms_eval_0.7.3` metric (its numeric reading is the later one: the authors' is the headline)."""
    from lmms_eval.tasks.vsibench import utils as reference

    table = _vsi_table()
    docs = []
    for r in table:
        meta = r["meta"]
        qtype = f"{meta['task']}_{meta['difficulty']}" if "difficulty" in meta else meta["task"]
        doc = {"question_type": qtype, "ground_truth": str(r["answer"]) if qtype != "object_counting" else "10"}
        docs.append(reference.vsibench_process_results(doc, [r["response"]])["vsibench_overall"])
    expected = reference._compute_all_subscores(docs)
    official = block(BENCHMARKS.get("vsibench"), table, "official")
    assert official["metrics"]["overall_lmms_eval_0.7.3"] == pytest.approx(100 * expected["overall"], abs=1e-9)
    assert official["score"] < official["metrics"]["overall_lmms_eval_0.7.3"]  # "about 10" reads nothing officially
    assert official["metrics"]["object_rel_direction"] == pytest.approx(100 * expected["object_rel_direction_accuracy"])


@settings(max_examples=60, deadline=None)
@given(pred=st.floats(0, 1e4, allow_nan=False), truth=st.floats(0.01, 1e4))
def test_vsi_mra_is_a_tenth_count_and_never_beats_exactness(pred: float, truth: float) -> None:
    mra = vsi_mra(pred, truth)
    assert 0.0 <= mra <= 1.0 and round(mra * 10, 9) == round(mra * 10)
    assert vsi_mra(truth, truth) == 1.0


def test_vsibench_merges_the_direction_levels_into_one_task() -> None:
    from evr1.eval.benchmarks.vsibench import vsibench
    from evr1.eval.definition import RowContext
    from evr1.registry import BENCHMARKS

    ctx = RowContext(BENCHMARKS.get("vsibench"), Path("test.json"), 1)
    base = {"id": 7, "dataset": "scannet", "scene_name": "s0", "question": "Which side?", "options": ["A. left", "B. right"],
            "ground_truth": "A"}
    [hard] = vsibench({**base, "question_type": "object_rel_direction_hard"}, ctx)
    [count] = vsibench({**base, "question_type": "object_counting", "options": None, "ground_truth": "3"}, ctx)
    assert hard["meta"] == {"task": "object_rel_direction", "difficulty": "hard", "dataset": "scannet"}
    assert count["meta"] == {"task": "object_counting", "dataset": "scannet"}


DIRS = ["front-left", "back-right", "back-left", "front-right"]


def test_vsibench_easyvideor1_rows_score_as_the_official(tmp_path: Path) -> None:
    """object_counting: "4" for 4 (MRA 1), "4.5" for 4 (|4.5-4|/4 = 0.125 < 1-θ for θ = .50..85: MRA 0.8) -> 90;
    object_rel_direction: easy right, hard wrong -> (100 + 0) / 2 = 50. Task mean (90 + 50) / 2 = 70."""
    items = [(0, "object_counting", None, "4"), (1, "object_counting", None, "4"),
             (2, "object_rel_direction_easy", DIRS, "A"), (3, "object_rel_direction_hard", DIRS, "A")]
    official = [{"id": i, "dataset": "arkitscenes", "scene_name": "41069025", "question_type": q, "question": f"Q{i}?",
                 "options": [f"{'ABCD'[k]}. {d}" for k, d in enumerate(o)] if o else None, "ground_truth": a}
                for i, q, o, a in items]
    easy = [easyvideor1_row(i, f"Q{i}?", [f"{'ABCD'[k]}. {d}" for k, d in enumerate(o)] if o else None, a, "./arkitscenes/41069025.mp4",
                  "multiple choice" if o else "regression", original_question_type=q, process="", data_source="VSIBench")
            for i, q, o, a in items]
    responses = ["4", "4.5", "A", "B"]
    got_official = score_strict(write_files(tmp_path / "o", {"vsibench/test.json": official}), "vsibench",
                          {f"vsibench/{i}": r for i, r in enumerate(responses)})
    got_easy = score_strict(write_files(tmp_path / "e", {"vsibench/test.json": easy}), "vsibench",
                      {f"vsibench/test/{i}": r for i, r in enumerate(responses)})
    check_same(got_official, got_easy, 70.0)

