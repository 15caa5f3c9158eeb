"""The learning-rate schedule (table of hand-computed values) and the AdamW set-up."""

from __future__ import annotations

import math

import pytest
import torch

from evr1.runner.learner.optim import build_optimizer, lr_factor
from evr1.specs import OptimSpec

COS = {"warmup_steps": 2, "schedule": "cosine"}


@pytest.mark.parametrize(
    ("spec", "total", "step", "expected"),
    [
        (OptimSpec(), 10, 0, 1.0),
        (OptimSpec(), 10, 99, 1.0),
        (OptimSpec(warmup_steps=4), 10, 0, 0.25),
        (OptimSpec(warmup_steps=4), 10, 2, 0.75),
        (OptimSpec(warmup_steps=4), 10, 3, 1.0),
        (OptimSpec(warmup_steps=4), 10, 4, 1.0),
        (OptimSpec(**COS), 10, 0, 0.5),
        (OptimSpec(**COS), 10, 1, 1.0),
        (OptimSpec(**COS), 10, 2, 1.0),  # progress 0
        (OptimSpec(**COS), 10, 4, 0.5 * (1 + math.cos(math.pi / 4))),  # progress 2/8
        (OptimSpec(**COS), 10, 6, 0.5),  # progress 1/2
        (OptimSpec(**COS), 10, 10, 0.0),  # the end
        (OptimSpec(**COS), 10, 12, 0.0),  # past the end: the final value
        (OptimSpec(**COS, min_lr_ratio=0.1), 10, 6, 0.55),
        (OptimSpec(**COS, min_lr_ratio=0.1), 10, 10, 0.1),
        (OptimSpec(schedule="linear"), 4, 0, 1.0),
        (OptimSpec(schedule="linear"), 4, 1, 0.75),
        (OptimSpec(schedule="linear", min_lr_ratio=0.5), 4, 1, 0.875),
        (OptimSpec(schedule="linear", min_lr_ratio=0.5), 4, 2, 0.75),
        (OptimSpec(schedule="linear", min_lr_ratio=0.5), 4, 4, 0.5),
        (OptimSpec(schedule="linear", warmup_steps=2), 6, 1, 1.0),
        (OptimSpec(schedule="linear", warmup_steps=2), 6, 3, 0.75),  # progress 1/4
    ],
)
def test_schedule_table(spec: OptimSpec, total: int, step: int, expected: float) -> None:
    assert lr_factor(step, spec, total) == pytest.approx(expected, abs=1e-12)


def test_scheduler_sets_the_learning_rate_of_each_step() -> None:
    spec = OptimSpec(lr=0.5, warmup_steps=2, schedule="cosine", weight_decay=0.1, betas=(0.8, 0.9), eps=1e-6)
    weight = torch.nn.Parameter(torch.ones(3))
    frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    optimizer, scheduler = build_optimizer([weight, frozen], spec, total_steps=6)
    group = optimizer.param_groups[0]
    assert group["params"] == [weight] and group["betas"] == (0.8, 0.9) and group["eps"] == 1e-6
    assert group["weight_decay"] == 0.1
    seen = []
    for _ in range(7):
        seen.append(optimizer.param_groups[0]["lr"])
        weight.grad = torch.ones(3)
        optimizer.step()
        scheduler.step()
    assert seen == pytest.approx([0.5 * lr_factor(k, spec, 6) for k in range(7)])
    assert seen[:3] == pytest.approx([0.25, 0.5, 0.5]) and seen[6] == pytest.approx(0.0)


def test_bad_set_ups_are_errors() -> None:
    with pytest.raises(ValueError, match="no trainable parameter"):
        build_optimizer([torch.nn.Parameter(torch.ones(1), requires_grad=False)], OptimSpec(), 1)
    with pytest.raises(ValueError, match="total_steps must be positive"):
        build_optimizer([torch.nn.Parameter(torch.ones(1))], OptimSpec(), 0)
    with pytest.raises(ValueError, match="step must be >= 0"):
        lr_factor(-1, OptimSpec(), 1)
