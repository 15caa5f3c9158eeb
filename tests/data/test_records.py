"""Record readers: JSON, JSONL and folders; every problem names file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evr1.data.records import (
    MediaRef,
    Record,
    RecordError,
    iter_json_objects,
    missing_media,
    read_records,
    record_files,
    record_line,
    resolve_media,
    scan_records,
    write_records,
)
from evr1.errors import Evr1Error
from evr1.problem_types import ProblemType

GOOD = {"id": "r1", "problem": "What colour?", "problem_type": "multiple choice", "answer": "A", "options": ["red", "blue"],
        "media": [{"kind": "video", "path": "v/a.mp4", "start": 1.0, "end": 3.5}]}


def _jsonl(tmp_path: Path, *lines: str, name: str = "data.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _with(**changes) -> str:
    record = {**GOOD, **changes}
    return json.dumps({k: v for k, v in record.items() if v is not ...})


# Each bad line sits on line 3 (after a good record and a blank line); expected field and message part.
BAD_LINES = [
    ("malformed JSON", '{"id": "x", "problem": ', None, "malformed JSON"),
    ("missing field", _with(id="x", problem=...), "problem", "Field required"),
    ("unknown problem type", _with(id="x", problem_type="colouring"), "problem_type", "Allowed: multiple_choice"),
    ("wrong type: problem", _with(id="x", problem=7), "problem", "valid string"),
    ("wrong type: options", _with(id="x", options="red"), "options", "valid list"),
    ("bad media kind", _with(id="x", media=[{"kind": "audio", "path": "a.wav"}]), "media[0].kind", "'video' or 'image'"),
    ("media path missing", _with(id="x", media=[{"kind": "image"}]), "media[0].path", "Field required"),
    ("clip end before start", _with(id="x", media=[{"kind": "video", "path": "a.mp4", "start": 5, "end": 2}]), "media[0]", "must be after start"),
    ("unknown field", _with(id="x", solution="A"), "solution", "Extra inputs are not permitted"),
    ("not an object", "[1, 2]", None, "expected a JSON object"),
    ("duplicate id", _with(id="r1"), "id", "duplicate id 'r1' (first at"),
    ("logprobs without response", _with(id="x", offline_logprobs=[-0.5]), None, "offline_logprobs given without offline_response"),
]


@pytest.mark.parametrize(("case", "line", "field", "message"), BAD_LINES, ids=[c[0] for c in BAD_LINES])
def test_bad_line_names_file_line_and_field(tmp_path: Path, case: str, line: str, field: str | None, message: str) -> None:
    path = _jsonl(tmp_path, json.dumps(GOOD), "", line)
    records = read_records(path)
    assert next(records).id == "r1"  # records before the problem are delivered
    with pytest.raises(RecordError) as info:
        next(records)
    error = info.value
    assert (error.file, error.line, error.field) == (path, 3, field)
    assert message in str(error)
    assert str(error).startswith(f"{path}:3:" + (f" field '{field}':" if field else ""))
    assert isinstance(error, Evr1Error)


def test_problems_of_one_record_are_all_reported_and_named(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, _with(id="x", problem=1, problem_type="nope", answer=...))
    [(where, errors)] = list(scan_records(path))
    assert where.line == 1
    assert sorted(e.field for e in errors) == ["answer", "problem", "problem_type"]
    assert all("(record 'x')" in str(e) for e in errors)
    with pytest.raises(RecordError, match=r"and 2 more problem\(s\) in this record"):
        list(read_records(path))


def test_scan_records_continues_past_every_kind_of_problem(tmp_path: Path) -> None:
    lines = [json.dumps(GOOD)] + [case[1] for case in BAD_LINES] + [_with(id="last")]
    path = _jsonl(tmp_path, *lines)
    results = list(scan_records(path))
    good = [r.id for _, r in results if isinstance(r, Record)]
    bad_lines = [where.line for where, r in results if not isinstance(r, Record)]
    assert good == ["r1", "last"]
    assert bad_lines == list(range(2, 2 + len(BAD_LINES)))


def test_json_array_reports_the_line_where_each_record_starts(tmp_path: Path) -> None:
    text = '[\n  {"id": "a", "problem": "q", "problem_type": "ocr", "answer": "x"},\n\n  {\n    "id": "b",\n    "problem": 5,\n' \
           '    "problem_type": "ocr", "answer": "y"\n  }\n]\n'
    path = tmp_path / "set.json"
    path.write_text(text)
    assert [(loc.line, loc.value["id"]) for loc in iter_json_objects(path)] == [(2, "a"), (4, "b")]
    with pytest.raises(RecordError) as info:
        list(read_records(path))
    assert (info.value.line, info.value.field) == (4, "problem")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('[\n {"id": "a"},\n {"id": }\n]', 3, "malformed JSON"),
        ('[\n {"id": "a"}\n {"id": "b"}\n]', 3, "expected ',' or ']'"),
        ('[{"id": "a"}]\n]', 2, "extra data"),
        ('{"id": "a"} {"id": "b"}', 1, "extra data"),
    ],
)
def test_malformed_json_file_names_the_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    errors = [loc.value for loc in iter_json_objects(path) if isinstance(loc.value, RecordError)]
    assert len(errors) == 1
    assert errors[0].line == line and message in str(errors[0])


def test_single_object_json_file_and_empty_array(tmp_path: Path) -> None:
    (tmp_path / "one.json").write_text(json.dumps(GOOD, indent=2))
    (tmp_path / "none.json").write_text("[ ]")
    assert [r.id for r in read_records(tmp_path)] == ["r1"]


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "enc.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"id": "\xff"}\n')
    with pytest.raises(RecordError, match=r"enc.jsonl:2: not UTF-8"):
        list(read_records(path))


def test_folders_are_searched_recursively_in_sorted_order(tmp_path: Path) -> None:
    for rel, rid in [("b/z.jsonl", "z"), ("a.json", "a"), ("b/c/m.jsonl", "m"), (".hidden/h.jsonl", "h")]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(_with(id=rid))
    (tmp_path / "notes.txt").write_text("not records")
    assert [p.relative_to(tmp_path).as_posix() for p in record_files(tmp_path)] == ["a.json", "b/c/m.jsonl", "b/z.jsonl"]
    assert [r.id for r in read_records([tmp_path / "b", tmp_path / "a.json"])] == ["m", "z", "a"]


def test_missing_paths_and_empty_folders_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(Evr1Error, match="no such file or folder"):
        list(read_records(tmp_path / "absent.jsonl"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(Evr1Error, match="holds no .json, .jsonl or .parquet record files"):
        list(read_records(tmp_path / "empty"))


def test_duplicate_ids_across_files_name_both_places(tmp_path: Path) -> None:
    first = _jsonl(tmp_path, json.dumps(GOOD), name="a.jsonl")
    _jsonl(tmp_path, "", json.dumps(GOOD), name="b.jsonl")
    with pytest.raises(RecordError, match=rf"b.jsonl:2: field 'id': duplicate id 'r1' \(first at {first}:1\)"):
        list(read_records(tmp_path))


def test_integer_ids_and_aliases_are_normalised() -> None:
    record = Record.model_validate({**GOOD, "id": 17, "problem_type": "Multiple-Choice"})
    assert record.id == "17" and record.problem_type is ProblemType.MULTIPLE_CHOICE
    with pytest.raises(ValueError, match="valid string"):
        Record.model_validate({**GOOD, "id": True})


def test_modality_and_media_resolution(tmp_path: Path) -> None:
    media = [MediaRef(kind="video", path="v/a.mp4"), MediaRef(kind="image", path="/abs/b.png")]
    record = Record(id="m", problem="q", problem_type="ocr", answer="t", media=media)
    assert record.modality == "video+image"
    assert Record(id="t", problem="q", problem_type="ocr", answer="t").modality == "text"
    assert resolve_media(record, tmp_path) == [tmp_path / "v/a.mp4", Path("/abs/b.png")]
    (tmp_path / "v").mkdir()
    (tmp_path / "v/a.mp4").write_bytes(b"x")
    assert missing_media(record, tmp_path) == [Path("/abs/b.png")]


def test_written_lines_omit_defaults_and_read_back_equal(tmp_path: Path) -> None:
    record = Record.model_validate(GOOD)
    assert json.loads(record_line(record)) == {**GOOD, "problem_type": "multiple_choice"}
    assert write_records([record], tmp_path / "out/r.jsonl") == 1
    assert list(read_records(tmp_path / "out/r.jsonl")) == [record]


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False), _text)
_answers = st.recursive(_json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3), max_leaves=8)
_media = st.builds(MediaRef, kind=st.sampled_from(["video", "image"]), path=_text.filter(bool))
_records = st.builds(
    Record,
    id=st.just("x"),
    problem=_text,
    problem_type=st.sampled_from(list(ProblemType)),
    answer=_answers,
    options=st.none() | st.lists(_text, max_size=4),
    media=st.lists(_media, max_size=2),
    meta=st.dictionaries(_text, _answers, max_size=3),
    offline_response=st.none() | _text,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(_records, max_size=6), gaps=st.lists(st.integers(0, 3), min_size=7, max_size=7), as_array=st.booleans())
def test_any_records_round_trip_with_exact_line_numbers(tmp_path: Path, records: list[Record], gaps: list[int], as_array: bool) -> None:
    records = [r.model_copy(update={"id": f"r{i}"}) for i, r in enumerate(records)]
    lines: list[str] = ["["] if as_array else []
    starts = []
    for i, record in enumerate(records):
        lines += [""] * gaps[i]
        starts.append(len(lines) + 1)
        lines.append(record_line(record) + ("," if as_array and i < len(records) - 1 else ""))
    lines += ["]"] if as_array else []
    path = tmp_path / ("set.json" if as_array else "set.jsonl")
    path.write_text("\n".join(lines), encoding="utf-8")
    assert [loc.line for loc in iter_json_objects(path)] == starts
    assert list(read_records(path)) == records
