"""The benchmark table of docs/benchmarks.md is the registry's: one row per benchmark, with its title, folder,
annotation files, media folder, question types, metric and lmms-eval task."""

from __future__ import annotations

import re
from pathlib import Path

from evr1.registry import BENCHMARKS

DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"
# | `name` | title | `folder/` annotations | `media` | types | aggregation | lmms-eval task |
ROW = re.compile(
    r"^\| `(\w+)` \| ([^|]+) \| `([^`]+)/` ([^|]+) \| `([^`]+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", re.MULTILINE
)


def _rows() -> dict[str, tuple[str, ...]]:
    return {m[0]: tuple(part.strip() for part in m[1:]) for m in ROW.findall(DOC.read_text(encoding="utf-8"))}


def test_one_row_per_registered_benchmark() -> None:
    assert sorted(_rows()) == sorted(BENCHMARKS.names())
    assert DOC.read_text(encoding="utf-8").startswith(f"# The {len(BENCHMARKS.names())} video benchmarks\n")


def test_each_row_says_what_the_registry_holds() -> None:
    wrong = []
    for name, (title, folder, files_cell, media, types, metric, task) in _rows().items():
        bench = BENCHMARKS.get(name)
        named_task = None if task.startswith("missing") else task.strip("`")
        facts = {
            "title": (title, bench.title),
            "folder": (folder, bench.folder),
            "media dir": (media, bench.media_dir),
            "question types": (types, ", ".join(t.value for t in bench.question_types)),
            "lmms-eval task": (named_task, bench.lmms_task),
        }
        wrong += [
            f"{name} {what}: doc {doc!r}, registry {real!r}" for what, (doc, real) in facts.items() if doc != real
        ]
        if not metric.startswith(bench.metric):  # the row may add detail after the registry's summary
            wrong.append(f"{name} metric: doc {metric!r}, registry {bench.metric!r}")
        files = {f.rstrip("/") for f in re.findall(r"`([^`]+)`", files_cell)}
        if not files or not files <= {a.rstrip("/") for a in bench.annotations}:
            wrong.append(f"{name} annotations: doc {sorted(files)}, registry {bench.annotations}")
    assert wrong == []
