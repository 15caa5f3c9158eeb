"""The wheel built from this repository holds what a pip user needs: the experiments evr1 ships, found by name from
a folder of one's own (no `experiments/` there), as `evr1 show quickstart` and `load_config("quickstart")` do."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from cli_inproc import evr1

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p.name for p in (ROOT / "evr1" / "experiments").glob("[!_]*.py"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel pip builds from a copy of the repository's package files (the checkout stays as it is)."""
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("wheel")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src)
    shutil.copytree(ROOT / "evr1", src / "evr1", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                    "-w", str(out), str(src)], check=True, capture_output=True, timeout=300)
    (built,) = out.glob("evr1-*.whl")
    return built


def test_the_wheel_ships_the_experiments(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert SHIPPED == ["ablations.py", "quickstart.py", "qwen25vl_7b_video.py", "qwen35_video.py", "qwen3vl_8b_video.py"]
    assert {f"evr1/experiments/{name}" for name in SHIPPED} <= names
    assert "evr1/recipes.py" in names  # what the paper recipes import


def test_an_installed_wheel_loads_the_quickstart_from_another_folder(wheel: Path, tmp_path: Path) -> None:
    site, elsewhere = tmp_path / "site", tmp_path / "my_project"
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(site),
                    str(wheel)], check=True, capture_output=True, timeout=300)
    code = ("import evr1.experiment_files as ef; cfg, source = ef.load_config('ablations:decay');"
            " print(source.file); print(cfg.mixer.decay_steps); print([d.name for d in source.deps])")
    out = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env={"PYTHONPATH": str(site)}, text=True,
                         capture_output=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    file, decay, deps = out.stdout.splitlines()
    assert Path(file) == site / "evr1" / "experiments" / "ablations.py"
    assert (decay, deps) == ("100", "['quickstart']")


def test_show_and_list_find_the_shipped_experiments_from_a_folder_of_ones_own(tmp_path: Path) -> None:
    shown = evr1("show", "quickstart", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"quickstart  (file: {ROOT / 'evr1' / 'experiments' / 'quickstart.py'})")
    listed = evr1("list", "experiments", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    labels = [line.split()[0] for line in listed.stdout.splitlines()[1:]]
    assert {"quickstart", "quickstart:debug", "ablations:mixed", "qwen3vl_8b_video:small_gpu"} <= set(labels)
