"""`evr1 data check | synth | import`, run as a user would: output and exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_inproc import evr1

from evr1.data.records import read_records
from evr1.problem_types import ProblemType


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "synth"
    done = evr1("data", "synth", "--out", out, "--count", "30", "--val-count", "15", "--seed", "3")
    assert done.returncode == 0, done.stderr
    assert "wrote 30 train and 15 val records" in done.stdout and "64x64, 8 frames at 4 fps" in done.stdout
    return out


def test_synth_then_check_passes_with_every_problem_type(synth_dir: Path) -> None:
    done = evr1("data", "check", synth_dir / "train.jsonl", synth_dir / "val.jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    for ptype in ProblemType:
        assert f" {ptype.value} " in done.stdout
    assert "45 valid records, 0 problems, 0 missing media files" in done.stdout
    total = next(line for line in done.stdout.splitlines() if "total" in line and "problem_type" not in line)
    assert [cell for cell in total.split() if cell.isdigit()] == ["30", "15", "0", "0", "45"]  # video, image, both, text, all


def test_check_reports_each_bad_record_by_file_line_and_field(tmp_path: Path, synth_dir: Path) -> None:
    good = (synth_dir / "train.jsonl").read_text().splitlines()[0]
    record = json.loads(good)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([
        good,
        '{"id": "broken", "problem": ',
        json.dumps({k: v for k, v in record.items() if k != "answer"} | {"id": "no-answer"}),
        json.dumps(record | {"id": "odd-type", "problem_type": "interpretive dance"}),
        json.dumps(record | {"id": "wrong-type", "options": "A or B"}),
    ]) + "\n")
    done = evr1("data", "check", bad, "--data-root", synth_dir)
    assert done.returncode == 1
    assert f"{bad}:2: malformed JSON" in done.stderr
    assert f"{bad}:3: field 'answer': Field required (record 'no-answer')" in done.stderr
    assert f"{bad}:4: field 'problem_type': unknown problem_type 'interpretive dance'" in done.stderr
    assert "Allowed: multiple_choice, numerical" in done.stderr
    assert f"{bad}:5: field 'options': Input should be a valid list" in done.stderr
    assert "1 valid records, 4 problems, 0 missing media files" in done.stdout
    assert "Traceback" not in done.stderr


def test_check_reports_missing_media(tmp_path: Path, synth_dir: Path) -> None:
    records = list(read_records(synth_dir / "val.jsonl"))
    moved = tmp_path / "val.jsonl"
    moved.write_text((synth_dir / "val.jsonl").read_text())
    done = evr1("data", "check", moved)  # media are looked up next to the moved file: all missing
    assert done.returncode == 1
    assert "15 valid records, 0 problems, 15 missing media files" in done.stdout
    assert f"missing: {tmp_path / records[0].media[0].path}  <- {moved}:1 (record '{records[0].id}')" in done.stdout
    assert evr1("data", "check", moved, "--data-root", synth_dir).returncode == 0


def test_check_of_a_missing_path_is_a_short_user_error(tmp_path: Path) -> None:
    done = evr1("data", "check", tmp_path / "nope.jsonl")
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {tmp_path / 'nope.jsonl'}: no such file or folder"


def test_synth_quickstart_defaults_and_bad_settings(tmp_path: Path) -> None:
    done = evr1("data", "synth", "--out", tmp_path / "q", "--tasks", "quickstart", "--count", "8", "--val-count", "0")
    assert done.returncode == 0, done.stderr
    assert "56x56, 4 frames at 4 fps" in done.stdout
    assert {r.meta["task"] for r in read_records(tmp_path / "q" / "train.jsonl")} == {"color", "color_image"}
    done = evr1("data", "synth", "--out", tmp_path / "x", "--tasks", "colour")
    assert done.returncode == 2 and "unknown synthetic task 'colour'. Did you mean 'color'?" in done.stderr
    done = evr1("data", "synth", "--out", tmp_path / "x", "--width", "63")
    assert done.returncode == 2 and "sides must be even" in done.stderr


def test_import_converts_and_refuses_bad_input(tmp_path: Path) -> None:
    rows = [
        {"problem_id": 1, "problem": "What is shown?", "data_type": "video", "problem_type": "multiple choice",
         "options": ["A. a cat", "B. a dog"], "solution": "<answer>B</answer>", "path": "./clips/1.mp4"},
        {"problem_id": 2, "problem": "How many?", "data_type": "image", "problem_type": "numerical",
         "solution": "<answer>4</answer>", "path": "./imgs/2.jpg"},
    ]
    src = tmp_path / "video_r1.json"
    src.write_text(json.dumps(rows, indent=2))
    out = tmp_path / "imported.jsonl"
    done = evr1("data", "import", src, "--out", out, "--media-prefix", "raw")
    assert done.returncode == 0, done.stderr
    assert f"wrote 2 records to {out}" in done.stdout
    imported = list(read_records(out))
    assert [(r.id, r.answer, r.media[0].path) for r in imported] == [("video_r1/1", "B", "raw/clips/1.mp4"), ("video_r1/2", 4, "raw/imgs/2.jpg")]

    rows.append({"problem_id": 3, "problem": "Which?", "problem_type": "multiple choice", "options": ["x", "y"], "solution": "<answer>E</answer>"})
    src.write_text(json.dumps(rows, indent=2))
    out.unlink()
    done = evr1("data", "import", src, "--out", out)
    assert done.returncode == 1 and not out.exists()
    start = next(i for i, line in enumerate(src.read_text().splitlines()) if '"problem_id": 3' in line)  # 1-based line of its "{"
    assert f"{src}:{start}: field 'solution': answer 'E' is not among the 2 options" in done.stderr
    assert "nothing written" in done.stderr
    done = evr1("data", "import", src, "--out", out, "--skip-invalid")
    assert done.returncode == 0 and "wrote 2 records" in done.stdout and "skipped 1 invalid" in done.stdout
