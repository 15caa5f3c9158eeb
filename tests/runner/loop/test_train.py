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


def three_steps(tmp_path: Path, models: Path, family: str, rows_per_step: int,
                **extra: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """`quickstart:debug` for three steps on the tiny `family` model, every response logged to samples.jsonl
    (`rows_per_step`: prompts x responses); checks what every such run shows, returns its output and metric rows."""
    extra = {"model.name": f"tiny-{family}", "trainer.log_samples": str(rows_per_step), **extra}
    out = run("quickstart:debug", "--run-dir", str(tmp_path / "run"), *settings(tmp_path, models, **extra))
    assert out.returncode == 0, out.stderr[-3000:]
    rows = read_metrics(tmp_path / "run")
    assert [r["step"] for r in rows] == [0, 1, 2, 3]  # step 0: validation before training
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    for row in rows[1:]:
        assert row["learner/skipped_steps"] == 0.0
        assert row["mixer/offline_share"] == pytest.approx(1 / 4)
        assert row["reward/offline_score"] == 1.0  # the curated answers are right
        scores = [s["score"] for s in samples if s["step"] == row["step"]]
        assert len(scores) == rows_per_step and row["reward/score"] == pytest.approx(sum(scores) / rows_per_step)
    assert "val/data/val/accuracy" in rows[-1]
    assert (tmp_path / "run" / "report.md").is_file() and (tmp_path / "run" / "curves.png").stat().st_size > 1000

    from transformers import AutoModelForImageTextToText

    from evr1.models import load_processor
    from evr1.specs import ModelSpec

    exported = tmp_path / "run" / "final_model"
    model = AutoModelForImageTextToText.from_pretrained(exported)
    processor = load_processor(ModelSpec(name=str(exported)))
    ids = processor.tokenizer("hello", return_tensors="pt")["input_ids"]
    assert model.generate(ids, max_new_tokens=3, do_sample=False).shape[1] == ids.shape[1] + 3
    return out, rows


def test_qwen2_vl_with_a_kl_reward_penalty_against_a_reference_worker(tmp_path: Path, models: Path) -> None:
    """Full fine-tuning with KL as a reward penalty: a reference worker, whose log-probs equal the policy's at
    step 1 and drift once it trains."""
    kl = {"algo.kl.enabled": "True", "algo.kl.as_reward_penalty": "True", "algo.kl.coef": "0.1"}
    out, rows = three_steps(tmp_path, models, "qwen2-vl", 8, **kl)
    assert "KL reference: a reference worker" in out.stdout and all(r["timing/reference"] > 0 for r in rows[1:])
    kl_means = [r["kl/mean"] for r in rows[1:]]
    assert kl_means[0] == pytest.approx(0.0, abs=1e-6) and all(v > 1e-6 for v in kl_means[1:])
    assert all(r["learner/optimizer_steps"] == 1.0 and "reward/greedy_baseline" not in r for r in rows[1:])


def test_qwen2_5_vl_with_a_periodic_benchmark_evaluation(tmp_path: Path, models: Path) -> None:
    """The benchmark evaluation every 3 steps: its headline score (a percentage) is logged as results.json has it,
    over every item of the fixture, with the experiment's shared video settings."""
    from evr1.eval.fixtures import write_fixtures

    write_fixtures(tmp_path / "bench", ["mvbench"])
    bench = {"eval.benchmarks": "('mvbench',)", "eval.data_root": f"'{tmp_path / 'bench'}'", "eval.every_steps": "3"}
    _, rows = three_steps(tmp_path, models, "qwen2.5-vl", 8, **bench)
    results = json.loads((tmp_path / "run" / "eval" / "step_000003" / "results.json").read_text())
    mvbench = results["benchmarks"]["mvbench"]
    assert rows[-1]["eval/mvbench/score"] == mvbench["score"] and mvbench["n"] == 5
    assert "eval/mvbench/score" not in rows[-2]  # every 3 steps
    assert results["settings"]["video"]["fps"] == 4.0  # the experiment's shared VideoSpec
    assert all(r["learner/optimizer_steps"] == 1.0 and "reward/greedy_baseline" not in r for r in rows[1:])


def test_qwen3_vl_remax_with_two_learners(tmp_path: Path, models: Path) -> None:
    """ReMax (a greedy baseline per prompt, `test_greedy_baselines`) with two learners, each holding groups of both
    mini-batches (4 groups): one optimizer step per mini-batch."""
    remax = {"algo.advantage": "'remax'", "trainer.prompts_per_step": "4", "resources.learner_workers": "2",
             "trainer.mini_batches": "2"}
    _, rows = three_steps(tmp_path, models, "qwen3-vl", 16, **remax)
    assert all(r["learner/optimizer_steps"] == 2.0 and "reward/greedy_baseline" in r for r in rows[1:])


def test_qwen35_hybrid_with_gradient_checkpointing(tmp_path: Path, models: Path) -> None:
    """Qwen3.5 (Gated DeltaNet + full attention) with HF gradient checkpointing under the grouped learner: the
    prompt's conv and recurrent states kept through the recompute; trains, syncs weights, exports and generates."""
    _, rows = three_steps(tmp_path, models, "qwen3.5", 8, **{"model.gradient_checkpointing": "True"})
    assert all(r["learner/optimizer_steps"] == 1.0 for r in rows[1:])


@pytest.mark.parametrize("family", ["qwen3.5-moe", "qwen3-vl-moe"])
def test_moe_variants(tmp_path: Path, models: Path, family: str) -> None:
    """The mixture-of-experts tiny models (4 experts, 2 per token) through the same three steps and export."""
    _, rows = three_steps(tmp_path, models, family, 8)
    assert all(r["learner/optimizer_steps"] == 1.0 for r in rows[1:])


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
