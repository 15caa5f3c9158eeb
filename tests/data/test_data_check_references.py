"""`evr1 data check` rejects reference answers that their routed reward cannot read (run as a user would)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_inproc import evr1

RECORDS = [
    {"id": "t1", "problem": "When?", "problem_type": "temporal_grounding", "answer": "soon"},
    {"id": "s1", "problem": "Where?", "problem_type": "spatial_grounding", "answer": [1, 2, 3]},
    {"id": "ok", "problem": "Which?", "problem_type": "multiple_choice", "answer": "B", "options": ["a", "b"]},
    {"id": "n1", "problem": "How many?", "problem_type": "numerical", "answer": "lots"},
    {"id": "m2", "problem": "Which?", "problem_type": "multiple_choice", "answer": "E", "options": ["a", "b"]},
    {"id": "e1", "problem": "Say?", "problem_type": "open_ended", "answer": None},
]


def test_unreadable_references_are_problems_naming_file_line_record_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    done = evr1("data", "check", bad)
    assert done.returncode == 1
    assert f"{bad}:1: field 'answer': reward 'temporal_grounding' cannot read this reference" in done.stderr
    assert "answer 'soon' holds no [start, end] interval (record 't1')" in done.stderr
    assert f"{bad}:2: field 'answer': reward 'spatial_grounding'" in done.stderr and "[1, 2, 3] holds no [x1, y1, x2, y2] box" in done.stderr
    assert f"{bad}:4: field 'answer': reward 'numerical'" in done.stderr and "'lots' is not one number (record 'n1')" in done.stderr
    assert f"{bad}:5: field 'answer': reward 'multiple_choice'" in done.stderr and "'E' is not one of 2 option letters" in done.stderr
    assert f"{bad}:6: field 'answer': empty reference answer (record 'e1')" in done.stderr
    assert f"{bad}:3:" not in done.stderr
    assert "1 valid records, 5 problems (5 reference answers their reward cannot read), 0 missing media files" in done.stdout
    assert "Traceback" not in done.stderr
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(RECORDS[2]) + "\n")
    done = evr1("data", "check", good)
    assert done.returncode == 0 and "1 valid records, 0 problems, 0 missing media files" in done.stdout
