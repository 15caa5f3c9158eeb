"""`evr1 data check`: a bad `--out` fails before anything is read, its missing folders are made, `--decoder`
opens the videos, and curated answers are judged only for the types scored right or wrong (run as a user would)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_inproc import evr1

from evr1.data.check import check_data
from evr1.data.testclips import write_clip

OPEN = {"problem": "What happens?", "problem_type": "open_ended", "answer": "A man is riding a red bicycle down the street"}


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture()
def records(tmp_path: Path) -> Path:
    write_clip(tmp_path / "good.mp4", 64, 48, 4, 8)
    return _write(tmp_path / "train.jsonl", [{"id": "v", **OPEN, "media": [{"kind": "video", "path": "good.mp4"}]}])


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("r.txt", "error: --out {out}: the report is .json or .md"),
        ("train.jsonl/r.md", "error: --out {out}: {tmp}/train.jsonl is a file, not a folder"),
        ("folder.json", "error: --out {out}: is a folder; name a .json or .md file"),
    ],
)
def test_a_report_path_that_cannot_be_written_fails_before_the_check(records: Path, out: str, message: str) -> None:
    (records.parent / "folder.json").mkdir()
    done = evr1("data", "check", records, "--out", records.parent / out)
    assert done.returncode == 2
    assert done.stderr.strip() == message.format(out=records.parent / out, tmp=records.parent)
    assert done.stdout == ""  # refused before the records were read: no summary


def test_missing_folders_of_the_report_are_made(records: Path) -> None:
    out = records.parent / "reports" / "today" / "check.md"
    done = evr1("data", "check", records, "--out", out)
    assert done.returncode == 0, done.stderr
    assert f"report: {out}" in done.stdout and out.read_text().startswith("# evr1 data check")


def test_decoder_option_opens_videos_with_that_decoder(records: Path) -> None:
    (records.parent / "bad.mp4").write_bytes(b"\x00" * 300)
    _write(records, [{"id": "v", **OPEN, "media": [{"kind": "video", "path": "good.mp4"}]},
                     {"id": "b", **OPEN, "media": [{"kind": "video", "path": "bad.mp4"}]}])
    for decoder in ("pyav", "decord", "torchcodec"):
        result = check_data([records], decoder=decoder)
        assert [(m.record, m.reason) for m in result.media] == [("b", "corrupt")], decoder
    done = evr1("data", "check", records, "--decoder", "gstreamer")
    assert done.returncode == 2 and done.stderr.strip() == (
        "error: --decoder: decoder 'gstreamer' is not available in this build; use one of pyav, decord, torchcodec")


def test_curated_answers_are_judged_only_where_the_reward_is_right_or_wrong(tmp_path: Path) -> None:
    tg = {"problem": "When?", "problem_type": "temporal_grounding", "answer": {"time": [2, 6]}}
    path = _write(tmp_path / "curated.jsonl", [
        {"id": "para", **OPEN, "offline_response": "<answer>A man rides a red bike along the street</answer>"},  # < 1
        {"id": "near", **tg, "offline_response": "<answer>[2, 5]</answer>"},  # IoU 0.75
        {"id": "count", "problem": "How many?", "problem_type": "numerical", "answer": "3",
         "offline_response": "<answer>4</answer>"},
    ])
    done = evr1("data", "check", path, "--strict")
    assert done.returncode == 1
    assert [line.split(": field")[0] for line in done.stderr.splitlines()] == [f"warning: {path}:3"]
    assert "scores this curated answer 0 against the record's answer '3'" in done.stderr
    graded = _write(path, [json.loads(line) for line in path.read_text().splitlines()[:2]])
    assert evr1("data", "check", graded, "--strict").returncode == 0  # graded types: no warning, --strict passes
