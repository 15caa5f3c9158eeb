"""The training loop end to end: real Ray, real tiny models, real synthetic videos, the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics

from ..holding import held_experiment, wait_until_held

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ROOT = Path(__file__).resolve().parents[3]
EVR1 = str(Path(sys.executable).parent / "evr1")
VOLATILE = ("time", "timing/", "tokens/per_s", "learner/update_s", "learner/tokens_per_s")


def settings(tmp: Path, models: Path, **extra: str) -> list[str]:
    """`--set` items for a small, fast run whose data and cache live under `tmp`."""
    data = tmp / "data"
    values = {
        "model.cache_dir": f"'{models}'",
        "data.synth.out": f"'{data}'",
        "data.synth.n_train": "16",
        "data.synth.n_val": "4",
        "data.train": f"('{data}/train.jsonl',)",
        "data.val": f"('{data}/val.jsonl',)",
        "data.cache.path": f"'{tmp}/cache.lmdb'",
        "trainer.prompts_per_step": "2",
        "trainer.val_every": "2",
        "rollout.n": "4",
        "data.synth.blank_control": "False",
        "resources.num_cpus": "2",
        **extra,
    }
    return [item for k, v in values.items() for item in ("--set", f"{k}={v}")]


def run(*args: str, timeout: int = 400, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`evr1 run ARGS` in `cwd` (the repository by default)."""
    return subprocess.run([EVR1, "run", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False)


def stable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in rows]


@pytest.fixture(scope="module")
def models(model_cache: Path) -> Path:
    """The session's tiny models (`conftest.model_cache`): built once, not once per module."""
    return model_cache


@pytest.mark.parametrize("family", ["qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qwen3.5", "qwen3.5-moe", "qwen3-vl-moe"])
def test_three_steps_per_family(tmp_path: Path, models: Path, family: str) -> None:
    extra = {"model.name": f"tiny-{family}"}
    if family == "qwen2.5-vl":  # also the periodic benchmark evaluation
        from evr1.eval.fixtures import write_fixtures

        write_fixtures(tmp_path / "bench", ["mvbench"])
        extra |= {"eval.benchmarks": "('mvbench',)", "eval.data_root": f"'{tmp_path / 'bench'}'", "eval.every_steps": "3"}
    if family == "qwen2-vl":  # also KL as a reward penalty, full fine-tuning: a reference worker
        extra |= {"algo.kl.enabled": "True", "algo.kl.as_reward_penalty": "True", "algo.kl.coef": "0.1"}
    if family == "qwen3-vl":  # also ReMax with two learners, each holding groups of both mini-batches (4 groups)
        extra |= {"algo.advantage": "'remax'", "trainer.prompts_per_step": "4", "resources.learner_workers": "2",
                  "trainer.mini_batches": "2"}
    if family == "qwen3.5":  # also HF gradient checkpointing under the grouped learner (hybrid layers' states)
        extra |= {"model.gradient_checkpointing": "True"}
    out = run("quickstart:debug", "--run-dir", str(tmp_path / "run"), *settings(tmp_path, models, **extra))
    assert out.returncode == 0, out.stderr[-3000:]
    rows = read_metrics(tmp_path / "run")
    if family == "qwen2.5-vl":
        assert 0.0 <= rows[-1]["eval/mvbench/score"] <= 1.0
        results = json.loads((tmp_path / "run" / "eval" / "step_000003" / "results.json").read_text())
        assert results["settings"]["video"]["fps"] == 4.0  # the experiment's shared VideoSpec
    assert [r["step"] for r in rows] == [0, 1, 2, 3]  # step 0: validation before training
    if family == "qwen2-vl":  # the reference's log-probs equal the policy's at step 1 and drift once it trains
        assert "KL reference: a reference worker" in out.stdout and all(r["timing/reference"] > 0 for r in rows[1:])
        kl = [r["kl/mean"] for r in rows[1:]]
        assert kl[0] == pytest.approx(0.0, abs=1e-6) and all(v > 1e-6 for v in kl[1:])
    for row in rows[1:]:
        assert row["learner/optimizer_steps"] == (2.0 if family == "qwen3-vl" else 1.0)  # one per mini-batch
        assert row["learner/skipped_steps"] == 0.0
        assert ("reward/greedy_baseline" in row) == (family == "qwen3-vl")
        if family == "qwen3-vl":
            assert 0.0 <= row["reward/greedy_baseline"] <= 1.0
        assert row["mixer/offline_share"] == pytest.approx(1 / 4)
        assert row["reward/offline_score"] == 1.0  # the curated answers are right
        assert 0.0 <= row["reward/score"] <= 1.0
    assert "val/data/val/accuracy" in rows[-1]
    assert (tmp_path / "run" / "report.md").is_file() and (tmp_path / "run" / "curves.png").stat().st_size > 1000
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert {s["step"] for s in samples} == {1, 2, 3}

    from transformers import AutoModelForImageTextToText

    from evr1.models import load_processor
    from evr1.specs import ModelSpec

    exported = tmp_path / "run" / "final_model"
    model = AutoModelForImageTextToText.from_pretrained(exported)
    processor = load_processor(ModelSpec(name=str(exported)))
    ids = processor.tokenizer("hello", return_tensors="pt")["input_ids"]
    assert model.generate(ids, max_new_tokens=3, do_sample=False).shape[1] == ids.shape[1] + 3


