"""Mixer modes and the modality sampler in the real training loop, and their resume."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evr1.data.records import read_records
from evr1.run_dir import read_metrics

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ROOT = Path(__file__).resolve().parents[3]
EVR1 = str(Path(sys.executable).parent / "evr1")
VOLATILE = ("time", "timing/", "tokens/per_s", "learner/update_s", "learner/tokens_per_s")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([EVR1, "run", *args], capture_output=True, text=True, cwd=ROOT, timeout=400, check=False)


def stable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in rows]


def test_threshold_mixer_with_a_curated_file_and_the_modality_sampler_resume_exactly(tmp_path: Path, model_cache: Path) -> None:
    from evr1.runner.loop.datasets import ensure_synthetic
    from evr1.specs import SynthSpec

    data = tmp_path / "data"
    ensure_synthetic(SynthSpec(tasks=("quickstart",), out=str(data), n_train=16, n_val=4, blank_control=False))
    with (tmp_path / "curated.jsonl").open("w") as f:  # a right and a wrong answer per record, rotating by step
        for r in read_records(data / "train.jsonl"):
            wrong = "A" if r.answer != "A" else "B"
            f.write(json.dumps({"id": r.id, "response": f"<answer>{r.answer}</answer>"}) + "\n")
            f.write(json.dumps({"id": r.id, "response": f"<answer>{wrong}</answer>"}) + "\n")
    values = {
        "model.cache_dir": f"'{model_cache}'",
        "data.synth.out": f"'{data}'",
        "data.synth.n_train": "16",
        "data.synth.n_val": "4",
        "data.synth.blank_control": "False",
        "data.train": f"('{data}/train.jsonl',)",
        "data.val": f"('{data}/val.jsonl',)",
        "data.cache.path": f"'{tmp_path}/cache.lmdb'",
        "data.sampler": "'modality'",
        "data.modality_ratio": "{'video': 1.0, 'image': 1.0}",
        "mixer.name": "'offline_k_threshold'",
        "mixer.threshold": "1.0",
        "mixer.file": f"'{tmp_path / 'curated.jsonl'}'",
        "trainer.prompts_per_step": "2",
        "trainer.val_every": "2",
        "trainer.save_every": "2",
        "trainer.log_samples": "8",
        "resources.num_cpus": "2",
    }
    sets = [item for k, v in values.items() for item in ("--set", f"{k}={v}")]
    whole = run("quickstart", "--run-dir", str(tmp_path / "whole"), *sets, "--set", "trainer.steps=4")
    assert whole.returncode == 0, whole.stderr[-3000:]
    rows = read_metrics(tmp_path / "whole")
    for row in rows[1:]:
        assert row["mixer/online_dropped"] == row["mixer/groups_mixed"]  # k=1 replaced per mixed group
        assert row["mixer/offline_share"] == pytest.approx(row["mixer/groups_mixed"] / 8)  # 2 groups of 4
        assert row["mixer/groups_mixed"] + row["mixer/low_unmixed"] <= 2
    assert sum(r["mixer/groups_mixed"] for r in rows[1:]) > 0  # a random-init policy is below accuracy 1
    for r in rows[1:]:  # curated response (step * k) mod 2: the right answer at even steps, the wrong one at odd
        if "reward/offline_score" in r:
            assert (r["reward/offline_score"] == 1.0) == (r["step"] % 2 == 0), r
    samples = [json.loads(line) for line in (tmp_path / "whole" / "samples.jsonl").read_text().splitlines()]
    for step in (1, 2, 3, 4):  # the 1:1 modality sampler: one video and one image prompt per step
        ids = {s["id"].split("#")[0] for s in samples if s["step"] == step}
        assert sorted(i.rsplit("-", 1)[1] for i in ids) == ["color", "color_image"]

    part = tmp_path / "part"
    first = run("quickstart", "--run-dir", str(part), *sets, "--set", "trainer.steps=2")
    assert first.returncode == 0, first.stderr[-3000:]
    config = json.loads((part / "config.json").read_text())
    config["trainer"]["steps"] = 4  # continue the 2-step run from its checkpoint to 4 steps
    (part / "config.json").write_text(json.dumps(config))
    resumed = run("--resume", str(part))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert stable(read_metrics(part)) == stable(rows)  # sampler state restored; the mixer has none
