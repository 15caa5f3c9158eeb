"""Benchmark definitions (`evr1.eval.definition`) and the registry's table: importing rows, ids, errors naming file and line.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from evr1.data.records import RecordError
from evr1.registry import BENCHMARKS


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
    scored = {"video_id": "t1", "dim": "speed", "question": "Is it fast?", "answer": "no"}
    (questions / "yes_no.json").write_text(json.dumps([scored, {**scored, "answer": "yes"}]))  # one line, no ids
    records = BENCHMARKS.get("tempcompass").load(tmp_path)
    assert [(r.id, r.answer) for r in records] == [("tempcompass/yes_no/t1/1", "no"), ("tempcompass/yes_no/t1/2", "yes")]
    (questions / "yes_no.json").write_text(json.dumps([{**scored, "id": 7}, {**scored, "id": 7}]))
    with pytest.raises(RecordError, match="duplicate id 'tempcompass/yes_no/t1/7'"):
        BENCHMARKS.get("tempcompass").load(tmp_path)



def test_describe_names_each_benchmarks_own_module() -> None:
    """`describe` answers "where is X scored?" with the benchmark's module, not the shared `Benchmark` class's."""
    from evr1.eval.benchmarks import MODULES

    for module in MODULES:
        name = importlib.import_module(f"evr1.eval.benchmarks.{module}").BENCHMARK.name
        described = BENCHMARKS.describe(name)
        assert described.module == f"evr1.eval.benchmarks.{module}"
        assert described.file is not None and described.file.endswith(f"evr1/eval/benchmarks/{module}.py")
