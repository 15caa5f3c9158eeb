"""Learner step time: token-budget micro-batches (length-sorted packing) vs one sample per forward pass.

The obvious alternative to packing is a forward/backward per sample (no padding at all, but
no batching either). Both give the same update; the ratio of their step times is printed.
"""

from __future__ import annotations

import time

import pytest
import torch

from evr1.models import load_processor
from evr1.models.testing import tiny_spec, video_prompts
from evr1.runner.batching import Sample
from evr1.runner.learner import Learner
from evr1.specs import AlgoSpec, OptimSpec, TrainerSpec

FAMILY = "qwen2.5-vl"
GROUPS, GROUP_SIZE = 4, 4


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    spec = tiny_spec(FAMILY, tmp_path_factory.mktemp("models"))
    prompts = video_prompts(load_processor(spec), FAMILY, [f"question {i}" for i in range(GROUPS)])
    g = torch.Generator().manual_seed(0)
    samples = []
    for i in range(GROUPS * GROUP_SIZE):
        length = int(torch.randint(8, 33, (), generator=g))
        response = torch.randint(20, 300, (length,), generator=g)
        samples.append(
            Sample(prompts[i // GROUP_SIZE], response, torch.randn(length, generator=g), group_id=i // GROUP_SIZE)
        )
    return spec, samples


def _step_time(spec, samples, budget: int, rounds: int = 3) -> float:
    learner = Learner.from_spec(spec, AlgoSpec(), OptimSpec(lr=1e-4), TrainerSpec(micro_batch_tokens=budget))
    learner.update(samples)  # warm-up
    start = time.perf_counter()
    for _ in range(rounds):
        learner.update(samples)
    return (time.perf_counter() - start) / rounds


def test_packed_micro_batches_vs_one_sample_per_pass(benchmark, setup) -> None:
    spec, samples = setup
    packed = benchmark.pedantic(lambda: _step_time(spec, samples, 2048), rounds=1, iterations=1)
    single = _step_time(spec, samples, 1)
    print(
        f"\nlearner step ({len(samples)} samples): packed {packed:.3f} s, one per pass {single:.3f} s, "
        f"ratio {single / packed:.2f}x"
    )
