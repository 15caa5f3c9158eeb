"""Imports go down only. The training runner sits above the rest of evr1; inside it the driver loop
(`runner/loop/`) sits above the Ray plumbing (`runner/ray/`), which sits above the learner (`runner/learner/`);
the driver step (`loop/train.py`) is the top of the loop. Run directories (`run_dir.py`) sit below the runner.

Checked in the source (imports inside functions count too: they close the same cycle when called).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EVR1 = ROOT / "evr1"

BELOW_RUNNER = ("algos", "data", "engines", "eval", "models", "registry", "rewards", "specs")
BELOW_RUNNER_FILES = ("run_dir.py", "experiment.py", "experiment_files.py", "errors.py")


def imported(path: Path) -> set[str]:
    """Every module `path` imports, with `from a import b` also counted as `a.b` (b may be a module)."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def files(*folders: str) -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for folder in folders for p in (EVR1 / folder).rglob("*.py"))


def reaches(names: set[str], forbidden: str) -> list[str]:
    """The names that are module `forbidden` or inside it."""
    return sorted(n for n in names if n == forbidden or n.startswith(forbidden + "."))


# (files, packages/modules they must not import)
RULES = [
    *((f, "evr1.runner") for f in files(*BELOW_RUNNER)),
    *((f"evr1/{f}", "evr1.runner") for f in BELOW_RUNNER_FILES),
    *((f, "evr1.runner.loop") for f in files("runner/learner", "runner/ray")),
    *((f, "evr1.runner.ray") for f in files("runner/learner")),
    *((f, "evr1.runner.loop.train") for f in files("runner/loop") if not f.endswith("loop/train.py")),
]


@pytest.mark.parametrize(("file", "forbidden"), RULES)
def test_a_lower_layer_does_not_import_a_higher_one(file: str, forbidden: str) -> None:
    assert reaches(imported(ROOT / file), forbidden) == []


def test_the_rule_sees_an_import_that_goes_up(tmp_path: Path) -> None:
    """The check itself: each way of importing upwards is seen, a sibling name with the same prefix is not."""
    source = tmp_path / "m.py"
    source.write_text(
        "from evr1.runner import loop\n"
        "def f():\n    import evr1.runner.ray.actors\n"
        "from evr1.runner.loopy import x\n"
    )
    names = imported(source)
    assert reaches(names, "evr1.runner.loop") == ["evr1.runner.loop"]
    assert reaches(names, "evr1.runner.ray") == ["evr1.runner.ray.actors"]
