"""`evr1 data check` finds unreadable media, answers wrong for their clip or options, wrong curated answers
and bad paths, in file and line order, and writes every problem to a report (run as a user would)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_inproc import evr1
from PIL import Image

from evr1.data.testclips import write_clip


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _mc(rid: str, media: str | None = None, kind: str = "video", **extra: object) -> dict:
    media_list = [{"kind": kind, "path": media}] if media else []
    return {"id": rid, "problem": "Which?", "problem_type": "multiple_choice", "answer": "A", "options": ["x", "y"],
            "media": media_list, **extra}


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    write_clip(tmp_path / "good.mp4", 64, 48, 4, 8)  # 2 s at 4 fps
    (tmp_path / "corrupt.mp4").write_bytes(np.random.default_rng(0).integers(0, 256, 300, dtype=np.uint8).tobytes())
    write_clip(tmp_path / "one_frame.mp4", 64, 48, 4, 1)
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / "good.png")
    (tmp_path / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 20)
    return tmp_path


def test_unreadable_media_are_problems_like_missing_ones(data: Path) -> None:
    records = _write(data / "train.jsonl", [
        _mc("ok-video", "good.mp4"), _mc("bad-video", "corrupt.mp4"), _mc("ok-image", "good.png", "image"),
        _mc("bad-image", "corrupt.png", "image"), _mc("short", "one_frame.mp4"), _mc("again", "corrupt.mp4"),
        _mc("gone", "nope.mp4"),
    ])
    done = evr1("data", "check", records)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "7 valid records, 0 problems, 1 missing media files, 3 unreadable media files, 0 warnings" in done.stdout
    lines = [line for line in done.stdout.splitlines() if line.startswith(("missing:", "unreadable"))]
    assert len(lines) == 4  # in the order of their first record: lines 2, 4, 5, 7
    assert lines[0].startswith("unreadable (corrupt: cannot open as a video") and lines[0].endswith(
        f"{data / 'corrupt.mp4'}  <- {records}:2 (record 'bad-video') and 1 more records")
    assert lines[1].startswith("unreadable (corrupt: cannot read as an image") and f"<- {records}:4 (record 'bad-image')" in lines[1]
    assert lines[2].startswith("unreadable (too_few_frames: video has 1 frame(s)") and f"{records}:5" in lines[2]
    assert lines[3] == f"missing: {data / 'nope.mp4'}  <- {records}:7 (record 'gone')"
    skipped = evr1("data", "check", records, "--no-probe")  # files that exist are not opened
    assert skipped.returncode == 1 and "0 problems, 1 missing media files (not opened: --no-probe), 0 warnings" in skipped.stdout
    assert "unreadable (" not in skipped.stdout


def test_answers_options_and_curated_answers_in_file_and_line_order(data: Path) -> None:
    tg = {"problem": "When?", "problem_type": "temporal_grounding"}
    records = _write(data / "train.jsonl", [
        {"id": "t-rev", **tg, "answer": {"time": [5, 2]}},  # reversed
        _mc("no-options", options=None),  # nothing lists the choices
        _mc("listed", problem="Which?\nA. x\nB. y", options=None),  # the problem lists them: fine
        {"id": "t-long", **tg, "answer": {"time": [1, 2.5]}, "media": [{"kind": "video", "path": "good.mp4"}]},  # 2 s video
        {"id": "t-ok", **tg, "answer": {"time": [1, 2]}, "media": [{"kind": "video", "path": "good.mp4"}]},
        {"id": "t-clip", **tg, "answer": {"time": [0, 1.5]}, "media": [{"kind": "video", "path": "good.mp4", "start": 1.0}]},
        _mc("curated-wrong", offline_response="<answer>B</answer>"),
        _mc("curated-right", offline_response="<answer>A</answer>"),
    ])
    other = _write(data / "other.jsonl", [{"id": "t-rev2", **tg, "answer": [4, 3]}])
    done = evr1("data", "check", other, data / "missing.jsonl", records, "--out", data / "report.json")
    assert done.returncode == 1, done.stdout + done.stderr
    shown = [line.split(": field")[0].split(": no such")[0] for line in done.stderr.splitlines()]
    assert shown == [  # the files in the order given, lines in order, warnings among errors
        f"error: {other}:1", f"error: {data / 'missing.jsonl'}", f"error: {records}:1", f"warning: {records}:2",
        f"error: {records}:4", f"error: {records}:6", f"warning: {records}:7",
    ]
    err = done.stderr
    assert f"{records}:1: field 'answer': interval [5, 2] s is reversed (start after end) (record 't-rev')" in err
    assert f"{records}:2: field 'options': multiple_choice record without options" in err
    assert "ends after the clip, which is 2 s long" in err and "(record 't-long')" in err
    assert "ends after the clip, which is 1 s long" in err and "(record 't-clip')" in err  # 2 s video from 1 s
    assert (f"{records}:7: field 'offline_response': reward 'multiple_choice' scores this curated answer 0 against the"
            " record's answer 'A'") in err
    assert "5 valid records, 5 problems, 0 missing media files, 0 unreadable media files, 2 warnings" in done.stdout  # of 9
    report = json.loads((data / "report.json").read_text())
    assert (report["records"], report["valid"], report["errors"], report["warnings"]) == (9, 5, 5, 2)
    assert [(p["severity"], p["line"], p["record"]) for p in report["problems"]][:3] == [
        ("error", 1, "t-rev2"), ("error", None, None), ("error", 1, "t-rev")]

    curated = _write(data / "curated.jsonl", [_mc("curated-wrong", offline_response="<answer>B</answer>")])
    assert evr1("data", "check", curated).returncode == 0  # a warning only
    assert evr1("data", "check", curated, "--strict").returncode == 1


def test_report_holds_every_problem_beyond_those_shown(data: Path) -> None:
    records = _write(data / "many.jsonl", [{"id": f"t{i}", "problem": "When?", "problem_type": "temporal_grounding",
                                            "answer": [3, 1]} for i in range(5)])
    done = evr1("data", "check", records, "--max-shown", "2", "--out", data / "report.md")
    assert done.returncode == 1
    assert done.stderr.count("error: ") == 2 and f"... and 3 more errors (all in {data / 'report.md'})" in done.stderr
    text = (data / "report.md").read_text()
    assert "## Errors (5)" in text and all(f"{records}:{line}: field 'answer'" in text for line in range(1, 6))
    assert evr1("data", "check", records, "--out", data / "report.txt").returncode == 2  # .json or .md only
