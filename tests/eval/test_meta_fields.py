"""Meta fields the official aggregations group by: declared per benchmark, required at load time (an error naming
the file, the record and the field), and mapped from EasyVideoR1 rows' names (`original_question_type`, ...).
Rows below are shaped like EasyVideoR1's eval/data/valid_data files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evr1.data.records import RecordError
from evr1.data.testclips import write_clip
from evr1.eval.api import evaluate
from evr1.eval.benchmarks.vsibench import vsibench_meta
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec

# Meta a headline may still read beyond the declared fields: VSI-Bench's object_rel_direction levels (set by the
# official importer and mapped from EasyVideoR1 rows) and Video-MME-v2's structure of a logic group.
EXTRA = {"vsibench": {"difficulty"}, "videomme_v2": {"group_structure"}}


def test_declared_fields_suffice_for_every_official_headline(bench_root: Path) -> None:
    """Keeping only the declared meta fields leaves every headline and metric unchanged on the fixtures."""
    for name in BENCHMARKS.names():
        bench = BENCHMARKS.get(name)
        records = bench.load(bench_root)
        keep = set(bench.meta_fields) | EXTRA.get(name, set())
        full = [{"id": r.id, "score": float(i % 3 != 0), "meta": r.meta, "components": {}}
                for i, r in enumerate(records)]
        bare = [{**row, "meta": {k: v for k, v in row["meta"].items() if k in keep}} for row in full]
        a, b = bench.aggregate(full), bench.aggregate(bare)
        assert (a.score, a.metrics) == (b.score, b.metrics), name


@pytest.mark.parametrize("name", ["mvbench", "mlvu", "videomathqa", "vsibench", "videomme_v2"])
def test_each_declared_field_changes_a_headline_when_dropped(bench_root: Path, name: str) -> None:
    """Not a decoration: without any one declared field, the fixture's official numbers move. (OVO-Bench's fixture
    has tasks of equal size, where the nested macro equals the item mean: see the OVO-Bench test below.)"""
    bench = BENCHMARKS.get(name)
    rows = [{"id": r.id, "score": float(i % 3 != 0), "meta": r.meta, "components": {}}
            for i, r in enumerate(bench.load(bench_root))]
    for field in bench.meta_fields:
        dropped = [{**row, "meta": {k: v for k, v in row["meta"].items() if k != field}} for row in rows]
        before, after = bench.aggregate(rows), bench.aggregate(dropped)
        assert (after.score, after.metrics) != (before.score, before.metrics), (name, field)


def _write(root: Path, folder: str, annotation: str, rows: list[dict[str, Any]], video: str = "v.mp4") -> Path:
    path = root / folder / annotation
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1))
    write_clip(root / folder / video, 64, 48, 4, 16, seed=1)
    return path


def _row(pid: Any, ptype: str = "multiple choice", answer: str = "A", **fields: Any) -> dict[str, Any]:
    options = ["A. x", "B. y"] if ptype == "multiple choice" else None
    return {"problem_id": pid, "problem": "Q?", "data_type": "video", "problem_type": ptype, "options": options,
            "solution": f"<answer>{answer}</answer>", "path": "./v.mp4", **fields}


# EasyVideoR1 rows without the field the aggregation needs (its mvbench.json: `original_question_type` is "", and a
# problem id outside its numbering tells no task; its mlvu-dev.json: no task at all), and rows without a field only
# some records need (object_rel_direction's level, a logic group's structure).
# (benchmark, annotation file, rows, missing field, the row it fails on).
MISSING = [
    ("mvbench", "json/mvbench.json", [_row("x1", original_question_type="")], "task", 1),
    ("mvbench", "json/mvbench.json", [_row(4001, original_question_type="")], "task", 1),
    ("mlvu", "json/mlvu-dev.json", [_row(1, data_source="MLVU")], "task", 1),
    ("vsibench", "test.json", [_row(0, "regression", "4", original_question_type="object_counting"),
                               _row(1, "regression", "2")], "task", 2),
    ("ovobench", "ovo_bench_new.json", [_row("ovo_0", ovo_task="EPM")], "category", 1),
    ("videomme_v2", "videomme_v2.json", [_row("g1-1", group_id="g1")], "group_type", 1),
    ("vsibench", "test.json", [_row(0, original_question_type="object_rel_direction_easy"),
                               _row(1, original_question_type="object_rel_direction")], "difficulty", 2),
    ("videomme_v2", "videomme_v2.json", [_row("g1-1", group_id="g1", group_type="relevance"),
                                         _row("g2-1", group_id="g2", group_type="logic")], "group_structure", 2),
    ("videomme_v2", "videomme_v2.json", [_row("g2-1", group_id="g2", group_type="logic", group_structure="[1, 2, [3, 4]]")],
     "group_structure", 1),
]


@pytest.mark.parametrize(("name", "annotation", "rows", "field", "item"), MISSING)
def test_missing_meta_field_is_an_error_naming_file_record_and_field(
        tmp_path: Path, name: str, annotation: str, rows: list[dict[str, Any]], field: str, item: int) -> None:
    bench = BENCHMARKS.get(name)
    path = _write(tmp_path, bench.folder, annotation, rows)
    with pytest.raises(RecordError) as caught:
        bench.load(tmp_path)
    error = caught.value
    assert error.file == path and error.field == field
    assert f"{name}/{path.stem}/{rows[item - 1]['problem_id']}" in error.message
    assert str(path) in str(error) and bench.title in error.message


def test_vsibench_easyvideor1_rows_keep_the_official_task_mean(tmp_path: Path) -> None:
    """3 counting items right (MRA 1) + 1 route-planning item wrong: per-task mean (100 + 0) / 2, not the item mean 75;
    object_rel_direction levels (easy right, hard wrong) form one task: (1 + 0) / 2 -> overall (100 + 0 + 50) / 3."""
    rows = [_row(i, "regression", "4", original_question_type="object_counting") for i in range(3)]
    rows += [_row(3, answer="A", original_question_type="route_planning"),
             _row(4, answer="A", original_question_type="object_rel_direction_easy"),
             _row(5, answer="B", original_question_type="object_rel_direction_hard")]
    _write(tmp_path, "vsibench", "test.json", rows)
    answers = {"vsibench/test/0": "4", "vsibench/test/1": "4", "vsibench/test/2": "4", "vsibench/test/3": "B",
               "vsibench/test/4": "A", "vsibench/test/5": "A"}
    got = evaluate(EvalSpec(), ScriptedResponder(answers), tmp_path / "run", benchmarks=["vsibench"],
                   data_root=tmp_path)["benchmarks"]["vsibench"]
    assert got["score"] == pytest.approx((100 + 0 + 50) / 3)
    assert {k: v["n"] for k, v in got["breakdowns"]["task"].items()} == {
        "object_counting": 3, "route_planning": 1, "object_rel_direction": 2}


def test_videomathqa_easyvideor1_mcq_rows_score_their_accuracy(tmp_path: Path) -> None:
    """Two MCQ rows (no `mbinary_id`), both right: MCQ 100 is the headline (it read 0 when `setting` was lost)."""
    rows = [_row(f"q{i}", category="Counting", length="short", video_id="v") for i in range(2)]
    _write(tmp_path, "videomathqa", "mcq.json", rows)
    got = evaluate(EvalSpec(), ScriptedResponder({"videomathqa/mcq/q0": "A", "videomathqa/mcq/q1": "A"}), tmp_path / "run",
                   benchmarks=["videomathqa"], data_root=tmp_path)["benchmarks"]["videomathqa"]
    assert got["score"] == 100.0 and got["metrics"]["MCQ"] == 100.0
    meta = BENCHMARKS.get("videomathqa").load(tmp_path)[0].meta
    assert (meta["setting"], meta["question_id"], meta["duration"]) == ("mcq", "q0", "short")


def test_ovobench_easyvideor1_rows_keep_the_nested_macro(tmp_path: Path) -> None:
    """backward: EPM right, ASI wrong, ASI wrong -> tasks 100, 0 -> 50; realtime: STU right -> 100. Overall 75
    (the item mean would be 50; without the tasks, backward would be 1/3 and the overall 66.67)."""
    rows = [_row("ovo_0", ovo_task="EPM", ovo_category="backward"), _row("ovo_1", ovo_task="ASI", ovo_category="backward"),
            _row("ovo_2", ovo_task="ASI", ovo_category="backward"), _row("ovo_3", ovo_task="STU", ovo_category="realtime")]
    _write(tmp_path, "ovobench", "ovo_bench_new.json", rows)
    answers = {"ovobench/ovo_bench_new/ovo_0": "A", "ovobench/ovo_bench_new/ovo_1": "B",
               "ovobench/ovo_bench_new/ovo_2": "B", "ovobench/ovo_bench_new/ovo_3": "A"}
    got = evaluate(EvalSpec(protocol="strict"), ScriptedResponder(answers), tmp_path / "run", benchmarks=["ovobench"],
                   data_root=tmp_path)["benchmarks"]["ovobench"]
    assert got["score"] == pytest.approx(75.0)
    assert got["metrics"]["backward"] == pytest.approx(50.0) and got["metrics"]["realtime"] == pytest.approx(100.0)
    official = got["protocols"]["official"]  # OVOBenchScore.py's Total Avg.: the mean of the categories, (50 + 100) / 2
    assert official["score"] == pytest.approx(75.0) and official["metrics"]["backward"] == pytest.approx(50.0)
    assert official["metrics"]["task_mean"] == pytest.approx(200 / 3)  # its rule before f3911d7: (100 + 0 + 100) / 3


def test_mmvu_and_motionbench_renames(tmp_path: Path) -> None:
    _write(tmp_path, "mmvu", "validation.json", [_row(1, original_question_type="multiple-choice"),
                                                 _row(2, "open-ended", "Dolly Zoom", original_question_type="open-ended")])
    assert [r.meta["question_kind"] for r in BENCHMARKS.get("mmvu").load(tmp_path)] == ["multiple-choice", "open-ended"]
    _write(tmp_path, "motionbench", "motionbench.json", [_row(1, original_question_type="Camera Motion")])
    assert BENCHMARKS.get("motionbench").load(tmp_path)[0].meta["category"] == "Camera Motion"


@pytest.mark.parametrize(("meta", "expected"), [
    ({"original_question_type": "object_counting"}, {"task": "object_counting"}),
    ({"original_question_type": "object_rel_direction_medium"}, {"task": "object_rel_direction", "difficulty": "medium"}),
    ({"original_question_type": ""}, {}),
    ({}, {}),
])
def test_vsibench_meta_table(meta: dict[str, Any], expected: dict[str, Any]) -> None:
    assert vsibench_meta(meta) == expected
