"""`evr1 eval` run as a user would: fixtures, scoring given responses, compare, list, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def evr1(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evr1", "eval", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_fixtures_run_compare(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = evr1("fixtures", "--out", str(data), "--benchmarks", "minerva,charades_sta", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "wrote 5 items of 2 benchmarks" in made.stdout
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(json.dumps(r) for r in [
        {"id": "minerva/mi1", "response": "D"}, {"id": "charades_sta/c1", "response": "[1, 3]"},
    ]) + "\n")
    first = evr1("run", "scripted", "--benchmarks", "minerva,charades_sta", "--data-root", str(data),
                 "--out", str(tmp_path / "a"), "--responses", str(answers), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "minerva: 50.00" in first.stdout and "charades_sta: 33.33" in first.stdout
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert results["benchmarks"]["charades_sta"]["metrics"]["R@0.7"] == pytest.approx(100 / 3)
    answers.write_text(json.dumps({"id": "minerva/mi1", "response": "A"}) + "\n")
    second = evr1("run", "scripted", "--benchmarks", "minerva", "--data-root", str(data),
                  "--out", str(tmp_path / "b"), "--responses", str(answers), cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    diff = evr1("compare", str(tmp_path / "a"), str(tmp_path / "b"), cwd=tmp_path)
    assert diff.returncode == 0, diff.stderr
    assert "| minerva | score | 50.00 | 0.00 | -50.00 |" in diff.stdout
    assert "| charades_sta | mIoU | 33.33 | - | - |" in diff.stdout


def test_user_errors_exit_2_without_traceback(tmp_path: Path) -> None:
    missing = evr1("run", "scripted", "--benchmarks", "minerva", "--data-root", str(tmp_path), "--out", str(tmp_path / "o"),
                   "--responses", str(tmp_path / "none.jsonl"), cwd=tmp_path)
    assert missing.returncode == 2 and "none.jsonl does not exist" in missing.stderr
    (tmp_path / "r.jsonl").write_text("")
    no_data = evr1("run", "scripted", "--benchmarks", "minerva", "--data-root", str(tmp_path), "--out", str(tmp_path / "o"),
                   "--responses", str(tmp_path / "r.jsonl"), cwd=tmp_path)
    assert no_data.returncode == 2 and "Traceback" not in no_data.stderr
    assert "benchmark 'minerva': no annotations found" in no_data.stderr
    unknown = evr1("run", "scripted", "--benchmarks", "videomm", "--data-root", str(tmp_path), "--out", str(tmp_path / "o"),
                   "--responses", str(tmp_path / "r.jsonl"), cwd=tmp_path)
    assert unknown.returncode == 2 and "did you mean 'videomme'" in unknown.stderr.lower()
    listed = evr1("list", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout.count("\n") == 22 and "vsibench: VSI-Bench" in listed.stdout
    assert "[lmms-eval: evr1_vsibench, extends stock vsibench]" in listed.stdout
    assert "[lmms-eval: evr1_stvg, scored by evr1]" in listed.stdout