def killed_after_first_checkpoint(target: Path, common: list[str]) -> None:
    """Start `evr1 run quickstart` into `target`, held at step 3 (`holding`), and kill it there (driver, local Ray,
    workers) once step 2 is saved."""
    experiment = held_experiment(target.parent / f"{target.name}_held.py", "quickstart", target, after_step=2)
    proc = subprocess.Popen(
        [EVR1, "run", str(experiment), "--run-dir", str(target), *common],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        wait_until_held(proc, target)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not (target / "final_model").exists()


def test_a_pipelined_run_resumed_after_kill_repeats_the_uninterrupted_run(tmp_path: Path, models: Path) -> None:
    """One step off-policy, with ReMax's greedy responses: step 3's batch, generated with step 1's weights while
    step 2 trained, is in flight at the checkpoint after step 2; the run is killed there and resumed."""
    extra = {"trainer.steps": "5", "trainer.save_every": "2", "trainer.val_every": "3", "trainer.max_staleness": "1",
             "algo.advantage": "'remax'"}
    common = settings(tmp_path, models, **extra)
    whole = run("quickstart", "--run-dir", str(tmp_path / "whole"), *common)
    assert whole.returncode == 0, whole.stderr[-3000:]
    rows = read_metrics(tmp_path / "whole")
    assert [r["rollout/staleness"] for r in rows if "rollout/staleness" in r] == [0.0, 1.0, 1.0, 1.0, 1.0]
    assert all("reward/greedy_baseline" in r for r in rows if r["step"] > 0)
    killed_after_first_checkpoint(tmp_path / "killed", common)
    assert (tmp_path / "killed" / "checkpoints" / "step_000002" / "in_flight.pt").is_file()
    resumed = run("--resume", str(tmp_path / "killed"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert stable(read_metrics(tmp_path / "killed")) == stable(rows)


def test_a_pipelined_run_trains_with_a_kl_reference_dynamic_sampling_and_the_modality_sampler(
    tmp_path: Path, models: Path
) -> None:
    """The loop's other features one step off-policy: a KL loss term against a reference worker, DAPO dynamic
    sampling and the 1:1 modality sampler (the mixer, ReMax and validation: the kill-resume test above)."""
    extra = {"trainer.steps": "3", "trainer.max_staleness": "1", "trainer.val_every": "0", "algo.kl.enabled": "True",
             "algo.kl.coef": "0.1", "algo.dynamic_sampling": "{'low': -1.0, 'high': 2.0}", "data.sampler": "'modality'",
             "data.modality_ratio": "{'video': 1.0, 'image': 1.0}", "trainer.log_samples": "8"}
    out = run("quickstart", "--run-dir", str(tmp_path / "run"), *settings(tmp_path, models, **extra))
    assert out.returncode == 0, out.stderr[-3000:]
    rows = read_metrics(tmp_path / "run")
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert [r["rollout/staleness"] for r in rows] == [0.0, 1.0, 1.0]
    assert all(r["timing/reference"] > 0 for r in rows)
    assert rows[0]["learner/kl"] == pytest.approx(0.0, abs=1e-6) and all(r["learner/kl"] > 1e-6 for r in rows[1:])
    assert all(r["filter/kept_frac"] == 1.0 and r["learner/optimizer_steps"] == 1.0 for r in rows)  # range (-1, 2)
    for r in rows[1:]:  # the online rows (3 of each group of 4; the mixer adds a curated one) are one update stale
        assert r["learner/stale/rows"] == 6.0 and r["learner/stale/staleness_max"] == 1.0
        assert 0.0 < r["learner/stale/weight_mean"] <= r["learner/stale/weight_max"] <= 2.0  # the default cap
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    for step in (1, 2, 3):  # one video and one image prompt per step
        ids = {s["id"].split("#")[0] for s in samples if s["step"] == step}
        assert sorted(i.rsplit("-", 1)[1] for i in ids) == ["color", "color_image"]


def test_a_batch_of_unloadable_media_stops_the_run_naming_the_failures(tmp_path: Path, models: Path) -> None:
    from evr1.runner.loop.datasets import ensure_synthetic
    from evr1.specs import SynthSpec

    data = tmp_path / "data"
    ensure_synthetic(SynthSpec(tasks=("quickstart",), out=str(data), n_train=16, n_val=4, blank_control=False))  # as the run
    for media in (data / "media" / "train").iterdir():
        media.write_bytes(b"not a video nor an image")
    out = run("quickstart:debug", "--run-dir", str(tmp_path / "run"), *settings(tmp_path, models))
    assert out.returncode == 2, out.stderr[-3000:]
    failures = tmp_path / "run" / "data_failures.jsonl"
    assert "error: step 1: none of the step's 2 records has media that can be loaded; every failed record" in out.stderr
    assert str(failures) in out.stderr and "Traceback" not in out.stderr
    rows = [json.loads(line) for line in failures.read_text().splitlines()]
    assert len(rows) == 2 and all(r["step"] == 1 and r["reason"] == "corrupt" and r["where"].startswith(str(data)) for r in rows)
    assert "**Data failures: the media of 2 training records" in (tmp_path / "run" / "report.md").read_text()
    stopped = [r for r in read_metrics(tmp_path / "run") if r["step"] == 1]  # the failing step is logged too
    assert [r["data/dropped_records"] for r in stopped] == [2.0]
