"""Step time of the quickstart with the tensor cache vs live decoding (ratio printed).

Both runs use the same experiment, seed and data; only `data.cache.mode` differs (`only`: every
media item comes from the LMDB cache; `bypass`: decoded, sampled and processed live each step).
Run: `make bench` (or `pytest benchmarks/bench_train_step.py -s`).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from evr1.experiment import apply_overrides, build_experiment
from evr1.experiment_files import load_config

STEPS = 6


def step_times(tmp: Path, mode: str) -> list[float]:
    from evr1.runner.train import Trainer, ray_session

    cfg, _ = load_config("quickstart")
    data = tmp / "data"
    apply_overrides(cfg, [
        f"data.synth.out='{data}'", "data.synth.blank_control=False",
        f"data.train=('{data}/train.jsonl',)", "data.val=()", f"data.cache.path='{tmp}/cache.lmdb'",
        f"data.cache.mode='{'prefer' if mode == 'only' else mode}'", "trainer.val_every=0", f"trainer.steps={STEPS}",
    ])
    exp = build_experiment(cfg)
    run_dir = tmp / f"run-{mode}"
    run_dir.mkdir(parents=True)
    with ray_session(exp.resources):
        trainer = Trainer(exp, run_dir)  # builds the cache first when a path is set
        trainer.start_workers()
        trainer.sync_weights(0)
        return [trainer.step(step)["timing/step"] for step in range(1, STEPS + 1)]


@pytest.mark.benchmark(group="train-step")
def test_step_time_cache_vs_live(tmp_path: Path, benchmark) -> None:
    cached = benchmark.pedantic(step_times, args=(tmp_path / "a", "only"), rounds=1, iterations=1)
    live = step_times(tmp_path / "b", "bypass")
    c, lv = statistics.median(cached[1:]), statistics.median(live[1:])  # the first step warms up
    print(f"\nquickstart step: cache {c * 1000:.0f} ms, live {lv * 1000:.0f} ms, live/cache {lv / c:.2f}x")
