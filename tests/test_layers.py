"""Run directories sit below both the runner and evaluation: neither imports the training loop back.

Checked in the source (imports inside functions count too: they close the same cycle when called).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOWER = ["evr1/run_dir.py", "evr1/runner/retention.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "evr1/eval").rglob("*.py"))]
LOOP = ("evr1.runner.train", "evr1.runner.actors")


def imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return names | {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}


@pytest.mark.parametrize("file", LOWER)
def test_a_lower_layer_does_not_import_the_training_loop(file: str) -> None:
    assert not imported(ROOT / file) & set(LOOP)
