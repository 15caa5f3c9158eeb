"""Records from Parquet files and saved Hugging Face datasets, with a column mapping: the same records,
checks and FILE:ROW errors as JSONL, nothing fetched over the network."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_inproc import evr1
from datasets import Dataset, DatasetDict
from pydantic import ValidationError

from evr1.data.records import Record, read_records, scan_records
from evr1.errors import Evr1Error
from evr1.specs import DataSpec

COLUMNS = {"id": "uid", "problem": "question", "answer": "solution"}
ROWS = [  # as a dataset on the hub is laid out: other names, an extra column, media as structs
    {"uid": "a", "question": "Which colour?", "problem_type": "multiple_choice", "solution": "B", "options": ["red", "blue"],
     "media": [{"kind": "video", "path": "v.mp4", "start": 1.0, "end": 3.5}], "difficulty": "easy"},
    {"uid": "b", "question": "Is it a cat?", "problem_type": "boolean", "solution": "yes", "options": None,
     "media": [{"kind": "image", "path": "i.png", "start": None, "end": None}], "difficulty": "hard"},
]
EXPECTED = [
    Record(id="a", problem="Which colour?", problem_type="multiple_choice", answer="B", options=["red", "blue"],
           media=[{"kind": "video", "path": "v.mp4", "start": 1.0, "end": 3.5}]),
    Record(id="b", problem="Is it a cat?", problem_type="boolean", answer="yes",
           media=[{"kind": "image", "path": "i.png"}]),  # arrow's null start/end of an image are dropped
]


def parquet(path: Path, rows: list[dict]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_parquet_and_a_saved_dataset_read_as_the_same_records(tmp_path: Path) -> None:
    assert list(read_records(parquet(tmp_path / "d.parquet", ROWS), COLUMNS)) == EXPECTED
    Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "saved"))
    assert list(read_records(tmp_path / "saved", COLUMNS)) == EXPECTED
    folder = tmp_path / "folder"
    folder.mkdir()
    parquet(folder / "part-0.parquet", ROWS[:1])
    parquet(folder / "part-1.parquet", ROWS[1:])
    assert list(read_records(folder, COLUMNS)) == EXPECTED  # a folder of Parquet shards


def test_json_records_take_the_mapping_too(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "difficulty"} for r in ROWS]
    rows[1]["media"] = [{"kind": "image", "path": "i.png"}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert list(read_records(tmp_path / "d.jsonl", COLUMNS)) == EXPECTED
    [(_, problems), _] = scan_records(tmp_path / "d.jsonl")  # unmapped, JSON stays strict: its own names are errors
    assert {(e.field, e.message) for e in problems} >= {("id", "Field required"), ("uid", "Extra inputs are not permitted")}


def test_bad_rows_are_named_file_and_row(tmp_path: Path) -> None:
    rows = [dict(ROWS[0]), {**ROWS[1], "problem_type": "riddle"}, {**ROWS[1], "uid": "a"}]
    file = parquet(tmp_path / "bad.parquet", rows)
    problems = {where.line: found for where, found in scan_records(file, COLUMNS) if isinstance(found, list)}
    assert sorted(problems) == [2, 3]
    assert str(problems[2][0]).startswith(f"{file}:2: field 'problem_type'")
    assert str(problems[3][0]) == f"{file}:3: field 'id': duplicate id 'a' (first at {file}:1)"


def test_what_cannot_be_read_locally_is_refused(tmp_path: Path) -> None:
    DatasetDict({"train": Dataset.from_list(ROWS), "test": Dataset.from_list(ROWS)}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(Evr1Error, match=rf"a saved DatasetDict; name one of its splits: {tmp_path}/dd/test, {tmp_path}/dd/train"):
        list(read_records(tmp_path / "dd"))
    assert list(read_records(tmp_path / "dd" / "train", COLUMNS)) == EXPECTED
    with pytest.raises(Evr1Error, match=r"no such file or folder \(records are read from local files only: save a hub dataset"):
        list(read_records("lmms-lab/VideoMME"))
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(Evr1Error, match="broken.parquet: not a readable Parquet file"):
        list(read_records(tmp_path / "broken.parquet"))


def test_the_column_mapping_names_record_fields_only() -> None:
    assert DataSpec(columns={"problem": "question"}).columns == {"problem": "question"}
    with pytest.raises(ValidationError, match="'anwser' is not a record field. Did you mean 'answer'?"):
        DataSpec(columns={"anwser": "solution"})


def test_data_check_reads_a_table_with_columns(tmp_path: Path) -> None:
    file = parquet(tmp_path / "d.parquet", [ROWS[0], {**ROWS[1], "problem_type": "riddle"}])
    args = ["data", "check", file, "--no-probe", *(a for f, c in COLUMNS.items() for a in ("--column", f"{f}={c}"))]
    done = evr1(*args)
    assert done.returncode == 1
    assert f"error: {file}:2: field 'problem_type'" in done.stderr
    assert "1 valid records, 1 problems" in " ".join(done.stdout.split())
    wrong = evr1(*args, "--column", "anwser=solution")
    assert wrong.returncode == 2 and "Did you mean 'answer'?" in wrong.stderr
