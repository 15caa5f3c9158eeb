"""A run as a new user makes it, from a folder of their own: an experiment that builds on the shipped quickstart,
names itself and has a variant. Its report is titled with the variant, its validation is reported per problem
type with what accuracy means for grounding, and Ray's token-auth notice is not printed. One short run (one step,
validated before and after it) as a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics
from evr1.runner.ray.cluster import AUTH_NOTICE

pytestmark = [pytest.mark.slow, pytest.mark.ray]

EVR1 = str(Path(sys.executable).parent / "evr1")
MINE = '''
from evr1.experiment_files import load_config


def experiment():
    """The quickstart, named mine, on colour and time-span questions."""
    cfg, _ = load_config("quickstart")
    cfg.name = "mine"
    cfg.data.synth.tasks = ("color", "appear")
    return cfg


def short():
    """One step, validated before and after it."""
    cfg = experiment()
    cfg.trainer.steps = 1
    cfg.trainer.val_every = 1
    return cfg
'''


def test_a_variant_run_reports_its_name_and_each_problem_type(tmp_path: Path, model_cache: Path) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "mine.py").write_text(MINE)
    data = tmp_path / "data"
    sets = {"model.cache_dir": f"'{model_cache}'", "data.synth.out": f"'{data}'", "data.synth.n_train": "8",
            "data.synth.n_val": "4", "data.train": f"('{data}/train.jsonl',)", "data.val": f"('{data}/val.jsonl',)",
            "data.cache.path": f"'{tmp_path}/cache.lmdb'", "trainer.prompts_per_step": "2",
            "data.synth.blank_control": "False", "resources.num_cpus": "2"}
    args = [item for k, v in sets.items() for item in ("--set", f"{k}={v}")]
    out = subprocess.run([EVR1, "run", "mine:short", "--run-dir", "run", *args], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert AUTH_NOTICE not in out.stderr + out.stdout
    rows = read_metrics(tmp_path / "run")
    assert [r["step"] for r in rows] == [0, 1]
    for row in rows:  # 4 validation records: 2 colour questions, 2 time spans
        assert {k: row[k] for k in row if k.endswith("/count") and k.startswith("val/")} == {
            "val/data/val/multiple_choice/count": 2.0, "val/data/val/temporal_grounding/count": 2.0}
        by_type = (row["val/data/val/multiple_choice/accuracy"] + row["val/data/val/temporal_grounding/accuracy"]) / 2
        assert row["val/data/val/accuracy"] == pytest.approx(by_type)  # two of each: the mean of the two
    report = (tmp_path / "run" / "report.md").read_text()
    assert report.startswith("# mine:short\n")
    assert "| val/data/val/temporal_grounding/accuracy |" in report
    assert "For temporal_grounding, accuracy is a mean IoU" in report
    assert json.loads((tmp_path / "run" / "run.json").read_text())["experiment"] == "mine:short"
