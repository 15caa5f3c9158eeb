"""The EasyVideoR1 / Video-R1 importer: conversions by table, and errors naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.data.importers import answer_content, import_records, import_to_file, strip_option_letters
from evr1.data.records import Record, read_records
from evr1.problem_types import ProblemType as PT

# Source records in the shapes these projects use (fields as documented by them; contents made up).
VIDEO_R1_MC = {"problem_id": 12, "problem": "Which tool is used first?", "data_type": "video", "problem_type": "multiple choice",
               "options": ["A. a hammer", "B. a saw", "C. a drill", "D. a file"], "solution": "<answer>C</answer>",
               "path": "./Clips/shop/v001.mp4", "data_source": "ShopQA"}


def _convert(tmp_path: Path, raw: dict[str, Any], media_prefix: str = "") -> Record:
    path = tmp_path / "src.jsonl"
    path.write_text(json.dumps(raw) + "\n")
    [(_, result)] = list(import_records(path, media_prefix=media_prefix))
    assert isinstance(result, Record), result
    return result


def test_video_r1_multiple_choice_record(tmp_path: Path) -> None:
    record = _convert(tmp_path, VIDEO_R1_MC)
    assert record.id == "src/12"
    assert record.problem_type is PT.MULTIPLE_CHOICE
    assert (record.answer, record.options) == ("C", ["a hammer", "a saw", "a drill", "a file"])
    assert [(m.kind, m.path) for m in record.media] == [("video", "Clips/shop/v001.mp4")]
    assert record.meta == {"source": "src.jsonl:1", "source_id": 12, "data_source": "ShopQA"}
    assert record.offline_response is None


CASES: list[tuple[str, dict[str, Any], PT, Any]] = [
    ("numerical with separators", {"problem_type": "numerical", "solution": "<answer>1,250</answer>"}, PT.NUMERICAL, 1250),
    ("numerical decimal", {"problem_type": "numerical", "solution": "<answer> 3.75 </answer>"}, PT.NUMERICAL, 3.75),
    ("numerical with unit kept as text", {"problem_type": "numerical", "solution": "<answer>5 meters</answer>"}, PT.NUMERICAL, "5 meters"),
    ("regression scientific", {"problem_type": "regression", "answer": "2.5e3"}, PT.REGRESSION, 2500.0),
    ("number already typed", {"problem_type": "numerical", "answer": 7}, PT.NUMERICAL, 7),
    ("free-form", {"problem_type": "free-form", "solution": "<answer>A wetsuit</answer>"}, PT.OPEN_ENDED, "A wetsuit"),
    ("OCR in capitals", {"problem_type": "OCR", "solution": "<answer>EXIT 12</answer>"}, PT.OCR, "EXIT 12"),
    ("last complete answer tag wins", {"problem_type": "ocr", "solution": "<answer>x</answer> then <Answer>y</ANSWER> <answer>z"},
     PT.OCR, "y"),
    ("no tags: whole text", {"problem_type": "math", "answer": " \\frac{1}{2} "}, PT.MATH, "\\frac{1}{2}"),
    ("boolean spelled True", {"problem_type": "boolean", "answer": "<answer>True.</answer>"}, PT.BOOLEAN, "yes"),
    ("boolean No", {"problem_type": "yes/no", "answer": "No"}, PT.BOOLEAN, "no"),
    ("mc letter in parentheses", {"problem_type": "multiple choice", "options": ["x", "y"], "answer": "(B)"}, PT.MULTIPLE_CHOICE, "B"),
    ("mc letter with text", {"problem_type": "multiple choice", "options": ["A. x", "B. y"], "solution": "<answer>A. x</answer>"},
     PT.MULTIPLE_CHOICE, "A"),
    ("mc option text", {"problem_type": "mc", "options": ["A) red", "B) green"], "answer": "Green"}, PT.MULTIPLE_CHOICE, "B"),
    ("mc option text that starts like a letter", {"problem_type": "mc", "options": ["a hammer", "a saw"], "answer": "a saw"},
     PT.MULTIPLE_CHOICE, "B"),
    ("mc inferred from options", {"options": ["red", "green"], "answer": "a"}, PT.MULTIPLE_CHOICE, "A"),
    ("temporal JSON", {"problem_type": "temporal grounding", "solution": '<answer>{"time": [24.3, 30.4], "boxes": {}}</answer>'},
     PT.TEMPORAL_GROUNDING, {"time": [24.3, 30.4], "boxes": {}}),
    ("temporal bare list", {"problem_type": "temporal grounding", "answer": "[1.5, 4]"}, PT.TEMPORAL_GROUNDING, {"time": [1.5, 4]}),
    ("spatial bare box", {"problem_type": "spatial grounding", "answer": [1, 2, 30, 40]}, PT.SPATIAL_GROUNDING, {"boxes": [1, 2, 30, 40]}),
    ("spatial-temporal", {"problem_type": "spatial-temporal grounding",
                          "solution": '<answer>{"time": [17.0, 18.5], "boxes": {"18": [440, 135, 493, 246]}}</answer>'},
     PT.SPATIAL_TEMPORAL_GROUNDING, {"time": [17.0, 18.5], "boxes": {"18": [440, 135, 493, 246]}}),
    ("tracking", {"problem_type": "tracking", "answer": {"boxes": {"0": [0, 0, 5, 5]}}}, PT.TRACKING, {"boxes": {"0": [0, 0, 5, 5]}}),
    ("code tests as plain text",
     {"problem_type": "code", "solution": "<answer>import math\nassert f(1) == 2\nassert f(\n    2) == 3</answer>"},
     PT.CODE,
     {"language": "python", "tests": ["import math\nassert f(1) == 2", "import math\nassert f(\n    2) == 3"]}),
    ("code tests fenced", {"problem_type": "code", "answer": "```python\nassert f(0) == 1\n```"}, PT.CODE,
     {"language": "python", "tests": ["assert f(0) == 1"]}),
    ("code tests as a JSON list", {"problem_type": "code", "answer": '["assert f(0) == 1"]'}, PT.CODE,
     {"language": "python", "tests": ["assert f(0) == 1"]}),
    ("code markup stays text", {"problem_type": "code", "answer": "<svg><rect/></svg>"}, PT.CODE, "<svg><rect/></svg>"),
]


@pytest.mark.parametrize(("case", "fields", "ptype", "answer"), CASES, ids=[c[0] for c in CASES])
def test_answers_follow_the_conventions(tmp_path: Path, case: str, fields: dict[str, Any], ptype: PT, answer: Any) -> None:
    record = _convert(tmp_path, {"problem": "q", **fields})
    assert record.problem_type is ptype
    assert record.answer == answer and type(record.answer) is type(answer)


@pytest.mark.parametrize(
    ("fields", "media"),
    [
        ({"videos": ["a/1.mp4", "./a/2.mp4"]}, [("video", "pre/a/1.mp4"), ("video", "pre/a/2.mp4")]),
        ({"images": "img/1.jpg", "videos": []}, [("image", "pre/img/1.jpg")]),
        ({"image": [{"path": "img/2.png", "bytes": None}]}, [("image", "pre/img/2.png")]),
        ({"path": "./x/clip.MKV"}, [("video", "pre/x/clip.MKV")]),
        ({"path": "x/pic.webp"}, [("image", "pre/x/pic.webp")]),
        ({"path": "x/frames.bin", "data_type": "video"}, [("video", "pre/x/frames.bin")]),
        ({"path": "/data/abs.mp4"}, [("video", "/data/abs.mp4")]),
        ({}, []),
    ],
)
def test_media_fields(tmp_path: Path, fields: dict[str, Any], media: list[tuple[str, str]]) -> None:
    record = _convert(tmp_path, {"problem": "q", "problem_type": "ocr", "answer": "t", **fields}, media_prefix="pre")
    assert [(m.kind, m.path) for m in record.media] == media


def test_placeholders_ids_meta_and_chain_of_thought(tmp_path: Path) -> None:
    raw = {"problem": "<video>\nHow many cups?  <image> Count them.", "problem_type": "numerical", "solution": "<answer>3</answer>",
           "process": "<think>one, two, three</think>", "videos": ["v.mp4"], "qa_kind": "counting"}
    record = _convert(tmp_path, raw)
    assert record.problem == "How many cups?  Count them."
    assert record.id == "src/L1"
    assert record.meta == {"source": "src.jsonl:1", "qa_kind": "counting"}
    assert record.offline_response == "<think>one, two, three</think>\n<answer>3</answer>"


def test_an_imported_code_record_scores_by_its_tests(tmp_path: Path) -> None:
    from evr1.rewards import RewardInput, RewardRouter

    record = _convert(tmp_path, {"problem": "Write f.", "problem_type": "code",
                                 "solution": "assert f(1) == 2\nassert f(2) == 3\nassert f(3) == 5"})  # fmt: skip
    [out] = RewardRouter().score([RewardInput.from_record(record, "<answer>def f(x):\n    return x + 1</answer>")])
    assert out.error is None and out.components["accuracy"] == pytest.approx(2 / 3)


def test_option_letters_are_only_stripped_in_order() -> None:
    assert strip_option_letters(["A. one", "B) two", "(C) three"]) == ["one", "two", "three"]
    assert strip_option_letters(["B. one", "A. two"]) == ["B. one", "A. two"]
    assert strip_option_letters(["A. one", "plain"]) == ["A. one", "plain"]


BAD: list[tuple[str, dict[str, Any], str, str]] = [
    ("missing problem", {"problem_type": "ocr", "answer": "x"}, "problem", "missing"),
    ("problem not text", {"problem": ["q"], "problem_type": "ocr", "answer": "x"}, "problem", "expected text"),
    ("missing solution", {"problem": "q", "problem_type": "ocr"}, "solution", "missing"),
    ("unknown problem type", {"problem": "q", "problem_type": "juggling", "answer": "x"}, "problem_type", "Allowed: multiple_choice"),
    ("no type and no options", {"problem": "q", "answer": "x"}, "problem_type", "missing"),
    ("mc letter out of range", {"problem": "q", "options": ["a", "b"], "solution": "<answer>D</answer>"}, "solution", "not among the 2"),
    ("mc unknown text", {"problem": "q", "options": ["a", "b"], "answer": "zebra crossing"}, "answer", "cannot map"),
    ("grounding not JSON", {"problem": "q", "problem_type": "temporal grounding", "answer": "from 3 to 5"}, "answer", "must be JSON"),
    ("grounding wrong shape", {"problem": "q", "problem_type": "tracking", "answer": "[1, 2, 3]"}, "answer", "JSON object"),
    ("empty answer", {"problem": "q", "problem_type": "ocr", "solution": "<answer> </answer>"}, "solution", "empty answer"),
    ("options not texts", {"problem": "q", "options": [1, 2], "answer": "A"}, "options", "list of option texts"),
    ("videos wrong type", {"problem": "q", "problem_type": "ocr", "answer": "x", "videos": [3]}, "videos[0]", "file path"),
    ("code tests not Python", {"problem": "q", "problem_type": "code", "answer": "assert f(1) =="}, "answer",
     "not valid Python (line 1"),
    ("code tests without asserts", {"problem": "q", "problem_type": "code", "answer": "print(1)"}, "answer",
     "no top-level assert"),
    ("bad data_type", {"problem": "q", "problem_type": "ocr", "answer": "x", "path": "a", "data_type": "audio"}, "data_type", "'video' or 'image'"),
]


@pytest.mark.parametrize(("case", "raw", "field", "message"), BAD, ids=[c[0] for c in BAD])
def test_bad_source_records_name_file_line_and_field(tmp_path: Path, case: str, raw: dict[str, Any], field: str, message: str) -> None:
    path = tmp_path / "src.json"
    path.write_text(json.dumps([VIDEO_R1_MC, raw], indent=1))
    [(_, good), (where, errors)] = list(import_records(path))
    assert isinstance(good, Record)
    [error] = errors
    assert (error.file, error.line, error.field) == (path, where.line, field)
    assert where.line == 2 + len(json.dumps(VIDEO_R1_MC, indent=1).splitlines())
    assert message in str(error) and str(error).startswith(f"{path}:{where.line}: field '{field}':")


def test_duplicate_problem_ids_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "src.jsonl"
    path.write_text(json.dumps(VIDEO_R1_MC) + "\n" + json.dumps(VIDEO_R1_MC) + "\n")
    results = [r for _, r in import_records(path)]
    assert isinstance(results[0], Record)
    assert results[1][0].field == "problem_id" and "duplicate id 'src/12'" in str(results[1][0])


def test_import_to_file_writes_nothing_on_errors_unless_asked(tmp_path: Path) -> None:
    src = tmp_path / "src.jsonl"
    src.write_text("\n".join([json.dumps(VIDEO_R1_MC), "{broken", json.dumps({**VIDEO_R1_MC, "problem_id": 13})]) + "\n")
    out = tmp_path / "out" / "records.jsonl"
    report = import_to_file(src, out)
    assert report.written == 0 and not out.exists()
    assert [(e.line, e.field) for e in report.errors] == [(2, None)]
    report = import_to_file(src, out, skip_invalid=True)
    assert report.written == 2
    assert [r.id for r in read_records(out)] == ["src/12", "src/13"]


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(blacklist_characters="<>", blacklist_categories=("Cs",)), max_size=40), st.text(max_size=20))
def test_answer_content_is_the_last_tagged_text(answer: str, thinking: str) -> None:
    assert answer_content(f"<think>{thinking.replace('<', ' ')}</think> <answer>{answer}</answer>") == answer.strip()
    assert answer_content(answer) == answer.strip()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc")), min_size=1, max_size=12), min_size=1, max_size=8))
def test_lettered_options_lose_exactly_their_letters(texts: list[str]) -> None:
    lettered = [f"{chr(ord('A') + i)}. {t}" for i, t in enumerate(texts)]
    assert strip_option_letters(lettered) == [t.strip() for t in texts]
