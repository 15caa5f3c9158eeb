"""All 22 benchmarks through lmms-eval with the tiny model: bound by the CLI, every document answered.

Scores of a random-init model are noise; what is checked is lmms-eval's result, not its exit code:
every bound task reports finite metrics (LiveSports-3K, whose official answers are chosen by
logits, none: NaN), every record of every benchmark is a sample (none
dropped), and no request failed. Open-ended items go to the local test judge.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_inproc import evr1

from evr1.registry import BENCHMARKS

pytestmark = pytest.mark.slow


def evr1_eval(*args: str) -> subprocess.CompletedProcess[str]:
    return evr1("eval", *args)


def test_lmms_tasks_command_binds_and_names_the_tasks(bench_root: Path, tmp_path: Path) -> None:
    done = evr1_eval("lmms-tasks", "--data-root", str(bench_root), "--out", str(tmp_path), "--benchmarks", "mvbench,stvg")
    assert done.returncode == 0, done.stderr
    assert "mvbench: evr1_mvbench — 5 documents" in done.stdout
    assert "stvg: evr1_stvg — 2 documents" in done.stdout
    assert done.stdout.strip().endswith(f"--include_path {tmp_path} --tasks evr1_mvbench,evr1_stvg")
    bound = sorted(p.name for p in (tmp_path / "mvbench").iterdir())
    assert bound == ["_mvbench.yaml", "docs-action_sequence.jsonl", "docs-object_shuffle.jsonl",
                     "mvbench_action_sequence.yaml", "mvbench_object_shuffle.yaml"]  # the 18 empty subtasks skipped


def test_lmms_tasks_command_names_an_unknown_benchmark(bench_root: Path, tmp_path: Path) -> None:
    done = evr1_eval("lmms-tasks", "--data-root", str(bench_root), "--out", str(tmp_path), "--benchmarks", "videomme,mvbnech")
    assert done.returncode == 2
    assert "mvbnech" in done.stderr and "mvbench" in done.stderr and "Traceback" not in done.stderr


def test_all_22_benchmarks_through_lmms_eval(bench_root: Path, tmp_path: Path, lmms_env: Path, judge) -> None:
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    from evr1.eval.lmms.model import Evr1Chat

    done = evr1_eval("lmms-tasks", "--data-root", str(bench_root), "--out", str(tmp_path / "tasks"))
    assert done.returncode == 0, done.stderr
    tasks = re.search(r"--tasks (\S+)$", done.stdout.strip()).group(1).split(",")
    assert sorted(tasks) == sorted(f"evr1_{name}" for name in BENCHMARKS.names())  # one top-level name each
    documents = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+): .* — (\d+) documents", done.stdout, re.MULTILINE)}
    assert sorted(documents) == sorted(BENCHMARKS.names())

    judge.reply = "incorrect"  # a verdict for every judged answer of the random-init model
    os.environ.update(EVR1_JUDGE_URL=judge.url, EVR1_JUDGE_MODEL="judge")
    model = Evr1Chat(model="tiny-qwen2.5-vl", fps=1.0, max_frames=4, min_pixels=28 * 28, max_pixels=56 * 56,
                     batch_size=4)
    manager = TaskManager(include_path=[str(tmp_path / "tasks")], include_defaults=False)
    result = simple_evaluate(model=model, tasks=tasks, task_manager=manager, log_samples=True,
                             gen_kwargs="max_new_tokens=8")
    assert result is not None
    assert model.failures == []

    asked: dict[str, set[str]] = {}
    for task, samples in result["samples"].items():
        for sample in samples:
            asked.setdefault(sample["doc"]["evr1_benchmark"], set()).add(sample["doc"]["evr1_id"])
            assert isinstance(sample["resps"][0][0], str)
        assert result["n-samples"][task]["effective"] == len(samples) > 0
    for name in BENCHMARKS.names():
        records = {r.id for r in BENCHMARKS.get(name).load(bench_root)}
        assert asked[name] == records, name  # every record asked, none dropped
        bench_samples = sum(len(s) for t, s in result["samples"].items() if s[0]["doc"]["evr1_benchmark"] == name)
        assert bench_samples == documents[name], name

    for task, samples in result["samples"].items():
        metrics = {k: v for k, v in result["results"][task].items() if "," in k and "stderr" not in k}
        values = [v for v in metrics.values() if isinstance(v, (int, float))]
        official = BENCHMARKS.get(samples[0]["doc"]["evr1_benchmark"]).official
        if official is not None and official.choice is not None:  # chosen by logits: generated text holds no choice
            assert values and all(math.isnan(v) for v in values), (task, metrics)
        else:
            assert values and any(math.isfinite(v) for v in values), (task, metrics)
    for group in [t for t in tasks if t in result.get("groups", {})]:
        assert any(isinstance(v, float) and math.isfinite(v) for v in result["groups"][group].values()), group
    check_prompt_snapshot(result["samples"], tmp_path / "prompts.json")


SNAPSHOT = Path(__file__).with_name("prompt_snapshot.json")


def check_prompt_snapshot(samples: dict[str, list[dict[str, Any]]], new: Path) -> None:
    """The prompt text and generation settings lmms-eval built for every document of our task folders (evals/) equal
    the snapshot: a prompt change shows here. The new prompts are written to `new`, to replace the snapshot with
    when the change is meant."""
    prompts = {f"{task}/{s['doc']['evr1_id']}": {"prompt": s["arguments"][0], "generation": s["arguments"][1]}
               for task, rows in sorted(samples.items()) for s in rows}
    new.write_text(json.dumps(prompts, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    assert SNAPSHOT.is_file(), f"no prompt snapshot: check and copy {new} to {SNAPSHOT}"
    before = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    changed = sorted(k for k in before.keys() | prompts.keys() if before.get(k) != prompts.get(k))
    assert not changed, (f"{len(changed)} prompts differ from {SNAPSHOT.name} (first: {changed[:3]}); if meant,"
                         f" copy {new} over it")
