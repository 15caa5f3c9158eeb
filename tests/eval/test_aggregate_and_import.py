"""Aggregation rules and official-format importers, table-driven with hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.data.records import RecordError
from evr1.eval import aggregate as agg
from evr1.eval.official import letter_of, option_list, split_embedded
from evr1.registry import BENCHMARKS


def row(score: float, **meta: object) -> dict:
    return {"score": score, "meta": meta}


@pytest.mark.parametrize(("right", "structure", "chain"), [
    ([True, True, True, True], "[1, 2, 3, 4]", 4),
    ([True, False, True, True], "[1, 2, 3, 4]", 1),
    ([True, False, True, False], "[1, [2, 3], 4]", 2),  # the parallel pair: one of 2/3 is enough
    ([True, False, False, True], "[1, [2, 3], 4]", 1),
    ([False, True, True, True], "[[1, 2], 3, 4]", 1),  # the first pair: 2 alone starts the chain
    ([False, False, True, True], "[[1, 2], 3, 4]", 0),
])
def test_videomme_v2_logic_chain(right: list[bool], structure: str, chain: int) -> None:
    assert agg.logic_chain(right, structure) == chain


def test_videomme_v2_group_scores() -> None:
    rel = [row(s, group_type="relevance", question_id=f"q{i}", group_id="g") for i, s in enumerate([1, 1, 0, 0])]
    assert agg.group_score(rel) == pytest.approx(4 / 16)
    logic = [row(s, group_type="logic", group_structure=[[1, 2], 3, 4], question_id=f"q{i}") for i, s in enumerate([0, 1, 1, 0])]
    assert agg.group_score(logic) == pytest.approx(1 / 10)  # 2 right stands in for the pair; the chain stops there
    with pytest.raises(ValueError, match="unknown Video-MME-v2 group structure"):
        agg.logic_chain([True], "[1, 2]")


def test_macro_counts_every_item_in_its_task() -> None:
    rows = [row(1, task="a"), row(0, task="a"), row(0, task="a"), row(1, task="b")]  # a: 1/3 (failures included)
    result = agg.macro("task")(rows)
    assert result.score == pytest.approx(100 * (1 / 3 + 1) / 2)
    assert result.metrics["accuracy"] == 50.0


def test_macro_within_levels_averages_a_task_over_its_levels() -> None:
    # VSI-Bench: object_rel_direction = mean(easy 1/1, hard 0/2) = 0.5, not 1/3; counting 1.
    rows = [row(1, task="rel", difficulty="easy"), row(0, task="rel", difficulty="hard"),
            row(0, task="rel", difficulty="hard"), row(1, task="count")]
    result = agg.macro("task", within="difficulty")(rows)
    assert result.score == pytest.approx(100 * (0.5 + 1) / 2)
    assert agg.macro("task")(rows).score == pytest.approx(100 * (1 / 3 + 1) / 2)


def test_vsibench_merges_the_direction_levels_into_one_task() -> None:
    from evr1.eval.benchmark import RowContext
    from evr1.eval.official import vsibench
    from evr1.registry import BENCHMARKS

    ctx = RowContext(BENCHMARKS.get("vsibench"), Path("test.json"), 1)
    base = {"id": 7, "dataset": "scannet", "scene_name": "s0", "question": "Which side?", "options": ["A. left", "B. right"],
            "ground_truth": "A"}
    [hard] = vsibench({**base, "question_type": "object_rel_direction_hard"}, ctx)
    [count] = vsibench({**base, "question_type": "object_counting", "options": None, "ground_truth": "3"}, ctx)
    assert hard["meta"] == {"task": "object_rel_direction", "difficulty": "hard", "dataset": "scannet"}
    assert count["meta"] == {"task": "object_counting", "dataset": "scannet"}


def test_nested_macro_and_grounding() -> None:
    rows = [row(1, category="x", task="t1"), row(0, category="x", task="t2"), row(1, category="y", task="t3")]
    assert agg.nested_macro("category", "task")(rows).score == pytest.approx(75.0)
    ious = [row(0.3), row(0.69), row(0.7), row(0.0)]
    metrics = agg.grounding()(ious).metrics
    assert metrics == pytest.approx({"mIoU": 42.25, "R@0.3": 75.0, "R@0.5": 50.0, "R@0.7": 25.0})


def test_videomath_mbin_needs_every_pair() -> None:
    rows = [row(1, setting="mbin", question_id="1"), row(1, setting="mbin", question_id="1"),
            row(1, setting="mbin", question_id="2"), row(0, setting="mbin", question_id="2"),
            row(0, setting="mcq", question_id="1")]
    result = agg.videomath()(rows)
    assert (result.score, result.metrics["MBin"], result.metrics["MCQ"]) == (50.0, 50.0, 0.0)


@pytest.mark.parametrize(("value", "texts"), [
    (["A. x", "B. y"], ["x", "y"]),
    ({"B": "y", "A": "x"}, ["x", "y"]),
    ("A. x\nB. y\n", ["x", "y"]),
    (["x", "y"], ["x", "y"]),
])
def test_option_list(value: object, texts: list[str]) -> None:
    assert option_list(value) == texts


@pytest.mark.parametrize(("answer", "letter"), [("B", "B"), ("B. y", "B"), ("(C)", "C"), (1, "B"), ("z", "C")])
def test_letter_of(answer: object, letter: str) -> None:
    assert letter_of(answer, ["x", "y", "z"]) == letter


def test_letter_of_rejects_out_of_range() -> None:
    with pytest.raises(ValueError, match="not one of 3 options"):
        letter_of("D", ["x", "y", "z"])
    assert split_embedded("Q?\n(A) one\n(B) two") == ("Q?", ["one", "two"])


def test_bad_official_row_names_file_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "minerva"
    folder.mkdir()
    (folder / "minerva.json").write_text(json.dumps([{"key": "k", "video_id": "v", "question": "q",
                                                      "answer_choice_0": "a", "answer_choice_1": "b"}]))
    with pytest.raises(RecordError, match=r"minerva.json:1: field 'answer_id'"):
        BENCHMARKS.get("minerva").load(tmp_path)


def test_easyvideor1_rows_import_with_benchmark_ids(tmp_path: Path) -> None:
    folder = tmp_path / "videomme"
    folder.mkdir()
    rows = [{"problem_id": 7, "problem": "<video>What?", "problem_type": "multiple choice", "options": ["A. x", "B. y"],
             "solution": "<answer>B</answer>", "path": "./videos/a.mp4", "data_type": "video", "duration": "short"}]
    (folder / "videomme.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    [record] = BENCHMARKS.get("videomme").load(tmp_path)
    assert (record.id, record.answer, record.media[0].path, record.meta["duration"]) == (
        "videomme/videomme/7", "B", "videomme/videos/a.mp4", "short")


def test_registry_entries_are_complete() -> None:
    names = BENCHMARKS.names()
    assert len(names) == 22
    own = {n for n in names if BENCHMARKS.get(n).lmms_task is None}
    assert own == {"vcrbench", "videoreasonbench", "longvideo_reason", "stvg", "odvbench", "livesports3k_qa"}
    assert {n for n in names if BENCHMARKS.get(n).needs_judge} == {"tempcompass", "vcrbench", "videoreasonbench", "mmvu"}


def test_rows_on_one_line_get_their_own_ids_and_repeats_are_refused(tmp_path: Path) -> None:
    import json

    from evr1.data.records import RecordError
    from evr1.registry import BENCHMARKS

    questions = tmp_path / "tempcompass" / "questions"
    questions.mkdir(parents=True)
    row = {"video_id": "t1", "dim": "speed", "question": "Is it fast?", "answer": "no"}
    (questions / "yes_no.json").write_text(json.dumps([row, {**row, "answer": "yes"}]))  # one line, no ids
    records = BENCHMARKS.get("tempcompass").load(tmp_path)
    assert [(r.id, r.answer) for r in records] == [("tempcompass/yes_no/t1/1", "no"), ("tempcompass/yes_no/t1/2", "yes")]
    (questions / "yes_no.json").write_text(json.dumps([{**row, "id": 7}, {**row, "id": 7}]))
    with pytest.raises(RecordError, match="duplicate id 'tempcompass/yes_no/t1/7'"):
        BENCHMARKS.get("tempcompass").load(tmp_path)
