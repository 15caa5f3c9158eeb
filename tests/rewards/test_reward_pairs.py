"""`read_pairs` (the reader of `evr1 rewards score`): every problem of a line names its file, line, field and
record; sample ids are the record's id unless given, and never shared by two lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evr1.rewards.jsonl import read_pairs

MCQ = {"id": "q1", "problem": "Which?", "problem_type": "multiple_choice", "answer": "B", "options": ["dog", "cat"]}


def _lines(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"record": None, "response": "x"}, ":1: field 'record': must be an object (a record), got null"),
        ({"record": "s", "response": "x"}, ":1: field 'record': must be an object (a record), got a string (\"s\")"),
        ({"record": [1], "response": "x"}, ":1: field 'record': must be an object (a record), got a list"),
        ({"record": MCQ, "response": "<answer>B</answer>", "responses": ["<answer>A</answer>"]},
         ":1: has both 'response' and 'responses': give one string or one list (record 'q1')"),
        ({**MCQ, "response": "B", "responses": ["A"]}, ":1: has both 'response' and 'responses': give one string or one list (record 'q1')"),
        ({"record": MCQ, "response": "B", "sample_id": ""},
         ":1: field 'sample_id': must be a non-empty string (or null: the record's id), got an empty string (record 'q1')"),
        ({"record": MCQ, "response": "B", "sample_id": ["a"]},
         ":1: field 'sample_id': must be a non-empty string (or null: the record's id), got a list (record 'q1')"),
        ({"record": MCQ, "responses": "B"}, ":1: field 'responses': must be a non-empty list of strings, got a string (\"B\") (record 'q1')"),
        ([1, 2], ":1: expected a JSON object, got a list"),
        (None, ":1: expected a JSON object, got null"),
    ],
)
def test_a_bad_line_is_one_problem_naming_what_is_wrong(tmp_path: Path, row: object, expected: str) -> None:
    path = _lines(tmp_path / "pairs.jsonl", [row])
    inputs, problems = read_pairs(path)
    assert inputs == [] and [str(p) for p in problems] == [f"{path}{expected}"]


def test_sample_ids_default_to_the_record_id_and_are_never_shared(tmp_path: Path) -> None:
    path = _lines(tmp_path / "pairs.jsonl", [
        {"record": MCQ, "response": "<answer>B</answer>", "sample_id": None},  # null: the record's id
        {**MCQ, "id": "q2", "responses": ["A", "B"], "sample_id": "s"},  # s#0, s#1
        {"record": MCQ, "response": "A"},  # q1 again: line 1 has it
        {**MCQ, "id": "q3", "response": "A", "sample_id": "s"},  # the base of line 2's ids
        {**MCQ, "id": "q4", "response": "A", "sample_id": "s#1"},  # one of line 2's ids
        {**MCQ, "id": "q5", "response": "A", "sample_id": 7},  # an integer, as record ids may be
        {"record": {**MCQ, "id": "q6"}, "responses": ["A"], "sample_id": "q1#0"},  # one response: no #k, no clash
    ])
    inputs, problems = read_pairs(path)
    assert [i.sample_id for i in inputs] == ["q1", "s#0", "s#1", "7", "q1#0"]
    hint = "give each line its own 'sample_id', or put the responses to one record in one 'responses' list"
    assert [str(p) for p in problems] == [
        f"{path}:3: field 'id': duplicate sample id 'q1' (first at {path}:1): {hint} (record 'q1')",
        f"{path}:4: field 'sample_id': duplicate sample id 's' (first at {path}:2): {hint} (record 'q3')",
        f"{path}:5: field 'sample_id': duplicate sample id 's#1' (first at {path}:2): {hint} (record 'q4')",
    ]


def test_a_json_file_says_where_reading_stopped(tmp_path: Path) -> None:
    good = {"record": MCQ, "response": "<answer>B</answer>"}
    broken = tmp_path / "broken.json"
    broken.write_text(f'[\n{json.dumps(good)},\n{{"response": oops}},\n{json.dumps({**good, "sample_id": "x"})}\n]\n')
    inputs, problems = read_pairs(broken)
    assert [i.sample_id for i in inputs] == ["q1"]  # the element before the error
    assert [str(p) for p in problems] == [
        f"{broken}:3: malformed JSON: Expecting value (column 14); the rest of the file was not read"]
    lines = _lines(tmp_path / "lines.json", [good, {**good, "sample_id": "x"}])  # JSON lines named .json
    inputs, problems = read_pairs(lines)
    assert inputs == [] and [str(p) for p in problems] == [
        (f"{lines}:2: malformed JSON: extra data after the JSON value (column 1); nothing of this file was read: it looks"
         " like JSON lines (one record per line), so rename it .jsonl")]
    pretty = tmp_path / "pretty.json"  # a pretty-printed object with something after it: not JSON lines
    pretty.write_text(json.dumps(good, indent=1) + "\nx\n")
    assert [p.message for p in read_pairs(pretty)[1]] == [
        "malformed JSON: extra data after the JSON value (column 1); the rest of the file was not read"]
    jsonl = _lines(tmp_path / "lines.jsonl", [good, "{oops", {**good, "sample_id": "x"}])  # JSON lines: the next line is read
    inputs, problems = read_pairs(jsonl)
    assert [i.sample_id for i in inputs] == ["q1", "x"]
    assert [str(p) for p in problems] == [f"{jsonl}:2: malformed JSON: Expecting property name enclosed in double quotes (column 2)"]
