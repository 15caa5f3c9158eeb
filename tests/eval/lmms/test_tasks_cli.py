"""`evr1 eval lmms-tasks` run as a user would on a data root holding some of the benchmarks."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cli_inproc import evr1 as run_evr1


def evr1(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_evr1(*args, cwd=cwd)


def test_without_benchmarks_binds_those_present(bench_root: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    for folder in ("mvbench", "charades_sta"):
        shutil.copytree(bench_root / folder, data / folder)
    done = evr1("eval", "lmms-tasks", "--data-root", str(data), "--out", str(tmp_path / "tasks"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"skipped 20 benchmarks without annotations under {data}: livesports3k_qa, longvideo_reason, ")
    assert "mvbench" not in lines[0] and "charades_sta" not in lines[0]
    assert lines[1].startswith("charades_sta: evr1_charades_sta — 3 documents")
    assert lines[2].startswith("mvbench: evr1_mvbench — 5 documents")
    assert sorted(p.name for p in (tmp_path / "tasks").iterdir()) == ["charades_sta", "mvbench"]
    named = evr1("eval", "lmms-tasks", "--data-root", str(data), "--out", str(tmp_path / "t2"),
                 "--benchmarks", "mvbench,videomme", cwd=tmp_path)
    assert named.returncode == 2 and "benchmark 'videomme': no annotations found" in named.stderr
    assert not (tmp_path / "t2").exists()  # nothing written when a named benchmark is missing


def test_a_data_root_without_any_benchmark_is_an_error(tmp_path: Path) -> None:
    done = evr1("eval", "lmms-tasks", "--data-root", str(tmp_path), "--out", str(tmp_path / "tasks"), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: no benchmark annotations under {tmp_path}: none of 22 benchmarks")


def test_list_benchmarks_describes_each_by_title_and_metric(tmp_path: Path) -> None:
    done = evr1("list", "benchmarks", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "One evaluation benchmark." not in done.stdout
    assert "VSI-Bench — mean of the per-task scores" in done.stdout
    assert "Charades-STA — mIoU and R@IoU 0.3/0.5/0.7" in done.stdout
