"""AdamW and its learning-rate schedule (warm-up, then constant, cosine or linear decay) from an `OptimSpec`."""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch.optim.lr_scheduler import LambdaLR

from evr1.specs import OptimSpec


def lr_factor(step: int, spec: OptimSpec, total_steps: int) -> float:
    """Multiplier of `spec.lr` at optimizer step `step` (0-based) of a run of `total_steps` steps.

    Warm-up: `(step + 1) / warmup_steps` for the first `warmup_steps` steps. Then, with progress
    `p = (step - warmup) / (total - warmup)` in [0, 1], `cosine` gives
    `m + (1 - m) * (1 + cos(pi p)) / 2` and `linear` `1 - (1 - m) p` (m = `min_lr_ratio`);
    steps past the end keep the final value.
    """
    if step < 0:
        raise ValueError(f"optimizer step must be >= 0, got {step}")
    warmup = spec.warmup_steps
    if step < warmup:
        return (step + 1) / warmup
    if spec.schedule == "constant":
        return 1.0
    progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
    floor = spec.min_lr_ratio
    if spec.schedule == "cosine":
        return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return 1.0 - (1.0 - floor) * progress


def build_optimizer(
    params: Iterable[torch.nn.Parameter], spec: OptimSpec, total_steps: int
) -> tuple[torch.optim.AdamW, LambdaLR]:
    """AdamW over `params` and the scheduler that sets its learning rate before each step.

    Call `scheduler.step()` after every optimizer step (skipped ones included), so the learning rate
    follows the step count of the run.
    """
    if total_steps <= 0:
        raise ValueError(f"total_steps must be positive, got {total_steps}")
    params = [p for p in params if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameter")
    optimizer = torch.optim.AdamW(params, lr=spec.lr, betas=spec.betas, eps=spec.eps, weight_decay=spec.weight_decay)
    scheduler = LambdaLR(optimizer, lambda step: lr_factor(step, spec, total_steps))
    return optimizer, scheduler
